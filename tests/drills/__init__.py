"""Reliability drills (issue 8): load, kill -9 resume, importer fuzz, security fixtures.

Each drill is a plain function returning its figures, so `tests/drills/test_*.py` asserts on them
and `bench/drills.py` prints them; both need `tests/` on `sys.path` (pytest's rootdir does that).
"""
