"""Shared test fixtures.

``realdata_dir``: the public profiler outputs in ../shared/realdata (beside
the checkout). Tests that use it skip when the folder is absent; its files
are never copied into the repository.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
