"""Shared test fixtures.

Hypothesis profiles: property tests are derandomized (see below).

``realdata_dir``: the public profiler outputs in ../shared/realdata (beside
the checkout). Tests that use it skip when the folder is absent; its files
are never copied into the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests (hypothesis) draw the same examples on every run, derived from each test's source
# (derandomize): a failure seen once, in CI or under load, replays on the next run and on any machine
# instead of vanishing. print_blob prints the @reproduce_failure line for a failing example.
# HYPOTHESIS_PROFILE=explore draws fresh random examples (to hunt for new failures; the database in
# .hypothesis/ then keeps what it found).
settings.register_profile("replayable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "replayable"))

REPO_ROOT = Path(__file__).resolve().parent.parent
REALDATA = REPO_ROOT.parent / "shared" / "realdata"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def realdata_dir() -> Path:
    if not REALDATA.is_dir():
        pytest.skip("../shared/realdata is not present")
    return REALDATA


def realdata_files() -> list[Path]:
    """Every profiler output under ../shared/realdata (empty when absent), for parametrising."""
    if not REALDATA.is_dir():
        return []
    return sorted(p for p in REALDATA.rglob("*") if p.is_file() and p.name != "README.md")
