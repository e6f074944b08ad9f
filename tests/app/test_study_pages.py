"""Study pages with AppTest on the demo project: blinding over every element, token auth, saving, admin."""

from __future__ import annotations

import re
import sqlite3
import tomllib
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import app_test as app_test_module

from annotations import DEMO_STUDY_ID, issue_link
from annotations.tokens import SignInLimiter
from gcpc_core.text import show_invisible
from gcpc_core.store import Store
from markdown_reader import read

from .helpers import REPO, app


def rendered(at: AppTest) -> str:
    """Everything AppTest exposes: every block and element of the tree, as its full protobuf plus the
    public properties (labels, values, options, help) of widgets."""
    parts = []
    for node in at._tree:
        parts.append(str(getattr(node, "proto", "")))
        for attr in ("label", "value", "body", "help", "placeholder", "options", "caption", "text"):
            try:
                parts.append(repr(getattr(node, attr)))
            except Exception:  # not every node has every property
                continue
    return "\n".join(parts)


def blinded_terms(store: Store) -> tuple[list[str], list[str]]:
    """(case-insensitive, case-sensitive) strings no rater page may contain."""
    insensitive = {"with-skills", "without-skills", "reward", "partial credit", "partial_credit", "verdict",
                   "judge", "claude", ".claude/skills", "skill.md", "sim-model", "demo/sim"}
    sensitive = set()
    for t in store.trials.trajectories():
        insensitive |= {t.id.lower(), t.model.lower(), t.agent.lower(), t.source_path.lower()}
        sensitive.add(t.id.split("__", 1)[1])  # the trial's random suffix
    for task in store.trials.tasks():
        insensitive.add(str(task.metadata.get("metadata", {}).get("demo_skill", "")).lower())
    return sorted(w for w in insensitive if w), sorted(sensitive)


def assert_blind(at: AppTest, store: Store) -> None:
    text = rendered(at)
    low = text.lower()
    insensitive, sensitive = blinded_terms(store)
    leaks = [w for w in insensitive if w in low] + [w for w in sensitive if w in text]
    assert not leaks, f"rater page shows blinded fields: {leaks}"
    assert not re.search(r"\b(PASS|FAIL)\b", text), "rater page shows an outcome label"


def test_rater_page_is_blind_on_every_item(demo_db: Path) -> None:
    store = Store(demo_db)
    at = app(token=issue_link(store, DEMO_STUDY_ID, "demo-you"))
    assert not at.exception and at.title[0].value == "Rating study"
    n = int(re.search(r"of (\d+)", at.subheader[0].value).group(1))
    seen = set()
    for i in range(n):
        assert not at.exception
        assert_blind(at, store)
        seen.add(at.subheader[0].value.split(" · ")[1])
        if i < n - 1:
            next(b for b in at.button if b.label == "Next").click().run()
    assert seen == {"Progress rating", "Which made more progress?"}  # both kinds of question were checked
    assert len(at.code) > 10  # the logs are really shown


def test_wrong_token_shows_nothing(demo_db: Path) -> None:
    at = app(token="not-a-real-token")
    assert not at.exception
    assert [e.value for e in at.error] == ["This link is not valid. Please ask the study organisers for a new one."]
    elements = [node for node in at._tree if not hasattr(node, "children")]
    assert len(elements) == 1  # the error alone: no sidebar, no text, no buttons
    assert_blind(at, Store(demo_db))


def test_a_rater_sees_only_the_rate_page(demo_db: Path) -> None:
    token = issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you")
    at = app(token=token)
    next(b for b in at.button if b.label == "Next").click().run()  # and still after reruns
    assert len(at.sidebar.children) == 0  # no project path, no navigation
    for page in ("pages/overview.py", "pages/study_admin.py"):
        # the rate page is the only page registered in a rater's navigation (at `/rate` and at the root URL)
        with pytest.raises(ValueError, match=r"Known pages: \[('[^',]*pages/rate\.py'(, )?)+\]\."):
            at.switch_page(page)
    assert at.title[0].value == "Rating study" and not at.dataframe and not at.metric


