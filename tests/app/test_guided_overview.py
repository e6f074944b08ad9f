"""The guided path's pages with AppTest, on the demo corpus imported and nothing else (no LLM): the Overview
names the next step per task with its link, the Checklists page opens that task's offline draft, and the
editor's quote and test tools change the text."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gcpc_core.demo import write_demo_corpus
from gcpc_core.ingest import import_project
from gcpc_core.store import Store

from .helpers import open_page


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tasks, trials = write_demo_corpus(tmp_path / "corpus", seed=5)
    import_project(Store(tmp_path / "p.db"), tasks_dir=tasks, trials_dir=trials, progress=False)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL", "GCPC_ADMIN_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GCPC_DB", str(tmp_path / "p.db"))
    return tmp_path / "p.db"


def test_overview_links_each_task_to_its_draft(imported: Path) -> None:
    at = open_page("overview")
    assert not at.exception
    tasks = sorted(t.id for t in Store(imported).trials.tasks())
    drafts = [p for p in at.page_link if p.proto.query_string.endswith("start=draft")]
    assert [p.proto.query_string for p in drafts] == [f"task={t}&start=draft" for t in tasks]
    assert all(b.disabled for b in at.button if b.key and b.key.endswith(":synth"))  # no LLM configured
    assert any(c.value.startswith(f"python -m gcpc_core checklist draft --db {imported} --task {tasks[0]}")
               for c in at.code)


def test_checklists_page_opens_the_draft_and_its_tools_edit_the_text(imported: Path) -> None:
    store = Store(imported)
    task = sorted(t.id for t in store.trials.tasks())[0]
    at = open_page("checklists", task=task, start="draft")
    assert not at.exception
    assert at.selectbox(key="checklists:task").value == task
    text = at.text_area(key=f"checklists:text:{task}").value
    assert "source: draft:" in text and any("Every gate passes" in s.value for s in at.success)
    n = len(yaml.safe_load(text)["items"])

    at.selectbox(key=f"checklists:quote_target:{task}").set_value("a new judge item").run()
    at.button(key=f"checklists:quote:{task}:0").click().run()
    items = yaml.safe_load(at.text_area(key=f"checklists:text:{task}").value)["items"]
    assert len(items) == n + 1 and items[-1]["route"] == "judge"
    assert items[-1]["task_quote"] in store.trials.get_task(task).instruction

    node = store.trials.get_task(task).tests[1].node_id  # the draft's C1 mirrors tests[0]
    assert node not in items[0]["verifier_refs"]
    at.selectbox(key=f"checklists:ref_target:{task}").set_value("C1").run()
    at.button(key=f"checklists:test:{task}:{node}").click().run()
    items = yaml.safe_load(at.text_area(key=f"checklists:text:{task}").value)["items"]
    assert items[0]["verifier_refs"][-1] == node and len(items) == n + 1
    assert store.checklists.list(status=None) == []  # nothing stored before Save
