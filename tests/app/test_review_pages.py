"""Review pages with AppTest: every page on the demo (no LLM) and on the real corpus; audits, filters,
links, keyboard shortcuts, the checklist editor, jobs; hostile log text shown as text only."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import app_test as app_test_module

from annotations import DEMO_STUDY_ID, issue_link
from gcpc_core.demo import DEMO_SIMULATED_LABEL
from gcpc_core.judge import score_project
from gcpc_core.review.runs import JOBS
from gcpc_core.store import JudgeUnitRow, JudgmentRow, LLMCallRow, RunRow, Store, utcnow

from markdown_reader import read
from store.helpers import replace_trajectory

from .helpers import REPO, app, open_page

PAGES = {"overview": "Overview", "audit": "Item audit", "checklists": "Checklists", "pairs": "Skill pairs",
         "agreement": "Agreement", "runs": "Runs", "study_admin": "Human study"}
PAGES["triage"] = "Triage"
PAGES["compare"] = "Compare runs"
HOSTILE = '<script>alert("pwned")</script> <img src=x onerror=alert(1)> [link](javascript:alert(1)) ![img](x)'
MARKDOWN_KINDS = ("markdown", "caption", "title", "header", "subheader", "info", "warning", "error", "success",
                  "toast")


@pytest.fixture(autouse=True)
def no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL"):
        monkeypatch.delenv(name, raising=False)


def texts(at: AppTest) -> list[str]:
    """Values of every text and code element (where untrusted text may go)."""
    return [e.value for e in [*at.text, *at.code]]


def highlights(at: AppTest) -> list[str]:
    """The HTML of every highlighted excerpt (`st.html`, built by `text.highlighted_html`)."""
    return [e.proto.body for e in at.get("html")]


def markdown_values(at: AppTest) -> list[str]:
    """Values of every element Streamlit renders as Markdown, badges included."""
    return [str(e.value) for kind in MARKDOWN_KINDS for e in getattr(at, kind)]


def fail_trajectory(store: Store) -> tuple[str, str]:
    """A FAIL trajectory and the first item its probe verdict decided (Yes/No)."""
    for traj in store.trials.trajectories():
        if traj.outcome == "FAIL":
            decided = [r for r in store.judging.judgments(trajectory_id=traj.id) if r.verdict_raw in ("Yes", "No")
                       and r.route != "endpoint"]
            if decided:
                return traj.id, decided[0].item_id
    raise AssertionError("the demo has no decided item on a FAIL trajectory")


def audit_key(traj: str, item: str, what: str) -> str:
    return f"audit:{traj}:probe:{item}:{what}"


# ---------------------------------------------------------------- every page renders


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_on_the_demo_without_an_llm(demo_db: Path, page: str) -> None:
    at = open_page(page)
    assert not at.exception, at.exception
    assert at.title[0].value == PAGES[page]
    assert any("LLM not configured" in t.value for t in at.sidebar.text)


@pytest.mark.parametrize("page", ["audit", "pairs", "agreement"])
def test_no_stray_markdown_on_the_review_pages(demo_db: Path, page: str) -> None:
    """A bare string in a page script is written out by Streamlit's "magic": only badges may be Markdown."""
    at = open_page(page)
    stray = [e.value for e in at.main.markdown if not re.fullmatch(r":\w+-badge\[.*\]", e.value, flags=re.S)]
    assert stray == []


def test_the_sidebar_names_each_page_as_its_title(demo_db: Path) -> None:
    at = open_page("overview")
    listed = {Path(p["script_path"]).stem: p["page_name"] for p in at._registered_pages.values()}
    assert {page: listed[page] for page in PAGES} == PAGES  # e.g. "Human study" in both places


