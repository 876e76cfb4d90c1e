"""Kernel groups: launches grouped by kernel and launch shape, with their share of GPU time.

A reviewer's first question is where the time goes. A trace of 14,003 launches
holds four kernels; a row per launch hides that. A group is every launch of
one kernel (its normalised name) with one launch shape (grid blocks x block
threads) on one device, and carries

``launches``                 launches in the group (summary rows count their ``invocations``)
``total_ns``                 GPU time of all those launches
``mean_ns``, ``min_ns``, ``max_ns``   per launch
``share``                    total_ns / the run's GPU time (fraction)
``cumulative_share``         share of this group and every longer one
``top``                      among the longest groups that together hold ``TOP_SHARE`` of the time

sorted longest first. Times are the measured durations; a file without them
(nvprof ``--metrics`` alone) can be grouped on another per-launch time (a
model's prediction), and ``time_source`` says which one was used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.labels import text_codes
from nvperf_bridge.model import column_or_nan
from nvperf_bridge.names import distinct_display_names
from nvperf_bridge.names import keys as kernel_keys

# The longest groups that together hold this fraction of the GPU time are the "top" groups.
TOP_SHARE = 0.80

GROUP_COLUMNS: tuple[str, ...] = (
    "group", "kernel", "kernel_name", "device", "grid_blocks", "block_threads", "rows", "launches",
    "total_ns", "mean_ns", "min_ns", "max_ns", "share", "cumulative_share", "top",
)


@dataclass(frozen=True)
class KernelGroups:
    """The groups (``table``, one row per group, longest first) and which group each kernel row is in."""

    table: pd.DataFrame  # GROUP_COLUMNS, index = group number 0.. (0 is the longest)
    group_of: pd.Series  # per KernelFrame row: its group number
    time_source: str  # "measured", the name of the estimate used, or "none"

    @property
    def top(self) -> pd.DataFrame:
        """The groups holding ``TOP_SHARE`` of the time (all of them when there is no time)."""
        return self.table[self.table["top"]]

    def rows_of(self, group: int) -> pd.Index:
        """KernelFrame index labels of one group's rows."""
        return self.group_of.index[self.group_of.to_numpy() == group]

    def positions(self, groups: Any) -> list[np.ndarray]:
        """Per group of ``groups``: the positions of its rows, ascending (``np.flatnonzero(group_of == g)``),
        from one stable sort of the rows by group (not a pass over every row per group)."""
        code = self.group_of.to_numpy()
        order = np.argsort(code, kind="stable")
        ordered = code[order]
        wanted = np.asarray(groups, dtype=code.dtype)
        starts = np.searchsorted(ordered, wanted, side="left")
        ends = np.searchsorted(ordered, wanted, side="right")
        return [order[start:end] for start, end in zip(starts.tolist(), ends.tolist())]


def match_name(kernels: pd.DataFrame) -> pd.Series:
    """The name two rows must share to be one kernel: the qualified function name with its template
    arguments (``names.keys``'s ``name_targs``, else ``name``). The parameter list is left out, since
    one project prints ``f`` in one file and ``f(int,float*)`` in the next (realdata quirk 10)."""
    for column in ("kernel_name", "kernel", "kernel_id"):
        if column in kernels.columns:
            names = kernels[column].astype("object").where(kernels[column].notna(), "").astype(str)
            break
    else:
        return pd.Series("", index=kernels.index, dtype="object")
    key = {}
    for name in dict.fromkeys(names.to_numpy(dtype=object).tolist()):
        found = kernel_keys(name)
        key[name] = found["name_targs"] or found["name"] or name
    return names.map(key)


