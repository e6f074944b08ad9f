"""Start-up weight: the command line and the pure analysis load no LLM client (issue 24: every CLI call
paid ~3 s, 1.4 s of it importing 522 `openai` modules through the judge registry).

Each check runs in a fresh interpreter, so what the test process already imported cannot hide a load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("openai", "httpx2", "pandas", "numpy", "plotly", "sklearn", "scipy", "streamlit", "yaml")


def _loaded_after(code: str) -> set[str]:
    """Top-level packages among HEAVY (plus sqlite_utils and pydantic) that `code` leaves in sys.modules."""
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))")
    run = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("module", ["gcpc_core.analysis", "gcpc_core.judge", "gcpc_core.llm", "gcpc_core.checklist"])
def test_importing_a_stage_does_not_import_the_llm_client(module: str) -> None:
    loaded = _loaded_after(f"import {module}")
    assert "openai" not in loaded and "httpx2" not in loaded


def test_building_the_parser_and_its_help_import_only_the_standard_library() -> None:
    loaded = _loaded_after("import contextlib, io\nfrom gcpc_core.cli import main\n"
                           "with contextlib.redirect_stdout(io.StringIO()):\n"
                           "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert not loaded & {*HEAVY, "sqlite_utils", "pydantic"}


def test_info_loads_the_store_but_no_analysis_stack(demo_master: Path) -> None:
    """`info` needs the store (sqlite-utils, pydantic) and nothing else: not the pandas and numpy that
    sqlite-utils would load for type inference GCPC never uses (`store.lean_import`)."""
    loaded = _loaded_after("import contextlib, io\nfrom gcpc_core.cli import main\n"
                           f"with contextlib.redirect_stdout(io.StringIO()):\n    main(['info', '--db', {str(demo_master)!r}])")
    assert "sqlite_utils" in loaded
    assert not loaded & set(HEAVY)


def test_pandas_still_imports_after_the_lean_store_import() -> None:
    loaded = _loaded_after("import gcpc_core.store\nimport pandas, numpy\nassert pandas.DataFrame({'a': [1]}).shape == (1, 1)")
    assert {"pandas", "numpy"} <= loaded
