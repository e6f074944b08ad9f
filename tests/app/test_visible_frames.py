"""Every table the Overview, Skill pairs and Agreement pages show goes through `visible_frame`, which makes
invisible and direction-changing characters of untrusted text visible (an agent name from a trial's config,
an import problem's path)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gcpc_core.review import ui
from gcpc_core.store import Store
from store.helpers import replace_trajectory

from .helpers import open_page

MARK = "__shown_by_visible_frame__"
BIDI_AGENT = "claude\u202etxt.exe"


@pytest.fixture
def marked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`visible_frame` tags what it returns, so a table that bypassed it is told apart."""
    original = ui.visible_frame

    def tagging(frame: pd.DataFrame) -> pd.DataFrame:
        return original(frame).assign(**{MARK: True})

    monkeypatch.setattr(ui, "visible_frame", tagging)


def _bypassed(at) -> list[list[str]]:  # noqa: ANN001 - AppTest
    return [list(map(str, d.value.columns)) for d in at.dataframe if MARK not in d.value.columns]


@pytest.mark.parametrize("page", ["overview", "pairs"])
def test_every_table_of_the_page_goes_through_visible_frame(demo_db: Path, marked: None, page: str) -> None:
    Store(demo_db).trials.record_import_issues([("trials/x\u200by", "trial", "unreadable")])
    at = open_page(page)
    assert not at.exception, at.exception
    assert at.dataframe and _bypassed(at) == []


def test_every_agreement_table_goes_through_visible_frame(demo_db: Path, marked: None) -> None:
    at = open_page("agreement")
    for key in ["agreement:open:inputs", "agreement:open:audits", *(f"agreement:open:{k}" for k in range(7))]:
        at.session_state[key] = True
    at.run()
    assert not at.exception, at.exception
    assert len(at.dataframe) > 10 and _bypassed(at) == []


def test_a_bidi_agent_name_and_a_zero_width_path_are_shown_marked(demo_db: Path) -> None:
    store = Store(demo_db)
    for traj in store.trials.trajectories():
        replace_trajectory(store, traj.model_copy(update={"agent": BIDI_AGENT}), store.trials.events(traj.id))
    store.trials.record_import_issues([("trials/x\u200by", "trial", "unreadable")])
    for page in ("overview", "pairs"):
        at = open_page(page)
        assert not at.exception, at.exception
        cells = [str(v) for d in at.dataframe for col in d.value.columns for v in d.value[col]]
        assert not [c for c in cells if "\u202e" in c or "\u200b" in c], page
        assert "claude⟨U+202E⟩txt.exe" in cells, page
    overview = open_page("overview")
    assert "trials/x⟨U+200B⟩y" in [str(v) for d in overview.dataframe for v in d.value.get("path", [])]
