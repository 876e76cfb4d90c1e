"""Screen candidate terms for the recommended estimate, held out, against the shipped form.

Usage (from the repository root)::

    python benchmarks/recommended_candidates.py                 # every candidate, 6 fold seeds + LOAO + amaris
    python benchmarks/recommended_candidates.py --only memsec   # one candidate (and the shipped form, paired)
    python benchmarks/recommended_candidates.py --list
    python benchmarks/recommended_candidates.py --nested model2.1,kernelweights,shipped --seeds 3 --no-amaris

Each candidate is the shipped form (plugins/recommended.py) with one change: a term added to
the soft maximum, a bound held at its hardware peak, another weighting of the fit, or another
way of blending with Transit. Every candidate and the shipped form are fitted the same way as
``benchmarks/fit_recommended.py`` does (calibration's ``select_constants`` and ``fit_constants``:
bounded least squares on log(predicted/measured), soft_l1, f_scale 0.5, from NEUTRAL), but on
the term table computed once (``recommended.term_table``) instead of through ``evaluate``, so a
candidate takes about a minute instead of ten. On the shipped form the figures equal
fit_recommended.py's (for model 2.6, 16.8% / 85.8% on fold seeds 0-2; 16.6% / 85.0% for model 2.5, ``model2.5``
here, and 2.4, ``model2.4``, see docs/calibration.md; 16.4% / 85.2%
on fold seeds 0-2 for model 2.3, the ``model2.3`` candidate here; 16.4% / 84.4% for model 2.2, ``model2.2``; 19.7% / 84.4% for model
2.1, ``model2.1``).

Printed per candidate: median APE / within 2x held out (5-fold grouped by application on
../shared/realdata/magus-corpus) as the mean of fold seeds 0-2, the kernels within 2x per seed
0..N-1, the mean over all seeds, leave-one-application-out, and the stock figures (fitted on the
whole corpus) on the five Kepler/Maxwell GPUs of ../shared/realdata/amaris-kepler-maxwell
(within 2x counts a kernel without a prediction as outside), and the external check: the same whole-corpus
fit on the GTX 1080 Ti applications of ../shared/realdata/magus that magus-corpus does not hold (parboil
sgemm, poly gemm, rodinia hotspot, rodinia lud: 6 kernels of 4 applications, the same study's files). The results are in
docs/calibration.md ("Candidates screened after model 2.1" and the "Screened after ..." sections after it).

``--nested A,B,...`` scores a choice instead of a form: in each outer fold the candidates are
cross-validated on the training applications only (inner 5-fold, grouped by application), the
best (most kernels within 2x, then the lower median) is fitted on them and predicts the held-out
applications; the figure is what choosing among A, B, ... is worth on applications never seen.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
REALDATA = ROOT.parent / "shared" / "realdata"

TermsFn = Callable[[pd.DataFrame, Any], pd.DataFrame]


@dataclass
class Candidate:
    """One change to the shipped form."""

    name: str
    description: str
    extra_terms: dict[str, tuple[TermsFn, float, tuple[float, float]]] = field(default_factory=dict)  # name -> (T in ns, start k, bounds)
    held: tuple[str, ...] = ()            # further constants held at their start value (1 = the hardware peak)
    fitted: tuple[str, ...] = ()          # constants the shipped fit holds (recommended.HELD) that this one fits
    weights: str = ""                    # "": as shipped (fit_settings' weight_by); "kernel": 1/sqrt(rows of the same kernel name); "app^a": rows of the application ^ -a
    transform: Callable[[pd.DataFrame, dict[str, float]], pd.DataFrame] | None = None  # changes the term table per trial
    extra_constants: dict[str, tuple[float, tuple[float, float]]] = field(default_factory=dict)  # for ``transform``
    overhead_outside_blend: bool = False
    settings: dict[str, Any] = field(default_factory=dict)  # CalibrationSettings fields other than the shipped fit's (loss, f_scale)
    start: dict[str, float] = field(default_factory=dict)  # start values other than NEUTRAL (with ``held``: the value held)
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)  # fit bounds other than the shipped ones
    prior: float = 0.0  # weight of one residual log(value / start) per fitted constant (0: no prior)
    columns: dict[str, TermsFn] = field(default_factory=dict)  # further per-kernel columns for ``transform`` (ns)
    model25: bool = False  # on model 2.5's terms: memory latency over global loads and stores, shared-memory loads at k_latency


def _per_warp_per_wave(kernels: pd.DataFrame, gpu: Any, count: pd.Series) -> pd.Series:
    """count per warp, once per (full) wave, in ns: one warp's serial cost of ``count`` events at 1 cycle each."""
    from nvperf_bridge.launch import launch_geometry

    geometry = launch_geometry(kernels, gpu)
    return count / geometry.total_warps * geometry.full_waves.clip(lower=1.0) / gpu.sm_clock_hz * 1e9


def _column(kernels: pd.DataFrame, name: str) -> pd.Series:
    from nvperf_bridge.model import column_or_nan

    return column_or_nan(kernels, name).fillna(0.0)


