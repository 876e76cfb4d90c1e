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
    encoding: str | None = None  # the text encoding it was read in ("UTF-8", "UTF-16-LE with BOM", ...)
    warnings: list[str] = field(default_factory=list)  # what the user must hear about this file (a dropped row)
    # coverage (filled by importers.canonical.to_parsed): every counter column of the file, by what became of it
    mapped: dict[str, str] = field(default_factory=dict)  # profiler name -> canonical column, or what it was used for
    unmapped: list[str] = field(default_factory=list)  # no canonical name: kept raw under the profiler's name
    unparsed: dict[str, str] = field(default_factory=dict)  # column -> "N values, first at line L: 'text'" (kept missing)


# the columns of ``ImportResult.rules``, in order
RULE_COLUMNS: tuple[str, ...] = ("kernel_id", "kernel_name", "source", "source_row", "section", "rule", "type",
                                 "message", "estimated_speedup_pct", "speedup_type")


def empty_rules() -> pd.DataFrame:
    """A rules table with no rows (files without Nsight Compute guidance)."""
    frame = pd.DataFrame({c: pd.Series(dtype=object) for c in RULE_COLUMNS})
    frame["estimated_speedup_pct"] = frame["estimated_speedup_pct"].astype("float64")
    frame["source_row"] = frame["source_row"].astype("Int64")
    return frame


@dataclass
class ImportResult:
    """The canonical KernelFrame plus the files it came from and what to tell the user.

    ``rules``: Nsight Compute's guidance rows of ``ncu --csv`` details files
    (the 15- and 20-column layouts), one row per rule result and launch:
    ``kernel_id`` (the id of the launch's row in ``kernels``, after ids were
    made unique across files), ``kernel_name``, ``source`` / ``source_row``
    (file and line of the rule row), ``section`` (the rule's section
    identifier, e.g. "SpeedOfLight", "Occupancy"), ``rule`` (rule name, e.g.
    "SOLBottleneck"), ``type`` ("OPT", "WRN", "INF" as ncu prints it),
    ``message`` (ncu's prose), ``estimated_speedup_pct`` (ncu's estimated
    speedup in percent, NaN when ncu gives none) and ``speedup_type``
    ("global" / "local" or None). Empty (with these columns) when no input
    carries rules. Rules are ncu's own guidance: reports show them as such.
    """

    kernels: pd.DataFrame
    inputs: list[InputFile]
    warnings: list[str] = field(default_factory=list)
    rules: pd.DataFrame = field(default_factory=empty_rules)

    @property
    def derived_from(self) -> dict[str, dict]:
        """Per derived canonical column: formulas, input counters, kernels, and whether any value is
        time-derived (from the duration or a rate over it). See ``importers.derivations.derived_from``."""
        from nvperf_bridge.importers.derivations import derived_from

        return derived_from(self.kernels, [n for f in self.inputs for n in f.notes])
