"""Tests of gcpc_core.cli: every verb end to end, one meaning per option name, help examples, pipes."""