def test_rating_saves_once_resumes_and_keeps_history(demo_db: Path) -> None:
    store = Store(demo_db)
    token = issue_link(store, DEMO_STUDY_ID, "demo-you")
    at = app(token=token)
    first = at.subheader[0].value
    assert first.startswith("1 of ")
    save = next(b for b in at.button if b.label == "Save and next")
    assert save.disabled  # nothing chosen yet
    next(b for b in at.button if b.label.startswith("3 ·")).click().run()
    at.text_area[0].input("checked the output file").run()
    next(b for b in at.button if b.label == "Save and next").click().run()
    assert not at.exception and at.subheader[0].value.startswith("2 of ")
    rows = store.annotations.list(study_id=DEMO_STUDY_ID, rater="demo-you", current=False)
    assert len(rows) == 1 and rows[0].value == {"rating": 3} and rows[0].note == "checked the output file"
    assert not rows[0].is_simulated and rows[0].source == "app"

    resumed = app(token=token)  # a refresh or a new visit resumes at the first open item
    assert resumed.subheader[0].value.startswith("2 of ")
    next(b for b in resumed.button if b.label == "Previous").click().run()
    assert resumed.subheader[0].value == first
    assert resumed.text_area[0].value == "checked the output file"  # the saved answer is loaded for editing
    next(b for b in resumed.button if b.label.startswith("5 ·")).click().run()
    next(b for b in resumed.button if b.label == "Save and next").click().run()
    next(b for b in resumed.button if b.label == "Previous").click().run()
    history = store.annotations.list(study_id=DEMO_STUDY_ID, rater="demo-you", current=False)
    assert [h.value["rating"] for h in history] == [3, 5] and history[1].supersedes == history[0].id
    assert any("history (2 versions)" in e.label for e in resumed.expander)


def test_pairwise_choice_with_confidence(demo_db: Path) -> None:
    store = Store(demo_db)
    at = app(token=issue_link(store, DEMO_STUDY_ID, "demo-you"))
    options = at.selectbox[0].options
    first_pair = next(i for i, label in enumerate(options) if "Which made more progress?" in label)
    at.selectbox[0].set_value(first_pair).run()
    assert "Which made more progress?" in at.subheader[0].value
    assert {"Record A", "Record B"} <= {c.value for c in at.caption}
    next(b for b in at.button if b.label == "A made more progress").click().run()
    assert next(b for b in at.button if b.label == "Save and next").disabled  # a confidence is still missing
    next(b for b in at.button if b.label.startswith("2 · Medium")).click().run()
    next(b for b in at.button if b.label == "Save and next").click().run()
    assert not at.exception
    rows = store.annotations.list(study_id=DEMO_STUDY_ID, rater="demo-you", kind="preference")
    assert [(r.value["choice"], r.confidence) for r in rows] == [("A", 2)]


def test_admin_page_on_the_demo_study(demo_db: Path) -> None:
    at = app()
    at.switch_page("pages/study_admin.py").run()
    assert not at.exception and at.title[0].value == "Human study"
    assert any("SIMULATED" in w.value for w in at.warning)
    assert any("SIMULATED raters" in str(o) for o in at.selectbox[0].options)
    labels = {m.label for m in at.metric}
    assert {"α progress rating (ordinal)", "α preference (nominal)"} <= labels
    assert len(at.dataframe) >= 2
    raters = next(t for t in at.text_input if t.label.startswith("Raters"))
    raters.set_value("amy, bo")
    next(n for n in at.number_input if n.label == "Tasks").set_value(3)
    next(n for n in at.number_input if n.label == "Raters per unit").set_value(2)
    next(n for n in at.number_input if n.label == "Seed").set_value(42)
    next(b for b in at.button if b.label == "Create and freeze").click().run()
    assert not at.exception, at.exception
    assert any("Study created" in s.value for s in at.success)
    links = [c.value for c in at.code if "/rate?token=" in c.value]
    assert len(links) == 2
    assert len(Store(demo_db).studies.list()) == 2
    with closing(sqlite3.connect(demo_db)) as conn:  # the raters' token hashes, read past the store
        hashes = [h for (h,) in conn.execute("SELECT token_hash FROM study_raters WHERE token_hash IS NOT NULL")]
    shown = [str(e.value) for e in [*at.text, *at.code, *at.markdown, *at.caption, *at.success]]
    shown += [d.value.to_csv() for d in at.dataframe]
    assert len(hashes) >= 2 and not any(h in text for h in hashes for text in shown)  # shown: links, never hashes


