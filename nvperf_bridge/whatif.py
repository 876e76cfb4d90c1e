"""What-if studies: one measured kernel, rebuilt for other launch shapes or GPUs, run through every model.

``nvperf-bridge whatif FILE --kernel NAME --vary block_threads=64,128,256`` lands here::

    from nvperf_bridge.whatif import whatif_files
    study = whatif_files(["metrics.csv", "trace.csv"], kernel="matrixMul",
                         vary={"block_threads": [64, 128, 256, 512, 1024]})
    study.points            # one row per setting: launch, occupancy, each model's time and bottleneck

How a record is rebuilt is data, one row per canonical column, in
``nvperf_bridge/data/whatif_rules.csv``: the per-thread work of the measured
launch stays, so warp-level counts scale with the number of warps and
thread-level counts (bytes, FLOPs) with the number of threads; the theoretical
occupancy comes from the occupancy calculator (:mod:`nvperf_bridge.occupancy`)
for the new launch on the point's GPU; the achieved occupancy is the measured
achieved/theoretical ratio times the new theoretical occupancy (an estimate,
named as such); the measured time and everything measured over the launch
(elapsed cycles, speed-of-light fractions, raw profiler counters without a
canonical name) are dropped and listed in ``not_carried``. The measured record
itself is evaluated unchanged as the "measured" point, next to its measured time.
"""

from __future__ import annotations

import csv
import functools
import itertools
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from nvperf_bridge.columns import CANONICAL_COLUMNS
from nvperf_bridge.errors import UsageError

# The launch parameters a study can vary, in the order points are listed.
PARAMETERS: tuple[str, ...] = ("block_threads", "grid_blocks", "registers_per_thread", "shared_mem_per_block_bytes")
KEEP_CHOICES: tuple[str, ...] = ("work", "grid")
MAX_POINTS = 10_000  # settings x GPUs: a bigger product is almost certainly a typo
RULES_FILE = "whatif_rules.csv"
MEASURED = "measured"


@dataclass(frozen=True)
class Rule:
    column: str
    rule: str
    why: str


@functools.lru_cache(maxsize=1)
def rebuild_rules() -> dict[str, Rule]:
    """``data/whatif_rules.csv``: how each canonical column is carried to a new launch."""
    text = (resources.files("nvperf_bridge") / "data" / RULES_FILE).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return {row["column"]: Rule(row["column"], row["rule"], row["why"]) for row in csv.DictReader(lines)}


# ---- parsing the command line's settings ---------------------------------------------------------

def parse_vary(items: Iterable[str]) -> dict[str, list[float]]:
    """``PARAM=V1,V2,...`` items into {param: [values]}; a parameter named twice is an error."""
    vary: dict[str, list[float]] = {}
    for item in items:
        name, sep, text = str(item).partition("=")
        name = name.strip()
        if not sep or not text.strip():
            raise UsageError(f"--vary {item!r} is not PARAM=V1,V2,...", hint="e.g. --vary block_threads=64,128,256")
        if name not in PARAMETERS:
            raise UsageError(f"--vary {item!r}: cannot vary {name!r}", hint=f"vary one of {', '.join(PARAMETERS)}")
        if name in vary:
            raise UsageError(f"--vary names {name} twice", hint="give every value in one --vary, comma-separated")
        values = []
        for part in text.split(","):
            part = part.strip()
            try:
                value = float(part)
            except ValueError:
                raise UsageError(f"--vary {name}: {part!r} is not a number", hint=f"e.g. --vary {name}=64,128") from None
            if not np.isfinite(value) or value < 0 or (value == 0 and name in ("block_threads", "grid_blocks")) \
                    or (name != "shared_mem_per_block_bytes" and value != int(value)):
                raise UsageError(f"--vary {name}: {part!r} is not a valid {name}",
                                 hint="block_threads and grid_blocks are positive whole numbers; registers whole, "
                                      "shared memory bytes >= 0")
            values.append(value)
        vary[name] = list(dict.fromkeys(values))
    return vary


# ---- choosing the kernel --------------------------------------------------------------------------

def _text(kernels: pd.DataFrame, column: str) -> pd.Series:
    if column not in kernels.columns:
        return pd.Series("", index=kernels.index, dtype="object")
    return kernels[column].astype("object").where(kernels[column].notna(), "").astype(str)


