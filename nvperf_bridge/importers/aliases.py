"""The alias tables: which profiler metric (ncu, nvprof metric or event) goes to which canonical column.

``data/metric_aliases.csv`` and ``data/nvprof_events.csv`` are the one place a profiler's spelling of a
quantity is named (ncu versions, nvprof, Blackwell renames): a row per spelling, the canonical column (or
a ``_part`` a derivation combines), the scale to base units and the unit kind it applies to.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import pandas as pd

from nvperf_bridge.columns import CANONICAL_COLUMNS, IDENTITY_COLUMNS


@dataclass(frozen=True)
class Alias:
    metric: str
    target: str  # canonical column, "_part" used by a derivation, or the metric itself (converted in place)
    scale: float
    kind: str  # required base unit of the value ("" = any)
    order: int  # position in the tables: earlier wins


def _read_table(name: str) -> list[dict[str, str]]:
    """The rows of one table as texts, comment lines ("#" first) and blank lines skipped (the csv module:
    pandas' reader took 10 ms of a small file's analysis for these 230 lines)."""
    text = resources.files("nvperf_bridge").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if line.strip() and not line.startswith("#")))


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, tuple[Alias, ...]], tuple[tuple[re.Pattern[str], Alias], ...]]:
    """The metric table, then the nvprof event table: exact names, and the ``*`` subpartition patterns."""
    exact: dict[str, list[Alias]] = {}
    patterns: list[tuple[re.Pattern[str], Alias]] = []
    order = 0
    for table, name_col in ((_read_table("metric_aliases.csv"), "metric"), (_read_table("nvprof_events.csv"), "event")):
        for row in table:
            name = row[name_col]
            alias = Alias(name, row["target"], float(row["scale"] or 1), row["kind"], order)
            order += 1
            if "*" in name:
                patterns.append((re.compile("^" + re.escape(name).replace(r"\*", r"(\d+)") + "$"), alias))
            else:
                exact.setdefault(name, []).append(alias)
    return {k: tuple(v) for k, v in exact.items()}, tuple(patterns)


def aliases() -> dict[str, tuple[Alias, ...]]:
    """Every exact profiler name of both tables -> its rows (one per base-unit kind it applies to)."""
    return _tables()[0]


def resolve_alias(col: str, kind: str | None) -> Alias | None:
    """The table row that applies to column ``col`` whose values have base unit ``kind``."""
    rows = _tables()[0].get(col)
    if rows is None:
        for pattern, alias in _tables()[1]:
            if pattern.match(col):
                rows = (alias,)
                break
        else:
            return None
    for alias in rows:
        if not alias.kind or kind is None or kind == alias.kind:
            return alias
    return None


def map_counters(columns: list[str] | pd.Index, kinds: dict[str, str]) -> dict[str, str | None]:
    """Where each profiler column goes: a canonical column, a derivation part ("_..."), itself
    (a level converted in place) or None (no canonical name: kept raw under its own name)."""
    out: dict[str, str | None] = {}
    for col in columns:
        if col in IDENTITY_COLUMNS or col == "derived":
            continue
        if col in CANONICAL_COLUMNS:
            out[col] = col
            continue
        alias = resolve_alias(col, kinds.get(col))
        out[col] = None if alias is None else alias.target
    return out


def alias_metrics() -> frozenset[str]:
    """Every exact profiler column name the two tables map (to a canonical column or a part of one)."""
    names: set[str] = set()
    for table in ("metric_aliases.csv", "nvprof_events.csv"):
        with resources.files("nvperf_bridge").joinpath(f"data/{table}").open(encoding="utf-8") as handle:
            names.update(row[0].strip() for row in csv.reader(handle)
                         if row and row[0].strip() and not row[0].startswith("#") and row[0] not in ("metric", "event")
                         and "*" not in row[0])
    return frozenset(names)
