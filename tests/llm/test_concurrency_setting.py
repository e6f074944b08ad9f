"""Issue 27 part 7a: GCPC_LLM_CONCURRENCY is honoured wherever an LLM is configured — an explicit
value (`--concurrency`, the Runs page's field) wins, the environment beats the default (8), and an
invalid value is a clear error naming the variable."""

from __future__ import annotations

import pytest

from gcpc_core.cli import build_parser
from gcpc_core.llm import (
    DEFAULT_CONCURRENCY,
    ENV_CONCURRENCY,
    LLM,
    InvalidSetting,
    LLMConfig,
    LLMNotConfigured,
    llm_status,
)
from gcpc_core.review import runs as review_runs

ENDPOINT = {"GCPC_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"}


def test_default_is_eight() -> None:
    assert DEFAULT_CONCURRENCY == 8
    assert LLMConfig.from_env(env=ENDPOINT, concurrency=None).concurrency == 8


def test_env_beats_default_when_no_flag() -> None:
    assert LLMConfig.from_env(env={**ENDPOINT, ENV_CONCURRENCY: "3"}, concurrency=None).concurrency == 3


def test_flag_beats_env() -> None:
    assert LLMConfig.from_env(env={**ENDPOINT, ENV_CONCURRENCY: "3"}, concurrency=5).concurrency == 5


@pytest.mark.parametrize("raw", ["many", "2.5", "0", "-1"])
def test_invalid_env_value_names_the_variable(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**ENDPOINT, ENV_CONCURRENCY: raw}
    with pytest.raises(InvalidSetting, match=ENV_CONCURRENCY):
        LLMConfig.from_env(env=env)
    ok, reason = llm_status(env=env)
    assert not ok and ENV_CONCURRENCY in reason and repr(raw) in reason
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(LLMNotConfigured, match=ENV_CONCURRENCY):
        LLM.from_env()


def test_llm_from_env_threads_none_through(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**ENDPOINT, ENV_CONCURRENCY: "6"}.items():
        monkeypatch.setenv(name, value)
    assert LLM.from_env(concurrency=None).config.concurrency == 6
    assert LLM.from_env(concurrency=2).config.concurrency == 2
    monkeypatch.delenv(ENV_CONCURRENCY)
    assert LLM.from_env(concurrency=None).config.concurrency == 8


@pytest.mark.parametrize("argv", [
    ["judge", "--db", "x.db", "--judge", "gcpc"],
    ["perturb", "--db", "x.db", "--judge", "gcpc"],
    ["synthesize", "--db", "x.db"],
    ["batch", "collect", "--db", "x.db"],
])
def test_cli_concurrency_defaults_to_none(argv: list[str]) -> None:
    """No flag: None reaches the config, which then reads the environment (an argparse default of 8
    would silently override it)."""
    assert build_parser().parse_args(argv).concurrency is None
    assert build_parser().parse_args([*argv, "--concurrency", "3"]).concurrency == 3


@pytest.mark.parametrize(("given", "expected"), [(None, None), ("", None), (4, 4)])
def test_runs_page_concurrency(given: object, expected: int | None) -> None:
    """The Runs page's field left empty passes None (environment, else 8); a number given wins."""
    assert review_runs._concurrency({"concurrency": given}) == expected
    assert review_runs._concurrency({}) is None


def test_runs_page_passes_none_to_judge_project(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    class Report:
        run_id = None

        def lines(self) -> list[str]:
            return []

    def fake_judge_project(store, **kwargs):
        seen.update(kwargs)
        return Report()

    monkeypatch.setattr(review_runs, "judge_project", fake_judge_project)
    job = review_runs.Job(id="j", db_path="x.db", kind="judge", params={"judge": "probe", "concurrency": None},
                          started_at="now")
    review_runs._judge(None, job)
    assert seen["concurrency"] is None
