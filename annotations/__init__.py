"""Human annotations: item audits, and blinded human studies (progress ratings, pairwise preferences).

Pure logic over the project DB (`gcpc_core.store.Store` holds all SQL); the Streamlit pages
`pages/rate.py` and `pages/study_admin.py` and the `study` CLI verb are thin layers over it.

- `design`: stratified sampling, balanced pairs and assignments, frozen with a seed.
- `study`: create a study; `open_rater_session(token)` → the rater's token-scoped `RaterSession`.
- `blinding`: the rater-visible view of a trajectory and what it scrubs.
- `admin`: progress, live Krippendorff α, disagreements, reassignment, links.
- `exchange`: export (CSV / JSONL with the design) and validated, idempotent import.
- `frames`: `ratings_frame` / `preferences_frame`, the contract the analysis reads.
- `audits`: item audits of the review app, in the same append-only store.
- `simulate`: simulated raters for the demo study, labelled as such.
"""

from __future__ import annotations

from .admin import (
    AlphaResult,
    ReassignReport,
    add_rater,
    agreement,
    disagreements,
    issue_link,
    rater_progress,
    reassign,
    status_lines,
    unit_progress,
)
from .audits import item_audit_history, item_audits, record_item_audit
from .blinding import BlindingTerms, BlindStep, BlindTrajectory, blind_trajectory, collect_terms, preview
from .design import Candidate, DesignError, DesignParams, StudyDesign, make_design
from .exchange import ImportReport, export_csv, export_jsonl, import_responses, response_rows
from .frames import preferences_frame, ratings_frame
from .guidelines import Guidelines, load_guidelines
from .simulate import DEMO_STUDY_ID, add_demo_study, simulate_answers
from .study import (
    CHOICES,
    CreatedStudy,
    QueueItem,
    RaterSession,
    StudyInfo,
    SubmitResult,
    create_study,
    load_study,
    open_rater_session,
    rater_link,
)
from .tokens import LinkRefused, check_links_allowed, default_base_url, hash_token, invite_link, is_admin, new_token

__all__ = [
    "CHOICES",
    "DEMO_STUDY_ID",
    "AlphaResult",
    "BlindStep",
    "BlindTrajectory",
    "BlindingTerms",
    "Candidate",
    "CreatedStudy",
    "LinkRefused",
    "DesignError",
    "DesignParams",
    "Guidelines",
    "ImportReport",
    "QueueItem",
    "RaterSession",
    "ReassignReport",
    "StudyDesign",
    "StudyInfo",
    "SubmitResult",
    "add_demo_study",
    "add_rater",
    "agreement",
    "blind_trajectory",
    "check_links_allowed",
    "collect_terms",
    "create_study",
    "default_base_url",
    "disagreements",
    "export_csv",
    "export_jsonl",
    "hash_token",
    "import_responses",
    "invite_link",
    "is_admin",
    "issue_link",
    "item_audit_history",
    "item_audits",
    "load_guidelines",
    "load_study",
    "make_design",
    "new_token",
    "open_rater_session",
    "preferences_frame",
    "preview",
    "rater_link",
    "rater_progress",
    "ratings_frame",
    "reassign",
    "record_item_audit",
    "response_rows",
    "simulate_answers",
    "status_lines",
    "unit_progress",
]
