"""The recommended estimate: fitted bounds and latencies over the counters, blended with Transit.

This is NOT a paper's model. It is nvperf-bridge's own estimate, labelled
"recommended estimate (beyond the papers)" everywhere, chosen because it had
the best cross-validated accuracy on applications the fit never saw
(``benchmarks/accuracy.py``; figures in ``nvperf_bridge/data/recommended_estimate.json``
and docs/calibration.md). The papers' models stay available, unchanged.

Form (every term in ns, computed from counters and the GPU profile only; the
kernel's measured time, its throughputs, utilizations, IPC, stall shares or cycle
counts are never inputs)::

    B = overhead + ( sum_i (k_i * T_i)^p )^(1/p)          the bound model
    t = B^(1 - w) * (k_transit * T_transit)^w              geometric blend with Transit

``B`` is a soft maximum (p = 1: the terms add up; p -> inf: the largest wins) over

- ``T_issue``   = inst_issued (else inst_executed) / (sm_count x 4 schedulers x clock):
  the instruction-issue bound (4 warp schedulers per SM from Kepler to Blackwell);
- ``T_dram``    = dram_bytes / memory bandwidth: the DRAM bandwidth bound;
- ``T_l2``      = the bytes the L2 itself served (``l2_read_bytes`` + ``l2_write_bytes``: ncu
  ``lts__t_sectors_op_read/write.sum``, nvprof ``l2_read/write_transactions`` x 32) / memory
  bandwidth: the L2 traffic bound (k_l2 absorbs the L2-to-DRAM bandwidth ratio). Counted at the
  L2, so global loads served by the L1 are not charged, and local-memory, texture and atomic
  traffic is. Where the L2 counters were not collected: global load + store sectors
  (``counters.global_sectors``, 32-byte sectors on every architecture) x 32 B, the traffic the
  L1 sent on before its hits are known;
- ``T_shared``  = shared-memory wavefronts / (sm_count x clock): one wavefront per cycle per SM;
- ``T_fp64``    = flop_dp / the profile's peak FP64 rate (sm_count x fp64_units_per_sm x 2 x clock):
  the double-precision pipe bound (1/32 of FP32 on GeForce parts);
- ``T_atomic``  = global atomic transactions / clock: atomics to one address serialise in
  the L2 (k_atomic = cycles per atomic transaction, GPU-wide); nvprof ``atomic_transactions``,
  ncu ``l1tex__t_set_accesses_pipe_lsu_mem_global_op_atom.sum`` + ``..._op_red.sum`` (the
  pair NVIDIA's nvprof-to-ncu metric table gives), 0 when neither was collected;
- ``T_latency`` = (k_latency x (instructions - shared-memory loads) + k_shared_latency x shared-memory
  loads) per warp x waves / clock: one warp's dependent instruction stream, once per wave (k_latency =
  cycles per dependent instruction: the architecture's dependent-issue latency from the GPU profile, 6
  cycles on Pascal; k_shared_latency = the cycles a warp waits on one of its shared-memory loads, the
  architecture's shared-memory load latency, 24 cycles on Pascal; neither fitted. Model 2.6: before it,
  a shared-memory load counted as 6 cycles like an FFMA);
- ``T_memlat``  = global load requests per warp x waves / clock x (f_dram + 0.48 f_l2 + 0.072 f_l1)
  (model 2.6: loads only; a warp never waits on its own store, which leaves the SM without a result
  for a later instruction to wait on; the store's traffic is in the L2 and DRAM terms):
  each request weighted by where its sectors were served (``memory_levels.served_fractions``,
  from the counted DRAM and L2 sectors), an L2 hit answering in 0.48 and an L1 hit in 0.072 of
  the DRAM round trip (``L2_HIT_LATENCY_RATIO``, ``L1_HIT_LATENCY_RATIO``: pointer-chasing
  microbenchmarks, the figures luo-suda's t_l2 / t_l1 defaults cite); k_memlat = cycles of DRAM
  latency exposed per request (model 2.4; before it every request counted alike).

The factors of the shared-memory and FP64 bounds are at least 1 (model 2.5): those bounds are the
time at the hardware's peak, so a fitted factor below 1 would claim a kernel ran faster than its
SM can serve wavefronts or FP64 results. It changes no shipped constant (fitted on the whole corpus
they are 1.58 and 7.13); it keeps a fit on kernels without a shared-memory-bound one (a training
fold, or ``calibrate --model recommended`` on a user's own set) from charging shared memory at a
fifth of its cost.

``T_transit`` is Transit's own prediction with the profile's constants (the stacked paper
model); where Transit gives none, ``t = B``. ``waves`` is the shared launch geometry's
``full_waves``. The k_i, ``p``, ``w`` and ``overhead`` are the model's constants: fitted
once on magus-corpus (43 applications on a GTX 1080 Ti, application-grouped
cross-validation; ``benchmarks/fit_recommended.py``), shipped as their defaults with that
provenance, and refitted for any GPU with ``nvperf-bridge calibrate --model recommended``
(also ``--per-kernel``). No constant is tuned to an application: all are shared by every kernel.
Five of them are not fitted in the shipped estimate (``HELD``): ``k_issue`` and ``k_dram``
stay 1 (``HELD_AT_PEAK``), so the issue and DRAM bounds are the hardware's own peaks (4
instructions per SM per cycle, the datasheet bandwidth), ``k_transit`` stays 1, so Transit
enters the blend as its own prediction, and ``k_latency`` and ``k_shared_latency`` are the
architecture's dependent-issue and shared-memory load latencies (``HELD_AT_ARCHITECTURE``:
data/architectures.yaml, sourced per architecture from microbenchmark papers: Kepler 9, Maxwell and
Pascal 6, Volta onwards 4 cycles; shared-memory loads Pascal 24 cycles, the others with their status
there), which every profile inherits; model 2.2 fitted it (6.89 on magus-corpus), and between training folds it
wandered with whichever latency-bound or ILP-rich applications the fold held (docs/calibration.md,
model 2.3). Fitting k_issue and k_dram let kernels limited by latency
pull those bounds above the peak (k_dram 1.23, k_issue 1.22 in model 2.0), and held-out accuracy
was worse for it. k_transit and w_transit move the estimate together (k_transit^w is a factor on
every blended kernel, which the bound factors and the overhead already set): fitted, k_transit
wandered from 0.08 to 3.2 between training folds (model 2.1), and held out the estimate was
better with it held (docs/calibration.md, "The recommended estimate"). The fit weighs every
application equally (``weight_by="application"``: 1/sqrt of its kernels), as the held-out
score groups them, so an application with twelve kernels does not set the shared constants.

The label: the term that dominates the bound model (issue / fp64 -> compute, dram / l2 /
shared -> memory-bandwidth, memlat / atomic -> memory-latency, latency -> parallelism
(too few warps to hide dependent latency); the launch overhead when it is more than half
the bound model -> parallelism).

A profile written by ``calibrate --per-kernel`` carries one factor per kernel function (and
per function and block size), measured / predicted at the function's largest calibration runs,
under ``calibration.per_kernel.recommended``: the prediction of another run of that function
(another input size) is multiplied by it (``kernel_factor``).

On a GPU of another architecture than the one the defaults were fitted on (and
without constants calibrated for it in its profile), every prediction is made
and ``state`` says it is extrapolated.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from nvperf_bridge import labels
from nvperf_bridge.counters import NVPROF_RAW_INPUTS
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.launch import launch_geometry
from nvperf_bridge.model import (
    ConstantSpec,
    Requirements,
    column_or_nan,
    constant_values,
    constant_column,
    empty_result,
    evaluate_shared,
    missing_inputs,
    number_option,
    resolve_constants,
    without_reason,
)

MODEL_ID = "recommended"
MODEL_VERSION = "2.6"
DATA_FILE = "recommended_estimate.json"
SCHEDULERS_PER_SM = 4  # warp schedulers per SM, cc 3.x (Kepler) to 10.x/12.x: CUDA C++ Programming Guide, "Compute Capabilities"
SECTOR_BYTES = 32
# A request's latency by the level that served it, as a share of the DRAM round trip (model 2.4's memory-latency
# term): L2 hit 221 vs 460 cycles on a V100 (pointer-chasing microbenchmark, github.com/markdewing/AI_kernels
# latency/README.md), L1 hit about 33 (github.com/ooreilly/cuda cache/README.md) -- the figures luo-suda's
# t_l2 and t_l1 defaults cite (plugins/luo_suda.py)
L2_HIT_LATENCY_RATIO = 221.0 / 460.0
L1_HIT_LATENCY_RATIO = 33.0 / 460.0
# The bound model's terms (the soft maximum); Transit is blended in geometrically, not a term.
BOUND_TERMS = ("issue", "dram", "l2", "shared", "fp64", "atomic", "latency", "memlat")
# the dominant L2 term is named "dram" where DRAM bytes are at least this share of the L2's bytes
L2_HIT_SHARE = 0.5
TERMS = (*BOUND_TERMS, "transit")
TERM_BOTTLENECK = {"issue": "compute", "fp64": "compute", "dram": "memory-bandwidth", "l2": "memory-bandwidth",
                   "shared": "memory-bandwidth", "latency": "parallelism", "memlat": "memory-latency",
                   "atomic": "memory-latency"}
# Global atomic/reduction transactions: nvprof's metric, else the ncu pair NVIDIA's
# "nvprof metric comparison" table maps it to (summed). Raw profiler columns: no canonical name yet.
ATOMIC_SOURCES: tuple[tuple[str, ...], ...] = (
    ("atomic_transactions",),
    ("l1tex__t_set_accesses_pipe_lsu_mem_global_op_atom.sum", "l1tex__t_set_accesses_pipe_lsu_mem_global_op_red.sum"),
)

# Constants the shipped fit holds at 1 (benchmarks/fit_recommended.py, and benchmarks/accuracy.py's
# refits through ``fit_settings``): the issue and DRAM bounds at the hardware's published peaks, and
# Transit at its own scale in the blend (its factor and weight are one direction to the fit).
HELD_AT_PEAK = ("k_issue", "k_dram")
# Constants the GPU profile gives per architecture (data/architectures.yaml), held at its value in the fit:
# the fit's start (``fit_start``) leaves them out so the profile's value stays.
HELD_AT_ARCHITECTURE = ("k_latency", "k_shared_latency")
HELD = (*HELD_AT_PEAK, "k_transit", *HELD_AT_ARCHITECTURE)
HELD_REASON = {"k_issue": "held at 1: the bound is the hardware's peak issue rate, not fitted",
               "k_dram": "held at 1: the bound is the datasheet DRAM bandwidth, not fitted",
               "k_transit": "held at 1: Transit's own prediction enters the blend, not fitted (w_transit sets its share)",
               "k_latency": "held at the GPU architecture's dependent-issue latency (data/architectures.yaml; 6 cycles "
                            "on Pascal, Jia et al. 2018), not fitted",
               "k_shared_latency": "held at the GPU architecture's shared-memory load latency (data/architectures.yaml; "
                                   "24 cycles on Pascal), not fitted"}

# Where the fit starts (and the defaults when the shipped data file is absent): every
# bound at its hardware peak (k = 1), 6 cycles per dependent instruction (Pascal's dependent-issue
# latency: the profile's architecture value replaces it, see ``fit_start``), 400 cycles per
# exposed memory request, 1 cycle per atomic transaction, 3 us of launch overhead, a soft
# maximum close to the sum, Transit weighted 0.3 at its own scale.
NEUTRAL: dict[str, float] = {"overhead_ns": 3000.0, "k_issue": 1.0, "k_dram": 1.0, "k_l2": 1.0, "k_shared": 1.0,
                             "k_fp64": 1.0, "k_atomic": 1.0, "k_latency": 6.0, "k_shared_latency": 24.0,
                             "k_memlat": 400.0, "p": 2.0, "w_transit": 0.3, "k_transit": 1.0}
_SPECS = (
    ("overhead_ns", "ns", (100.0, 1e5), "launch overhead added to every kernel"),
    ("k_issue", "x", (1e-3, 1e3), "factor on the instruction-issue bound"),
    ("k_dram", "x", (1e-3, 1e3), "factor on the DRAM bandwidth bound"),
    ("k_l2", "x", (1e-3, 1e3), "factor on the L2 traffic bound (bytes the L2 served, at the DRAM bandwidth)"),
    # at least 1 (model 2.5): both bounds divide by the hardware's peak (one shared-memory wavefront per SM per
    # cycle; the FP64 results per clock of the CUDA Programming Guide's throughput table), and no kernel runs
    # faster than its peak; without the floor a training set with no shared-memory-bound kernel drove k_shared to
    # 0.21 (docs/calibration.md, model 2.5)
    ("k_shared", "x", (1.0, 1e3), "factor on the shared-memory wavefront bound (>= 1: the peak)"),
    ("k_fp64", "x", (1.0, 1e3), "factor on the FP64 pipe bound (>= 1: the peak)"),
    ("k_atomic", "cycles", (1e-3, 1e4), "cycles per global atomic transaction, serialised GPU-wide"),
    # held at the architecture's value in the shipped fit (model 2.3); fitted (calibrate --only), at least 0.5:
    # one warp issues at most two instructions per cycle (a scheduler's dual issue), however independent they
    # are; without the floor a training set with no latency-bound kernel but cuBLAS's ILP-rich GEMMs drove it
    # to 0.001 (docs/calibration.md, model 2.2)
    ("k_latency", "cycles", (0.5, 1e3), "cycles per dependent instruction of one warp, per wave (>= 0.5: dual issue)"),
    # held at the architecture's value (model 2.6); a shared-memory load waits at least one dependent-issue latency
    ("k_shared_latency", "cycles", (1.0, 1e3), "cycles one warp waits on one of its shared-memory loads, per wave"),
    ("k_memlat", "cycles", (1e-3, 1e4), "cycles of DRAM latency exposed per global load request of one warp, per wave "
                                         "(an L2-served request 0.48 of it, an L1-served one 0.072)"),
    ("p", "exponent", (1.0, 20.0), "soft-maximum exponent (1: terms add, 20: the largest wins)"),
    ("w_transit", "weight", (0.0, 1.0), "weight of Transit in the geometric blend (0: the bound model alone)"),
    ("k_transit", "x", (1e-3, 1e3), "factor on Transit's prediction inside the blend"),
)


@lru_cache(maxsize=1)
def shipped_fit() -> dict[str, Any]:
    """The shipped fit (values, provenance, CV figures), or {} when the data file is absent."""
    try:
        text = resources.files("nvperf_bridge").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


def _constants() -> tuple[ConstantSpec, ...]:
    fit = shipped_fit()
    values = fit.get("constants", {}) if fit.get("model_version") == MODEL_VERSION else {}
    source = (f"fitted on {fit['provenance']['data']} ({fit['provenance']['date']}); "
              f"data/{DATA_FILE}" if values else "neutral start value (no shipped fit for this model version)")
    def held(name: str) -> str:
        return (f"{HELD_REASON[name]}, in the fit on {fit['provenance']['data']}; data/{DATA_FILE}"
                if values else source)

    return tuple(ConstantSpec(name, float(values.get(name, NEUTRAL[name])), unit, bounds, meaning,
                              held(name) if name in HELD else source)
                 for name, unit, bounds, meaning in _SPECS)


def atomic_transactions(kernels: pd.DataFrame) -> pd.Series:
    """Global atomic/reduction transactions per launch (0 where no source column was collected)."""
    for names in ATOMIC_SOURCES:
        if all(name in kernels.columns for name in names):
            total = sum(pd.to_numeric(kernels[name], errors="coerce") for name in names)
            return pd.Series(total, index=kernels.index, dtype="float64").fillna(0.0)
    return constant_column(0.0, kernels.index)  # made once per run (speed only)


def l2_traffic_bytes(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """Bytes the L2 served per launch: ``l2_read_bytes`` + ``l2_write_bytes`` (counted at the L2,
    so global loads the L1 served are not in it); where either was not collected, the global
    load + store sectors x 32 B (``counters.global_sectors``: 32-byte sectors on every
    architecture, issue 15 item 7), the traffic the L1 sends on before its hits are known."""
    from nvperf_bridge.counters import global_sectors, l2_bytes

    ld_sectors, st_sectors, _ = global_sectors(kernels, gpu)
    sectors = (ld_sectors.fillna(0) + st_sectors.fillna(0)) * SECTOR_BYTES
    counted = l2_bytes(kernels)
    return counted.where(counted.notna(), sectors)


def memory_latency_exposure(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """Per kernel, the latency of one of its global requests as a share of the DRAM round trip:
    f_dram + L2_HIT_LATENCY_RATIO x f_l2 + L1_HIT_LATENCY_RATIO x f_l1, the fractions of its global
    sectors DRAM, L2 and L1 served (``memory_levels.served_fractions``: counted DRAM and L2 sectors
    over global sectors; all DRAM where DRAM traffic was not collected or was derived from the time,
    no L1 share where L2 traffic was not collected)."""
    from nvperf_bridge.counters import global_sectors
    from nvperf_bridge.memory_levels import served_fractions, served_latency

    ld_sectors, st_sectors, _ = global_sectors(kernels, gpu)
    levels = served_fractions(kernels, ld_sectors.fillna(0) + st_sectors.fillna(0))
    return served_latency(levels, 1.0, L2_HIT_LATENCY_RATIO, L1_HIT_LATENCY_RATIO)


def stock_transit_profile(gpu: GpuProfile) -> GpuProfile:
    """``gpu`` with Transit's constants as they were before ``calibrate`` fitted them.

    The blend weight and factors were fitted against Transit with the base profile's constants
    (``calibrate`` fits every model against the base profile, this one included), so a profile
    whose Transit constants were calibrated would shift the blend: the calibration block keeps
    each fitted constant's value before the fit, and that is what Transit gets here."""
    block = gpu.raw.get("calibration") or {}
    models = block.get("models") if isinstance(block, Mapping) else None
    fitted = ((models or {}).get("transit") or {}).get("fitted") if isinstance(models, Mapping) else None
    if not isinstance(fitted, Mapping) or not fitted:
        return gpu
    from nvperf_bridge.calibration import with_constants

    before = {name: float(entry["before"]) for name, entry in fitted.items()
              if isinstance(entry, Mapping) and isinstance(entry.get("before"), (int, float))}
    return with_constants(gpu, "transit", before, "value before calibration (calibration block)", "default") if before else gpu


