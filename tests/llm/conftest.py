"""Fixtures for LLM-layer tests: the fake OpenAI server and a layer pointed at it.

Tests use short client timeouts and the fake server's short Retry-After headers,
so every fault test finishes in well under a second.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # `fake_openai` lives in tests/, shared with the judging tests
    sys.path.insert(0, str(TESTS_DIR))

from fake_openai import FAKE_MODEL, FakeOpenAI  # noqa: E402

from gcpc_core.llm import LLM, LLMConfig, Price  # noqa: E402
from gcpc_core.store import Store  # noqa: E402

TEST_PRICES = {FAKE_MODEL: Price(input=1.0, cached_input=0.5, output=2.0)}
"""USD per 1M tokens: round numbers so cost assertions are exact."""


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake server; stopped at teardown."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def llm_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """Environment variables pointing the layer at the fake server."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GCPC_MODEL", FAKE_MODEL)
    return fake_openai


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh project DB (closed at teardown)."""
    db = Store(tmp_path / "project.db")
    yield db
    db.close()


@pytest.fixture
def make_llm(fake_openai: FakeOpenAI, store: Store):
    """Factory for an LLM against the fake server; keyword arguments override the config."""

    def make(*, use_store: bool = True, **overrides) -> LLM:
        settings = {
            "model": FAKE_MODEL,
            "base_url": fake_openai.url,
            "api_key": "sk-test",
            "timeout": 2.0,
            "max_retries": 2,
            **overrides,
        }
        config = LLMConfig(**settings)
        return LLM(config, store=store if use_store else None, prices=TEST_PRICES)

    return make
