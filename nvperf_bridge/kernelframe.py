"""What the importers hand over: the KernelFrame and a record of what was read."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class InputFile:
    """One input file as read: its detected format and what happened to its rows."""

    path: str
    format: str  # "ncu-raw", "ncu-details", "nvprof-metrics", "nvprof-trace", "nvprof-summary", "kernel-yaml"
    kernels: int  # kernel rows this file contributed
    device: str | None = None
    skipped: list[str] = field(default_factory=list)  # "line 12: memcpy row (not a kernel)", counted per reason
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    """The canonical KernelFrame plus the files it came from and what to tell the user."""

    kernels: pd.DataFrame
    inputs: list[InputFile]
    warnings: list[str] = field(default_factory=list)
