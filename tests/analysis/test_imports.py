"""The analysis is pure over frames: importing it (any of its modules) loads no judge, no LLM layer and no
`openai` client, which the judge registry once pulled in for a type hint (1.4 s on every analysis import)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("openai", "gcpc_core.llm", "gcpc_core.judge", "annotations")
"""Modules (and their submodules) the analysis must not load."""

PROBE = """
import json, pkgutil, sys
import gcpc_core.analysis
for info in pkgutil.iter_modules(gcpc_core.analysis.__path__):
    __import__(f"gcpc_core.analysis.{info.name}")
heavy = %r
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
"""


def loaded_after_importing_the_analysis(heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of `heavy` a fresh interpreter holds after importing `gcpc_core.analysis` and every submodule."""
    out = subprocess.run([sys.executable, "-c", PROBE % (heavy,)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_analysis_imports_no_llm_client_and_no_judge() -> None:
    assert loaded_after_importing_the_analysis() == []


def test_the_probe_sees_what_the_analysis_does_load() -> None:
    """Guards the test above against a probe that imports nothing: pandas is loaded, so it is reported."""
    assert "pandas" in loaded_after_importing_the_analysis(("pandas",))
