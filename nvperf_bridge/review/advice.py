"""Advice as data: the rules in ``data/advice_rules.csv`` applied to each kernel group's own numbers.

Each rule names one quantity (computed below from canonical columns and the
GPU profile, time-weighted over the group's launches), a comparison and a
threshold, the counters it reads, a message template filled with the group's
numbers and the action it suggests (``unless``: rules that make it redundant). A group gets up to ``MAX_ACTIONS`` of the
rules that fire: first those listed ``first_for`` the group's verdict, then the
others by how far past their threshold the numbers are. What limits occupancy
(registers, shared memory, block size, block slots, the grid) comes from Nsight's
own block limits when the file has them, else from the occupancy calculator
(``nvperf_bridge.occupancy``), worded by ``data/occupancy_limiters.csv``.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.counters import global_sectors
from nvperf_bridge.labels import distinct_objects
from nvperf_bridge.model import column_or_nan
from nvperf_bridge.review.verdict import nsight_rows

MAX_ACTIONS = 3

# Profiler columns the review reads beyond the canonical ones (nvprof metrics and Nsight's block limits),
# kept when the importer parses only the columns in use.
REVIEW_COLUMNS: frozenset[str] = frozenset({
    "issue_slot_utilization", "warp_execution_efficiency", "local_load_transactions", "local_store_transactions",
    "Block Limit Registers", "Block Limit Shared Mem", "Block Limit Warps", "Block Limit SM",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    # nvprof's utilisation levels (verdict.speed_of_light's busiest unit per side)
    "shared_utilization", "single_precision_fu_utilization",
    "double_precision_fu_utilization", "half_precision_fu_utilization", "special_fu_utilization",
    "ldst_fu_utilization", "cf_fu_utilization",
})


@dataclass(frozen=True)
class Rule:
    id: str
    first_for: tuple[str, ...]
    quantity: str
    op: str
    threshold: float
    reads: str
    message: str
    action: str
    unless: tuple[str, ...] = ()  # rules that, when they fire, make this one say nothing new

    def fires(self, value: float) -> bool:
        if value is None or not math.isfinite(value):
            return False
        return {"<": value < self.threshold, "<=": value <= self.threshold, ">": value > self.threshold,
                ">=": value >= self.threshold}[self.op]

    def severity(self, value: float) -> float:
        """How far past the threshold (>= 1 when it fires), for ordering."""
        if self.op in (">", ">="):
            return value / self.threshold if self.threshold > 0 else 1.0 + value
        return self.threshold / value if value > 0 else float("inf")


def _data_text(name: str) -> str:
    return resources.files("nvperf_bridge").joinpath("data", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def load_rules() -> tuple[Rule, ...]:
    """The advice rules table, in file order."""
    rows = csv.DictReader(_data_text("advice_rules.csv").splitlines())
    return tuple(Rule(r["id"], tuple(r["first_for"].split()), r["quantity"], r["op"], float(r["threshold"]),
                      r["reads"], r["message"], r["action"], tuple((r.get("unless") or "").split()))
                 for r in rows)


@lru_cache(maxsize=1)
def load_limiters() -> dict[str, tuple[str, str]]:
    """limiter -> (description template, action)."""
    rows = csv.DictReader(_data_text("occupancy_limiters.csv").splitlines())
    return {r["limiter"]: (r["describe"], r["action"]) for r in rows}


def _dram_fraction(kernels: pd.DataFrame, from_bytes: pd.Series) -> pd.Series:
    """Per row, DRAM throughput as a fraction of peak, the figure the Speed-of-light line shows: on an
    Nsight Compute row (it has the speed-of-light sections) Nsight's own ``sol_dram_fraction``, else
    ``from_bytes`` (DRAM bytes / measured time / the profile's bandwidth). nvprof's ``dram_utilization``,
    which also lands in ``sol_dram_fraction``, is a 0-10 level: it stands in only where the bytes are
    missing (a level of 8 is anything from 75% to 85% and read 0.691 of peak by bytes on a 1080 Ti)."""
    level = column_or_nan(kernels, "sol_dram_fraction")
    nsight = nsight_rows(kernels).to_numpy(dtype=bool)
    return pd.Series(np.where(nsight, level.fillna(from_bytes), from_bytes.fillna(level)), index=kernels.index,
                     dtype="float64")


def row_quantities(analysis: Any, compute: pd.Series, memory: pd.Series) -> pd.DataFrame:
    """Per kernel row: every quantity a rule or a message reads (NaN where its counters are absent)."""
    kernels = analysis.kernels
    # each row's own GPU (a run over several devices gives each device its profile)
    bandwidth = analysis.row_gpu_value("memory_bandwidth_bytes_per_s")
    sm_count = analysis.row_gpu_value("sm_count")
    # read once per distinct profile (a run on one GPU: one), not once per row
    where, distinct, profiles = distinct_objects(analysis.row_gpus().to_numpy(dtype=object), max(1, len(kernels)))
    ideal_of = np.array([float(p.get("coalesced_sectors_per_request", 4) or 4) for p in profiles], dtype="float64")
    ideal = pd.Series(ideal_of[pd.Index(distinct).get_indexer(where)], index=kernels.index, dtype="float64")
    duration = analysis.measured_ns.where(analysis.measured_ns > 0)
    dram = column_or_nan(kernels, "dram_bytes")
    dram = dram.fillna(column_or_nan(kernels, "dram_read_bytes") + column_or_nan(kernels, "dram_write_bytes"))
    dram_fraction = _dram_fraction(kernels, dram / (duration * 1e-9) / bandwidth)
    # 32-byte sectors on every architecture (nvprof's gld_transactions are 16-byte pieces on
    # Maxwell/Pascal and 128-byte lines on Kepler: counters.global_sectors converts them)
    ld_sectors, st_sectors, _ = global_sectors(kernels, analysis.gpu)
    ld = ld_sectors / column_or_nan(kernels, "inst_global_ld").where(lambda s: s > 0)
    st = st_sectors / column_or_nan(kernels, "inst_global_st").where(lambda s: s > 0)
    shared = (column_or_nan(kernels, "shared_ld_wavefronts")
              / column_or_nan(kernels, "inst_shared_ld").where(lambda s: s > 0))
    grid = column_or_nan(kernels, "grid_blocks")
    local = column_or_nan(kernels, "local_load_transactions").fillna(0) + column_or_nan(
        kernels, "local_store_transactions").fillna(0)
    has_local = kernels.columns.intersection(["local_load_transactions", "local_store_transactions"]).size > 0
    frame = pd.DataFrame({
        "dram_fraction": dram_fraction,
        "ideal_sectors": ideal,
        "load_sectors_per_request": ld,
        "load_sectors_over_ideal": ld / ideal,
        "store_sectors_per_request": st,
        "store_sectors_over_ideal": st / ideal,
        "grid_blocks": grid,
        "sm_count": sm_count,
        "blocks_per_sm": grid / sm_count,
        "achieved_occupancy": column_or_nan(kernels, "achieved_occupancy"),
        "theoretical_occupancy": column_or_nan(kernels, "theoretical_occupancy"),
        "sm_fraction": compute,
        "memory_fraction": memory,
        "busiest_fraction": pd.concat([compute, memory], axis=1).max(axis=1, skipna=False),
        "warp_execution_efficiency": column_or_nan(kernels, "warp_execution_efficiency"),
        "shared_wavefronts_per_request": shared,
        "local_transactions": local if has_local else np.nan,
        "registers_per_thread": column_or_nan(kernels, "registers_per_thread"),
        "shared_mem_per_block_bytes": column_or_nan(kernels, "shared_mem_per_block_bytes"),
        "block_threads": column_or_nan(kernels, "block_threads"),
    }, index=kernels.index)
    for name, sources in NSIGHT_BLOCK_LIMITS.items():
        limit = pd.Series(np.nan, index=kernels.index)
        for source in sources:
            limit = limit.fillna(column_or_nan(kernels, source))
        frame[f"limit:{name}"] = limit
    return frame


# Nsight Compute's own per-SM block limits (details page | raw page) -> our limiter names.
NSIGHT_BLOCK_LIMITS: dict[str, tuple[str, ...]] = {
    "registers": ("Block Limit Registers", "launch__occupancy_limit_registers"),
    "shared memory": ("Block Limit Shared Mem", "launch__occupancy_limit_shared_mem"),
    "block size": ("Block Limit Warps", "launch__occupancy_limit_warps"),
    "blocks per SM": ("Block Limit SM", "launch__occupancy_limit_blocks"),
}

# our limiter names -> the occupancy calculator's per-resource block limits
CALCULATOR_LIMITS: dict[str, str] = {
    "registers": "blocks_limit_registers",
    "shared memory": "blocks_limit_shared_mem",
    "block size": "blocks_limit_warps",
    "blocks per SM": "blocks_limit_blocks",
}


def occupancy_limiter(values: dict[str, float], gpu: Any, calculated: dict[str, Any] | None = None) -> str:
    """Which launch resource caps the resident blocks per SM: Nsight's own block limits when the
    file has them, else the smallest of the occupancy calculator's per-resource block limits
    (nvperf_bridge.occupancy, the compute capability's allocation rules) for the launch.
    ``calculated``: the calculator's values for this launch when the caller has them
    (``calculator_rows``, every group's at once), else they are computed here."""
    nsight = {name: values.get(f"limit:{name}", float("nan")) for name in NSIGHT_BLOCK_LIMITS}
    nsight = {name: v for name, v in nsight.items() if math.isfinite(v) and v > 0}
    grid = values.get("grid_blocks", float("nan"))
    theoretical_given = values.get("theoretical_occupancy", float("nan"))
    if nsight:
        blocks = min(nsight.values())
        if math.isfinite(grid) and grid / gpu.sm_count < blocks:
            return "grid"
        if math.isfinite(theoretical_given) and theoretical_given >= 0.999:
            return "none"
        for name in ("registers", "shared memory", "blocks per SM", "block size"):
            if nsight.get(name) == blocks:
                return name
    threads = values.get("block_threads", float("nan"))
    if not math.isfinite(threads) or threads <= 0:
        return "unrecorded" if math.isfinite(theoretical_given) and theoretical_given < 0.999 else "none"
    # the per-resource block limits of the occupancy calculator (allocation granularity and the
    # compute capability's rules included); a resource the file does not record is left out
    from nvperf_bridge.occupancy import LIMIT_INVALID

    occ = calculated if calculated is not None else calculator_rows([values], [gpu])[0]
    if occ["occupancy_limiter"] == LIMIT_INVALID:
        return "none"
    limits = {name: float(occ[column]) for name, column in CALCULATOR_LIMITS.items()
              if math.isfinite(float(occ[column]))}
    grid = values.get("grid_blocks", float("nan"))
    blocks = min(limits.values())
    if math.isfinite(grid) and grid / gpu.sm_count < blocks:
        return "grid"
    theoretical = float(occ["theoretical_occupancy"])
    if theoretical >= 0.999:  # nothing we can see in the launch limits it
        if math.isfinite(theoretical_given) and theoretical_given < 0.999:
            return "unrecorded"  # Nsight says something does: a resource the file does not hold
        return "none"
    # 'block size' binds only when it is the smallest; ties go to the resource a programmer can change
    for name in ("registers", "shared memory", "blocks per SM", "block size"):
        if name in limits and limits[name] == blocks:
            return name
    return "none"


def calculator_rows(launches: list[dict[str, float]], gpus: list[Any]) -> list[dict[str, Any]]:
    """The occupancy calculator's values (``occupancy.occupancy_arrays``' columns) for each launch shape
    (``block_threads``, ``registers_per_thread``, ``shared_mem_per_block_bytes``; missing ones NaN) on its
    GPU: one call of the calculator per GPU profile for all of them (its arithmetic is element by element)."""
    from nvperf_bridge.occupancy import limits_for_profile, occupancy_arrays

    out: list[dict[str, Any]] = [{} for _ in launches]
    by_gpu: dict[int, list[int]] = {}
    for position, gpu in enumerate(gpus):
        by_gpu.setdefault(id(gpu), []).append(position)
    for positions in by_gpu.values():
        shapes = {name: np.array([launches[p].get(name, float("nan")) for p in positions], dtype="float64")
                  for name in ("block_threads", "registers_per_thread", "shared_mem_per_block_bytes")}
        arrays = occupancy_arrays(shapes["block_threads"], shapes["registers_per_thread"],
                                  shapes["shared_mem_per_block_bytes"], limits_for_profile(gpus[positions[0]]))
        for row, position in enumerate(positions):
            out[position] = {column: values[row] for column, values in arrays.items()}
    return out


def _fill(template: str, values: dict[str, Any]) -> str:
    """The template with the group's numbers; '' when a number it needs is missing."""
    try:
        text = template.format(**values)
    except (KeyError, ValueError, TypeError):
        return ""
    return "" if re.search(r"\bnan\b", text) else text


def _time_weighted(column: np.ndarray, present: np.ndarray, weight: np.ndarray) -> float:
    """The mean of a group's values where ``present``, weighted by ``weight`` (its rows' time); the plain
    mean where those weights sum to nothing; NaN where no value is present."""
    if not present.all():
        if not present.any():
            return float("nan")
        column, weight = column[present], weight[present]
    total = weight.sum()
    return float((column * weight).sum() / total) if total > 0 else float(column.mean())


def group_advice(analysis: Any, groups: Any, verdicts: pd.DataFrame, compute: pd.Series,
                 memory: pd.Series) -> list[list[dict[str, Any]]]:
    """Per group with a verdict (``groups.table`` order): up to ``MAX_ACTIONS`` dicts ``rule``, ``text``, ``action``,
    ``value``, ``threshold``, ``reads``."""
    quantities = row_quantities(analysis, compute, memory)
    launches = column_or_nan(analysis.kernels, "invocations").fillna(1.0).clip(lower=1.0)
    weight = (analysis.measured_ns.where(analysis.measured_ns > 0) * launches).fillna(launches)
    limiters = load_limiters()
    # plain arrays read by position: a label lookup per group and quantity on a large frame cost seconds
    weight_all = weight.to_numpy(dtype="float64")
    names = list(quantities.columns)
    # one row per quantity: a group's rows of every quantity are taken at once
    stacked = quantities.to_numpy(dtype="float64").T.copy()
    # each row's GPU profile, built once (``analysis.gpu_of`` builds it for every group it is asked about)
    row_gpu = analysis.row_gpus().to_numpy(dtype=object) if analysis.kernels.index.is_unique else None
    out: list[list[dict[str, Any]]] = []
    reviewed = groups.table["group"][:len(verdicts)]
    group_values: list[dict[str, Any]] = []
    group_gpus: list[Any] = []
    for at in groups.positions(reviewed):
        w = weight_all[at]
        block = stacked[:, at]
        group_values.append({name: _time_weighted(column, present, w)
                             for name, column, present in zip(names, block, ~np.isnan(block))})
        group_gpus.append(row_gpu[at[0]] if row_gpu is not None and len(at) else
                          analysis.gpu_of(analysis.kernels.index[at]))
    # the calculator for every group's launch shape at once (a call per group cost 0.3 ms each)
    calculated = calculator_rows(group_values, group_gpus)
    for position, (values, gpu) in enumerate(zip(group_values, group_gpus)):
        limiter = occupancy_limiter(values, gpu, calculated[position])
        describe, action = limiters.get(limiter, limiters["none"])
        values["max_blocks_per_sm"] = float(gpu.max_blocks_per_sm)
        values["shared_kib"] = values.get("shared_mem_per_block_bytes", float("nan")) / 1024.0
        nsight_blocks = values.get(f"limit:{limiter}", float("nan"))
        fallback = f"{limiter} (Nsight's limit: {nsight_blocks:.0f} blocks per SM)" if math.isfinite(nsight_blocks) \
            else limiter
        values["occupancy_limiter"] = _fill(describe, values) or fallback
        values["occupancy_action"] = action
        verdict = str(verdicts["verdict"].iloc[position]) if len(verdicts) > position else "unknown"
        fired = []
        for rank, rule in enumerate(load_rules()):
            value = values.get(rule.quantity, float("nan"))
            if not rule.fires(value):
                continue
            text = _fill(rule.message, values)
            if not text:
                continue
            fired.append(((0 if verdict in rule.first_for else 1), -rule.severity(value), rank, {
                "rule": rule.id, "text": f"{rule.id}: {text}: {_fill(rule.action, values) or rule.action}",
                "action": _fill(rule.action, values) or rule.action, "value": value,
                "threshold": rule.threshold, "op": rule.op, "reads": rule.reads,
            }))
        fired_ids = {item[3]["rule"] for item in fired}
        rules = {rule.id: rule for rule in load_rules()}
        fired = [item for item in fired if not fired_ids.intersection(rules[item[3]["rule"]].unless)]
        fired.sort(key=lambda item: item[:3])
        out.append([item[3] for item in fired[:MAX_ACTIONS]])
    return out


__all__ = ["MAX_ACTIONS", "REVIEW_COLUMNS", "Rule", "calculator_rows", "group_advice", "load_rules", "occupancy_limiter",
           "row_quantities"]
