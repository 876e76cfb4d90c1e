"""What one importer returns for one file, before files are combined."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

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
    # columns the importer has not made yet (a trace's launch ids: a million Python strings that only a report
    # of its launches reads), added to ``frame`` the first time it is read; ``lean`` is the frame without them
    deferred: Deferred | None = None

    @property
    def lean(self) -> pd.DataFrame:
        """The frame without its ``deferred`` columns (every other column, every row), not making them."""
        return self._frame

    @property
    def columns(self) -> list[str]:
        """The names of ``frame``'s columns, in order, without making the deferred ones."""
        return list(self._frame.columns) if self.deferred is None else self.deferred.columns(self._frame)


class Deferred(Protocol):
    """Columns of a ``Parsed.frame`` made only when the frame is read (``Parsed.deferred``)."""

    def columns(self, lean: pd.DataFrame) -> list[str]:
        """The frame's column names, in order, once these columns are added to ``lean``."""

    def added_to(self, lean: pd.DataFrame) -> pd.DataFrame:
        """``lean`` with these columns, in their places."""


def _whole_frame(parsed: Parsed) -> pd.DataFrame:
    if parsed.deferred is not None:
        parsed._frame = parsed.deferred.added_to(parsed._frame)
        parsed.deferred = None
    return parsed._frame


def _new_frame(parsed: Parsed, frame: pd.DataFrame) -> None:
    parsed._frame = frame
    parsed.deferred = None  # a frame given whole replaces what was deferred


# ``frame`` is a dataclass field (the constructor takes it) read through a property that adds the deferred
# columns on first read; the dataclass's __init__ assigns it through the setter
Parsed.frame = property(_whole_frame, _new_frame, doc="One row per launch (per kernel for summaries), every column.")


def count_reasons(reasons: pd.Series, lines: pd.Series) -> list[str]:
    """'12 rows: memcpy (not a kernel), first at line 5' per distinct reason, without a loop per row."""
    out = []
    if reasons.empty:
        return out
    grouped = pd.DataFrame({"reason": reasons.to_numpy(), "line": lines.to_numpy()}).groupby("reason", sort=False)["line"]
    for reason, first, count in zip(grouped.min().index, grouped.min().to_numpy(), grouped.size().to_numpy()):
        out.append(f"{count} row{'s' if count != 1 else ''}: {reason} (first at line {first})")
    return out
