"""Defaults that the command line shows in `--help` and the stages use, in a module with no imports.

Building the parser (every `python -m gcpc_core … --help`, every verb's start) must not load a stage:
the stage packages bring the store, pydantic, pandas and more (seconds on a busy 2-core machine). So the
few values a parser needs as defaults or choices live here, and the stages take them from here too
(`ingest.trials`, `analysis.sensitivity` re-export them under their usual names): one definition each.
"""

from __future__ import annotations

__all__ = ["AUDIT_TARGET_WIDTH", "DEFAULT_CONCURRENCY", "DEFAULT_MAX_LOG_BYTES", "DEFAULT_PASS_THRESHOLD", "DEMO_SEED",
           "ENV_CONCURRENCY", "PERTURB_SCOPES"]

DEFAULT_PASS_THRESHOLD = 1.0
"""A trial is PASS when its reward is at least this."""
DEFAULT_MAX_LOG_BYTES = 25 * 2**20
"""Agent logs larger than this are skipped at import."""
PERTURB_SCOPES: tuple[str, ...] = ("cited", "log")
"""Where an evidence perturbation replaces a cited span: the cited event only, or every evidence event
holding it; the first is the default."""
AUDIT_TARGET_WIDTH = 0.10
"""How narrow a judge's error-rate interval must be before its auditing may stop (`analysis.active.should_stop`):
the Triage page's and `triage --target-width`'s default, and what `info --task-status` and the Overview call done."""
DEMO_SEED = 7
"""The seed of the shipped demo corpus and project (`demo --seed` changes the simulated variation)."""
ENV_CONCURRENCY = "GCPC_LLM_CONCURRENCY"
"""The environment variable that sets how many LLM requests are in flight."""
DEFAULT_CONCURRENCY = 8
"""HTTP requests in flight when neither `--concurrency` (or the Runs page's field) nor
`GCPC_LLM_CONCURRENCY` says otherwise (`llm.config` resolves it; the parser only names it)."""
