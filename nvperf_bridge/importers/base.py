"""What one importer returns for one file, before files are combined."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nvperf_bridge.kernelframe import InputFile


@dataclass
class Parsed:
    """One file as read: a canonical frame (one row per launch or per kernel) and its record.

    ``per_kernel`` is True for summary formats (nvprof --metrics, gpu-summary):
    one row stands for ``invocations`` launches. ``join`` says how this file
    combines with others of the same run: "name" (nvprof metrics/trace pairs)
    or "launch" (ncu files that share launch IDs).
    """

    frame: pd.DataFrame
    info: InputFile
    per_kernel: bool = False
    join: str = "launch"
    kinds: dict[str, str] = field(default_factory=dict)
    rules: pd.DataFrame | None = None  # ncu guidance rows (kernelframe.RULE_COLUMNS), keyed by this file's kernel_id
    # each row's kernel_name factorized, (codes, distinct names) as pd.factorize gives them, where the importer
    # knows it (a trace's names): joins group a million launches by code instead of hashing each name again
    names: tuple[np.ndarray, np.ndarray] | None = None


def count_reasons(reasons: pd.Series, lines: pd.Series) -> list[str]:
    """'12 rows: memcpy (not a kernel), first at line 5' per distinct reason, without a loop per row."""
    out = []
    if reasons.empty:
        return out
    grouped = pd.DataFrame({"reason": reasons.to_numpy(), "line": lines.to_numpy()}).groupby("reason", sort=False)["line"]
    for reason, first, count in zip(grouped.min().index, grouped.min().to_numpy(), grouped.size().to_numpy()):
        out.append(f"{count} row{'s' if count != 1 else ''}: {reason} (first at line {first})")
    return out
