"""GCPC analysis: pure functions over pandas frames, and the report built from them.

Frame contracts are documented in `gcpc_core.analysis.frames`. One module per concern:
`discrimination` (AUC, clustered bootstrap, paired ΔAUC), `agreement` (human agreement),
`skills` (matched with/without-skills pairs), `ablations`, `item_accuracy` (verifier-grounded),
`perturb` (evidence perturbation) and `sensitivity` (perturb, re-judge through the judge's own
path, store, and the flip shares), `figures`, `report`; `audits`, `sensitivity` and `run_names` read
their frames from a project DB (`gcpc_core.project_frames` loads them all); `synthetic` builds a
consistent synthetic project as frames (benchmark, tests, trying the report).
"""

from .ablations import VARIANTS, perfect_agreement, score_variants
from .agreement import (
    CHOICES,
    REJECTED_COLUMNS,
    TIE,
    alpha_table,
    human_rating_matrix,
    judge_chosen,
    krippendorff_alpha,
    mean_ratings,
    pairwise_agreement,
    preference_choices,
    preference_votes,
    rating_scale,
    spearman_table,
    usable_preferences,
    usable_ratings,
)
from .bootstrap import MIN_CLUSTERS, cluster_counts, clustered_ci, draw_clusters, draw_members, percentile_ci
from .discrimination import (
    AucBootstrap,
    auc_draws,
    auc_table,
    bootstrap_auc,
    delta_auc_table,
    mann_whitney_kernel,
    roc_data,
)
from .figures import agreement_figure, delta_histogram_figure, item_change_heatmap, roc_figure, sensitivity_figure
from .frames import (
    FrameContractError,
    JudgeOrder,
    common_subset,
    is_available,
    judge_order_of,
    require_columns,
    trajectory_outcomes,
    with_judge_order,
)
from .item_accuracy import (
    VERDICTS,
    VERIFIER_BASES,
    assertion_truth,
    confusion_table,
    ctrf_node_status,
    ctrf_pass_fraction,
    decided_by_verifier,
    item_accuracy_table,
    node_id,
)
from .perturb import perturb_span
from .report import FRAME_NAMES, ReportResult, build_report
from .sensitivity import (
    SCOPES,
    PerturbationError,
    perturb_events,
    perturbation_frame,
    sensitivity_table,
)
from .skills import PAIR_KEY, TRANSITIONS, item_changes, matched_pairs, transition_table

__all__ = [
    "CHOICES",
    "FRAME_NAMES",
    "MIN_CLUSTERS",
    "PAIR_KEY",
    "REJECTED_COLUMNS",
    "SCOPES",
    "TIE",
    "TRANSITIONS",
    "VARIANTS",
    "VERDICTS",
    "VERIFIER_BASES",
    "AucBootstrap",
    "FrameContractError",
    "JudgeOrder",
    "PerturbationError",
    "ReportResult",
    "agreement_figure",
    "alpha_table",
    "assertion_truth",
    "auc_draws",
    "auc_table",
    "bootstrap_auc",
    "build_report",
    "cluster_counts",
    "clustered_ci",
    "common_subset",
    "confusion_table",
    "ctrf_node_status",
    "ctrf_pass_fraction",
    "decided_by_verifier",
    "delta_auc_table",
    "delta_histogram_figure",
    "draw_clusters",
    "draw_members",
    "human_rating_matrix",
    "is_available",
    "item_accuracy_table",
    "item_change_heatmap",
    "item_changes",
    "judge_chosen",
    "krippendorff_alpha",
    "mann_whitney_kernel",
    "matched_pairs",
    "mean_ratings",
    "node_id",
    "judge_order_of",
    "with_judge_order",
    "pairwise_agreement",
    "percentile_ci",
    "perfect_agreement",
    "perturb_events",
    "perturb_span",
    "perturbation_frame",
    "preference_choices",
    "preference_votes",
    "rating_scale",
    "require_columns",
    "roc_figure",
    "roc_data",
    "score_variants",
    "sensitivity_figure",
    "sensitivity_table",
    "spearman_table",
    "trajectory_outcomes",
    "transition_table",
    "usable_preferences",
    "usable_ratings",
]