def term_table(kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The bound and latency terms T_i (ns, before their factors) of every kernel, and Transit's prediction."""
    clock = gpu.sm_clock_hz
    bandwidth = gpu.memory_bandwidth_bytes_per_s
    geometry = launch_geometry(kernels, gpu)
    issued = column_or_nan(kernels, "inst_issued")
    executed = column_or_nan(kernels, "inst_executed")
    issued = issued.where(issued.notna(), executed)
    dram = column_or_nan(kernels, "dram_bytes")
    dram = dram.where(dram.notna(), column_or_nan(kernels, "dram_read_bytes") + column_or_nan(kernels, "dram_write_bytes"))
    l2_bytes = l2_traffic_bytes(kernels, gpu)
    wavefronts = (column_or_nan(kernels, "shared_ld_wavefronts").fillna(0)
                  + column_or_nan(kernels, "shared_st_wavefronts").fillna(0))
    # a warp waits on its loads, never on its stores (model 2.6): global load requests only
    requests = column_or_nan(kernels, "inst_global_ld").fillna(0)
    exposure = memory_latency_exposure(kernels, gpu)
    fp64_peak = gpu.peak_fp64_flop_per_s
    flop_dp = column_or_nan(kernels, "flop_dp").fillna(0)
    warps = geometry.total_warps
    waves = geometry.full_waves.clip(lower=1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        table = pd.DataFrame({
            "issue": issued / (gpu.sm_count * SCHEDULERS_PER_SM * clock) * 1e9,
            "dram": dram / bandwidth * 1e9,
            "l2": l2_bytes / bandwidth * 1e9,
            "shared": wavefronts / (gpu.sm_count * clock) * 1e9,
            "fp64": flop_dp / fp64_peak * 1e9 if fp64_peak else flop_dp * 0.0,
            "atomic": atomic_transactions(kernels) / clock * 1e9,
            "latency": executed / warps * waves / clock * 1e9,
            "memlat": requests * exposure / warps * waves / clock * 1e9,
            # not a bound: the shared-memory loads inside "latency" (one cycle each), which combine charges
            # k_shared_latency instead of k_latency
            "shared_loads": column_or_nan(kernels, "inst_shared_ld").fillna(0) / warps * waves / clock * 1e9,
        }, index=kernels.index, copy=False)  # new columns: not copied into one block
    from nvperf_bridge.builtin_plugins.transit import MODEL as TRANSIT

    # once per run: the Transit model of the same run reuses this evaluation (or this one reuses it)
    transit = evaluate_shared(TRANSIT, kernels, stock_transit_profile(gpu),
                              dict((options or {}).get("transit_options", {})))
    # the kernels Transit predicted: its error "" (without_reason reads the column's few strings, speed only)
    table["transit"] = pd.to_numeric(transit["predicted_ns"], errors="coerce").where(without_reason(transit["error"]))
    table["transit_bottleneck"] = transit["bottleneck"]
    return table


# The terms do not depend on this model's constants, but a fit evaluates the model hundreds of
# times on the same rows with trial constants: the last few term tables of small frames are kept,
# keyed on the memory of the rows' columns (the entry holds those arrays, so their memory cannot
# be reused by another frame while it is cached) and on everything of the profile except this
# model's own constants. Large frames (an analysis, evaluated once) are never cached.
_TERM_CACHE: "OrderedDict[tuple, tuple[list[np.ndarray], pd.Index, pd.DataFrame]]" = OrderedDict()
_TERM_CACHE_SIZE = 4
_TERM_CACHE_MAX_ROWS = 50_000


def _cache_key(kernels: pd.DataFrame, gpu: GpuProfile,
               options: Mapping[str, Any] | None) -> tuple[tuple, list[np.ndarray]] | None:
    if len(kernels) > _TERM_CACHE_MAX_ROWS:
        return None
    parts: list[object] = [len(kernels)]
    arrays: list[np.ndarray] = []
    for name in kernels.columns:
        values = kernels[name].to_numpy(copy=False)
        if not isinstance(values, np.ndarray):
            return None
        arrays.append(values)
        parts.append((str(name), values.__array_interface__["data"][0], values.dtype.str, values.strides))
    raw = {key: value for key, value in gpu.raw.items() if key != "calibration"}
    raw["models"] = {mid: named for mid, named in (raw.get("models") or {}).items() if mid != MODEL_ID}
    try:
        parts.append(json.dumps(raw, sort_keys=True, default=str))
        parts.append(json.dumps(dict((options or {}).get("transit_options", {})), sort_keys=True, default=str))
    except (TypeError, ValueError):
        return None
    return tuple(parts), arrays


def cached_term_table(kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """``term_table``, reused while the same rows and profile come back (a fit's trial evaluations)."""
    keyed = _cache_key(kernels, gpu, options)
    if keyed is not None and keyed[0] in _TERM_CACHE:
        _, index, table = _TERM_CACHE[keyed[0]]
        if index.equals(kernels.index):
            _TERM_CACHE.move_to_end(keyed[0])
            return table.copy()
    table = term_table(kernels, gpu, options)
    if keyed is not None:
        _TERM_CACHE[keyed[0]] = (keyed[1], kernels.index, table.copy())
        while len(_TERM_CACHE) > _TERM_CACHE_SIZE:
            _TERM_CACHE.popitem(last=False)
    return table


def row_max(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Per row, the largest of ``arrays`` ignoring NaN (NaN where all are): ``DataFrame.max(axis=1)``
    over them as columns, without the frame."""
    largest = np.array(arrays[0], dtype="float64", copy=True)
    for array in arrays[1:]:
        np.fmax(largest, array, out=largest)
    return largest


def row_argmax(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Per row, the position of the largest of ``arrays`` (NaN never wins unless all are NaN, the first
    of equal values wins): ``np.argmax`` over the rows of their (kernels x arrays) stack with NaN as -inf."""
    best = np.where(np.isnan(arrays[0]), -np.inf, arrays[0])
    position = np.zeros(len(best), dtype=np.intp)
    wins = np.empty(len(best), dtype=bool)
    for i, array in enumerate(arrays[1:], start=1):
        np.greater(array, best, out=wins)  # NaN is never greater
        np.copyto(best, array, where=wins)  # a masked copy in place, not a gather and a scatter (speed only)
        np.copyto(position, i, where=wins)
    return position


def combine(terms: pd.DataFrame, values: Mapping[str, float],
            bound_terms: Sequence[str] = BOUND_TERMS) -> tuple[pd.Series, pd.DataFrame]:
    """The estimate (ns) and the scaled terms (ns): overhead + soft maximum of the scaled bound
    terms, blended geometrically with the scaled Transit prediction where there is one.
    ``bound_terms`` (each with its factor ``k_<name>`` in ``values``) is the shipped form's by
    default; ``benchmarks/recommended_candidates.py`` passes more to screen candidate terms."""
    columns = {name: values[f"k_{name}"] * terms[name].fillna(0.0) for name in bound_terms}
    if "latency" in columns and "shared_loads" in terms.columns:
        # one warp's dependent chain: its shared-memory loads wait the shared-memory latency, the rest k_latency
        columns["latency"] = columns["latency"] + ((values["k_shared_latency"] - values["k_latency"])
                                                   * terms["shared_loads"].fillna(0.0))
    p = float(values["p"])
    # term by term on one-dimensional arrays: the row-wise max and sum of a (kernels x terms) frame, in
    # the same order and so with the same bits, without its 2-D copies (speed only)
    arrays = [column.to_numpy(dtype="float64") for column in columns.values()]
    largest = row_max(arrays)
    # the soft maximum scaled by the largest term, so large p cannot overflow
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        divisor = np.where(largest > 0, largest, np.nan)
        total = None
        for array in arrays:
            ratio = array / divisor
            ratio[np.isnan(ratio)] = 0.0
            ratio **= p  # ndarray's power, as the frame's (its fast paths for p = 2 and 0.5 included)
            total = ratio if total is None else np.add(total, ratio, out=total)
        soft = pd.Series(largest * (total ** (1.0 / p)), index=terms.index, copy=False)
    scaled = pd.DataFrame(columns, index=terms.index, copy=False)
    bound = values["overhead_ns"] + soft.where(largest > 0, 0.0)
    transit = values["k_transit"] * terms["transit"] if "transit" in terms.columns else bound * np.nan
    scaled["transit"] = transit
    w = float(values["w_transit"])
    with np.errstate(divide="ignore", invalid="ignore"):
        blended = np.exp((1.0 - w) * np.log(bound) + w * np.log(transit))
    usable = transit.notna() & (transit > 0)
    return bound.where(~usable, blended), scaled


class RecommendedModel:
    """Recommended estimate (beyond the papers): fitted bound-and-latency soft maximum blended with Transit."""

    id = MODEL_ID
    version = MODEL_VERSION
    description = ("Recommended estimate (beyond the papers): launch overhead + soft maximum of the issue and DRAM "
                   "bounds at the hardware's peaks, a dependent-latency term at the architecture's dependent-issue "
                   "and shared-memory load latencies and fitted L2, shared-memory, FP64, atomic and memory-latency "
                   "bounds (load requests weighted by the level that served them), blended geometrically with "
                   "Transit's prediction; chosen by application-grouped cross-validation on magus-corpus")
    paper = ("nvperf-bridge recommended estimate (not a paper's model): fitted on magus-corpus; blends Transit "
             "(Li et al., HPDC'15) with bound and latency terms")
    requires = Requirements(
        required=("grid_blocks", "block_threads", "inst_executed", "dram_bytes"),
        optional=("inst_issued", "l2_read_bytes", "l2_write_bytes", "global_ld_sectors", "global_st_sectors",
                  "shared_ld_wavefronts", "shared_st_wavefronts", "inst_global_ld", "inst_shared_ld", "achieved_occupancy",
                  "registers_per_thread", "shared_mem_per_block_bytes", "dram_read_bytes", "dram_write_bytes",
                  "flop_dp",
                  # read under the profiler's own names (kept raw by analyze because they are listed here):
                  # counters.global_sectors' unit conversion and the atomic transactions
                  *NVPROF_RAW_INPUTS, *(name for names in ATOMIC_SOURCES for name in names)),
    )
    constants = _constants()
    # How the shipped fit and its cross-validation were made (benchmarks/fit_recommended.py; benchmarks/accuracy.py
    # refits the same way inside each fold, from NEUTRAL, never from the shipped values). The start leaves out the
    # constants the profile gives per architecture (HELD_AT_ARCHITECTURE), so they keep the profile's value.
    fit_start = {name: value for name, value in NEUTRAL.items() if name not in HELD_AT_ARCHITECTURE}
    fit_settings = {"loss": "soft_l1", "f_scale": 0.5, "max_nfev": 400, "weight_by": "application",
                    "only": {MODEL_ID: tuple(name for name, *_ in _SPECS if name not in HELD)}}

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        result = empty_result(kernels)
        values = {name: number_option(options, name, value, self.id)
                  for name, value in constant_values(self, gpu).items()}
        reasons = missing_inputs(kernels, ["grid_blocks", "block_threads", "inst_executed"])
        terms = cached_term_table(kernels, gpu, options)
        no_dram = terms["dram"].isna() & without_reason(reasons)  # speed-only: reasons == "" as booleans, read faster
        reasons[no_dram] = "missing dram_bytes (ncu dram__bytes.sum, nvprof dram_read_transactions/dram_write_transactions)"
        ok = pd.Series(without_reason(reasons), index=kernels.index, copy=False)
        # Transit is blended in where it predicts; elsewhere the bound model stands alone
        predicted, scaled = combine(terms, values)
        # text columns as codes into a few labels (nvperf_bridge.labels), never a string built per kernel:
        # the dominant term's position (idxmax: NaN never wins, the first of equal terms does), len(BOUND_TERMS)
        # for "overhead" where no term is positive, one more for "launch overhead" in the state
        arrays = [scaled[name].to_numpy(dtype="float64") for name in BOUND_TERMS]
        largest = pd.Series(row_max(arrays), index=kernels.index, copy=False)
        dominant_code = np.where(largest > 0, row_argmax(arrays), len(BOUND_TERMS))
        # the L2 term counts every byte the L2 served, DRAM's included: where DRAM backed most of them
        # (a streaming kernel, L2 bytes = DRAM bytes), the traffic that binds is DRAM's, whatever
        # k_l2 charges for passing through the L2, and the term named is "dram", not "l2" (an L2-bound
        # kernel serves most of its bytes from L2 hits)
        dram_backed = (terms["dram"] >= L2_HIT_SHARE * terms["l2"]).to_numpy()
        dominant_code = np.where((dominant_code == BOUND_TERMS.index("l2")) & dram_backed,
                                 BOUND_TERMS.index("dram"), dominant_code)
        term_names = [*BOUND_TERMS, "overhead", "launch overhead"]
        bound_model = values["overhead_ns"] + largest
        overhead_bound = (values["overhead_ns"] > 0.5 * bound_model).to_numpy()
        # the bottleneck: the dominant term's, "parallelism" where the overhead binds, "unknown" for a kernel
        # with a reason; codes into one table, taken once (no text array masked afterwards)
        failed = ~ok.to_numpy(dtype=bool)
        label_code = np.where(overhead_bound, len(term_names), dominant_code)
        np.copyto(label_code, len(term_names) + 1, where=failed)
        label = labels.take([*(TERM_BOTTLENECK.get(name, "unknown") for name in term_names), "parallelism", "unknown"],
                            label_code)
        blended = (scaled["transit"].notna() & (scaled["transit"] > 0)).to_numpy()
        blend_note = f"; blended with Transit (weight {values['w_transit']:.2f})"
        extrapolated = self._extrapolated(gpu)
        state_code = 2 * np.where(overhead_bound, len(term_names) - 1, dominant_code) + blended
        state = pd.Series(labels.render(state_code, lambda code: (
            "dominant term: " + term_names[code // 2] + (blend_note if code % 2 else "")
            + ("; " + extrapolated if extrapolated else ""))), index=kernels.index, dtype="object", copy=False)
        factors = per_kernel_factors(gpu)
        if factors:
            from nvperf_bridge.calibration import apply_kernel_factors

            factor, how = apply_kernel_factors(kernels, factors)
            predicted = predicted * factor
            scaled_note = how != ""
            state[scaled_note] = (state[scaled_note] + "; per-kernel factor " + factor[scaled_note].round(3).astype(str)
                                  + " (" + how[scaled_note] + ", calibrate --per-kernel)")
            result["kernel_factor"] = factor.where(scaled_note)
        result["predicted_ns"] = predicted.where(ok)
        result["predicted_cycles"] = (predicted * gpu.sm_clock_hz / 1e9).where(ok)
        result["bottleneck"] = labels.column(label, kernels.index, owned=True, text=True)
        result["state"] = state.where(ok, "")
        result["error"] = reasons
        for name in TERMS:
            result[f"T_{name}_ns"] = scaled[name].where(ok)
        dominant = labels.take([*term_names, ""], np.where(failed, len(term_names), dominant_code))  # "" for a reason
        result["dominant_term"] = labels.column(dominant, kernels.index, owned=True, text=True)
        result["estimate"] = constant_column("recommended estimate (beyond the papers)", kernels.index)
        return result

    def _extrapolated(self, gpu: GpuProfile) -> str:
        """'' when the constants were fitted for this GPU's architecture (or calibrated in its
        profile), else what the state column says about the extrapolation."""
        resolved = resolve_constants(self, gpu)
        if any(c.status == "calibrated" and c.source != self.constants[0].source for c in resolved.values()):
            return ""
        fitted_for = shipped_fit().get("fitted_for", {})
        ccs = [str(cc) for cc in fitted_for.get("compute_capabilities", [])]
        major = str(gpu.compute_capability).split(".")[0]
        if not ccs or any(cc.split(".")[0] == major for cc in ccs):
            return ""
        return (f"extrapolated: fitted on {fitted_for.get('gpus', 'other GPUs')} (cc {', '.join(ccs)}), this GPU is "
                f"cc {gpu.compute_capability}; calibrate it with nvperf-bridge calibrate --model recommended")


def per_kernel_factors(gpu: GpuProfile) -> dict[str, Any]:
    """The per-kernel factors ``calibrate --per-kernel`` wrote into the profile's calibration block."""
    block = gpu.raw.get("calibration") or {}
    factors = (block.get("per_kernel") or {}).get(MODEL_ID) if isinstance(block, Mapping) else None
    return dict(factors) if isinstance(factors, Mapping) else {}


MODEL = RecommendedModel()


@hookimpl
def register_models(register: Any) -> None:
    register(MODEL)