def test_admin_token_guards_every_non_rater_page(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_ADMIN_TOKEN", "s3cret")
    locked = app()
    assert locked.title[0].value == "GCPC" and not locked.metric and len(locked.sidebar.children) == 0
    with pytest.raises(ValueError, match=r"Known pages: \[('[^',]*pages/sign_in\.py'(, )?)+\]\."):
        locked.switch_page("pages/study_admin.py")  # no other page is even registered (every URL: the sign-in)
    assert app(admin="wrong").title[0].value == "GCPC"
    assert app(admin="s3cret").title[0].value == "Overview"
    locked.text_input[0].input("s3cret")
    next(b for b in locked.button if b.label == "Sign in").click().run()
    assert locked.title[0].value == "Overview"
    rater = app(token=issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you"))  # raters need no admin token
    assert rater.title[0].value == "Rating study"


def test_guidelines_are_one_click_away(demo_db: Path) -> None:
    at = app(token=issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you"))
    button = next(b for b in at.button if b.label == "Guidelines")
    assert button.proto.shortcut.lower() == "g"
    button.click().run()
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert "## Progress scale" in shown and "## Pairwise preference" in shown
    shortcuts = {b.label: b.proto.shortcut.lower() for b in at.button}
    assert shortcuts["Save and next"] in ("ctrl+enter", "mod+enter") and shortcuts["Next"] == "n"
    assert shortcuts["Previous"] == "p"
    assert [shortcuts[k] for k in shortcuts if k[0].isdigit()] == ["1", "2", "3", "4", "5"]


def test_admin_issues_links_and_imports_idempotently(demo_db: Path) -> None:
    from annotations import export_csv, open_rater_session

    store = Store(demo_db)
    at = app()
    at.switch_page("pages/study_admin.py").run()
    next(b for b in at.button if b.label == "Issue a new link").click().run()
    link = next(c.value for c in at.code if "/rate?token=" in c.value)
    session = open_rater_session(store, link.split("token=")[1])
    assert session is not None and session.rater == at.selectbox(key="study_admin_link_rater").value
    before = store.project.counts()["annotations"]
    at.file_uploader(key="study_admin_upload").upload("responses.csv", export_csv(store, DEMO_STUDY_ID).encode(),
                                                        "text/csv").run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert any("0 added" in t.value for t in at.text) and store.project.counts()["annotations"] == before


def test_rate_link_as_the_first_request_of_a_fresh_server(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Until app.py has called st.navigation once, Streamlit runs a page file alone (legacy `pages/`
    mode); the rate page then hands over to app.py, keeping the token, instead of failing."""
    monkeypatch.setattr(app_test_module, "PagesManager", PagesManager)  # no entrypoint fix-up: fresh server
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["token"] = issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you")
    at.switch_page("pages/rate.py")
    at.run()
    assert not at.exception
    assert at.title[0].value == "Rating study" and len(at.sidebar.children) == 0
    assert {Path(str(p["script_path"])).name for p in at._registered_pages.values()} == {"rate.py"}


# ---------------------------------------------------------------- access policy, secrets, long records


@pytest.fixture
def served_everywhere() -> Iterator[None]:
    """The server bound to every interface (`--server.address 0.0.0.0`)."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    try:
        yield
    finally:
        config.set_option("server.address", before)


def test_the_committed_streamlit_config_binds_loopback_and_hides_details() -> None:
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"
    assert config["server"]["allowedHosts"] == ["localhost", "127.0.0.1", "::1"]  # no DNS-rebinding page connects
    assert config["client"]["showErrorDetails"] == "none"  # raters never see tracebacks
    assert config["client"]["toolbarMode"] == "minimal"  # no Deploy button


def test_an_admin_token_in_the_url_is_removed_at_once(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_ADMIN_TOKEN", "s3cret")
    at = app(admin="s3cret", trajectory="x")
    assert at.title[0].value == "Overview"
    assert "admin" not in at.query_params and at.query_params["trajectory"] == "x"  # the rest of the query stays
    at.switch_page("pages/audit.py").run()
    assert not at.exception and "admin" not in at.query_params and "s3cret" not in rendered(at)
    wrong = app(admin="guess")
    assert wrong.title[0].value == "GCPC" and "admin" not in wrong.query_params
    assert [e.value for e in wrong.error] == ["Wrong admin token."]
    rater = app(token=issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you"), admin="s3cret")
    assert rater.title[0].value == "Rating study" and "admin" not in rater.query_params


def test_without_an_admin_token_an_app_open_to_everyone_has_no_admin(demo_db: Path, served_everywhere: None) -> None:
    at = app()
    assert at.title[0].value == "GCPC" and not at.dataframe and len(at.sidebar.children) == 0
    assert any("no admin token" in e.value for e in at.error) and not at.text_input  # no form to guess at
    with pytest.raises(ValueError, match=r"Known pages: \[('[^',]*pages/sign_in\.py'(, )?)+\]\."):
        at.switch_page("pages/runs.py")
    rater = app(token=issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you"))
    assert [e.value for e in rater.error] == ["This app is not set up for study raters yet. Please tell the study organisers."]
    assert not rater.title and not rater.code


def test_a_rater_who_drops_the_token_gets_the_sign_in(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_ADMIN_TOKEN", "s3cret")
    at = app(token=issue_link(Store(demo_db), DEMO_STUDY_ID, "demo-you"))
    assert at.title[0].value == "Rating study"
    del at.query_params["token"]
    at.run()
    assert at.title[0].value == "GCPC" and len(at.sidebar.children) == 0 and not at.dataframe
    with pytest.raises(ValueError, match="Known pages"):
        at.switch_page("pages/runs.py")


def test_sign_in_attempts_are_limited(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gcpc_core.review import ui

    monkeypatch.setenv("GCPC_ADMIN_TOKEN", "s3cret")
    monkeypatch.setattr(ui, "SIGN_IN_LIMITS", SignInLimiter(max_failures=3, window_s=600))
    at = app()
    for guess in ("a", "b", "c"):
        at.text_input[0].input(guess)
        next(b for b in at.button if b.label == "Sign in").click().run()
        assert [e.value for e in at.error] == ["Wrong admin token."]
    at.text_input[0].input("s3cret")  # even the right token is not checked now
    next(b for b in at.button if b.label == "Sign in").click().run()
    assert at.title[0].value == "GCPC" and at.error[0].value.startswith("Too many failed sign-ins: try again in")
    at.query_params["admin"] = "s3cret"  # nor through the URL
    at.run()
    assert at.title[0].value == "GCPC" and "admin" not in at.query_params


def test_links_on_the_admin_page_use_the_served_address_and_can_be_shown_again(demo_db: Path) -> None:
    at = app()
    at.switch_page("pages/study_admin.py").run()
    base = next(t for t in at.text_input if t.label == "App URL for rater links")
    assert base.value == "http://127.0.0.1:8501"  # AppTest serves no URL: the configured address
    next(b for b in at.button if b.label == "Issue a new link").click().run()
    issued = next(c.value for c in at.code if "/rate?token=" in c.value)
    assert issued.startswith("http://127.0.0.1:8501/rate?token=")
    next(b for b in at.button if b.label == "Show link").click().run()
    assert [c.value for c in at.code if "/rate?token=" in c.value] == [issued]  # the same link, again
    base.set_value("https://rate.example.org").run()
    assert any("GCPC_ADMIN_TOKEN is not set" in read(w.value).shown for w in at.warning)  # escaped Markdown
    assert next(b for b in at.button if b.label == "Show link").disabled


def test_rate_page_pages_a_long_record_and_shows_hidden_characters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from drills.long_log import BIDI_TEXT, add_long_log_study

    db = tmp_path / "long.db"
    token = add_long_log_study(Store(db), steps=2_000)
    monkeypatch.setenv("GCPC_DB", str(db))
    monkeypatch.delenv("GCPC_ADMIN_TOKEN", raising=False)
    at = app(token=token)
    assert not at.exception and at.title[0].value == "Rating study"
    steps = [t.value for t in at.text if re.match(r"Step \d+ · ", t.value)]
    assert len(steps) == 25, steps  # one page of steps, not the whole record
    assert any("Steps 1–25 of 2,000 · page 1 of 80" == t.value for t in at.text)
    shown = " ".join(t.value for t in at.text)
    assert show_invisible(BIDI_TEXT) in shown and "\u202e" not in rendered(at)
    next(b for b in at.button if b.label == "Later steps").click().run()
    assert [t.value for t in at.text if t.value.startswith("Step ")][0].startswith("Step 26 ")
    # the controls come before the record
    labels = [b.label for b in at.button]
    assert labels.index("Save and next") < labels.index("Later steps")


def test_guidelines_are_written_for_raters() -> None:
    from annotations import load_guidelines

    text = load_guidelines().text
    code = re.findall(r"\b[a-z_]+\.[a-z_]+\b|\b[a-z]+_[a-z_]+\b|\.(?:py|md|yaml|toml)\b|\bgcpc\b|python -m", text)
    assert not code, f"guidelines name code or files: {code}"


def test_the_answer_history_shows_one_page_of_versions(demo_db: Path) -> None:
    from annotations import open_rater_session
    from gcpc_core.text import md_escape

    store = Store(demo_db)
    token = issue_link(store, DEMO_STUDY_ID, "demo-you")
    session = open_rater_session(store, token)
    unit = session.queue()[session.resume_index()].target
    for n in range(12):
        session.submit_rating(unit, 1 + n % 5, note=f"version note {n + 1}")
    at = app(token=token)  # resumes at the next open item: back to the one answered
    next(b for b in at.button if b.label == "Previous").click().run()
    assert not at.exception and md_escape(unit) in at.subheader[0].value  # the subheader is escaped Markdown
    history = next(e for e in at.expander if "history (12 versions)" in e.label)
    shown = [t.value for t in history.text]
    assert [s.split(".", 1)[0] for s in shown] == ["12", "11", "10", "9", "8"], shown  # one page, newest first
    assert shown[0].endswith("— version note 12")
    pager = history.selectbox(key=f"rate:demo-you:progress_rating:{unit}:history_page")
    assert pager.options == ["versions 12 to 8 (newest first)", "versions 7 to 3 (newest first)",
                             "versions 2 to 1 (newest first)"]
    pager.set_value(2).run()
    history = next(e for e in at.expander if "history (12 versions)" in e.label)
    assert [t.value.split(".", 1)[0] for t in history.text] == ["2", "1"]
