"""Roofline: the baseline every analytical model is compared against.

Paper: S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual
performance model for multicore architectures", CACM 52(4), 2009.

The roofline bounds attainable performance by the lower of the peak
floating-point rate and the product of arithmetic intensity and peak memory
bandwidth (Williams et al., Section "The Roofline Model", the one equation of
the paper)::

    attainable FLOP/s = min(peak FLOP/s, AI x peak bandwidth)        (R1)
    AI = FLOPs / DRAM bytes                                           (R2)

which, read as time for the work a kernel did, is the classic lower bound::

    t = max(FLOPs / peak FLOP/s, DRAM bytes / peak bandwidth)         (R3)

and the ridge point (the AI where the two roofs meet) is
``peak FLOP/s / peak bandwidth`` (FLOP/byte).

Inputs (canonical KernelFrame columns -> symbol)
------------------------------------------------
- ``flop_sp``, ``flop_dp``, ``flop_hp`` -> FLOPs per precision (thread-level,
  FMA = 2). Each is charged against its own peak:
  FP32 ``GpuProfile.peak_fp32_flop_per_s``, FP64 ``peak_fp64_flop_per_s``,
  FP16 the non-tensor FP16 peak (``non_tensor_fp16_flop_per_s``: the
  guide's FP16 results per clock per SM x SMs x 2 x clock; not the profile's
  ``peak_fp16_gflops``, a tensor-core figure the counted FLOPs never reach). t_compute is the *sum* over
  precisions (they share issue slots and, for FP16/FP32, the FMA pipe), i.e.
  the FLOP-weighted harmonic mean of the peaks is the kernel's effective peak.
  A precision the kernel uses but the profile gives no peak for is left out of
  t_compute, and ``state`` says so (the bound stays a valid lower bound).
- ``dram_bytes``, else ``dram_read_bytes + dram_write_bytes`` -> DRAM bytes.
- GPU profile: ``memory_bandwidth_gb_per_s`` -> peak bandwidth.
- constants ``attainable_bandwidth_fraction`` and ``attainable_flop_fraction``
  (default 1.0: the datasheet roofs; calibrate them to measured ceilings, as
  the paper's own "ceilings" do) scale the two roofs.

Kernels with FLOP counts but no DRAM bytes get a compute-only lower bound,
kernels with DRAM bytes but no FLOP counts a memory-only lower bound (both say
so in ``state``, and their ``bottleneck`` is ``unknown`` because only one roof
could be checked). Kernels with neither get an ``error`` naming the counters.

Outputs: ``predicted_ns`` (R3), ``bottleneck`` ``compute`` /
``memory-bandwidth`` / ``balanced`` (the two times within
``BALANCED_TOLERANCE`` of each other, i.e. AI within that factor of the ridge
point), and details ``arithmetic_intensity`` (FLOP/byte), ``ridge_point``
(FLOP/byte), ``attainable_flop_per_s``, ``t_compute_ns``, ``t_memory_ns``.

Nsight Compute's own verdict
----------------------------
When the speed-of-light throughputs are present (``sol_sm_fraction`` and
``sol_memory_fraction``; ``sol_dram_fraction`` stands in for the memory one
when only it was collected), ``ncu_rule_label`` reproduces the label of the
SOLBottleneck rule that ships with Nsight Compute (``sections/SpeedOfLight.py``,
rule identifier ``SOLBottleneck``; thresholds ``balanced_threshold = 10``,
``latency_bound_threshold = 60``, ``no_bound_threshold = 80``,
``waves_threshold = 1``, unchanged from the 2021 to the 2025 release)::

    if SM% < 80 and Mem% < 80:
        if SM% < 60 and Mem% < 60:
            "Small Grid" if waves per SM < 1 else "Latency Issue"
        elif |SM% - Mem%| >= 10:
            "High Compute Throughput" if SM% > Mem% else "High Memory Throughput"
        else:
            "Balanced Throughput"
    else:
        "High Throughput" (compute side if SM% >= Mem%, else memory side)

The rule's message for "Latency Issue" is the one seen in real ncu output:
"Achieved compute throughput and/or memory bandwidth below 60.0% of peak
typically indicate latency issues." Waves per SM come from the raw column
``launch__waves_per_multiprocessor`` when the input kept it, else from the
launch shape: grid_blocks / (resource-limited blocks per SM x SM count).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge import labels
from nvperf_bridge.columns import describe_missing
from nvperf_bridge.counters import dram_bytes
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.launch import resource_blocks_per_sm
from nvperf_bridge.launch_cost import LAUNCH_CONSTANT
from nvperf_bridge.model import (
    ConstantSpec,
    Requirements,
    column_or_nan,
    constant_values,
    detail_column,
    empty_result,
    number_option,
)

# Two times within this factor of each other (AI within x/÷ 1.1 of the ridge
# point) are called balanced: closer than the accuracy of either roof.
BALANCED_TOLERANCE = 1.10

# Nsight Compute SOLBottleneck rule thresholds (percent of peak), sections/SpeedOfLight.py.
NCU_BALANCED_THRESHOLD = 10.0
NCU_LATENCY_BOUND_THRESHOLD = 60.0
NCU_NO_BOUND_THRESHOLD = 80.0
NCU_WAVES_THRESHOLD = 1.0

# precision column -> (how the peak is read from the profile, profile field to add when absent)
PRECISIONS: tuple[tuple[str, str], ...] = (
    ("flop_sp", "peak_fp32_gflops"),
    ("flop_dp", "peak_fp64_gflops"),
    ("flop_hp", "peak_fp16_gflops"),
)


def _peak_flop_per_s(gpu: GpuProfile, column: str) -> float | None:
    """The peak rate that a precision's FLOPs are charged against, or None when the profile has none."""
    if column == "flop_sp":
        return gpu.peak_fp32_flop_per_s
    if column == "flop_dp":
        return gpu.peak_fp64_flop_per_s
    return non_tensor_fp16_flop_per_s(gpu)


