"""Tokens and what they cost: `Usage` per call, the price table (`prices.yaml`, overridable with
`GCPC_PRICES`), and `RunTotals`, what one run spent, written to its `runs` row.

A call whose model has no price is counted as unpriced rather than as free, so a run's cost is
either a real estimate or says it is unknown.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ENV_PRICES

__all__ = [
    "BATCH_PRICE_FACTOR",
    "DEFAULT_PRICES_PATH",
    "Price",
    "RunTotals",
    "Usage",
    "estimate_cost",
    "load_prices",
    "price_for",
]

DEFAULT_PRICES_PATH = Path(__file__).with_name("prices.yaml")

BATCH_PRICE_FACTOR = 0.5
"""Batch-API tokens are billed at half the list price (OpenAI); applied to batch cost estimates."""


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens."""

    input: float
    output: float
    cached_input: float | None = None


def load_prices(path: str | Path | None = None) -> dict[str, Price]:
    """The price table: `prices.yaml`, then the file named by `GCPC_PRICES` (or `path`) on top."""
    import yaml

    table: dict[str, Price] = {}
    extra = path or os.environ.get(ENV_PRICES)
    for source in (DEFAULT_PRICES_PATH, Path(extra) if extra else None):
        if source is None:
            continue
        data = yaml.safe_load(Path(source).read_text(encoding="utf-8")) or {}
        for name, row in data.items():
            table[str(name)] = Price(**row)
    return table


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """Longest price-table key that the model name starts with (a `provider/` prefix is dropped)."""
    name = model.rsplit("/", 1)[-1]
    matches = [key for key in prices if name == key or name.startswith(key)]
    return prices[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class Usage:
    """Tokens of one call, or summed over many."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    """Part of `prompt_tokens` the provider served from its prompt cache."""
    completion_tokens: int = 0

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Usage:
        usage = body.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return cls(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            cached_tokens=int(details.get("cached_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.cached_tokens + other.cached_tokens,
            self.completion_tokens + other.completion_tokens,
        )


def estimate_cost(usage: Usage, price: Price | None) -> float | None:
    """USD for `usage` at `price`; None when the price is unknown (never a misleading 0)."""
    if price is None:
        return None
    cached_price = price.input if price.cached_input is None else price.cached_input
    uncached = max(usage.prompt_tokens - usage.cached_tokens, 0)
    return (
        uncached * price.input + usage.cached_tokens * cached_price + usage.completion_tokens * price.output
    ) / 1_000_000


@dataclass
class RunTotals:
    """What one run spent so far; `runs.run_stage` writes it to the `runs` row at the end."""

    run_id: str | None = None
    calls: int = 0
    http_calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Calls with tokens but no price: `cost_usd` then understates the run and says so."""
    structured_mode: str | None = None
    """The structured mode the run's requests used (negotiated or set); None: no LLM call."""

    def add(self, *, usage: Usage, cost: float | None, cache_hit: bool, error: bool) -> None:
        self.calls += 1
        self.cache_hits += int(cache_hit)
        self.http_calls += int(not cache_hit)
        self.errors += int(error)
        self.usage = self.usage + usage
        if cost is None:
            self.unpriced_calls += int(usage != Usage())
        else:
            self.cost_usd += cost

    @property
    def cost_or_none(self) -> float | None:
        """The run's cost, or None when no call could be priced."""
        return None if self.unpriced_calls and not self.cost_usd else self.cost_usd

    def summary(self, *, http: bool = True) -> str:
        """Calls, tokens and cost, worded alike in every run report."""
        cost = "unknown" if self.cost_or_none is None else f"${self.cost_or_none:.4f}"
        calls = f"{self.http_calls} HTTP, {self.cache_hits} cached" if http else f"{self.cache_hits} cached"
        mode = f", structured mode {self.structured_mode}" if self.structured_mode else ""
        return (
            f"{self.calls} calls ({calls}), tokens {self.usage.prompt_tokens} prompt ({self.usage.cached_tokens} "
            f"cached) + {self.usage.completion_tokens} completion, cost {cost}{mode}"
        )

    def as_row(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "http_calls": self.http_calls,
            "cache_hits": self.cache_hits,
            "errors": self.errors,
            "prompt_tokens": self.usage.prompt_tokens,
            "cached_tokens": self.usage.cached_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": self.cost_or_none,
            "unpriced_calls": self.unpriced_calls,
            "structured_mode": self.structured_mode,
        }