def launch_times(kernels: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per row: the launches it stands for and the mean time of one of them (ns, NaN if unmeasured)."""
    launches = column_or_nan(kernels, "invocations").fillna(1.0).clip(lower=1.0)
    return launches, column_or_nan(kernels, "duration_ns")


def kernel_groups(kernels: pd.DataFrame, estimate_ns: pd.Series | None = None,
                  estimate_name: str = "estimate") -> KernelGroups:
    """Group the KernelFrame's rows by kernel, launch shape and device, longest total time first.

    ``estimate_ns`` (per row, one launch) stands in where no row has a measured
    duration; ``time_source`` then names it (``estimate_name``).
    """
    launches, per_launch = launch_times(kernels)
    time_source = "measured"
    if not per_launch.notna().any():
        if estimate_ns is not None and pd.to_numeric(estimate_ns, errors="coerce").notna().any():
            per_launch = pd.to_numeric(estimate_ns, errors="coerce").astype("float64").reindex(kernels.index)
            time_source = estimate_name
        else:
            time_source = "none"
    # Summary formats carry min/max per row; a row of one launch has min = max = its duration;
    # a row averaged over several launches without them has no min or max (never its mean).
    single = per_launch.where(launches == 1)
    row_min, row_max = single, single
    if time_source == "measured":
        row_min = column_or_nan(kernels, "min_duration_ns").fillna(single)
        row_max = column_or_nan(kernels, "max_duration_ns").fillna(single)

    keys = pd.DataFrame({
        "name": match_name(kernels),
        "device": kernels["device"].astype("object").where(kernels["device"].notna(), "").astype(str)
        if "device" in kernels.columns else "",
        "grid_blocks": column_or_nan(kernels, "grid_blocks").fillna(-1.0),
        "block_threads": column_or_nan(kernels, "block_threads").fillna(-1.0),
    }, index=kernels.index)
    # the texts grouped by their codes (``labels.text_codes``: told apart on their few distinct objects, where
    # a group-by on the texts hashes every row's name): the same groups, numbered in the same order
    coded = keys.assign(name=text_codes(keys["name"]), device=text_codes(keys["device"]))
    codes = coded.groupby(list(coded.columns), sort=False, dropna=False).ngroup().to_numpy()

    frame = pd.DataFrame({
        "code": codes,
        "rows": 1,
        "launches": launches.to_numpy(),
        "total_ns": (per_launch * launches).to_numpy(),
        "timed_launches": launches.where(per_launch.notna(), 0.0).to_numpy(),
        "min_ns": row_min.to_numpy(),
        "max_ns": row_max.to_numpy(),
        "first": np.arange(len(kernels)),
    })
    agg = frame.groupby("code", sort=False).agg(
        rows=("rows", "sum"), launches=("launches", "sum"), total_ns=("total_ns", "sum"),
        timed_launches=("timed_launches", "sum"), min_ns=("min_ns", "min"), max_ns=("max_ns", "max"),
        first=("first", "min"))
    timed = agg["timed_launches"] > 0
    agg["total_ns"] = agg["total_ns"].where(timed)
    agg["mean_ns"] = agg["total_ns"] / agg["timed_launches"].where(timed)
    grand = float(agg["total_ns"].sum(skipna=True))
    agg["share"] = agg["total_ns"] / grand if grand > 0 else np.nan

    # Longest first; groups without a time keep their file order after the timed ones.
    ordered = agg.assign(_t=agg["total_ns"].fillna(-1.0)).sort_values(["_t", "first"], ascending=[False, True],
                                                                        kind="stable")
    ordered["cumulative_share"] = ordered["share"].cumsum()
    if grand > 0:
        before = ordered["cumulative_share"] - ordered["share"]
        ordered["top"] = (before < TOP_SHARE - 1e-12) & ordered["share"].notna()
    else:
        ordered["top"] = True
    position = pd.Series(np.arange(len(ordered)), index=ordered.index)

    first_rows = kernels.iloc[ordered["first"].to_numpy()]
    if "kernel_name" in first_rows.columns:
        full = first_rows["kernel_name"].astype(str)
    elif "kernel" in first_rows.columns:
        full = first_rows["kernel"].astype(str)
    else:
        full = keys["name"].iloc[ordered["first"].to_numpy()]
    # distinct short names for distinct kernels: template arguments collapsed, the function kept
    # (worked out once per distinct name: a million groups hold a few thousand kernels)
    texts = full.to_numpy(dtype=object)
    unique = list(dict.fromkeys(texts.tolist()))
    label_of = dict(zip(unique, distinct_display_names(unique)))
    names = pd.Series(texts, index=full.index, dtype=object).map(label_of)
    table = pd.DataFrame({
        "group": np.arange(len(ordered)),
        "kernel": names.astype(str).to_numpy(),
        "kernel_name": full.astype(str).to_numpy(),
        "device": keys["device"].iloc[ordered["first"].to_numpy()].to_numpy(),
        "grid_blocks": column_or_nan(first_rows, "grid_blocks").to_numpy(),
        "block_threads": column_or_nan(first_rows, "block_threads").to_numpy(),
        "rows": ordered["rows"].to_numpy().astype("int64"),
        "launches": ordered["launches"].to_numpy().astype("int64"),
        "total_ns": ordered["total_ns"].to_numpy(),
        "mean_ns": ordered["mean_ns"].to_numpy(),
        "min_ns": ordered["min_ns"].to_numpy(),
        "max_ns": ordered["max_ns"].to_numpy(),
        "share": ordered["share"].to_numpy(),
        "cumulative_share": ordered["cumulative_share"].to_numpy(),
        "top": ordered["top"].to_numpy(dtype=bool),
    })
    group_of = pd.Series(position.reindex(codes).to_numpy(), index=kernels.index, name="group")
    return KernelGroups(table, group_of, time_source)


__all__ = ["GROUP_COLUMNS", "KernelGroups", "TOP_SHARE", "kernel_groups", "launch_times", "match_name"]
