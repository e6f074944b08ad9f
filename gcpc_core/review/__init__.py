"""Page support for the review app: everything the pages show is computed here, unit-tested.

- `text`: locating quotes, excerpts with the quote highlighted inside its lines (escaped HTML), collapsing,
  Markdown escaping.
- `logview`: the full log viewer (kinds, search, tool calls with their outputs, paging).
- `audit`: trajectories to audit with filters; item views with quotes, verifier refs, CTRF status
  and located citations; recording audits (through `annotations.audits`).
- `pairs`: matched with/without-Skills pairs and one pair item by item.
- `checklists`: stored versions, gate results, hand edits checked live and saved as new versions.
- `runs`: background import / judge / score / synthesize jobs and live run progress.
- `agreement`: the analysis dashboard (report tables, figures) and auditor agreement.
- `overview`: project status per judge and per study.
- `scores`: what each score means, and one trajectory's scores read back as sentences.
- `ui`: the Streamlit glue (page guard, caches, safe renderers); the only module importing streamlit.
"""

from __future__ import annotations

__all__ = ["agreement", "audit", "checklists", "logview", "overview", "pairs", "runs", "scores", "text"]