def select_kernel(kernels: pd.DataFrame, name: str, launch: str | None = None) -> tuple[Any, str]:
    """The row to vary: the kernel whose id, short or full name is ``name`` (else contains it, case-insensitive).

    Several distinct kernels matching is an error listing them. Several launches of one kernel:
    ``launch`` (a kernel_id) picks one, else the launch with the longest measured time (said in the note).
    Returns (index label, note).
    """
    wanted = name.strip()
    if not wanted:
        raise UsageError("--kernel is empty", hint="give a kernel name or id (see 'nvperf-bridge inspect FILE')")
    ids, short, full = _text(kernels, "kernel_id"), _text(kernels, "kernel"), _text(kernels, "kernel_name")
    exact = (ids == wanted) | (short == wanted) | (full == wanted)
    lowered = wanted.lower()
    matched = exact if exact.any() else (short.str.lower().str.contains(lowered, regex=False)
                                         | full.str.lower().str.contains(lowered, regex=False))
    if not matched.any():
        known = ", ".join(repr(s) for s in dict.fromkeys(short.where(short != "", full)).keys() if s)[:400]
        raise UsageError(f"no kernel matches --kernel {name!r}", hint=f"kernels in the input: {known}")
    names = full.where(full != "", short)[matched]
    distinct = list(dict.fromkeys(names))
    if len(distinct) > 1:
        listed = "; ".join(distinct[:6]) + (f"; and {len(distinct) - 6} more" if len(distinct) > 6 else "")
        raise UsageError(f"--kernel {name!r} matches {len(distinct)} kernels: {listed}",
                         hint="give more of the name, or the full name in quotes")
    rows = kernels.index[matched.to_numpy()]
    if launch is not None:
        chosen = rows[(ids[rows] == str(launch)).to_numpy()]
        if len(chosen) == 0:
            raise UsageError(f"--launch {launch!r} is not a kernel_id of {distinct[0]!r}",
                             hint=f"its launches: {', '.join(ids[rows].head(10))}")
        return chosen[0], f"launch {launch} of {len(rows)}"
    if len(rows) == 1:
        return rows[0], "the only launch"
    times = pd.to_numeric(kernels.loc[rows, "duration_ns"], errors="coerce") if "duration_ns" in kernels.columns \
        else pd.Series(np.nan, index=rows)
    pick = times.idxmax() if times.notna().any() else rows[0]
    return pick, f"the longest of {len(rows)} launches (--launch ID picks another)"


# ---- rebuilding records ---------------------------------------------------------------------------

