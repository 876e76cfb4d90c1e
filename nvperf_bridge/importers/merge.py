"""Combining files: joins for files of one run, concatenation for the rest."""

from __future__ import annotations

import pandas as pd

from nvperf_bridge.importers.base import Parsed
from nvperf_bridge.kernelframe import ImportResult


def combine(parsed: list[Parsed]) -> ImportResult:
    """Concatenate parsed files into one ImportResult (joins come in a later step)."""
    frames = [p.frame for p in parsed]
    kernels = pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame()
    return ImportResult(kernels=kernels, inputs=[p.info for p in parsed], warnings=[])
