"""Kothapalli et al. (HiPC'09): BSP + PRAM + QRQW cost model, Eqs. (1)-(4), MAX and SUM.

K. Kothapalli, R. Mukherjee, M. S. Rehman, S. Patidar, P. J. Narayanan and
K. Srinathan, "A Performance Prediction Model for the CUDA GPGPU Platform",
HiPC 2009 (``shared/seeds/001_9ca7435811ed82ee.txt``).

The model costs one thread in cycles, computation N_comp plus memory
N_memory (Section 3.2), combines them as MAX (latency fully hidden) or SUM
(not hidden at all) (Section 3.3), and scales the thread to the kernel by the
blocks each SM runs in sequence, the threads per block, and the SM's
N_C cores x D-deep pipelines (Eq. 3); time is cycles / clock (Eq. 4).

Where each paper symbol comes from
----------------------------------
Per-thread counts are warp-level totals / total warps (``launch.per_thread``;
total warps = grid_blocks x ceil(block_threads / 32)).

========================  ====================================================
paper symbol (equation)   source
========================  ====================================================
N_comp (Sec. 3.2.1)       computation instructions per thread x
                          ``comp_cycles_per_inst``; computation instructions
                          = (``inst_executed`` - global - shared memory
                          instructions) / total warps. The paper adds each
                          operation's own cycle count (4 for an add, 16 for
                          an integer multiply); counters give one count, so
                          one average cost per instruction is used.
N_memory (Sec. 3.2.2)     global: (``inst_global_ld`` + ``inst_global_st``) /
                          total warps accesses, each costing (L + k) / k
                          cycles with L = ``global_latency`` and k the threads
                          one transaction serves; shared: (``inst_shared_ld`` +
                          ``inst_shared_st``) / total warps accesses, each
                          costing ``shared_latency`` x k' cycles for a k'-way
                          bank conflict (QRQW, linear contention: 4k).
k                         G80/GT200 (cc 1.x, the paper's GPUs): N_t x c / r,
                          clipped to [1, ``coalescing_group``]; sector GPUs
                          (cc >= 2.0, beyond the paper, detail ``k_rule``):
                          N_t / r, the threads one 32-byte sector serves
                          (8 coalesced 4-byte, 2 for 16-byte words, 1 strided).
                          Published form:
                          with r = (``global_ld_sectors`` + ``global_st_sectors``)
                          / requests and c the profile's
                          ``coalesced_sectors_per_request`` (4 when absent):
                          a fully coalesced warp serves the whole coalescing
                          group per transaction, a fully uncoalesced one (r =
                          32 c) one thread per transaction, k = 1.
k' (bank conflicts)       (``shared_ld_wavefronts`` + ``shared_st_wavefronts``)
                          / shared requests, at least 1
C(T) (Sec. 3.3)           MAX: max(N_comp, N_memory); SUM: N_comp + N_memory.
                          MAX + ``exposed_fraction`` x min(N_comp, N_memory)
                          with the EXTENSION constant ``exposed_fraction``
                          (0, the paper's MAX, by default; 1 is SUM; fitted
                          by calibrate)
C_T(K) (2)                C(T) x option ``max_thread_factor`` (default 1): the
                          paper takes the costliest thread; counters give the
                          mean thread, so without the factor C_T(K) is the
                          mean thread's cost (a lower bound of Eq. 2)
N_B (3)                   ceil(``grid_blocks`` / ``sm_count``): blocks one SM
                          runs in sequence (Section 5.2: "at most N_B =
                          ceil(N / (512 x 30)) blocks are assigned to any
                          single SM")
N_w (3)                   ceil(``block_threads`` / 32) (``launch.warps_per_block``)
N_t (3)                   profile ``warp_size`` (32)
N_C (3)                   profile ``cores_per_sm``
D (3)                     constant ``D`` (pipeline depth, 4: Section 2)
R (4)                     ``sm_clock_hz`` when measured, else the profile's
                          ``sm_clock_mhz`` (detail ``clock_source``)
T(P) (1)                  the sum of ``predicted_ns`` over a program's kernels
                          (left to the reports: one row is one kernel)
========================  ====================================================

Both thread-cost models are always computed: details ``C_K_max``,
``C_K_sum``, ``T_max_ns`` and ``T_sum_ns``.

Options (``options`` mapping, all optional)
-------------------------------------------
``prediction``: ``max`` (default) or ``sum``: which of the two becomes
    predicted_ns / predicted_cycles (the paper shows MAX estimates where the
    two agree, Section 5.2).
``max_thread_factor``: positive number, default 1: C_T(K) = factor x the mean
    thread's C(T), for kernels whose costliest thread does more work than the
    average (Eq. 2; e.g. random sublists in list ranking).

Bottleneck (shared vocabulary)
------------------------------
The model has no bandwidth term: a thread's memory cost is latency (global)
or contention (shared). ``memory-latency`` when N_memory > N_comp,
``compute`` when N_comp > N_memory, ``balanced`` when the smaller is at least
90% of the larger. State says which term dominates and where the memory cost
comes from (global or shared-memory bank conflicts).

Caveats: the paper ignores ``__syncthreads`` (Section 3.1; barriers are
counted as ordinary instructions here) and atomics (Section 6), and assumes no
caches (every global access pays L). The coalescing formula (L + k) / k gives
L + 1 for k = 1 where the paper's text rounds to L ("as high as 500 cycles").
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge import labels, launch
from nvperf_bridge.counters import global_sectors, sm_clock
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.launch_cost import LAUNCH_CONSTANT, with_launch
from nvperf_bridge.memory_levels import served_fractions, served_latency
from nvperf_bridge.model import (
    ConstantSpec,
    Requirements,
    bool_option,
    choice_option,
    column_or_nan,
    constant_values,
    detail_column,
    empty_result,
    missing_inputs,
    number_option,
    without_reason,
)

# Profiles without ``coalesced_sectors_per_request`` are sector GPUs: a warp of
# 4-byte words needs 4 x 32-byte sectors.
DEFAULT_COALESCED_SECTORS = 4.0
PREDICTIONS = ("max", "sum")
GLOBAL_MEMORY = ("levels", "dram")  # the first is the default; "dram" is the paper's
# The two thread costs within this ratio of each other count as balanced.
BALANCED_RATIO = 0.9


def _cc_major(gpu: GpuProfile) -> int:
    """The compute capability's major number (1 when the profile's value cannot be read)."""
    try:
        return int(str(gpu.compute_capability).split(".")[0])
    except ValueError:
        return 1


class KothapalliModel:
    """The HiPC'09 MAX/SUM model; see the module docstring for inputs, options and rules."""

    id = "kothapalli"
    # option values beyond the paper (reports and calibrate mark them EXTENSION); see "Options" above
    extension_options = {"global_memory": ("levels",), "thread_floor": (True, "true")}
    version = "1.0.0"
    description = (
        "Per-thread compute and memory cycles (coalescing (L+k)/k, shared-memory bank conflicts 4k), "
        "combined as MAX or SUM, scaled by blocks per SM, threads per block and cores x pipeline depth."
    )
    paper = (
        "K. Kothapalli, R. Mukherjee, M. S. Rehman, S. Patidar, P. J. Narayanan, K. Srinathan, "
        "A Performance Prediction Model for the CUDA GPGPU Platform, HiPC 2009, Eqs. (1)-(4)"
    )
    requires = Requirements(
        required=(
            "grid_blocks",
            "block_threads",
            "inst_executed",
            "inst_global_ld",
            "inst_global_st",
            "inst_shared_ld",
            "inst_shared_st",
        ),
        optional=(
            "global_ld_sectors",  # needed when there are global loads
            "global_st_sectors",  # needed when there are global stores
            "shared_ld_wavefronts",  # needed when there are shared loads
            "shared_st_wavefronts",  # needed when there are shared stores
            "sm_clock_hz",
            "dram_bytes",  # global_memory=levels: where the global sectors were served
            "dram_read_bytes",
            "dram_write_bytes",
            "l2_read_bytes",
            "l2_write_bytes",
        ),
    )
    constants = (
        ConstantSpec(
            "global_latency", 500.0, "cycles", (1.0, 5000.0),
            "L: cycles of one global memory transaction (Section 3.2.2)",
            "Kothapalli et al. HiPC'09 Section 3.2.2: '400-600 cycles [CUDA guide] ... we take the average "
            "value of 500 cycles'; a default to calibrate on other GPUs",
        ),
        ConstantSpec(
            "shared_latency", 4.0, "cycles", (0.1, 1000.0),
            "cycles of one conflict-free shared memory access; k-way conflict costs k times this",
            "Kothapalli et al. HiPC'09 Section 3.2.2: 'about 4 cycles per access ... k threads in contention, "
            "the access cost is 4k cycles'",
        ),
        ConstantSpec(
            "comp_cycles_per_inst", 4.0, "cycles", (0.01, 1000.0),
            "average cycles of one computation instruction of a thread (N_comp)",
            "Kothapalli et al. HiPC'09 Section 3.2.1: '4 cycles for a simple addition' (16 for an integer "
            "multiply); a default to calibrate",
        ),
        ConstantSpec(
            "D", 4.0, "stages", (1.0, 64.0),
            "pipeline depth of one core: D threads in flight per core (Eq. 3)",
            "Kothapalli et al. HiPC'09 Section 2: 'Each core comes with a 4 stage pipeline'",
        ),
        ConstantSpec(
            "coalescing_group", 16.0, "threads", (1.0, 64.0),
            "most threads one global transaction can serve (the largest k)",
            "Kothapalli et al. HiPC'09 Section 3.2.2: coalescing over a half-warp (16 threads), 'up to a factor "
            "of 16'; 32 (a whole warp) on compute >= 2.0",
        ),
        ConstantSpec(
            "l2_latency", 500.0, "cycles", (1.0, 5000.0),
            "L of a global transaction served by L2 (global_memory=levels EXTENSION, not in the paper)",
            "default = global_latency (500), the paper's assumption that every access pays L, so that the level "
            "split changes nothing stock (the same prediction as global_memory=dram); calibrate moves it (pointer chasing measures L2 hits at about half the "
            "DRAM round trip: 221 vs 460 cycles on a V100, github.com/markdewing/AI_kernels latency/README.md)",
        ),
        ConstantSpec(
            "l1_latency", 500.0, "cycles", (1.0, 5000.0),
            "L of a global transaction served by L1 (global_memory=levels EXTENSION, not in the paper)",
            "default = global_latency (500), the paper's assumption, so that the level split changes nothing stock "
            "(the same prediction as global_memory=dram); calibrate moves it (L1 hits about 33 cycles by pointer chasing, github.com/ooreilly/cuda "
            "cache/README.md after Mei & Chu TPDS 2017)",
        ),
        ConstantSpec(
            "exposed_fraction", 0.0, "fraction", (0.0, 1.0),
            "share of the smaller of N_comp and N_memory that the MAX model's overlap leaves exposed: C(T) = "
            "max + exposed_fraction x min (EXTENSION between the paper's two combinations: 0 = MAX, 1 = SUM)",
            "default 0, the paper's MAX model (Section 3.3: latency fully hidden); 1 is its SUM model (not hidden at "
            "all); fitted by calibrate: how much of the hidden cost a GPU's warps fail to hide",
        ),
        LAUNCH_CONSTANT,
    )

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        """Predict every kernel with Eqs. (2)-(4) under both MAX and SUM; vectorised over the frame."""
        options = options or {}
        prediction = choice_option(options, "prediction", PREDICTIONS, self.id)
        max_thread_factor = number_option(options, "max_thread_factor", 1.0, self.id, positive=True)
        global_memory = choice_option(options, "global_memory", GLOBAL_MEMORY, self.id)
        thread_floor = bool_option(options, "thread_floor", True, self.id)
        index = kernels.index
        const = constant_values(self, gpu)
        c = float(gpu.get("coalesced_sectors_per_request", DEFAULT_COALESCED_SECTORS))
        N_t = float(gpu.warp_size)
        N_C = float(gpu.cores_per_sm)
        D = const["D"]
        L = const["global_latency"]
        sector_gpu = _cc_major(gpu) >= 2

        with np.errstate(divide="ignore", invalid="ignore"):
            geometry = launch.launch_geometry(kernels, gpu)  # computed once per frame, shared by the models
            total_warps = geometry.total_warps
            blocks = column_or_nan(kernels, "grid_blocks")
            g_ld = column_or_nan(kernels, "inst_global_ld")
            g_st = column_or_nan(kernels, "inst_global_st")
            s_ld = column_or_nan(kernels, "inst_shared_ld")
            s_st = column_or_nan(kernels, "inst_shared_st")

            # transactions / wavefronts are needed only where there are such accesses
            # 32-byte sectors on every GPU (nvprof's transactions converted per compute capability)
            g_ld_sectors, g_st_sectors, sectors_source = global_sectors(kernels, gpu)
            g_ld_sectors = g_ld_sectors.where(~(g_ld == 0), 0.0)
            g_st_sectors = g_st_sectors.where(~(g_st == 0), 0.0)
            s_ld_wave = column_or_nan(kernels, "shared_ld_wavefronts").where(~(s_ld == 0), 0.0)
            s_st_wave = column_or_nan(kernels, "shared_st_wavefronts").where(~(s_st == 0), 0.0)
            needed = {name: column_or_nan(kernels, name) for name in self.requires.required}
            needed.update(
                global_ld_sectors=g_ld_sectors, global_st_sectors=g_st_sectors,
                shared_ld_wavefronts=s_ld_wave, shared_st_wavefronts=s_st_wave,
            )
            error = missing_inputs(pd.DataFrame(needed, index=index, copy=False), list(needed))

            # --- per-thread counts ---
            global_accesses = (g_ld + g_st) / total_warps
            shared_accesses = (s_ld + s_st) / total_warps
            comp_insts = column_or_nan(kernels, "inst_executed") / total_warps - global_accesses - shared_accesses

            # --- N_comp (Section 3.2.1) ---
            N_comp = comp_insts.clip(lower=0.0) * const["comp_cycles_per_inst"]

            # --- N_memory (Section 3.2.2) ---
            transactions_per_request = (g_ld_sectors + g_st_sectors) / (g_ld + g_st)
            if sector_gpu:
                # cc >= 2.0 (beyond the paper, which had G80/GT200 segments): global memory moves 32-byte
                # sectors and the counters count them, so one transaction (a sector) serves N_t / r threads:
                # 8 for a coalesced warp of 4-byte words, 2 for 16-byte words, 1 when every thread has a
                # sector of its own (strided). N_t x c / r made that last case k = c = 4: 4x too cheap.
                k = (N_t / transactions_per_request).clip(lower=1.0, upper=const["coalescing_group"])
            else:  # Section 3.2.2 as published: a coalesced (half-)warp is one transaction
                k = (N_t * c / transactions_per_request).clip(lower=1.0, upper=const["coalescing_group"])
            if global_memory == "levels":
                # EXTENSION: a transaction waits for the level that served it (memory_levels), not always DRAM
                levels = served_fractions(kernels, g_ld_sectors + g_st_sectors)
                L = served_latency(levels, L, const["l2_latency"], const["l1_latency"])
            global_cost = (L + k) / k  # cycles per access when one transaction serves k threads
            N_memory_global = (global_accesses * global_cost).where(global_accesses > 0, 0.0)
            k_shared = ((s_ld_wave + s_st_wave) / (s_ld + s_st)).clip(lower=1.0)  # QRQW: k-way contention
            N_memory_shared = (shared_accesses * const["shared_latency"] * k_shared).where(shared_accesses > 0, 0.0)
            N_memory = N_memory_global + N_memory_shared

            # --- C(T), C_T(K) (Section 3.3, Eq. 2) ---
            # MAX model; EXTENSION (constant exposed_fraction, 0 = the paper's MAX): the smaller cost is only partly
            # hidden, C(T) = max + exposed_fraction x min, which runs from MAX (0) to SUM (1)
            exposed = const["exposed_fraction"] * np.minimum(N_comp, N_memory)
            C_T_max = (np.maximum(N_comp, N_memory) + exposed) * max_thread_factor
            C_T_sum = (N_comp + N_memory) * max_thread_factor  # SUM model

            # --- Eq. (3) and (4) ---
            N_B = np.ceil(blocks / float(gpu.sm_count))
            N_w = geometry.warps_per_block
            scale = N_B * N_w * N_t / (N_C * D)
            if thread_floor:
                # EXTENSION (option thread_floor, not in the paper): with fewer threads per SM than its N_C x D
                # pipeline slots, Eq. (3) finishes the SM's work in a fraction of one thread's own cost C(T); a
                # thread's instructions run one after another, so the SM takes at least C(T)
                scale = np.maximum(scale, 1.0)
            C_K_max = scale * C_T_max  # (3)
            C_K_sum = scale * C_T_sum  # (3)
            R, clock_source = sm_clock(kernels, gpu)
            T_max_ns = C_K_max / R * 1e9  # (4)
            T_sum_ns = C_K_sum / R * 1e9  # (4)

        chosen_cycles = C_K_max if prediction == "max" else C_K_sum
        chosen_ns = T_max_ns if prediction == "max" else T_sum_ns
        chosen_ns, chosen_cycles = with_launch(chosen_ns, chosen_cycles, const["launch_ns"], R)  # EXTENSION

        # --- bottleneck and state ---
        larger = np.maximum(N_comp, N_memory)
        smaller = np.minimum(N_comp, N_memory)
        balanced = (larger > 0) & (smaller >= BALANCED_RATIO * larger)
        memory_bound = ~balanced & (N_memory > N_comp)
        shared_dominant = N_memory_shared > N_memory_global
        model_label = "MAX" if prediction == "max" else "SUM"

        # --- kernels the model cannot handle get a reason ---
        error = error.to_numpy(dtype=object, copy=True)
        no_reason = without_reason(error)
        checks = [
            (~(blocks > 0) | ~(column_or_nan(kernels, "block_threads") > 0),
             "grid_blocks and block_threads must be positive"),
            (~(column_or_nan(kernels, "inst_executed") > 0), "inst_executed is 0: no instructions to model"),
            (comp_insts < -1e-9 * (global_accesses + shared_accesses),
             "global + shared memory instructions exceed inst_executed (inconsistent counters)"),
            (~np.isfinite(chosen_ns) | ~(chosen_ns > 0), "no finite positive prediction from these counters"),
        ]
        for bad, reason in checks:
            take = no_reason & np.asarray(bad, dtype=bool)
            error[take] = reason
            no_reason &= ~take

        result = empty_result(kernels)
        ok = no_reason  # every kernel given a reason above is out
        text = lambda values: pd.Series(values, index=index, dtype="object", copy=False)  # noqa: E731
        result["predicted_cycles"] = chosen_cycles.where(ok)
        result["predicted_ns"] = chosen_ns.where(ok)
        # text columns as codes into a few labels (nvperf_bridge.labels), never a string built per kernel; a
        # kernel given a reason above takes its fallback label in the same pass (the first condition)
        failed = ~ok
        bottleneck = labels.select([failed, balanced, memory_bound], ["unknown", "balanced", "memory-latency"],
                                   default="compute")
        state = labels.select(
            [failed, balanced, memory_bound & shared_dominant, memory_bound],
            ["", *(f"{model_label}: {text}" for text in ("N_comp ~ N_memory",
                                                         "N_memory > N_comp (shared-memory bank conflicts)",
                                                         "N_memory > N_comp (global memory latency)"))],
            default=f"{model_label}: N_comp > N_memory",
        )
        result["bottleneck"] = labels.column(bottleneck, index, owned=True, text=True)  # new: not copied
        result["state"] = labels.column(state, index, owned=True, text=True)
        result["error"] = labels.column(error, index, owned=True)
        details: dict[str, Any] = {
            "prediction": model_label,
            "T_max_ns": T_max_ns,
            "T_sum_ns": T_sum_ns,
            "C_K_max": C_K_max,
            "C_K_sum": C_K_sum,
            "C_T_max": C_T_max,
            "C_T_sum": C_T_sum,
            "N_comp": N_comp,
            "N_memory": N_memory,
            "N_memory_global": N_memory_global,
            "N_memory_shared": N_memory_shared,
            "comp_insts": comp_insts,
            "global_accesses": global_accesses,
            "shared_accesses": shared_accesses,
            "transactions_per_request": transactions_per_request,
            "sectors_source": sectors_source,
            "k": k.where(global_accesses > 0),
            "k_rule": "sectors: N_t / r (cc >= 2.0)" if sector_gpu else "Section 3.2.2: N_t x c / r",
            "global_access_cycles": global_cost.where(global_accesses > 0),
            "k_shared": k_shared.where(shared_accesses > 0),
            "max_thread_factor": max_thread_factor,
            "N_B": N_B,
            "N_w": N_w,
            "N_t": N_t,
            "N_C": N_C,
            "D": D,
            "R_hz": R,
            "clock_source": clock_source,
            "global_memory": global_memory,
            "thread_floor": thread_floor,
            "L_global": (L if np.ndim(L) else pd.Series(L, index=index)).where(global_accesses > 0),
            "launch_ns": const["launch_ns"],
            "exposed_fraction": const["exposed_fraction"],
        }
        if global_memory == "levels":
            details.update(f_dram=levels["f_dram"], f_l2=levels["f_l2"], f_l1=levels["f_l1"],
                           levels_source=levels["levels_source"])
        for name, values in details.items():
            result[name] = detail_column(values, index)  # a constant: the run's shared column (speed only)
        return result


MODEL = KothapalliModel()


@hookimpl
def register_models(register: Any) -> None:
    """Register the Kothapalli model."""
    register(MODEL)