def shared_latency(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    return _per_warp_per_wave(kernels, gpu, _column(kernels, "inst_shared_ld") + _column(kernels, "inst_shared_st"))


def global_sectors_latency(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    from nvperf_bridge.counters import global_sectors

    ld, st, _ = global_sectors(kernels, gpu)
    return _per_warp_per_wave(kernels, gpu, ld.fillna(0.0) + st.fillna(0.0))


def block_launches(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    return np.ceil(_column(kernels, "grid_blocks") / gpu.sm_count) / gpu.sm_clock_hz * 1e9


def latency_times_rep(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    from nvperf_bridge.launch import launch_geometry

    geometry = launch_geometry(kernels, gpu)
    return (_column(kernels, "inst_executed") / geometry.total_warps * geometry.repetitions.clip(lower=1.0)
            / gpu.sm_clock_hz * 1e9)


def _l2_hits_only(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    terms = terms.copy()
    terms["l2"] = (terms["l2"] - terms["dram"].fillna(0.0)).clip(lower=0.0)
    return terms


def _l2_split(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    terms = terms.copy()
    dram = terms["dram"].fillna(0.0)
    terms["l2"] = np.minimum(terms["l2"], dram) + values["k_l2_hit"] * (terms["l2"] - dram).clip(lower=0.0)
    return terms


def _transit_compute_factor(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    terms = terms.copy()
    terms["transit"] = terms["transit"] * np.where(terms["transit_bottleneck"] == "compute", values["k_transit_compute"], 1.0)
    return terms


def _chain(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """One warp's critical path: its dependent instructions and its exposed memory latency add up."""
    terms = terms.copy()
    terms["latency"] = terms["latency"].fillna(0.0) + terms["memlat"].fillna(0.0) * values["k_memlat"] / values["k_latency"]
    terms["memlat"] = 0.0
    return terms


def memlat_unweighted(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """Global requests per warp per wave, every request alike (models 2.1 to 2.3; 2.4 weighs each by the
    level that served it)."""
    return _per_warp_per_wave(kernels, gpu, _column(kernels, "inst_global_ld") + _column(kernels, "inst_global_st"))


def memlat_loads_and_stores(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """Global load and store requests per warp per wave, each weighted by the level that served the kernel's sectors
    (models 2.4 and 2.5; 2.6 counts the loads only), ns at one cycle of DRAM latency."""
    from nvperf_bridge.builtin_plugins.recommended import memory_latency_exposure

    return memlat_unweighted(kernels, gpu) * memory_latency_exposure(kernels, gpu)


def _no_shared_latency(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """Shared-memory loads at k_latency like every other instruction (before model 2.6)."""
    terms = terms.copy()
    terms["shared_loads"] = 0.0
    return terms


def _memlat_unweighted(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    terms = terms.copy()
    terms["memlat"] = terms["memlat_unweighted"]
    return terms


# The fit bounds of k_shared and k_fp64 before model 2.5 (it holds them at or above the peak, 1).
BELOW_PEAK = {"k_shared": (1e-3, 1e3), "k_fp64": (1e-3, 1e3)}
UNWEIGHTED = {"transform": _memlat_unweighted, "columns": {"memlat_unweighted": memlat_unweighted}}


def _l2_hits_at_half(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """L2 bytes DRAM backed at the L2 term's cost, L2 hits at half of it (an L2 twice DRAM's bandwidth)."""
    terms = terms.copy()
    dram = terms["dram"].fillna(0.0)
    terms["l2"] = np.minimum(terms["l2"], dram) + 0.5 * (terms["l2"] - dram).clip(lower=0.0)
    return terms


def _transit_launch(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """Transit's prediction gets the launch overhead too before the blend (Transit has no launch time)."""
    terms = terms.copy()
    terms["transit"] = terms["transit"] + values["overhead_ns"]
    return terms


def hong_kim_prediction(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """Hong & Kim's stock prediction (ns; NaN where it gives none)."""
    from nvperf_bridge.builtin_plugins.hong_kim import MODEL as HONG_KIM
    from nvperf_bridge.model import evaluate_shared

    result = evaluate_shared(HONG_KIM, kernels, gpu, {})
    return pd.to_numeric(result["predicted_ns"], errors="coerce").where(result["error"] == "")


def _blend_hong_kim(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """The paper side of the blend is Transit^(1-a) x Hong-Kim^a (a = a_hk), where Hong-Kim predicts."""
    terms = terms.copy()
    transit, hong_kim = terms["transit"], terms["hong_kim"]
    with np.errstate(divide="ignore", invalid="ignore"):
        mixed = np.exp((1.0 - values["a_hk"]) * np.log(transit) + values["a_hk"] * np.log(hong_kim))
    terms["transit"] = mixed.where(hong_kim.notna() & (hong_kim > 0) & transit.notna(), transit)
    return terms


# Shared-memory load latency (cycles, no bank conflict) by compute capability major, as Jia, Maggioni, Staiger,
# Scarpazza, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", arXiv:1804.06826 (2018), tabulate
# it: Kepler (K80) 26, Maxwell (M60) 23, Pascal (P100) 24, Volta (V100) 19; Turing 19 (Jia et al. 2019, T4); later
# architectures assumed as Volta/Turing (not measured here). The ``sharedlat`` candidates only; the figures are as
# recalled from those reports, not re-checked against them here (verify before shipping a form that uses them).
SHARED_LATENCY_CYCLES = {"3": 26.0, "5": 23.0, "6": 24.0, "7": 19.0}


def shared_instructions(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """Shared-memory instructions per warp per wave, in ns at one cycle each."""
    return _per_warp_per_wave(kernels, gpu, _column(kernels, "inst_shared_ld") + _column(kernels, "inst_shared_st"))


def shared_instructions_at_latency(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """The same at the architecture's shared-memory latency (SHARED_LATENCY_CYCLES), ns."""
    return shared_instructions(kernels, gpu) * _shared_latency(gpu)


def shared_loads(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """Shared-memory loads per warp per wave, in ns at one cycle each (a store leaves nothing to wait for)."""
    return _per_warp_per_wave(kernels, gpu, _column(kernels, "inst_shared_ld"))


def shared_loads_at_latency(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """Shared-memory loads per warp per wave at the architecture's shared-memory latency, ns."""
    return shared_loads(kernels, gpu) * _shared_latency(gpu)


def _shared_latency(gpu: Any) -> float:
    return SHARED_LATENCY_CYCLES.get(str(gpu.compute_capability).split(".")[0], 19.0)


def _shared_in_chain(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """One warp's dependent chain: its shared-memory instructions wait the shared-memory latency, the others
    k_latency (the latency term is scaled by k_latency in combine, so the difference is divided by it)."""
    terms = terms.copy()
    extra = terms["shared_at_latency"].fillna(0.0) - terms["shared_instructions"].fillna(0.0) * values["k_latency"]
    terms["latency"] = terms["latency"].fillna(0.0) + extra / values["k_latency"]
    return terms


def fp64_warp_instructions(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """FP64 warp instructions per warp per wave (nvprof ``inst_fp_64`` is a thread count: / 32), ns at one cycle."""
    return _per_warp_per_wave(kernels, gpu, _column(kernels, "inst_fp_64") / 32.0)


def fp64_warp_instructions_at_interval(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """The same at the FP64 pipe's interval per warp instruction: 32 threads over the FP64 results per clock of one
    of the SM's 4 schedulers (the profile's ``fp64_units_per_sm``, the CUDA Programming Guide's throughput table:
    4 on compute 6.1, so 32 cycles), ns."""
    units = float(gpu.raw.get("fp64_units_per_sm") or 0.0)
    interval = 32.0 / (units / 4.0) if units else 0.0
    return fp64_warp_instructions(kernels, gpu) * interval


def _fp64_in_chain(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """One warp's dependent chain: an FP64 instruction waits its pipe interval where that exceeds k_latency."""
    terms = terms.copy()
    extra = (terms["fp64_at_interval"].fillna(0.0) - terms["fp64_instructions"].fillna(0.0) * values["k_latency"]).clip(lower=0.0)
    terms["latency"] = terms["latency"].fillna(0.0) + extra / values["k_latency"]
    return terms


def fp64_instruction_bound(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """FP64 thread instructions / (SMs x FP64 results per clock per SM x clock), ns: the guide's throughput table
    read as instructions (a DADD or DMUL takes the pipe slot a DFMA takes), NaN where ``inst_fp_64`` is absent."""
    from nvperf_bridge.model import column_or_nan

    return _at_fp64_rate(column_or_nan(kernels, "inst_fp_64"), gpu)


def _at_fp64_rate(count: pd.Series, gpu: Any) -> pd.Series:
    """``count`` thread instructions at the profile's FP64 results per clock per SM on every SM, ns (NaN without the rate)."""
    units = float(gpu.raw.get("fp64_units_per_sm") or 0.0)
    return count / (gpu.sm_count * units * gpu.sm_clock_hz) * 1e9 if units else count * np.nan


def _fp64_bound_from(column: str) -> Callable[[pd.DataFrame, dict[str, float]], pd.DataFrame]:
    """A transform: the FP64 bound read from ``column`` of the term table where it has a value."""
    def transform(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
        terms = terms.copy()
        terms["fp64"] = terms[column].where(terms[column].notna(), terms["fp64"])
        return terms
    return transform


_fp64_by_instructions = _fp64_bound_from("fp64_instruction_bound")
_fp64_pipe_by_instructions = _fp64_bound_from("fp64_pipe_bound")


def fp64_pipe_instruction_bound(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """FP64-pipe thread instructions / (SMs x the profile's FP64 results per clock per SM x clock), ns: the FP64
    arithmetic instructions (``inst_fp_64``) and, in kernels that execute FP64 arithmetic, the conversions
    (``inst_bit_convert``), which on compute 5.x and 6.1 run at the FP64 rate too (CUDA C++ Programming Guide,
    "Arithmetic Instructions": type conversions from and to 64-bit types, 4 results per clock per SM, the same as
    64-bit floating-point add/multiply/multiply-add there). A float -> double conversion (rodinia backprop's
    ``w += ETA * delta * ly``, ETA a double) takes the pipe slot of a DFMA; in a kernel without FP64 arithmetic the
    conversions are taken as 32-bit ones and not charged here. NaN where ``inst_fp_64`` is absent."""
    from nvperf_bridge.model import column_or_nan

    fp64 = column_or_nan(kernels, "inst_fp_64")
    conversions = _column(kernels, "inst_bit_convert").where(fp64.fillna(0.0) > 0, 0.0)
    return _at_fp64_rate(fp64 + conversions, gpu)


def busiest_sm_share(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """ceil(grid / SMs) / (grid / SMs): how much more work than the average SM the busiest SM gets when the grid's
    blocks (equal work each) are spread over the SMs; 28 for a one-block grid on 28 SMs, about 1 for large grids."""
    grid = _column(kernels, "grid_blocks").clip(lower=1.0)
    return np.ceil(grid / gpu.sm_count) / (grid / gpu.sm_count)


def _per_sm_bounds_on_busiest_sm(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """The per-SM throughput bounds (issue, shared memory, FP64 pipe) on the busiest SM instead of the average one."""
    terms = terms.copy()
    for name in ("issue", "shared", "fp64"):
        terms[name] = terms[name] * terms["busiest_sm_share"]
    return terms


def unseen_read_requests(kernels: pd.DataFrame, gpu: Any) -> pd.Series:
    """Read requests the global-load count does not see, per warp per wave, each at the latency of the level that served
    its reads (ns at one cycle of DRAM latency): the sectors L2 served to reads beyond the global loads' own
    (``l2_read_bytes`` / 32 - global load sectors: texture, constant and local fetches through L1/TEX, which nvprof's
    gld_request does not count) as coalesced requests of the profile's ``coalesced_sectors_per_request`` sectors (the
    count hong-kim's ``l2_reads=memory-warps`` EXTENSION adds), weighted f_dram + 0.48 f_l2 by the DRAM share of the
    L2's read sectors. 0 where ``l2_read_bytes`` was not collected."""
    from nvperf_bridge.builtin_plugins.recommended import L2_HIT_LATENCY_RATIO
    from nvperf_bridge.counters import global_sectors
    from nvperf_bridge.model import column_or_nan

    ld, _, _ = global_sectors(kernels, gpu)
    l2_read = column_or_nan(kernels, "l2_read_bytes")
    unseen = (l2_read / 32.0 - ld.fillna(0.0)).clip(lower=0.0)
    per_request = float(gpu.get("coalesced_sectors_per_request", 4.0))
    requests = np.minimum((unseen / per_request).fillna(0.0),
                          (_column(kernels, "inst_executed") - _column(kernels, "inst_global_ld")
                           - _column(kernels, "inst_global_st")).clip(lower=0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        f_dram = (column_or_nan(kernels, "dram_read_bytes") / l2_read).clip(lower=0.0, upper=1.0).fillna(1.0)
    return _per_warp_per_wave(kernels, gpu, requests) * (f_dram + L2_HIT_LATENCY_RATIO * (1.0 - f_dram))


def _unseen_in_memlat(terms: pd.DataFrame, values: dict[str, float]) -> pd.DataFrame:
    """The memory-latency term counts the unseen read requests (texture/constant fetches) too."""
    terms = terms.copy()
    terms["memlat"] = terms["memlat"].fillna(0.0) + terms["unseen_memlat"].fillna(0.0)
    return terms


SHARED_IN_CHAIN = {"transform": _shared_in_chain,
                   "columns": {"shared_instructions": shared_instructions, "shared_at_latency": shared_instructions_at_latency}}


CANDIDATES = [
    Candidate("shipped", "model 2.6 as shipped (shared-memory loads at the architecture's shared-memory latency in the "
              "dependent chain, memory latency over global loads only)"),
    Candidate("model2.5", "model 2.5: memory latency over global loads and stores, shared-memory loads at k_latency",
              model25=True),
    Candidate("memlatld", "model 2.6 without its shared-memory latency (model 2.5 with the memory latency over loads "
              "only)", transform=_no_shared_latency),
    Candidate("model2.4", "model 2.4: k_shared and k_fp64 fitted down to 0.001 (below the hardware's peak)",
              bounds=dict(BELOW_PEAK), model25=True),
    Candidate("model2.3", "model 2.3: every global request exposes the same latency", bounds=dict(BELOW_PEAK),
              model25=True, **UNWEIGHTED),
    Candidate("model2.2", "model 2.2: k_latency fitted (floor 0.5 cycles), requests alike", fitted=("k_latency",),
              start={"k_latency": 4.0}, bounds=dict(BELOW_PEAK), model25=True, **UNWEIGHTED),
    # the fit: what model 2.2 changed from 2.1, one at a time and together
    Candidate("model2.1", "model 2.1: k_transit and k_latency fitted (no floor), fit weights 1/sqrt(rows of the kernel "
              "function)", fitted=("k_transit", "k_latency"), weights="kernel", start={"k_latency": 4.0},
              bounds={"k_latency": (1e-3, 1e3), **BELOW_PEAK}, model25=True, **UNWEIGHTED),
    # the candidates below change the shipped form in one way; the docs' tables say which base (model 2.1 to 2.6)
    # each was screened against; those screened on model 2.5 and not meaningful on 2.6 (``model25``) keep its terms
    Candidate("fitktransit", "k_transit fitted (Transit scaled inside the blend)", fitted=("k_transit",)),
    Candidate("kernelweights", "fit weights 1/sqrt(rows of the kernel function), as in model 2.1", weights="kernel"),
    Candidate("appw0.25", "fit weights (kernels of the application)^-1/4", weights="app^0.25"),
    Candidate("pmax", "soft maximum held at p = 20 (the largest bound wins, as in a roofline)", held=("p",),
              start={"p": 20.0}),
    Candidate("nolatfloor", "k_latency fitted down to 0.001 cycles (no dual-issue floor), as first shipped in model 2.2",
              fitted=("k_latency",), start={"k_latency": 4.0}, bounds={"k_latency": (1e-3, 1e3), **BELOW_PEAK},
              model25=True, **UNWEIGHTED),
    Candidate("latency7", "k_latency held at 7 cycles (not a sourced figure: the value next to 2.2's fitted 6.89), "
              "model 2.3 otherwise", start={"k_latency": 7.0}, bounds=dict(BELOW_PEAK), model25=True, **UNWEIGHTED),
    Candidate("fscale0.7", "fit loss soft_l1, f_scale 0.7", settings={"f_scale": 0.7}),
    Candidate("fscale1", "fit loss soft_l1, f_scale 1.0", settings={"f_scale": 1.0}),
    Candidate("prior1", "a pull of every fitted constant toward its start value (NEUTRAL): weight 1 per log unit",
              prior=1.0),
    Candidate("cauchy0.5", "fit loss cauchy, f_scale 0.5 (kernels far outside 2x pull less than with soft_l1)",
              settings={"loss": "cauchy"}),
    Candidate("arctan0.5", "fit loss arctan, f_scale 0.5 (a residual's pull is capped)", settings={"loss": "arctan"}),
    Candidate("softl1_0.25", "fit loss soft_l1, f_scale 0.25", settings={"f_scale": 0.25}),
    # terms and bounds
    Candidate("shlat", "shared-memory latency: shared requests per warp per wave x k cycles",
              {"shlat": (shared_latency, 30.0, (1e-3, 1e4))}),
    Candidate("memsec", "uncoalescing delay: global sectors per warp per wave x k cycles",
              {"memsec": (global_sectors_latency, 10.0, (1e-3, 1e4))}),
    Candidate("blocks", "block-launch throughput: ceil(grid / SMs) blocks x k cycles",
              {"blocks": (block_launches, 100.0, (1e-3, 1e5))}),
    Candidate("replat", "warps-per-scheduler floor: instructions per warp x Hong-Kim #Rep x k cycles",
              {"replat": (latency_times_rep, 4.0, (1e-3, 1e3))}),
    Candidate("l2hits", "L2 term counts only the L2 hits (L2 bytes - DRAM bytes)", transform=_l2_hits_only),
    Candidate("l2split", "L2 term: DRAM-backed bytes + k_l2_hit x hit bytes", transform=_l2_split,
              extra_constants={"k_l2_hit": (1.0, (1e-3, 1e3))}),
    Candidate("fp64peak", "FP64 bound at the hardware peak (k_fp64 = 1, not fitted)", held=("k_fp64",)),
    Candidate("sharedpeak", "shared-memory bound at the hardware peak (k_shared = 1, not fitted)", held=("k_shared",)),
    Candidate("tail", "tail wave: issue, shared and FP64 bounds x ceil(waves) / waves (applied in _terms)"),
    Candidate("transitcompute", "own factor on Transit's compute-bound predictions", transform=_transit_compute_factor,
              extra_constants={"k_transit_compute": (1.0, (1e-3, 1e3))}),
    Candidate("outside", "launch overhead added after the Transit blend (not blended)", overhead_outside_blend=True),
    Candidate("chain", "latency and memory latency add up in one warp's critical path (not a soft maximum)",
              transform=_chain),
    Candidate("l2half", "L2 hits charged at half the L2 term's cost (DRAM-backed bytes at the full cost)",
              transform=_l2_hits_at_half),
    Candidate("transitlaunch", "the launch overhead added to Transit's prediction too, before the blend",
              transform=_transit_launch),
    Candidate("transitlaunch+l2half", "both of the above", transform=lambda t, v: _l2_hits_at_half(_transit_launch(t, v), v)),
    Candidate("blendhk", "Hong-Kim's stock prediction in the paper side of the blend (share a_hk fitted)",
              transform=_blend_hong_kim, extra_constants={"a_hk": (0.3, (0.0, 1.0))},
              columns={"hong_kim": hong_kim_prediction}),
    Candidate("sharedlat", "shared-memory instructions at the architecture's shared-memory load latency in the "
              "dependent chain (Pascal 24 cycles, Jia et al. 2018), the other instructions at k_latency",
              **SHARED_IN_CHAIN),
    Candidate("sharedldlat", "shared-memory loads (not stores: nothing waits on a store) at the architecture's "
              "shared-memory load latency in the dependent chain, the other instructions at k_latency",
              transform=_shared_in_chain,
              columns={"shared_instructions": shared_loads, "shared_at_latency": shared_loads_at_latency}),
    Candidate("sharedlat+memsec", "sharedlat and the uncoalescing delay", {"memsec": (global_sectors_latency, 10.0, (1e-3, 1e4))},
              **SHARED_IN_CHAIN),
    Candidate("sharedlat+chain", "sharedlat, and the latency and memory-latency terms added in one chain",
              transform=lambda t, v: _chain(_shared_in_chain(t, v), v), columns=SHARED_IN_CHAIN["columns"]),
    Candidate("unseenreq", "the memory-latency term counts read requests the global-load count does not see (L2 read "
              "sectors beyond the global loads', as coalesced requests, hong-kim's l2_reads=memory-warps count)",
              transform=_unseen_in_memlat, columns={"unseen_memlat": unseen_read_requests}),
    Candidate("fp64chain", "FP64 instructions at their pipe interval in the dependent chain (32 threads / FP64 results "
              "per clock per scheduler: 32 cycles on compute 6.1)", transform=_fp64_in_chain,
              columns={"fp64_instructions": fp64_warp_instructions, "fp64_at_interval": fp64_warp_instructions_at_interval}),
    Candidate("fp64conv", "FP64 pipe bound in instructions: inst_fp_64 and, in kernels with FP64 arithmetic, the type "
              "conversions (64-bit conversions run at the FP64 rate on compute 5.x/6.1), over the FP64 results per clock",
              transform=_fp64_pipe_by_instructions, columns={"fp64_pipe_bound": fp64_pipe_instruction_bound}),
    Candidate("fp64convpeak", "fp64conv with k_fp64 held at 1 (the pipe's peak, not fitted)", held=("k_fp64",),
              transform=_fp64_pipe_by_instructions, columns={"fp64_pipe_bound": fp64_pipe_instruction_bound}),
    Candidate("fp64conv+chain", "fp64conv, and FP64 instructions at their pipe interval in the dependent chain (fp64chain)",
              transform=lambda t, v: _fp64_in_chain(_fp64_pipe_by_instructions(t, v), v),
              columns={"fp64_pipe_bound": fp64_pipe_instruction_bound, "fp64_instructions": fp64_warp_instructions,
                       "fp64_at_interval": fp64_warp_instructions_at_interval}),
    Candidate("busiest", "issue, shared-memory and FP64 bounds on the busiest SM: x ceil(grid / SMs) / (grid / SMs)",
              transform=_per_sm_bounds_on_busiest_sm, columns={"busiest_sm_share": busiest_sm_share}),
    Candidate("fp64conv+busiest", "fp64conv, and the per-SM bounds on the busiest SM (busiest)",
              transform=lambda t, v: _per_sm_bounds_on_busiest_sm(_fp64_pipe_by_instructions(t, v), v),
              columns={"fp64_pipe_bound": fp64_pipe_instruction_bound, "busiest_sm_share": busiest_sm_share}),
    Candidate("fp64inst", "FP64 bound in instructions (inst_fp_64 over the FP64 results per clock) instead of flops over "
              "the FMA peak", transform=_fp64_by_instructions, columns={"fp64_instruction_bound": fp64_instruction_bound}),
]

# screened on model 2.5 ("Screened after model 2.4" and "after model 2.5" in docs/calibration.md): on its terms still
SCREENED_ON_MODEL25 = ("sharedlat", "sharedldlat", "sharedlat+memsec", "sharedlat+chain", "unseenreq", "fp64chain",
                       "fp64conv", "fp64convpeak", "fp64conv+chain", "busiest", "fp64conv+busiest", "fp64inst")
CANDIDATES = [replace(c, model25=True) if c.name in SCREENED_ON_MODEL25 else c for c in CANDIDATES]


def _terms(candidate: Candidate, kernels: pd.DataFrame, gpu: Any) -> pd.DataFrame:
    from nvperf_bridge.builtin_plugins.recommended import term_table
    from nvperf_bridge.launch import launch_geometry

    terms = term_table(kernels, gpu).copy()
    if candidate.model25:
        terms["memlat"] = memlat_loads_and_stores(kernels, gpu)
        terms["shared_loads"] = 0.0
    for name, (fn, _, _) in candidate.extra_terms.items():
        terms[name] = fn(kernels, gpu)
    for name, fn in candidate.columns.items():
        terms[name] = fn(kernels, gpu)
    if candidate.name == "tail":
        waves = launch_geometry(kernels, gpu).waves.clip(lower=1.0)
        for name in ("issue", "shared", "fp64"):  # the busiest SM runs ceil(waves) waves of blocks
            terms[name] = terms[name] * (np.ceil(waves) / waves).fillna(1.0)
    return terms


class _TermEvaluator:
    """calibration's evaluator protocol (``log_predictions``) over a precomputed term table.

    With ``prior`` (names of the fitted constants), ``log_predictions`` appends log(value) of each
    after the kernels' rows: the fit compares them with log(start), a pull toward the start values."""

    def __init__(self, candidate: Candidate, terms: pd.DataFrame, prior: tuple[str, ...] = ()) -> None:
        self.candidate, self.terms, self.prior = candidate, terms, prior

    def predict(self, values: dict[str, float]) -> np.ndarray:
        from nvperf_bridge.builtin_plugins.recommended import BOUND_TERMS, combine

        terms = self.candidate.transform(self.terms, values) if self.candidate.transform else self.terms
        names = (*BOUND_TERMS, *self.candidate.extra_terms)
        if self.candidate.overhead_outside_blend:
            predicted, _ = combine(terms, {**values, "overhead_ns": 0.0}, names)
            return predicted.to_numpy() + values["overhead_ns"]
        return combine(terms, values, names)[0].to_numpy()

    def log_predictions(self, values: dict[str, float]) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(self.predict(values))
        if not self.prior:
            return logs
        return np.concatenate([logs, [_prior_log(name, values[name]) for name in self.prior]])


def _prior_log(name: str, value: float) -> float:
    """The scale a prior compares on: log for every constant, log(w / (1 - w)) for the blend weight."""
    if name == "w_transit":
        value = min(max(value, 1e-6), 1 - 1e-6)
        return float(np.log(value / (1.0 - value)))
    return float(np.log(max(value, 1e-300)))


def _specs(candidate: Candidate) -> tuple[list[Any], dict[str, float]]:
    from nvperf_bridge.builtin_plugins.recommended import _SPECS, HELD, NEUTRAL
    from nvperf_bridge.model import ConstantSpec

    # NEUTRAL's k_latency (6 cycles) is the GTX 1080 Ti's architecture value, which the shipped fit holds
    start = {**NEUTRAL, **candidate.start}
    specs = [ConstantSpec(name, NEUTRAL[name], unit, candidate.bounds.get(name, bounds), meaning, "neutral")
             for name, unit, bounds, meaning in _SPECS]
    for name, (_, k0, bounds) in candidate.extra_terms.items():
        start[f"k_{name}"] = k0
        specs.append(ConstantSpec(f"k_{name}", k0, "cycles", bounds, name, "neutral"))
    for name, (v0, bounds) in candidate.extra_constants.items():
        start[name] = v0
        specs.append(ConstantSpec(name, v0, "x", bounds, name, "neutral"))
    held = (set(HELD) - set(candidate.fitted)) | set(candidate.held)
    return [spec for spec in specs if spec.name not in held], start


def _architecture_values(candidate: Candidate, gpu: Any) -> dict[str, float]:
    """The held constants ``gpu``'s profile gives per architecture (recommended.HELD_AT_ARCHITECTURE), unless the
    candidate fits them or holds them at a value of its own."""
    from nvperf_bridge.builtin_plugins.recommended import HELD_AT_ARCHITECTURE, MODEL
    from nvperf_bridge.model import constant_values

    given = constant_values(MODEL, gpu)
    return {name: given[name] for name in HELD_AT_ARCHITECTURE
            if name not in candidate.fitted and name not in candidate.start}


def _weights(candidate: Candidate, kernels: pd.DataFrame) -> np.ndarray:
    from nvperf_bridge.builtin_plugins.recommended import MODEL
    from nvperf_bridge.calibration import application_groups, fit_weights

    if candidate.weights in ("", "kernel"):
        return fit_weights(kernels, candidate.weights or MODEL.fit_settings.get("weight_by", "kernel"))
    power = float(candidate.weights.split("^")[1])
    apps = application_groups(kernels)
    return apps.map(apps.value_counts()).to_numpy(dtype="float64") ** -power


def _fit(candidate: Candidate, terms: pd.DataFrame, kernels: pd.DataFrame, seed: int) -> dict[str, float]:
    from nvperf_bridge.builtin_plugins.recommended import MODEL
    from nvperf_bridge.calibration import CalibrationSettings, fit_constants, kernel_groups, measured_ns, select_constants

    fit_settings = {**{k: v for k, v in MODEL.fit_settings.items() if k != "only"}, **candidate.settings}
    settings = CalibrationSettings(folds=5, seed=seed, **fit_settings)
    specs, start = _specs(candidate)
    evaluator = _TermEvaluator(candidate, terms)
    weights = _weights(candidate, kernels)
    names, _ = select_constants(evaluator, specs, start, weights, kernel_groups(kernels).nunique(), settings)
    chosen = [spec for spec in specs if spec.name in names]
    measured = measured_ns(kernels).to_numpy()
    if candidate.prior > 0:
        prior = tuple(spec.name for spec in chosen)
        evaluator = _TermEvaluator(candidate, terms, prior)
        measured = np.concatenate([measured, [np.exp(_prior_log(name, start[name])) for name in prior]])
        weights = np.concatenate([weights, np.full(len(prior), candidate.prior)])
    return {**start, **fit_constants(evaluator, chosen, start, measured, weights, settings)}


def _held_out(candidate: Candidate, terms: pd.DataFrame, kernels: pd.DataFrame, folds: int, seed: int) -> np.ndarray:
    from nvperf_bridge.calibration import application_groups, group_folds

    plan = group_folds(application_groups(kernels), folds, seed, unit="application")
    held = np.full(len(kernels), np.nan)
    for fold in range(plan.folds):
        train = plan.fold_of_row != fold
        values = _fit(candidate, terms[train], kernels[train], seed)
        held[~train] = _TermEvaluator(candidate, terms[~train]).predict(values)
    return held


def _figures(predicted: np.ndarray, measured: np.ndarray) -> tuple[float, float, int]:
    ratio = predicted / measured
    inside = (ratio >= 0.5) & (ratio <= 2.0)
    return float(np.nanmedian(np.abs(ratio - 1.0))), float(inside.mean()), int(inside.sum())


def _score(predicted: np.ndarray, measured: np.ndarray) -> tuple[int, float]:
    """What the nested selection maximises: kernels within 2x, then the lower median APE."""
    median, _, inside = _figures(predicted, measured)
    return inside, -median


def nested_held_out(candidates: list[Candidate], terms: dict[str, pd.DataFrame], kernels: pd.DataFrame,
                    folds: int, seed: int, inner_folds: int = 5) -> tuple[np.ndarray, list[str]]:
    """Held-out predictions of the procedure "choose among ``candidates`` by grouped CV, then fit":
    in each outer fold, every candidate is cross-validated on the training applications only
    (``inner_folds`` folds grouped by application, the same seed), the best (most kernels within
    2x, then the lower median APE) is fitted on all training applications and predicts the
    held-out ones. Returns the predictions and the candidate chosen in each outer fold."""
    from nvperf_bridge.calibration import application_groups, group_folds, measured_ns

    plan = group_folds(application_groups(kernels), folds, seed, unit="application")
    held = np.full(len(kernels), np.nan)
    chosen: list[str] = []
    for fold in range(plan.folds):
        train = plan.fold_of_row != fold
        inner_kernels = kernels[train]
        measured = measured_ns(inner_kernels).to_numpy()
        scores = {c.name: _score(_held_out(c, terms[c.name][train], inner_kernels, inner_folds, seed), measured)
                  for c in candidates}
        best = max(candidates, key=lambda c: scores[c.name])  # ties: the first listed (the simpler form)
        chosen.append(best.name)
        values = _fit(best, terms[best.name][train], inner_kernels, seed)
        held[~train] = _TermEvaluator(best, terms[best.name][~train]).predict(values)
    return held, chosen


def screen(candidate: Candidate, kernels: pd.DataFrame, gpu: Any, seeds: int, loao: bool,
           amaris: list[tuple[str, pd.DataFrame, Any]], external: pd.DataFrame | None = None) -> str:
    from nvperf_bridge.calibration import application_groups, measured_ns

    measured = measured_ns(kernels).to_numpy()
    terms = _terms(candidate, kernels, gpu)
    runs = [_figures(_held_out(candidate, terms, kernels, 5, seed), measured) for seed in range(seeds)]
    first = runs[:3]
    line = (f"{candidate.name:15s} seeds 0-2 {np.mean([r[0] for r in first]):.1%} / {np.mean([r[1] for r in first]):.1%}"
            f"  within 2x per seed [{' '.join(str(r[2]) for r in runs)}]"
            f"  seeds 0-{seeds - 1} {np.mean([r[0] for r in runs]):.1%} / {np.mean([r[1] for r in runs]):.1%}")
    if loao:
        apps = int(application_groups(kernels).nunique())
        median, within, _ = _figures(_held_out(candidate, terms, kernels, apps, 0), measured)
        line += f"  LOAO {median:.1%} / {within:.1%}"
    if amaris:
        values = _fit(candidate, terms, kernels, 0)
        stock = []
        for _, rows, device_gpu in amaris:
            # what the model does on that GPU: the constants its profile gives per architecture (k_latency)
            device_values = {**values, **_architecture_values(candidate, device_gpu)}
            median, within, _ = _figures(_TermEvaluator(candidate, _terms(candidate, rows, device_gpu)).predict(device_values),
                                         measured_ns(rows).to_numpy())
            stock.append(f"{median:.0%}/{within:.0%}")
        line += "  amaris stock " + " ".join(stock)
    if external is not None and len(external):
        values = _fit(candidate, terms, kernels, 0)
        ratio = _TermEvaluator(candidate, _terms(candidate, external, gpu)).predict(values) / measured_ns(external).to_numpy()
        median, _, inside = _figures(ratio, np.ones(len(ratio)))
        line += (f"  external {inside}/{len(ratio)} within 2x, median APE {median:.0%} ("
                 + " ".join(f"{name}={r:.2f}" for name, r in zip(external["kernel"].astype(str), ratio)) + ")")
    return line


def magus_corpus() -> tuple[pd.DataFrame, Any] | None:
    """The timed kernels of ../shared/realdata/magus-corpus and their GPU profile (None, said on stderr, when the
    folder is absent)."""
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.calibration import measured_ns
    from nvperf_bridge.discovery import read_inputs

    corpus = REALDATA / "magus-corpus"
    if not corpus.is_dir():
        print(f"{corpus}: not found (the real data sits beside the repository)", file=sys.stderr)
        return None
    kernels = read_inputs(sorted(f for f in corpus.iterdir() if f.suffix == ".csv")).kernels
    kernels = kernels[measured_ns(kernels).notna()]
    return kernels, choose_gpu(kernels, None)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="candidate name (repeatable); the shipped form is always run")
    parser.add_argument("--seeds", type=int, default=6, help="fold seeds (default 6)")
    parser.add_argument("--no-loao", action="store_true", help="skip leave-one-application-out")
    parser.add_argument("--no-amaris", action="store_true", help="skip the Kepler/Maxwell stock check")
    parser.add_argument("--no-external", action="store_true",
                        help="skip the check on the GTX 1080 Ti applications of ../shared/realdata/magus that are not in "
                             "magus-corpus (fitted on the whole corpus, never on them)")
    parser.add_argument("--nested", help="comma-separated candidates: score the procedure that chooses among them by "
                        "grouped CV inside each training fold (nested CV), fold seeds 0..--seeds-1")
    parser.add_argument("--no-shipped", action="store_true", help="with --only: leave the shipped form out")
    parser.add_argument("--list", action="store_true", help="list the candidates and exit")
    args = parser.parse_args(argv)
    if args.list:
        for candidate in CANDIDATES:
            print(f"{candidate.name:15s} {candidate.description}")
        return 0
    warnings.simplefilter("ignore")
    from nvperf_bridge.analysis import choose_gpu
    from nvperf_bridge.calibration import measured_ns
    from nvperf_bridge.discovery import read_inputs

    known = {c.name for c in CANDIDATES}
    unknown = sorted((set(args.only or ()) | set((args.nested or "").split(",")) - {""}) - known)
    if unknown:
        parser.error(f"no candidate {unknown[0]!r}; --list shows them")
    loaded = magus_corpus()
    if loaded is None:
        return 1
    kernels, gpu = loaded
    amaris: list[tuple[str, pd.DataFrame, Any]] = []
    folder = REALDATA / "amaris-kepler-maxwell"
    if not args.no_amaris and folder.is_dir():
        rows = read_inputs(sorted(f for f in folder.iterdir() if f.suffix == ".yaml")).kernels
        rows = rows[measured_ns(rows).notna()]
        for device in sorted(rows["device"].astype(str).unique()):
            part = rows[rows["device"].astype(str) == device]
            amaris.append((device, part, choose_gpu(part, None)[0]))
        print("amaris stock: median APE / within 2x on " + ", ".join(d for d, _, _ in amaris), flush=True)
    external = None
    if not args.no_external and (REALDATA / "magus").is_dir():
        # the same study's further applications (parboil sgemm, poly gemm, rodinia hotspot and lud; matrixMul is
        # also in the corpus): never fitted on, the closest thing here to the hidden applications
        names = sorted(f for f in (REALDATA / "magus").iterdir() if f.suffix == ".csv" and "matrixMul" not in f.name)
        external = read_inputs(names).kernels
        external = external[measured_ns(external).notna()]
        print(f"external: {len(external)} kernels of {len(names) // 2} applications not in magus-corpus", flush=True)
    if args.nested:
        by_name = {c.name: c for c in CANDIDATES}
        pool = [by_name[name] for name in args.nested.split(",")]
        terms = {c.name: _terms(c, kernels, gpu) for c in pool}
        measured = measured_ns(kernels).to_numpy()
        for seed in range(args.seeds):
            held, chosen = nested_held_out(pool, terms, kernels, 5, seed)
            median, within, inside = _figures(held, measured)
            print(f"nested seed {seed}: {median:.1%} / {within:.1%} ({inside} within 2x); chosen per fold: "
                  + " ".join(chosen), flush=True)
        return 0
    for candidate in CANDIDATES:
        if args.only and candidate.name not in args.only and (candidate.name != "shipped" or args.no_shipped):
            continue
        print(screen(candidate, kernels, gpu, args.seeds, not args.no_loao, amaris, external), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
