"""The app verb: `gcpc app [--db FILE] [streamlit options]` serves the review app from any folder."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .common import add_db, add_verb, fail

__all__ = ["APP_SCRIPT", "REPO_ROOT", "add_app", "streamlit_command"]

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The checkout `gcpc_core` runs from (an editable install points here): app.py, pages/, rules/, .streamlit/."""
APP_SCRIPT = REPO_ROOT / "app.py"


def streamlit_command(extra: list[str]) -> list[str]:
    """`streamlit run app.py` with the caller's options, run by this interpreter (its environment's streamlit)."""
    return [sys.executable, "-m", "streamlit", "run", str(APP_SCRIPT), *extra]


def _cmd_app(args: argparse.Namespace) -> int:
    if not APP_SCRIPT.is_file():
        fail("app", f"{APP_SCRIPT}: not found; the app runs from the repository checkout (install it with "
                    "`pip install -e <checkout>`)")
    env = dict(os.environ)
    db = args.db or env.get("GCPC_DB")
    if db:
        if not Path(db).is_file():
            fail("app", f"{db}: no such project DB")
        env["GCPC_DB"] = str(Path(db).resolve())
    # No change of folder is needed for the committed settings (loopback address, no error details): besides
    # ~/.streamlit/ and the current folder's .streamlit/, Streamlit reads the .streamlit/config.toml beside the
    # script it runs, last, so the checkout's wins (and options given here override it). Relative paths the
    # caller passes on keep meaning what they meant in the caller's folder.
    sys.stdout.flush()
    os.execve(sys.executable, streamlit_command(args.streamlit_args), env)
    return 0  # not reached: the process is Streamlit's now


def add_app(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "app", help="serve the review app (the embedded demo project without --db or $GCPC_DB)",
                 example="--db project.db --server.port 8600",
                 description="Run the Streamlit review app of this checkout with its committed settings "
                 "(.streamlit/config.toml: loopback only, port 8501) on the project DB given by --db or "
                 "$GCPC_DB, else on the embedded demo project (simulated data). Every other option goes to "
                 "`streamlit run`, e.g. --server.port 8600 or --server.headless true.",
                       allow_abbrev=False)
    add_db(p, "project DB to open (default: $GCPC_DB, else the demo project)", required=False)
    p.set_defaults(func=_cmd_app, streamlit_args=[])
