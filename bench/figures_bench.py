"""The headline figures of the demo project and of the synthetic project at paper scale, as the report computes them.

    python bench/figures_bench.py [--n-boot 10000]

Prints (1) the demo's RQ1 table (AUC per judge vs official PASS, its interval and note) and the AUC of
each score variant (raw verdicts, PASS propagation, endpoint item, both), and the demo's preference α
(humans, and with each judge as a coder); (2) the preference α of the synthetic project at paper scale
(4,455 trajectories, 96 preference pairs × 3 raters). The demo is built in a temporary folder (simulated
data, a few seconds). Only the report's public functions are called, so the script prints the same
figures for any version of the code whose checkout it is copied into (it runs the code beside it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gcpc_core.analysis.report import report_tables  # noqa: E402
from gcpc_core.analysis.synthetic import synthetic_frames  # noqa: E402
from gcpc_core.demo import build_demo_project  # noqa: E402
from gcpc_core.project_frames import frames_from_store  # noqa: E402
from gcpc_core.store import Store  # noqa: E402

AUC_COLUMNS = ["judge", "n", "n_tasks", "auc", "ci_low", "ci_high", "note"]


def _show(title: str, frame: pd.DataFrame, columns: list[str]) -> None:
    print(title)
    print(frame[[c for c in columns if c in frame.columns]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-boot", type=int, default=10_000, help="bootstrap draws (default %(default)s)")
    args = ap.parse_args()
    import gcpc_core

    print(f"code: {Path(gcpc_core.__file__).resolve().parent.parent}")
    with tempfile.TemporaryDirectory(prefix="gcpc-figures-") as work:
        db = Path(work) / "demo.db"
        build_demo_project(db)
        frames = frames_from_store(Store(db))
        demo = report_tables(frames, ["discrimination", "agreement", "ablations"], n_boot=args.n_boot, seed=0)
    t = demo.tables
    _show("\ndemo, RQ1 headline (discrimination_auc):", t["discrimination_auc"], [*AUC_COLUMNS[:1], "score",
                                                                                  *AUC_COLUMNS[1:]])
    _show("\ndemo, AUC per score variant (ablation_variant_auc):", t["ablation_variant_auc"],
          ["judge", "variant", "n", "auc", "ci_low", "ci_high"])
    _show("\ndemo, Krippendorff's α (agreement_alpha):", t["agreement_alpha"],
          ["data", "coders", "alpha", "n_units", "n_answers"])
    synthetic = synthetic_frames()
    alpha = report_tables(synthetic, ["agreement"], n_boot=200, seed=0).tables["agreement_alpha"]
    _show("\nsynthetic project at paper scale, preference α:", alpha[alpha["data"] == "preferences"],
          ["coders", "alpha", "n_units", "n_answers"])


if __name__ == "__main__":
    main()
