"""Shared fixtures: the real SkillsBench sample (read in place), a fresh project DB, ready-made demo and
real-corpus projects (built once per session; tests write to private copies), and the fake OpenAI server
with LLM layers pointed at it."""

from __future__ import annotations

import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fake_openai import FAKE_MODEL, FakeOpenAI

from gcpc_core.store import Store

if TYPE_CHECKING:
    from gcpc_core.llm import LLM

SKILLSBENCH = Path(__file__).resolve().parents[1].parent / "shared" / "skillsbench"


@pytest.fixture(scope="session")
def skillsbench() -> Path:
    """`../shared/skillsbench`, or a skip saying why the real-data test cannot run."""
    if not (SKILLSBENCH / "tasks").is_dir() or not (SKILLSBENCH / "trials").is_dir():
        pytest.skip(f"real SkillsBench sample not found at {SKILLSBENCH}")
    return SKILLSBENCH


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """An empty project DB in a temporary folder (closed at teardown)."""
    db = Store(tmp_path / "project.db")
    yield db
    db.close()


def copy_db(source: Path, target: Path) -> Path:
    """Copy a project DB with its WAL file, so a test can write to its own copy."""
    for suffix in ("", "-wal"):
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{target}{suffix}")
    return target


@pytest.fixture(scope="session")
def demo_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project (probe judgments and scores, SIMULATED study), built once; copy before writing."""
    from gcpc_core.demo import build_demo_project

    db = tmp_path_factory.mktemp("demo-master") / "demo.db"
    build_demo_project(db)
    return db


@pytest.fixture(autouse=True)
def _main_module_restored() -> Iterator[None]:
    """Streamlit's AppTest runs a page as `__main__` and leaves it there; a process spawned later in the
    same run (the load drill's pool) would then re-execute that page on start-up and die."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(autouse=True)
def _sigint_handler_kept(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves its own SIGINT handler behind changes what Ctrl-C does in every later test
    (asyncio.run turns SIGINT into a cancellation only while Python's default handler is installed):
    the handler is put back and the test that changed it fails, named."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"{request.node.nodeid} left SIGINT handled by {after!r} (was {before!r})", pytrace=False)


@pytest.fixture
def demo_copy(demo_master: Path, tmp_path: Path) -> Path:
    """A private, writable copy of the demo project."""
    return copy_db(demo_master, tmp_path / "demo.db")


@pytest.fixture
def project(demo_copy: Path) -> Iterator[Store]:
    """A private copy of the demo project: 36 trials, frozen demo checklists, probe judgments and scores."""
    store = Store(demo_copy)
    yield store
    store.close()


REAL_CHECKLISTS = Path(__file__).resolve().parent / "fixtures" / "checklists"


@pytest.fixture(scope="session")
def real_master(skillsbench: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real SkillsBench sample imported, its hand-written checklists frozen, probe-judged and scored."""
    from gcpc_core.checklist import load_checklist_file, load_rules
    from gcpc_core.checklist.registry import register_checklist
    from gcpc_core.ingest import import_project
    from gcpc_core.judge import judge_project, score_project

    db = tmp_path_factory.mktemp("real-master") / "real.db"
    store = Store(db)
    import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=skillsbench / "trials", progress=False)
    rules = load_rules()
    for path in sorted(REAL_CHECKLISTS.glob("*.yaml")):
        row, failures = register_checklist(store, load_checklist_file(path), created_by="test", rules=rules)
        assert row is not None, failures
    judge_project(store, judge="probe", progress=False, rules=rules)
    score_project(store)
    store.close()
    return db


@pytest.fixture
def real_copy(real_master: Path, tmp_path: Path) -> Path:
    """A private, writable copy of the real-corpus project."""
    return copy_db(real_master, tmp_path / "real.db")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI server (tests/fake_openai.py); stopped at teardown."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def llm_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """Environment variables pointing the LLM layer (and so the CLI) at the fake server."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GCPC_MODEL", FAKE_MODEL)
    return fake_openai


@pytest.fixture
def llm_store(store: Store) -> Store:
    """The project DB `make_llm` layers cache and record into (judging tests override it)."""
    return store


@pytest.fixture
def make_llm(fake_openai: FakeOpenAI, llm_store: Store) -> Callable[..., LLM]:
    """Factory for an LLM layer against the fake server, storing into `llm_store` (none with
    `use_store=False`); keywords override the config. Short client timeouts, and the server's
    short Retry-After headers, keep every fault test well under a second."""
    from gcpc_core.llm import LLM, LLMConfig, Price

    prices = {FAKE_MODEL: Price(input=1.0, cached_input=0.5, output=2.0)}  # round numbers: exact cost assertions

    def make(*, use_store: bool = True, **overrides: Any) -> LLM:
        settings = {"model": FAKE_MODEL, "base_url": fake_openai.url, "api_key": "sk-test", "timeout": 2.0,
                    "max_retries": 2, **overrides}
        return LLM(LLMConfig(**settings), store=llm_store if use_store else None, prices=prices)

    return make
