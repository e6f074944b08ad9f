"""Page support for the review app: everything the pages show is computed here, unit-tested.

- `excerpts`: locating quotes, excerpts with the quote highlighted inside its lines (escaped HTML), collapsing
  (Markdown escaping is `gcpc_core.text`).
- `quote_select`: choosing a task quote by mouse or keyboard, mapped back to the exact span of the instruction.
- `logview`: the full log viewer (kinds, search, tool calls with their outputs, paging).
- `audit`: trajectories to audit with filters; item views with quotes, verifier refs, CTRF status
  and located citations; recording audits (through `annotations.audits`).
- `pairs`: matched with/without-Skills pairs and one pair item by item.
- `checklists`: stored versions, gate results, hand edits checked live and saved as new versions.
- `runs`: background import / judge / score / synthesize jobs and live run progress.
- `agreement`: the analysis dashboard (report tables, figures) and auditor agreement.
- `auditloop`: the Triage page: ranked disagreements, the next audits, calibration and the audited figures.
- `compare`: the Compare runs page: the labelled runs and the comparison of two.
- `overview`: project status per judge and per study.
- `scores`: what each score means, and one trajectory's scores read back as sentences.
- `ui`: the Streamlit glue (page guard, caches, safe renderers); the only module importing streamlit.
"""

from __future__ import annotations

__all__ = ["agreement", "audit", "auditloop", "checklists", "compare", "excerpts", "logview", "overview", "pairs",
           "quote_select", "runs", "scores"]