def non_tensor_fp16_flop_per_s(gpu: GpuProfile) -> float | None:
    """Peak FP16 rate of the SM's non-tensor lanes: FP16 results per clock per SM (CUDA C++ Programming
    Guide throughput table, ``fp16_results_per_sm`` in data/architectures.yaml) x SMs x 2 (FMA) x clock.
    The profile's ``peak_fp16_gflops`` is the tensor-core peak, which counted FP16 FLOPs (nvprof
    flop_count_hp, ncu smsp__sass_thread_inst_executed_op_h*) never use, so it is not the roof here."""
    from nvperf_bridge.datasheet import architectures

    spec = architectures()["compute_capabilities"].get(str(gpu.compute_capability)) or {}
    per_sm = spec.get("fp16_results_per_sm")
    return None if per_sm is None else float(per_sm) * gpu.sm_count * 2.0 * gpu.sm_clock_hz


def waves_per_sm(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """ncu's ``launch__waves_per_multiprocessor`` when kept, else grid / (blocks per SM x SMs)."""
    given = column_or_nan(kernels, "launch__waves_per_multiprocessor")
    per_sm = resource_blocks_per_sm(kernels, gpu)
    derived = column_or_nan(kernels, "grid_blocks") / (per_sm.where(per_sm > 0) * gpu.sm_count)
    return given.where(given.notna(), derived)


def ncu_rule_labels(kernels: pd.DataFrame, gpu: GpuProfile) -> tuple[pd.Series, pd.Series]:
    """The label Nsight Compute's SOLBottleneck rule gives each kernel, and which memory metric fed it.

    Empty label where the throughputs were not collected.
    """
    sm = column_or_nan(kernels, "sol_sm_fraction") * 100.0
    mem_total = column_or_nan(kernels, "sol_memory_fraction") * 100.0
    mem_dram = column_or_nan(kernels, "sol_dram_fraction") * 100.0
    mem = mem_total.where(mem_total.notna(), mem_dram)
    waves = waves_per_sm(kernels, gpu)
    low = (sm < NCU_NO_BOUND_THRESHOLD) & (mem < NCU_NO_BOUND_THRESHOLD)
    latency = low & (sm < NCU_LATENCY_BOUND_THRESHOLD) & (mem < NCU_LATENCY_BOUND_THRESHOLD)
    small_grid = latency & (waves < NCU_WAVES_THRESHOLD)
    lopsided = low & ~latency & ((sm - mem).abs() >= NCU_BALANCED_THRESHOLD)
    conditions = [
        small_grid,
        latency,
        lopsided & (sm > mem),
        lopsided,
        low,
        sm >= mem,
    ]
    choices = [
        "Small Grid",
        "Latency Issue",
        "High Compute Throughput",
        "High Memory Throughput",
        "Balanced Throughput",
        "High Throughput (compute)",
    ]
    have = sm.notna() & mem.notna()
    # text as codes into a few labels (nvperf_bridge.labels), never a string built per kernel
    label = labels.select([~have, *conditions], ["", *choices], default="High Throughput (memory)")
    source = labels.select(
        [~have, mem_total.notna(), mem_total.isna() & mem_dram.notna()],
        ["", "sol_memory_fraction", "sol_dram_fraction (the rule reads Memory Throughput; DRAM stands in)"], "")
    return (pd.Series(label, index=kernels.index, dtype="object", copy=False),
            pd.Series(source, index=kernels.index, dtype="object", copy=False))


class RooflineModel:
    """Williams et al. (CACM 2009) roofline as a per-kernel lower bound on time."""

    id = "roofline"
    version = "1.0.0"
    description = "Roofline lower bound: max(FLOPs / peak FLOP rate, DRAM bytes / peak bandwidth); plus Nsight Compute's SOL rule label"
    paper = "S. Williams, A. Waterman, D. Patterson, Roofline: an insightful visual performance model for multicore architectures, CACM 52(4), 2009"
    requires = Requirements(
        required=("dram_bytes",),
        optional=(
            "flop_sp", "flop_dp", "flop_hp", "dram_read_bytes", "dram_write_bytes",
            "sol_sm_fraction", "sol_memory_fraction", "sol_dram_fraction", "grid_blocks", "block_threads",
            "registers_per_thread", "shared_mem_per_block_bytes",
        ),
    )
    constants = (
        ConstantSpec(
            "attainable_bandwidth_fraction", 1.0, "fraction", (0.05, 1.0),
            "fraction of the datasheet DRAM bandwidth a streaming kernel attains (the paper's bandwidth ceiling)",
            "default 1.0 = datasheet roof (Williams et al. 2009); calibrate to a STREAM-like measurement",
        ),
        ConstantSpec(
            "attainable_flop_fraction", 1.0, "fraction", (0.05, 1.0),
            "fraction of the datasheet peak FLOP rate a compute-bound kernel attains (the paper's in-core ceilings)",
            "default 1.0 = datasheet roof (Williams et al. 2009); calibrate to a dense-FMA measurement",
        ),
        LAUNCH_CONSTANT,
    )

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        result = empty_result(kernels)
        constants = constant_values(self, gpu)
        # options may override the constants (calibration tries values without editing profiles)
        bw_fraction = number_option(options, "attainable_bandwidth_fraction", constants["attainable_bandwidth_fraction"],
                                    self.id, positive=True)
        flop_fraction = number_option(options, "attainable_flop_fraction", constants["attainable_flop_fraction"],
                                      self.id, positive=True)
        tolerance = number_option(options, "balanced_tolerance", BALANCED_TOLERANCE, self.id, positive=True)
        bandwidth = gpu.memory_bandwidth_bytes_per_s * bw_fraction

        # t_compute: each precision against its own roof (R3, first term)
        t_compute_s = pd.Series(0.0, index=kernels.index)
        flops = pd.Series(0.0, index=kernels.index)
        any_flop_count = pd.Series(False, index=kernels.index)
        # notes as bits (one per note, in the order they read), rendered once per distinct combination
        note_bits = np.zeros(len(kernels), dtype=np.intp)
        note_texts: list[str] = []
        for column, profile_field in PRECISIONS:
            counted = column_or_nan(kernels, column)
            present = counted.notna()
            any_flop_count |= present
            counted = counted.fillna(0.0)
            peak = _peak_flop_per_s(gpu, column)
            if peak is None or peak <= 0:
                uses = (counted > 0).to_numpy()
                note_bits |= uses << len(note_texts)
                note_texts.append(f"; {column} left out of t_compute: GPU profile has no {profile_field}")
                continue
            t_compute_s += counted / (peak * flop_fraction)
            flops += counted
        for column, _ in PRECISIONS:  # a precision not collected beside one that was: say it counted as 0
            absent = (any_flop_count & column_or_nan(kernels, column).isna()).to_numpy()
            note_bits |= absent << len(note_texts)
            note_texts.append(f"; {column} not collected (counted as 0 in t_compute)")
        t_compute_ns = (t_compute_s * 1e9).where(any_flop_count)
        bytes_ = dram_bytes(kernels)
        t_memory_ns = bytes_ / bandwidth * 1e9

        both = t_compute_ns.notna() & t_memory_ns.notna()
        memory_only = ~any_flop_count & t_memory_ns.notna()
        compute_only = any_flop_count & t_memory_ns.isna()
        neither = ~any_flop_count & t_memory_ns.isna()

        predicted = np.fmax(t_compute_ns, t_memory_ns)  # R3 (fmax ignores the missing roof)
        launch_ns = number_option(options, "launch_ns", constants["launch_ns"], self.id)

        ratio = t_compute_ns / t_memory_ns  # = AI / ridge point
        balanced = both & (ratio <= tolerance) & (ratio >= 1.0 / tolerance)
        compute = both & ~balanced & (t_compute_ns > t_memory_ns)
        memory = both & ~balanced & ~compute
        # errors: nothing to bound with, or a zero bound (no FLOPs and no DRAM traffic)
        zero = ~neither & ~(predicted > 0)  # the roofs alone: the launch term does not make work out of nothing
        error = labels.select(
            [neither, zero],
            [describe_missing(["dram_bytes", "flop_sp"]) + " (the roofline needs DRAM bytes or FLOP counts)",
             "zero FLOPs counted and zero DRAM bytes moved: the roofline gives no bound for this kernel"], "")
        failed = (neither | zero).to_numpy()
        # EXTENSION (launch_cost, 0 = the paper): the fixed launch time a bound of work alone never shows
        result["predicted_ns"] = (predicted + launch_ns).where(~failed)
        result["bottleneck"] = labels.column(labels.select([failed, balanced, memory, compute],
                                                           ["unknown", "balanced", "memory-bandwidth", "compute"],
                                                           "unknown"), kernels.index, owned=True, text=True)
        # the state and its notes: one text per distinct (state, notes) pair (nvperf_bridge.labels.render)
        states = ["", "compute-only lower bound (no DRAM bytes: dram_bytes not collected)",
                  "memory-only lower bound (no FLOP counts: flop_sp/flop_dp/flop_hp not collected)",
                  f"at the ridge point (AI within x{tolerance:g} of it)",
                  "memory-bound (AI below the ridge point)", "compute-bound (AI above the ridge point)"]
        state_code = labels.choice_codes([failed, compute_only, memory_only, balanced, memory, compute])
        state_code = np.where(state_code == len(states), 0, state_code)  # none of them: ""
        notes_of = lambda bits: "".join(t for i, t in enumerate(note_texts) if bits >> i & 1)  # noqa: E731
        width = 1 << len(note_texts)
        result["state"] = pd.Series(
            labels.render(state_code * width + np.where(failed, 0, note_bits),
                          lambda code: (states[code // width] + notes_of(code % width)).lstrip("; ")),
            index=kernels.index, dtype="object", copy=False)
        result["error"] = pd.Series(error, index=kernels.index, dtype="object", copy=False)

        # details (R1, R2)
        with np.errstate(divide="ignore", invalid="ignore"):
            effective_peak = flops / t_compute_s  # FLOP-weighted harmonic mean of the charged peaks
        effective_peak = effective_peak.where((flops > 0) & any_flop_count)
        ai = (flops / bytes_).where(any_flop_count & (bytes_ > 0))
        result["arithmetic_intensity"] = ai
        result["ridge_point"] = effective_peak / bandwidth
        result["attainable_flop_per_s"] = np.fmin(effective_peak, ai * bandwidth)
        result["t_compute_ns"] = t_compute_ns
        result["t_memory_ns"] = t_memory_ns
        result["dram_bytes_used"] = bytes_
        result["launch_ns"] = detail_column(launch_ns, kernels.index)  # a constant: shared (speed only)
        label, label_source = ncu_rule_labels(kernels, gpu)
        result["ncu_rule_label"] = label
        result["ncu_rule_memory_metric"] = label_source
        return result


MODEL = RooflineModel()


@hookimpl
def register_models(register: Any) -> None:
    register(MODEL)
