"""Tests of gcpc_core.analysis: statistics on hand-computed fixtures, bootstrap, report end to end."""