def _settings(base: pd.Series, vary: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    names = [p for p in PARAMETERS if p in vary]
    return [dict(zip(names, combo)) for combo in itertools.product(*(vary[p] for p in names))]


def _number(base: pd.Series, column: str) -> float:
    value = pd.to_numeric(pd.Series([base.get(column)]), errors="coerce").iloc[0]
    return float(value) if pd.notna(value) else float("nan")


def rebuild_records(base: pd.Series, settings: Sequence[Mapping[str, float]], source_gpu: Any, target_gpu: Any,
                    *, keep: str = "work") -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The measured record ``base`` rebuilt once per setting on ``target_gpu`` (vectorised over settings).

    Returns (records, occupancy of each record, raw columns not carried over). ``settings`` maps
    parameter names of :data:`PARAMETERS` to values; a parameter a setting leaves out keeps its
    measured value (``grid_blocks`` follows ``keep``: 'work' keeps the total number of threads,
    'grid' keeps the grid).
    """
    from nvperf_bridge.occupancy import limits_for_profile, occupancy

    if keep not in KEEP_CHOICES:
        raise UsageError(f"--keep {keep!r} is not one of {', '.join(KEEP_CHOICES)}")
    n = len(settings)
    rules = rebuild_rules()
    measured = {p: _number(base, p) for p in PARAMETERS}
    for param in ("block_threads", "grid_blocks"):
        if not measured[param] > 0:
            raise UsageError(f"the measured record of {base.get('kernel', base.get('kernel_id'))!r} has no {param}",
                             hint="a what-if needs the launch shape: give ncu launch__* metrics or the nvprof trace")
    new = {p: np.array([s.get(p, measured[p]) for s in settings], dtype="float64") for p in PARAMETERS}
    varied_block = np.array([("block_threads" in s) for s in settings])
    given_grid = np.array([("grid_blocks" in s) for s in settings])
    if keep == "work":
        # the measured block size keeps the measured grid as it is (an average over launch
        # configurations may not be a whole number); another block size gets whole blocks
        follow = varied_block & ~given_grid & (new["block_threads"] != measured["block_threads"])
        new["grid_blocks"] = np.where(follow, np.ceil(measured["grid_blocks"] * measured["block_threads"]
                                                      / new["block_threads"]), new["grid_blocks"])
    src_limits, dst_limits = limits_for_profile(source_gpu), limits_for_profile(target_gpu)
    warps_before = measured["grid_blocks"] * np.ceil(measured["block_threads"] / src_limits.warp_size)
    warps_after = new["grid_blocks"] * np.ceil(new["block_threads"] / dst_limits.warp_size)
    threads_ratio = new["grid_blocks"] * new["block_threads"] / (measured["grid_blocks"] * measured["block_threads"])
    warps_ratio = warps_after / warps_before

    frame = pd.DataFrame([base] * n).reset_index(drop=True)
    same_gpu = target_gpu.id == source_gpu.id
    not_carried = [c for c in frame.columns if c not in CANONICAL_COLUMNS]
    frame = frame.drop(columns=not_carried)
    for column in list(frame.columns):
        rule = rules.get(column)
        if rule is None:  # a canonical column the table does not know yet: not carried, and named
            not_carried.append(column)
            frame = frame.drop(columns=column)
            continue
        kind = rule.rule
        if kind == "per-warp":
            frame[column] = pd.to_numeric(frame[column], errors="coerce") * warps_ratio
        elif kind == "per-thread":
            frame[column] = pd.to_numeric(frame[column], errors="coerce") * threads_ratio
        elif kind == "dropped" or (kind == "same-gpu" and not same_gpu):
            frame[column] = np.nan
    for param in PARAMETERS:
        frame[param] = new[param]
    frame["device"] = target_gpu.name if not same_gpu else base.get("device", target_gpu.name)
    frame["cc"] = target_gpu.compute_capability if not same_gpu else base.get("cc", target_gpu.compute_capability)

    occ_now = occupancy(new["block_threads"], new["registers_per_thread"], new["shared_mem_per_block_bytes"],
                        dst_limits, index=frame.index)
    occ_before = occupancy(measured["block_threads"], measured["registers_per_thread"],
                           measured["shared_mem_per_block_bytes"], src_limits)
    theory_before = float(occ_before["theoretical_occupancy"].iloc[0])
    achieved_before = _number(base, "achieved_occupancy")
    theory_now = occ_now["theoretical_occupancy"].to_numpy()
    frame["theoretical_occupancy"] = theory_now
    if np.isfinite(achieved_before) and theory_before > 0:
        frame["achieved_occupancy"] = np.minimum(achieved_before / theory_before * theory_now, theory_now)
    else:
        frame["achieved_occupancy"] = np.nan
    frame["kernel_id"] = [f"{base.get('kernel_id', '')} [{label}]"
                          for label in point_labels(settings, target_gpu.id, same_gpu)]
    return frame, occ_now, not_carried


def point_labels(settings: Sequence[Mapping[str, float]], gpu_id: str, same_gpu: bool) -> list[str]:
    """'block=256, regs=32' (and ' on GPU' off the measured GPU) per setting; 'rebuilt' when nothing varies."""
    tag = "" if same_gpu else f"on {gpu_id}"
    labels = []
    for setting in settings:
        label = ", ".join(f"{_short(p)}={_value_text(setting[p])}" for p in PARAMETERS if p in setting)
        labels.append(" ".join(part for part in (label, tag) if part) or "rebuilt")
    return labels


_SHORT = {"block_threads": "block", "grid_blocks": "grid", "registers_per_thread": "regs",
          "shared_mem_per_block_bytes": "smem"}


def _short(param: str) -> str:
    return _SHORT.get(param, param)


def _value_text(value: float) -> str:
    return f"{value:g}" if value != int(value) else f"{int(value)}"


# ---- the study ------------------------------------------------------------------------------------

@dataclass
class WhatIfStudy:
    """A what-if study of one kernel: its points, the models' predictions, what was assumed."""

    kernel: pd.Series  # the measured record
    kernel_note: str  # which launch was taken and why
    source_gpu: Any  # GpuProfile of the measured run
    gpu_choice: str
    targets: list[Any]  # GpuProfiles the points run on
    varied: list[str]  # parameters varied, in PARAMETERS order
    keep: str
    points: pd.DataFrame  # one row per point (the measured point first); see points_columns()
    records: pd.DataFrame  # the rebuilt KernelFrame rows (same index as points)
    model_ids: list[str]
    models: dict[str, Any]  # model id -> ModelRun of the measured GPU's group (version, paper, constants)
    not_carried: list[str]
    inputs: list[Any]
    warnings: list[str] = field(default_factory=list)
    results: dict[str, pd.DataFrame] = field(default_factory=dict)  # model id -> its full result per point

    @property
    def measured_ns(self) -> float:
        return _number(self.kernel, "duration_ns")

    def measured_point(self) -> pd.Series:
        return self.points.iloc[0]


def _model_columns(mid: str) -> tuple[str, str, str, str]:
    return f"{mid}.predicted_ns", f"{mid}.bottleneck", f"{mid}.state", f"{mid}.error"


def run_study(
    kernels: pd.DataFrame,
    *,
    kernel: str,
    vary: Mapping[str, Sequence[float]],
    launch: str | None = None,
    keep: str = "work",
    gpu: str | None = None,
    gpu_targets: Sequence[str] = (),
    model_ids: list[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    registry: Any = None,
    profile_dirs: Iterable[Path] = (),
    timeout_s: float | None = None,
    inputs: list[Any] | None = None,
    warnings: list[str] | None = None,
) -> WhatIfStudy:
    """Vary one kernel of ``kernels`` and run every model on each point.

    Points: the measured record as it is (on the measured GPU), then every combination of the
    ``vary`` values on each GPU of ``gpu_targets`` (the measured GPU when none). A point the hardware
    would refuse (block too large, too many registers or too much shared memory) is listed with the
    reason and not evaluated.
    """
    from nvperf_bridge.analysis import choose_gpu, run_models
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.registry import load_registry

    dirs = tuple(profile_dirs)
    if not vary and not gpu_targets:
        raise UsageError("nothing to vary", hint="pass --vary block_threads=64,128,256 and/or --gpu-target ID")
    from nvperf_bridge.counters import normalise_global_sectors

    index, note = select_kernel(kernels, kernel, launch)
    source, choice = choose_gpu(kernels.loc[[index]], gpu, dirs)
    # nvprof's transactions in 32-byte sectors before anything is rebuilt: the rebuilt records do not
    # carry the raw columns that tell the models which unit they are in
    kernels = normalise_global_sectors(kernels.loc[[index]], source)
    base = kernels.loc[index]
    targets = [resolve_profile(t, dirs) for t in dict.fromkeys(gpu_targets)] or [source]
    settings = _settings(base, vary) if vary else [{}]
    if len(settings) * len(targets) > MAX_POINTS:
        raise UsageError(f"{len(settings) * len(targets):,} points asked for (at most {MAX_POINTS:,})",
                         hint="vary fewer parameters or fewer values at once")
    registry = registry or load_registry()

    measured_record = kernels.loc[[index]].reset_index(drop=True)
    parts, occupancies, groups, not_carried = [], [], [], []
    from nvperf_bridge.occupancy import frame_occupancy

    occupancies.append(frame_occupancy(measured_record, source))
    parts.append(measured_record)
    groups.append(source)
    for target in targets:
        records, occ, dropped = rebuild_records(base, settings, source, target, keep=keep)
        parts.append(records)
        occupancies.append(occ)
        groups.append(target)
        not_carried = list(dict.fromkeys([*not_carried, *dropped]))
    sizes = [len(p) for p in parts]
    records = pd.concat(parts, ignore_index=True, sort=False)
    occ = pd.concat(occupancies, ignore_index=True)
    gpu_of = np.repeat([g.id for g in groups], sizes)
    points = pd.DataFrame({"point": [MEASURED] + [""] * (len(records) - 1), "gpu": gpu_of}, index=records.index)
    for param in PARAMETERS:
        points[param] = pd.to_numeric(records[param], errors="coerce") if param in records.columns else np.nan
    for column in ("theoretical_occupancy", "occupancy_limiter", "theoretical_warps_per_sm",
                   "occupancy_invalid_reason"):
        points[column] = occ[column].to_numpy()
    points["achieved_occupancy"] = pd.to_numeric(records.get("achieved_occupancy"), errors="coerce") \
        if "achieved_occupancy" in records.columns else np.nan
    points["measured_ns"] = np.nan
    points.loc[0, "measured_ns"] = _number(base, "duration_ns")
    at_measured = np.ones(len(points), dtype=bool)
    for param in PARAMETERS:
        at_measured &= np.isclose(points[param].to_numpy(), _number(base, param), equal_nan=True)
    points["at_measured_setting"] = at_measured & (points["gpu"] == source.id).to_numpy()
    points.loc[0, "at_measured_setting"] = True
    points.loc[1:, "point"] = [label for target in targets
                               for label in point_labels(settings, target.id, target.id == source.id)]
    valid = points["occupancy_invalid_reason"].fillna("") == ""
    valid.iloc[0] = True  # the measured launch ran

    all_warnings = list(warnings or [])
    model_runs: dict[str, Any] = {}
    results: dict[str, list[pd.DataFrame]] = {}
    ids: list[str] = []
    offset = 0
    for group, size in zip(groups, sizes):
        rows = records.index[offset: offset + size]
        offset += size
        rows = rows[valid.loc[rows].to_numpy()]
        if len(rows) == 0:
            continue
        runs, run_warnings = run_models(records.loc[rows], group, registry, model_ids, options, timeout_s)
        all_warnings.extend(w for w in run_warnings if w not in all_warnings)
        for mid, run in runs.items():
            if mid not in ids:
                ids.append(mid)
                for column in _model_columns(mid):
                    points[column] = np.nan if column.endswith("_ns") else ""
            model_runs.setdefault(mid, run)
            predicted, bottleneck, state, error = _model_columns(mid)
            if run.result is None:
                points.loc[rows, error] = run.failure or "the model produced no results"
                continue
            results.setdefault(mid, []).append(run.result.set_axis(rows))
            points.loc[rows, predicted] = pd.to_numeric(run.result["predicted_ns"], errors="coerce").to_numpy()
            points.loc[rows, bottleneck] = run.result["bottleneck"].astype(str).to_numpy()
            points.loc[rows, state] = run.result["state"].astype(str).to_numpy() \
                if "state" in run.result.columns else ""
            points.loc[rows, error] = run.result["error"].astype(str).to_numpy()
    for mid in ids:
        points.loc[~valid, _model_columns(mid)[3]] = "not evaluated: " + points.loc[~valid, "occupancy_invalid_reason"]
    return WhatIfStudy(kernel=base, kernel_note=note, source_gpu=source, gpu_choice=choice, targets=targets,
                       varied=[p for p in PARAMETERS if p in vary], keep=keep, points=points, records=records,
                       model_ids=ids, models=model_runs, not_carried=not_carried, inputs=list(inputs or []),
                       warnings=all_warnings,
                       results={mid: pd.concat(parts_, sort=False).reindex(points.index) for mid, parts_ in results.items()})


def whatif_files(paths: Sequence[str | Path], **kwargs: Any) -> WhatIfStudy:
    """Import the files (content-sniffed, merged; folders searched) and run :func:`run_study`."""
    from nvperf_bridge.discovery import read_inputs

    imported = read_inputs([Path(p) for p in paths])
    return run_study(imported.kernels, inputs=imported.inputs, warnings=imported.warnings, **kwargs)


__all__ = ["KEEP_CHOICES", "MEASURED", "PARAMETERS", "Rule", "WhatIfStudy", "parse_vary", "rebuild_records",
           "point_labels", "rebuild_rules", "run_study", "select_kernel", "whatif_files"]