def test_the_rate_page_is_named_as_its_title(demo_db: Path) -> None:
    at = app(token=issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you"))
    assert {p["page_name"] for p in at._registered_pages.values()} == {at.title[0].value} == {"Rating study"}


@pytest.fixture(scope="module")
def imported_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus imported, nothing else: no checklist, no judgment, no study."""
    from gcpc_core.demo import write_demo_corpus
    from gcpc_core.ingest import import_project

    root = tmp_path_factory.mktemp("imported-only")
    tasks, trials = write_demo_corpus(root / "corpus", seed=5)
    import_project(Store(root / "p.db"), tasks_dir=tasks, trials_dir=trials, progress=False)
    return root / "p.db"


@pytest.mark.parametrize("project", ["empty", "imported only"])
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_before_anything_was_done(imported_only: Path, tmp_path: Path, page: str, project: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    db = imported_only if project == "imported only" else tmp_path / "empty.db"
    Store(db)
    monkeypatch.setenv("GCPC_DB", str(db))
    monkeypatch.delenv("GCPC_ADMIN_TOKEN", raising=False)
    at = open_page(page)
    assert not at.exception, at.exception
    assert at.title[0].value == PAGES[page]


def test_pages_say_what_is_missing_before_judging(imported_only: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_DB", str(imported_only))
    monkeypatch.delenv("GCPC_ADMIN_TOKEN", raising=False)
    pairs = open_page("pairs")
    assert any("No scores yet" in i.value for i in pairs.info)
    audit = open_page("audit")
    assert any("no judge has run" in i.value for i in audit.info)
    # the way forward, not a dead end: where the task stands, its next step, and the page that takes it
    assert any(re.fullmatch(r"Task \S+: no checklist yet; judged none; scored none\. Next: draft a checklist — .*",
                            t) for t in texts(audit)), texts(audit)
    for at in (pairs, audit):
        assert [(link.proto.label, link.proto.page) for link in at.page_link] == [
            ("Overview: the next step of each task", "")]  # the Overview is the app's default page, at its root
    shown = " ".join(texts(open_page("agreement")))
    assert "no judge scores yet" in shown and "no human study data yet" in shown


@pytest.mark.skillsbench
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_on_the_real_corpus(real_db: Path, page: str) -> None:
    at = open_page(page)
    assert not at.exception, at.exception
    assert at.title[0].value == PAGES[page]


@pytest.mark.skillsbench
def test_agreement_on_the_real_corpus_says_what_cannot_be_computed(real_db: Path) -> None:
    at = open_page("agreement")
    shown = " ".join(texts(at))
    assert "no human study data yet" in shown and "paired ΔAUC needs at least two judges" in shown
    assert {m.label: m.value for m in at.metric}["Paired ΔAUC"] == "not computed"
    at.session_state["agreement:open:0"] = True  # the AUC section
    at.run()
    assert at.dataframe  # what can be computed (AUC, item accuracy) is there


def test_agreement_leads_with_a_headline_and_opens_sections_on_demand(demo_db: Path) -> None:
    at = open_page("agreement")
    assert not at.exception
    values = {m.label: read(m.value).shown for m in at.metric}  # values are escaped Markdown
    assert values["AUC · probe"] == "0.802 [0.786, 0.833]", values  # raw verdicts (postprocessed: 0.995)
    assert values["Paired ΔAUC"] == "not computed"
    assert {"Pairwise agreement · probe", "Pairwise agreement · humans with each other", "Spearman ρ · probe",
            "α · progress ratings · humans"} <= set(values)
    readings = [read(c.value).shown for c in at.caption]
    assert any("A PASS run outscores a FAIL run" in r and r.startswith("Interval unreliable: only 3 tasks")
               for r in readings)
    assert "Paired ΔAUC needs at least two judges." in readings  # why it is missing, in words
    assert not at.dataframe and not at.get("plotly_chart")  # the details wait until a section is opened
    for key in ("agreement:open:0", "agreement:open:2"):
        at.session_state[key] = True
    at.run()
    assert not at.exception and at.dataframe and at.get("plotly_chart")
    captions = [c.value for c in at.caption]
    assert "AUC per judge, from outcome-free scores (raw verdicts)" in captions
    assert not [c for c in captions if re.search(r"\b[a-z]+_[a-z_]+\b", c)]  # human words, no snake_case


def test_agreement_reads_the_run_chosen_for_a_judge(demo_db: Path) -> None:
    """The demo's probe judge has two labelled runs: the headline follows the Run box (default: the real run)."""
    store = Store(demo_db)
    runs = [r for r in store.judging.labels() if r.judge == "probe"]
    [simulated] = [r.label for r in runs if r.simulated]
    at = open_page("agreement")
    box = at.selectbox(key="agreement:run:probe")
    assert box.value == store.judging.default_labels()["probe"] != simulated
    default_auc = read({m.label: m.value for m in at.metric}["AUC · probe"]).shown
    box.set_value(simulated).run()
    assert not at.exception
    chosen_auc = read({m.label: m.value for m in at.metric}["AUC · probe"]).shown
    # the headline reads raw verdicts: the simulated run, a fifth of its decided verdicts flipped at random, falls to
    # 0.545 (its postprocessed partial credit, which holds the official outcome, reads 1.000)
    assert default_auc.startswith("0.802") and chosen_auc.startswith("0.545")


@pytest.mark.skillsbench
def test_audit_of_the_largest_real_trial_shows_refs_and_citations(real_db: Path) -> None:
    store = Store(real_db)
    largest = max(store.trials.trajectories(), key=lambda t: t.log_bytes)
    cited = next(r for r in store.judging.judgments(trajectory_id=largest.id) if r.citations)
    at = open_page("audit", trajectory=largest.id, judge="probe", item=cited.item_id)
    assert not at.exception
    assert at.selectbox(key="audit:trajectory").value == largest.id
    assert any("<mark" in h for h in highlights(at))  # a located citation or task quote, highlighted in its line
    assert any(c.language == "python" and "def test_" in c.value for c in at.code)  # a verifier test's source


# ---------------------------------------------------------------- auditing


def test_an_audit_writes_one_row_and_shows_it_in_the_history(demo_db: Path) -> None:
    store = Store(demo_db)
    traj, item = fail_trajectory(store)
    at = open_page("audit", trajectory=traj, judge="probe", item=item)
    assert not at.exception
    assert at.selectbox(key="audit:item").value == item
    before = store.project.counts()["annotations"]
    at.button(key=audit_key(traj, item, "agree")).click().run()
    assert not at.exception
    rows = store.annotations.list(kind="item_audit", current=False)
    assert store.project.counts()["annotations"] == before + 1 and len(rows) == 1
    assert (rows[0].trajectory_id, rows[0].item_id, rows[0].judge, rows[0].rater) == (traj, item, "probe",
                                                                                                    "alice")
    assert rows[0].value == {"agree": True, "verdict": None, "selection": "chosen"}
    assert any("alice: agree" in t for t in texts(at))
    assert "Audit history (1)" in [c.value for c in at.caption]
    label = next(o for o in at.selectbox(key="audit:trajectory").options if o.startswith(f"{traj} ·"))
    item_now = next(o for o in at.selectbox(key="audit:item").options if o.startswith(f"{item} ·"))
    assert " · audited 1/" in label and "audited" in item_now.split(" · ")  # the labels follow at once
    at.run()  # a rerun stores nothing new
    assert store.project.counts()["annotations"] == before + 1

    at.text_input(key=audit_key(traj, item, "note")).input("the output was overwritten later")
    at.button(key=audit_key(traj, item, "disagree")).click().run()
    assert store.project.counts()["annotations"] == before + 1  # D alone records nothing: it asks for the verdict
    assert any("Which verdict is right?" in w.value for w in at.warning)
    corrected = at.segmented_control(key=audit_key(traj, item, "corrected"))
    assert corrected.value is None and len(corrected.options) == 2  # nothing pre-selected
    right = corrected.options[-1]
    at.button(key=audit_key(traj, item, f"correct:{right}")).click().run()
    assert not at.exception
    rows = store.annotations.list(kind="item_audit", current=False)
    assert len(rows) == 2 and rows[1].supersedes == rows[0].id and rows[1].value["agree"] is False
    assert rows[1].value["verdict"] == right and rows[1].note == "the output was overwritten later"
    assert not any("Which verdict is right?" in w.value for w in at.warning)
    history = [t for t in texts(at) if "alice:" in t]
    assert "(superseded)" in history[0] and "disagree →" in history[1] and "overwritten later" in history[1]


def test_the_audit_page_explains_the_scores(demo_db: Path) -> None:
    traj, item = fail_trajectory(Store(demo_db))
    at = open_page("audit", trajectory=traj, judge="probe", item=item)
    assert "What these scores mean" in [e.label for e in at.expander]
    shown = texts(at)
    assert any(t.startswith("scored: partial credit ") and "(endpoint item included)" in t for t in shown)
    assert any(t.startswith("Partial credit ") and "the endpoint item's No included" in t for t in shown)
    assert any("the official FAIL adds the endpoint item" in t for t in shown)


def test_auditing_needs_a_reviewer_name(demo_db: Path) -> None:
    traj, item = fail_trajectory(Store(demo_db))
    at = open_page("audit", reviewer="", trajectory=traj, judge="probe", item=item)
    assert at.button(key=audit_key(traj, item, "agree")).disabled
    assert any("reviewer name" in w.value for w in at.warning)


def test_keyboard_shortcuts_and_navigation(demo_db: Path) -> None:
    store = Store(demo_db)
    traj, item = fail_trajectory(store)
    at = open_page("audit", trajectory=traj, judge="probe", item=item)
    shortcuts = {b.key: b.proto.shortcut.lower() for b in at.button if b.proto.shortcut}
    assert shortcuts[audit_key(traj, item, "agree")] == "a" and shortcuts[audit_key(traj, item, "disagree")] == "d"
    assert (shortcuts["audit:next_item"], shortcuts["audit:prev_item"]) == ("j", "k")
    assert (shortcuts["audit:next_traj"], shortcuts["audit:prev_traj"]) == ("n", "p")
    items = [o.split(" · ")[0] for o in at.selectbox(key="audit:item").options]
    at.button(key="audit:next_item").click().run()
    assert at.selectbox(key="audit:item").value == items[min(items.index(item) + 1, len(items) - 1)]
    assert at.query_params["item"] == at.selectbox(key="audit:item").value  # a shareable link to this item
    at.button(key="audit:prev_item").click().run()
    assert at.selectbox(key="audit:item").value == item
    ids = [o.split(" · ")[0] for o in at.selectbox(key="audit:trajectory").options]
    at.button(key="audit:next_traj").click().run()
    assert not at.exception
    assert at.selectbox(key="audit:trajectory").value == ids[min(ids.index(traj) + 1, len(ids) - 1)]
    assert at.query_params["trajectory"] == at.selectbox(key="audit:trajectory").value  # the URL follows


def test_filters_narrow_the_trajectory_list(demo_db: Path) -> None:
    store = Store(demo_db)
    at = open_page("audit")
    everything = len(at.selectbox(key="audit:trajectory").options)
    assert everything == 36 and "36 of 36 trajectories match" in texts(at)
    at.multiselect(key="audit:outcomes").set_value(["FAIL"]).run()
    fails = at.selectbox(key="audit:trajectory").options
    assert 0 < len(fails) == store.project.counts()["fail"] < everything
    assert all(" · FAIL · " in label for label in fails)
    at.multiselect(key="audit:tasks").set_value(["sales-csv-summary"]).run()
    assert 0 < len(at.selectbox(key="audit:trajectory").options) < len(fails)
    at.selectbox(key="audit:show").set_value("auditors disagree").run()
    assert any("No trajectory matches" in i.value for i in at.info)

    overview = open_page("overview")
    rows = len(overview.dataframe(key="overview_table").value)
    overview.multiselect(key="overview_outcome").set_value(["PASS"]).run()
    assert len(overview.dataframe(key="overview_table").value) == store.project.counts()["pass"] < rows


def test_item_filter_shows_disagreements_with_auditors(demo_db: Path) -> None:
    store = Store(demo_db)
    traj, item = fail_trajectory(store)
    at = open_page("audit", trajectory=traj, judge="probe", item=item)
    at.segmented_control(key=audit_key(traj, item, "corrected")).set_value("Abstain")
    at.button(key=audit_key(traj, item, "disagree")).click().run()  # a verdict chosen first: D records it
    assert store.annotations.list(kind="item_audit")[0].value == {"agree": False, "verdict": "Abstain",
                                                                  "selection": "chosen"}  # a link, not a proposal
    at.segmented_control(key="audit:item_show").set_value("auditors disagree").run()
    assert at.selectbox(key="audit:item").options == [o for o in at.selectbox(key="audit:item").options
                                                      if o.startswith(f"{item} ·")]
    at.selectbox(key="audit:show").set_value("auditors disagree").run()
    assert [o.split(" · ")[0] for o in at.selectbox(key="audit:trajectory").options] == [traj]


def test_the_log_viewer_searches_and_pages(demo_db: Path) -> None:
    store = Store(demo_db)
    traj = store.trials.trajectories()[0]
    at = open_page("audit", trajectory=traj.id, judge="probe")
    status = next(t for t in texts(at) if "events shown" in t)
    n = len(store.trials.events(traj.id))
    assert status.startswith(f"{n} of {n} events shown")
    at.text_input(key=f"audit:log:{traj.id}:search").input("app.ini").run()
    searched = next(t for t in texts(at) if "events shown" in t)
    assert "search hits" in searched and int(searched.split()[0]) < int(status.split()[0])


def test_long_outputs_are_collapsed_and_search_shows_the_hidden_hit(demo_db: Path) -> None:
    store = Store(demo_db)
    traj = store.trials.trajectories()[0]
    events = store.trials.events(traj.id)
    target = next(e for e in events if e.kind == "tool_output")
    long_text = "\n".join(f"row {i}" if i != 80 else "the NEEDLE is here" for i in range(1, 121))
    replace_trajectory(store, traj, [e.model_copy(update={"text": long_text}) if e.id == target.id else e
                                    for e in events])
    at = open_page("audit", trajectory=traj.id, judge="probe")
    toggle = at.toggle(key=f"audit:log:{traj.id}:{target.id}:full")
    assert toggle.label.startswith(f"Show all {len(long_text):,} characters")
    assert not any("the NEEDLE is here" in c.value for c in at.code)  # collapsed: the hit is not rendered yet
    at.text_input(key=f"audit:log:{traj.id}:search").input("needle").run()
    assert any("First match of the search, line 80" in t for t in texts(at))
    assert any('80 │ </span>the <mark style="' in h and ">NEEDLE</mark> is here" in h for h in highlights(at))
    at.toggle(key=f"audit:log:{traj.id}:{target.id}:full").set_value(True).run()
    assert any(c.value == long_text for c in at.code)


# ---------------------------------------------------------------- untrusted text


def test_hostile_log_text_is_shown_as_text_only(demo_db: Path) -> None:
    store = Store(demo_db)
    traj_id, item = fail_trajectory(store)
    traj = store.trials.get_trajectory(traj_id)
    events = store.trials.events(traj_id)
    target = next(e for e in events if e.kind == "tool_output")
    events = [e.model_copy(update={"text": f"before\n{HOSTILE}\nafter"}) if e.id == target.id else e for e in events]
    replace_trajectory(store, traj, events)
    rows = [r.model_dump() for r in store.judging.judgments(trajectory_id=traj_id, judge="probe") if r.route != "endpoint"]
    rows = [{**r, "verdict_raw": "Yes", "citations": [{"event_id": target.id, "quote": HOSTILE}],
             "rationale": f"because {HOSTILE}"} if r["item_id"] == item else r for r in rows]
    store.judging.save_trajectory_judgment(store.judging.units("probe")[(traj_id, "probe")],
                                           [JudgmentRow(**r) for r in rows], [])
    score_project(store, judge="probe")

    at = open_page("audit", trajectory=traj_id, judge="probe", item=item)
    assert not at.exception
    shown = texts(at)
    assert f"because {HOSTILE}" in shown  # the rationale, verbatim, in a text element
    assert any(f">{html.escape(HOSTILE)}</mark>" in h for h in highlights(at))  # the cited span, escaped, marked
    assert any(HOSTILE in c.value and c.language == "plaintext" for c in at.code)  # the log viewer, literal
    for value in markdown_values(at):
        for raw in ("<script", "<img", "onerror=", "](javascript:", "![img]"):
            assert raw not in value, f"{raw!r} reached a Markdown element: {value!r}"
    for body in highlights(at):
        for raw in ("<script", "<img"):  # escaped, `onerror=` is inert text inside `&lt;img …`
            assert raw not in body, f"{raw!r} reached a highlighted excerpt unescaped"


# ---------------------------------------------------------------- links


def test_links_open_the_audit_page_on_a_trajectory(demo_db: Path) -> None:
    store = Store(demo_db)
    overview = open_page("overview")
    chosen = overview.selectbox(key="overview_open").value
    link = overview.page_link[-1]  # the trajectory chooser's link, last on the page (the guided path's come first)
    assert "audit" in link.proto.page and link.proto.query_string == f"trajectory={chosen}"
    pairs = open_page("pairs")
    assert not pairs.exception
    targets = [p for p in pairs.page_link if "trajectory=" in p.proto.query_string]
    assert len(targets) == 2 and all("judge=probe" in p.proto.query_string for p in targets)
    without = targets[0].proto.query_string.split("trajectory=")[1].split("&")[0]
    at = open_page("audit", trajectory=without, judge="probe")
    assert at.selectbox(key="audit:trajectory").value == without and without in {t.id for t in store.trials.trajectories()}


@pytest.mark.parametrize("public", ["https://audit.example/gcpc", None])
def test_triage_and_compare_links_are_absolute(demo_db: Path, monkeypatch: pytest.MonkeyPatch,
                                               public: str | None) -> None:
    """The audit links in the Triage and Compare tables open as they stand, pasted anywhere: `$GCPC_PUBLIC_URL`,
    else the address the app is served at (never `audit?…` relative to whatever page holds them)."""
    if public:
        monkeypatch.setenv("GCPC_PUBLIC_URL", public)
    else:
        monkeypatch.delenv("GCPC_PUBLIC_URL", raising=False)
    from annotations.tokens import default_base_url

    start = (public or default_base_url(env={})) + "/audit?trajectory="  # unset: the committed config's address
    for page, columns in (("triage", ("link",)), ("compare", ("audit_a", "audit_b"))):
        at = open_page(page)
        assert not at.exception, at.exception
        links = [v for frame in at.dataframe for c in columns if c in frame.value.columns for v in frame.value[c]]
        assert links and all(link.startswith(start) for link in links), (page, links[:2])


def test_pairs_page_highlights_changed_items(demo_db: Path) -> None:
    at = open_page("pairs")
    assert not at.exception
    assert any("items changed" in t for t in texts(at))
    opened = at.selectbox(key="pairs:pick:probe:all")
    label = opened.format_func(opened.value)
    assert "FAIL→FAIL" in label or "PASS→PASS" in label  # an outcome the Skill did not change
    assert "Δ +0.00" not in label and "Δ -0.00" not in label
    assert "Evidence side by side" in [h.value for h in at.subheader]
    assert [c.value for c in at.caption].count("Without Skills") == 2  # the pair's header and the evidence column
    assert len([c for c in at.caption if c.value.startswith("Citations (")]) == 2
    at.toggle(key="pairs:only_changed").set_value(True).run()
    assert not at.exception


# ---------------------------------------------------------------- checklists


def test_a_hand_edit_reruns_the_gates_and_shows_failures(demo_db: Path) -> None:
    store = Store(demo_db)
    at = open_page("checklists")
    task = at.selectbox(key="checklists:task").value
    editor = at.text_area(key=f"checklists:text:{task}")
    assert "source: human:alice" in editor.value
    assert any("Every gate passes" in s.value for s in at.success)
    broken = editor.value.replace("task_quote:", "task_quote: NOT IN THE INSTRUCTION", 1)
    editor.input(broken).run()
    assert any("gate failure" in e.value for e in at.error)
    gates = next(d.value for d in at.dataframe if "gate" in d.value.columns and "result" in d.value.columns
                 and (d.value["result"] == "fail").any())
    assert gates.set_index("gate").loc["G1", "result"] == "fail"
    assert at.button(key=f"checklists:save:{task}").disabled
    assert len(store.checklists.list(task=task, status=None)) == 1

    lines = editor.value.replace("task_quote: NOT IN THE INSTRUCTION", "task_quote:", 1)
    at.text_area(key=f"checklists:text:{task}").input(lines + "\n").run()
    assert not at.button(key=f"checklists:save:{task}").disabled
    at.button(key=f"checklists:save:{task}").click().run()
    assert not at.exception
    versions = store.checklists.list(task=task, status=None)
    assert len(versions) == 2 and versions[-1].source == "human:alice"  # new content: the source changed
    assert any("Stored as version 2" in s.value for s in at.success)


def test_synthesis_is_disabled_with_the_reason_without_an_llm(demo_db: Path) -> None:
    at = open_page("checklists")
    task = at.selectbox(key="checklists:task").value
    assert at.button(key=f"checklists:synth:{task}").disabled
    assert any("LLM not configured" in t for t in texts(at))


def test_llm_actions_are_enabled_once_an_endpoint_is_configured(demo_db: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("GCPC_MODEL", "test-model")
    at = open_page("checklists")
    assert not at.button(key=f"checklists:synth:{at.selectbox(key='checklists:task').value}").disabled
    assert any(t.value.startswith("ready: model test-model") for t in at.sidebar.text)
    runs = open_page("runs")
    runs.selectbox(key="runs:judge").set_value("gcpc").run()
    assert not runs.button(key="runs:start_judge").disabled and not runs.button(key="runs:synthesize").disabled


# ---------------------------------------------------------------- runs


def test_runs_page_starts_a_job_and_lists_runs(demo_db: Path) -> None:
    at = open_page("runs")
    assert not at.button(key="runs:score").disabled
    at.selectbox(key="runs:judge").set_value("gcpc").run()
    assert at.button(key="runs:start_judge").disabled and at.button(key="runs:synthesize").disabled
    at.button(key="runs:score").click().run()
    assert not at.exception and any("Started score job" in s.value for s in at.success)
    for job in JOBS.jobs(demo_db):
        JOBS.wait(job.id, timeout=60)
    at.run()
    runs = at.dataframe[-1].value
    assert {"judge-probe", "score"} <= set(runs["kind"])
    assert any(t.startswith("score job") and "done" in t for t in texts(at))


def test_runs_page_limit_empty_judges_every_trajectory_and_a_number_at_most_that_many(demo_db: Path) -> None:
    """The Limit box means what `--limit` means: empty is all, N is at most N (0 cannot be typed)."""
    at = open_page("runs")
    at.selectbox(key="runs:judge").set_value("probe").run()
    at.toggle(key="runs:force").set_value(True).run()
    recorded = {}
    for label, limit in (("limit-empty", None), ("limit-one", 1)):
        at.text_input(key="runs:label").set_value(label).run()
        at.number_input(key="runs:limit").set_value(limit).run()
        at.button(key="runs:start_judge").click().run()
        assert not at.exception and any("Started judge job" in s.value for s in at.success), [s.value for s in at.success]
        for job in JOBS.jobs(demo_db):
            JOBS.wait(job.id, timeout=120)
        [run] = [r for r in Store(demo_db).runs.list(kind="judge-probe") if r.params.get("label") == label]
        recorded[label] = (run.params["limit"], run.params["trajectories"], run.counts["judged"])
    judgeable = recorded["limit-empty"][1]
    assert judgeable > 1 and recorded["limit-empty"] == (None, judgeable, judgeable), recorded
    assert recorded["limit-one"] == (1, 1, 1), recorded


def test_runs_page_concurrency_field_defaults_to_the_environment(demo_db: Path) -> None:
    """Left empty, the field passes no concurrency (GCPC_LLM_CONCURRENCY, else 8 applies); its help says so."""
    at = open_page("runs")
    field = at.number_input(key="runs:concurrency")
    assert field.value is None and "GCPC_LLM_CONCURRENCY" in (field.help or "")


def test_runs_page_shows_a_run_started_elsewhere_live(demo_db: Path) -> None:
    """A run in progress (e.g. `python -m gcpc_core judge` in a terminal): progress and cost from the DB."""
    store = Store(demo_db)
    run_id = store.runs.start(RunRow(kind="judge-gcpc", model="m", prompt_version="p", rules_version="r",
                                     params={"trajectories": 4})).id
    store.runs.record_llm_call(LLMCallRow(run_id=run_id, status="ok", cache_hit=0, prompt_tokens=1000,
                           completion_tokens=200, cost_usd=0.25, created_at=utcnow()))
    traj = store.trials.trajectories()[0]
    store.judging.save_trajectory_judgment(JudgeUnitRow(trajectory_id=traj.id, judge="gcpc", task=traj.task, prompt_version="p",
                                                        created_at="2026-01-01T00:00:00+00:00", run_id=run_id,
                                                        label="live"), [], [])
    at = open_page("runs")
    row = at.dataframe[-1].value.set_index("id").loc[run_id]
    assert (row["status"], row["progress"], row["prompt_tokens"]) == ("running", "1/4", 1000)
    assert row["cost_usd"] == pytest.approx(0.25)


# ---------------------------------------------------------------- access


def test_raters_never_reach_the_review_pages(demo_db: Path) -> None:
    at = app(token=issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you"))
    for page in PAGES:
        if page != "study_admin":
            with pytest.raises(ValueError, match="Known pages"):
                at.switch_page(f"pages/{page}.py")


def test_review_pages_on_a_fresh_server_hand_over_to_app(demo_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                         ) -> None:
    """Legacy `pages/` mode runs a page file alone before app.py ran: the shared guard hands over."""
    monkeypatch.setattr(app_test_module, "PagesManager", PagesManager)
    traj = Store(demo_db).trials.trajectories()[0].id
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["trajectory"] = traj
    at.switch_page("pages/audit.py")
    at.run()
    assert not at.exception
    assert at.title[0].value == "Item audit" and at.selectbox(key="audit:trajectory").value == traj


def test_review_pages_need_the_admin_token_when_one_is_set(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_ADMIN_TOKEN", "s3cret")
    assert app().title[0].value == "GCPC"
    at = open_page("audit", admin="s3cret")
    assert at.title[0].value == "Item audit"


def test_a_missing_project_db_is_named_and_no_page_is_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without st.navigation Streamlit would list every file of pages/ in a sidebar."""
    missing = tmp_path / "nowhere.db"
    monkeypatch.setenv("GCPC_DB", str(missing))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception
    shown = read(at.error[0].value).shown  # the path is escaped Markdown
    assert f"Project DB not found: {missing}" in shown and "python -m gcpc_core import" in shown
    assert len(at.sidebar.children) == 0 and not missing.exists()
    assert [p["page_name"] for p in at._registered_pages.values()] == ["GCPC"]  # the message alone


def test_runs_page_names_every_labelled_judge_run(demo_db: Path) -> None:
    """The Runs page lists the labelled judge runs by readable name (judge · model · prompt · date), the full
    label beside it."""
    from gcpc_core.analysis.run_names import run_name

    at = open_page("runs")
    assert not at.exception, at.exception
    table = next(f.value for f in at.dataframe if "label" in f.value.columns)
    runs = Store(demo_db).judging.labels()
    assert sorted(table["run"]) == sorted(run_name(r) for r in runs)
    assert sorted(table["label"]) == sorted(r.label for r in runs)


def test_compare_names_runs_for_a_reader_in_every_table(demo_db: Path) -> None:
    """Compare: the run columns of its AUC, ΔAUC and evidence-sensitivity tables hold readable run names (judge ·
    model · prompt · date), never the derived label; the perturbation hint is a code block, not raw backticks."""
    from gcpc_core.cli import main
    from gcpc_core.review.compare import run_choices

    store = Store(demo_db)
    probe = store.judging.default_labels()["probe"]
    names = {r["label"]: r["name"] for r in run_choices(store)}
    at = open_page("compare")
    assert any(c.value.startswith("python -m gcpc_core perturb") for c in at.code)
    assert not any("`" in t.value for t in at.text)
    assert main(["perturb", "--db", str(demo_db), "--judge", "probe", "--run", probe]) == 0
    at = open_page("compare")
    assert not at.exception, at.exception
    frames = [f.value for f in at.dataframe]
    auc, delta = frames[0], frames[1]
    assert list(auc["run"]) == [names[probe], names[DEMO_SIMULATED_LABEL]]
    assert (delta["run A"].iloc[0], delta["run B"].iloc[0]) == (names[probe], names[DEMO_SIMULATED_LABEL])
    sensitivity = next(f for f in frames if "label" in f.columns and "run" in f.columns)
    assert set(sensitivity["run"]) == {names[probe]}
    assert probe not in at.text[0].value  # the headline


def test_the_overview_and_agreement_pages_say_an_abstaining_judge_is_no_evidence(demo_db: Path) -> None:
    """Every raw verdict Abstain, then scored: both pages say the judge's score only restates the official outcome."""
    import sqlite3

    with sqlite3.connect(demo_db) as conn:
        conn.execute("UPDATE judgments SET verdict_raw = 'Abstain' WHERE route != 'endpoint'")
    score_project(Store(demo_db))
    for page in ("overview", "agreement"):
        at = open_page(page)
        assert not at.exception
        shown = [read(w.value).shown for w in at.warning]
        assert any(w.startswith("Judge probe abstained on every item") and "only restates the official outcome" in w
                   and "no evidence" in w for w in shown), (page, shown)
    assert {m.label: m.value for m in at.metric}["AUC vs official PASS"] == "no evidence"
