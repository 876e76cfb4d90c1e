"""Luo & Suda (2011): execution time from MPD, CPD and four types of calculate period.

Paper: Luo Cheng and Reiji Suda, "An execution time prediction analytical
model for GPU with instruction-level and thread-level parallelism awareness",
IPSJ SIG Technical Report 2011-HPC-130 (shared/seeds/004). GPU: GeForce GTX 260.

The model (equation numbers are the paper's)
---------------------------------------------
A warp's PTX is a sequence of *calculate periods*: a computation task (cost
``c_i``) followed by a memory access task (cost ``m_i``). Per SM::

    Warp_bwt = (N_thread * D_mem) / (N_trans * t_mem)                        (1)
    MPD      = min{N_act, floor(GPU_bwt / (N_act * N_sm * Warp_bwt))}          (2)
    CPD1     = (c - P) * (N_act - b) + a                                       (3)
    CPD2     = (n / (m - 1)) * sqrt((m - 1)^2 - (N_act - m)^2) + a             (4)
    n        = d * (P - c)^2                                                   (5)
    CPD      = min{CPD1, CPD2}
    type 1 (c_{i-1} >= m_{i-1}, c_i >= m_i): T_i = ceil(N_act c_i / CPD)        (6)
    type 2 (c_{i-1} >= m_{i-1}, c_i <  m_i): T_i = ceil(N_act c_i / CPD) + T_c  (7)
                                             T_c = max{m_i - (N_act - 1) c_i, 0} (8)
    type 3 (c_{i-1} <  m_{i-1}, c_i >= m_i): T_i = ceil(N_act c_i / CPD) + T_p  (9)
             T_p = max{m_{i-1} floor(N_act / MPD - 1) - (N_act - 1) c_i, 0}     (10)
    type 4 (c_{i-1} <  m_{i-1}, c_i <  m_i): T_i = ceil(N_act c_i / CPD) + T_p + T_c   (11)
             T_p as (10)                                                        (12)
             T_c = max{m_i - ((N_act - 1) c_i + T_p), 0}                       (13)

and the kernel time is the sum of its periods. ``period_times`` below is
(6)-(13) as a pure, vectorised function of (c_{i-1}, m_{i-1}, c_i, m_i,
N_act, MPD, CPD); the tests check each type against a hand computation.

Inputs: canonical KernelFrame columns -> paper symbols
------------------------------------------------------
The paper reads a PTX trace with Ocelot; profiler counters give totals, so
the kernel is modelled as ``K`` identical calculate periods per warp (the
average period). Per-warp counts are warp-level totals / total warps
(``nvperf_bridge.launch.per_thread``), which is the paper's per-thread PTX
count (a warp executes each instruction once for its 32 threads).

- ``inst_global_ld + inst_global_st`` (ncu ``smsp__inst_executed_op_global_ld/st.sum``,
  nvprof ``gld_request``/``gst_request``) -> memory access instructions per
  warp; ``K = that / mem_insts_per_task`` calculate periods (option, default
  1: one memory instruction per memory access task). With ``K < 1`` one period.
- ``inst_executed`` (``smsp__inst_executed.sum``) minus the global and shared
  memory instructions -> computation instructions per warp.
- ``inst_shared_ld + inst_shared_st`` (optional) -> shared-memory instructions,
  counted as computation (they do not use device bandwidth, which is what
  MPD models), at cost ``cost_shared``. When they were not collected, those
  instructions stay in the computation count at ``cost_comp`` and the detail
  ``I_smem_source`` says so (the two costs are equal by default).
- Instruction cost table (Table 1, GPU clocks) as model constants:
  ``t_mem`` (Table 1 "ld/st 200"), ``cost_comp`` (Table 1 add/sub with
  register operands, int and float: 65), ``cost_shared`` (no Table 1 entry;
  defaults to the register add). The full Table 1 is kept as data in
  ``TABLE_1_CYCLES``; counters do not say which opcode ran, so the model
  charges every computation instruction ``cost_comp``.
- ``P`` (computation instruction proportion, Section 3.4) = computation cost
  / (computation cost + memory cost), costs from that table, per warp. The
  memory cost is the memory tasks' own, ``N_trans x t_mem`` per memory
  instruction (option ``memory_cost: per-transaction``, default), so that P and
  ``m_i`` are in one unit; ``per-instruction`` charges every ld/st ``t_mem``
  once, as Section 3.4 prints it (the two agree for a warp of one transaction).
- ``c_i`` = computation cost per warp / K; ``m_i`` = (memory instructions
  per period) x ``N_trans`` x ``t_mem`` -- each of the ``N_trans``
  transactions costs ``t_mem``, which is what (1) says: a warp moves
  ``N_thread * D_mem`` bytes in ``N_trans * t_mem`` cycles.
- ``N_trans`` = (``global_ld_sectors + global_st_sectors``, 32-byte sectors on
  every GPU: ``counters.global_sectors``) / memory instructions /
  ``sectors_per_transaction``. That option defaults to the profile's
  ``coalesced_sectors_per_request``: a transaction is what one coalesced warp
  request moves, 1 nvprof transaction on compute 1.x (the paper's GTX 260) and
  4 x 32-byte sectors on later GPUs, so a coalesced warp of 4-byte words is
  one transaction everywhere and costs ``t_mem`` once, not four times.
- ``D_mem`` = bytes per thread per access (option, default 4: the paper's
  float benchmarks). ``N_thread`` = the profile's ``warp_size``.
- ``N_act`` = active warps per SM = achieved_occupancy x ``max_warps_per_sm``
  (``LaunchGeometry.active_warps_per_sm``: theoretical occupancy, then the
  occupancy calculator's resident warps when achieved occupancy was not
  collected; the column ``N_act_source`` says which).
- ``N_sm`` = active SMs = min(``sm_count``, grid_blocks); ``GPU_bwt`` =
  ``memory_bandwidth_gb_per_s`` / ``sm_clock_mhz`` in bytes per SM-clock
  (``t_mem`` and Table 1 are in GPU clocks). ``m`` of (4) = ``max_warps_per_sm``.
- a, b, c, d (Section 3.4, GTX 260: 3, 11, 0.5, 80) are model constants.
- Kernel time = #Rep x (T_first + (K - 1) T_steady) cycles, #Rep =
  ``LaunchGeometry.repetitions`` (warps per SM / N_act); the first period has no
  previous memory task (type 1 or 2), the steady periods repeat the same
  (c, m), so they are type 1 or 4. ns = cycles / SM clock (the measured ``sm_clock_hz`` when present, else ``sm_clock_mhz``;
  ``clock_source`` says which).

The paper assumes every global access goes to DRAM; so does this model: its
memory inputs are global *requests and transactions*, L1/L2 hits included
(``memory_source`` says so in the output).

Deviations from the printed equations (each documented in docs/models/luo-suda.md)
----------------------------------------------------------------------------------
- (8) prints ``(n - 1) c_i``; ``n`` there is the number of warps, N_act, as in (13).
- (13) prints ``max{...}`` with one argument; read as ``max{..., 0}`` like (8), (10).
- (3) has a negative slope when P > c, so min{CPD1, CPD2} goes to zero and
  below as N_act grows past b; the text motivates (4) for "computation
  instruction proportion high enough", and at P = c both equal ``a``. So CPD =
  min{CPD1, CPD2} for P <= c and CPD2 for P > c.
- CPD is floored at ``cpd_min`` (option, default 1: one warp's computation at
  its Table 1 cost, no overlap), since (3) is zero or negative for few warps
  at low P. Set ``cpd_min`` lower to see the printed values.
- MPD is floored at 1 (one warp can always access memory; (2) floors to 0
  when the bandwidth share is below one warp's). With option
  ``mpd_form: per-sm``, (2) is evaluated without the ``N_act`` factor in the
  denominator, MPD = min{N_act, floor(GPU_bwt / (N_sm Warp_bwt))}: the number
  of warps per SM whose concurrent accesses fit the SM's share of the
  bandwidth (the printed form makes MPD *fall* as warps are added, which caps
  a saturated kernel far below the device bandwidth and makes Fig. 8's linear
  kernel slow down past 4 warps). Default: per-sm; ``mpd_form: printed`` is
  the published form.
- ``rounding: continuous`` (EXTENSION, not the default): the floors and ceilings of (2), (6)-(13) are
  left out, so MPD and the waiting rounds of (10) are the averages they stand for over many periods
  and SMs, and a prediction moves smoothly with the constants. ``calibrate`` tries both forms
  (``calibration_options``) and keeps the one whose fit reaches the lower training objective: with
  the printed floors the objective is piecewise constant between kernels and a fit stops wherever
  its finite differences straddle a step.
- ``global_memory: levels`` (EXTENSION, the default): an L2-served transaction costs ``t_l2``, an
  L1-served one ``t_l1``, each at most the cost of the level behind it (t_l1 <= t_l2 <= t_mem: a
  larger value counts as the cost of the level behind it), so no fit makes a cache hit dearer than the
  DRAM access it saves.

Options (``options`` mapping; any constant name may also be given to override it)
-------------------------------------------------------------------------------
``D_mem`` (float, 4.0), ``mem_insts_per_task`` (float, 1.0),
``sectors_per_transaction`` (float, the profile's ``coalesced_sectors_per_request``),
``mpd_form`` ("per-sm" | "printed"), ``memory_cost`` ("per-transaction" |
"per-instruction"), ``global_memory`` ("levels" | "dram"), ``rounding`` ("printed" |
"continuous"), ``cpd_min`` (float > 0, 1.0). The published form is
``mpd_form: printed, memory_cost: per-instruction`` (and, on a sector GPU,
``sectors_per_transaction: 1``).

Outputs
-------
``predicted_ns``, ``predicted_cycles``, ``bottleneck``, ``state`` (the steady
period's type), ``error``, and details: ``N_act``, ``N_act_source``, ``N_sm``,
``N_trans``, ``D_mem``, ``Warp_bwt``, ``GPU_bwt`` (bytes/cycle), ``MPD``, ``P``,
``CPD1``, ``CPD2``, ``CPD``, ``c_i``, ``m_i`` (cycles), ``periods`` (K),
``T_first``, ``T_steady``, ``T_p``, ``T_c`` (steady period, cycles),
``period_type`` (steady), ``Rep``, ``memory_source`` (``rounding`` is in the run's options, which
reports list with the EXTENSION mark).

Bottleneck: no stall in the steady period (T_p + T_c = 0: computation covers
memory) -> ``compute``; a stall with MPD < N_act (bandwidth caps concurrent
accesses, (2)) -> ``memory-bandwidth``; a stall with MPD = N_act (every warp
accesses at once, yet (N_act - 1) c_i does not cover m_i) -> ``parallelism``
while more warps would fit on the SM, ``memory-latency`` at the warp limit.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge import labels
from nvperf_bridge.columns import describe_missing
from nvperf_bridge.counters import global_sectors, sm_clock
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.launch import launch_geometry
from nvperf_bridge.launch_cost import LAUNCH_CONSTANT, with_launch
from nvperf_bridge.memory_levels import served_fractions, served_latency
from nvperf_bridge.model import (
    ConstantSpec,
    Requirements,
    choice_option,
    column_or_nan,
    constant_values,
    constant_column,
    empty_result,
    missing_inputs,
    without_reason,
    number_option,
)

# Table 1 of the paper: time cost of PTX instructions on the GTX 260, GPU clocks,
# by operand kind (int_const, int_reg, float_const, float_reg). Kept as data: the
# counters cannot tell opcodes apart, so only ld/st (t_mem) and add/sub with
# register operands (cost_comp) feed the defaults; the rest documents the source.
TABLE_1_CYCLES: dict[str, tuple[float, float, float, float]] = {
    "add": (22, 65, 22, 65),
    "sub": (22, 65, 22, 65),
    "mul": (44, 136, 22, 65),
    "div": (728, 753, 748, 783),
    "neg": (22, 22, 17, 17),
    "min": (62, 62, 62, 62),
    "max": (62, 62, 62, 62),
    "and": (64, 64, 64, 64),
    "or": (62, 62, 62, 62),
    "xor": (62, 62, 62, 62),
    "not": (22, 22, 22, 22),
    "ld/st": (200, 200, 200, 200),
}

# Instruction classes the counters can tell apart: class -> (cost constant, canonical columns summed).
INSTRUCTION_CLASSES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("global memory", "t_mem", ("inst_global_ld", "inst_global_st")),
    ("shared memory", "cost_shared", ("inst_shared_ld", "inst_shared_st")),
    ("other computation", "cost_comp", ("inst_executed",)),  # minus the two classes above
)

MPD_FORMS = ("per-sm", "printed")  # the first is the default
MEMORY_COSTS = ("per-transaction", "per-instruction")  # the first is the default
GLOBAL_MEMORY = ("levels", "dram")  # the first is the default; "dram" is the paper's
# (ceil, floor) of Eqs. (2), (6)-(13): as printed, or "continuous" (EXTENSION): MPD and the rounds of (10) as the
# averages they are over many periods and SMs, so that a prediction moves smoothly with the constants
ROUNDINGS = {"printed": (np.ceil, np.floor), "continuous": (np.asarray, np.asarray)}
DEFAULT_COALESCED_SECTORS = 4.0  # sector GPUs: a coalesced warp of 4-byte words is 4 x 32-byte sectors

PERIOD_TYPE_LABELS = {
    1: "type 1: c >= m (memory hidden by computation)",
    2: "type 2: c < m in this period only",
    3: "type 3: c < m in the previous period only",
    4: "type 4: c < m in this and the previous period",
}


def period_terms(c_i: Any, m_i: Any, N_act: Any, CPD: Any, rounding: str = "printed") -> dict[str, np.ndarray]:
    """The terms of a calculate period that depend on this period's tasks alone, not on the previous
    one's: ``compute`` (the ceil term of Eqs. (6), (7), (9), (11)), ``others_compute`` ((N_act - 1) c_i,
    the other warps' computation tasks), ``T_c_long`` (Eq. (8), n read as N_act) and ``cur_long``
    (c_i < m_i). A first and a steady period of one kernel share them (``period_times``' ``terms``)."""
    c_i, m_i, N_act, CPD = (np.asarray(v, dtype="float64") for v in (c_i, m_i, N_act, CPD))
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = ROUNDINGS[rounding][0](N_act * c_i / CPD)  # (6), first term of (7), (9), (11)
    others_compute = (N_act - 1.0) * c_i  # the other warps' computation tasks of this period
    return {"compute": compute, "others_compute": others_compute,
            "T_c_long": np.maximum(m_i - others_compute, 0.0), "cur_long": c_i < m_i}


def period_times(
    c_prev: Any, m_prev: Any, c_i: Any, m_i: Any, N_act: Any, MPD: Any, CPD: Any, has_prev: Any = True,
    rounding: str = "printed", terms: dict[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Time of one calculate period, Eqs. (6)-(13), vectorised over numpy arrays.

    ``has_prev`` False marks a first period (no previous memory task: type 1 or 2).
    ``terms``: ``period_terms(c_i, m_i, N_act, CPD, rounding)`` when the caller has them already (the
    first and steady periods of one kernel: computed once, speed only).
    Returns arrays ``T_i``, ``T_p``, ``T_c``, ``compute`` (the ceil term) and
    ``type`` (1..4), all in the units of c and m (GPU clocks).
    """
    c_prev, m_prev, c_i, m_i, N_act, MPD, CPD = (
        np.asarray(v, dtype="float64") for v in (c_prev, m_prev, c_i, m_i, N_act, MPD, CPD)
    )
    has_prev = np.asarray(has_prev, dtype=bool)
    prev_long = has_prev & (c_prev < m_prev)  # c_{i-1} < m_{i-1}
    if terms is None:
        terms = period_terms(c_i, m_i, N_act, CPD, rounding)
    floor = ROUNDINGS[rounding][1]
    compute, others_compute, cur_long = terms["compute"], terms["others_compute"], terms["cur_long"]
    # a period with no previous long memory task (every first period): T_p = 0 and Eq. (13) never applies,
    # neither is computed (speed only: the same values)
    T_c_long = terms["T_c_long"]  # (8), n read as N_act
    if prev_long.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            # (10) = (12): the previous period's accesses finish MPD warps at a time
            T_p = np.where(prev_long, np.maximum(m_prev * floor(N_act / MPD - 1.0) - others_compute, 0.0), 0.0)
        T_c_long = np.where(prev_long, np.maximum(m_i - (others_compute + T_p), 0.0), T_c_long)  # (13)
    else:
        T_p = np.zeros(np.broadcast_shapes(prev_long.shape, m_prev.shape, N_act.shape, MPD.shape, c_i.shape))
    T_c = np.where(cur_long, T_c_long, np.broadcast_to(0.0, T_p.shape))  # T_c = 0 where c_i >= m_i
    kind = 1 + cur_long.astype(int) + 2 * prev_long.astype(int)  # 1, 2 (cur), 3 (prev), 4 (both)
    return {"T_i": compute + T_p + T_c, "T_p": T_p, "T_c": T_c, "compute": compute, "type": kind}


def cpd(P: Any, N_act: Any, a: float, b: float, c: float, d: float, m: float, cpd_min: float = 1.0) -> dict[str, np.ndarray]:
    """CPD1 (3), CPD2 (4)-(5) and the CPD used (min for P <= c, CPD2 for P > c, floored at cpd_min)."""
    P = np.asarray(P, dtype="float64")
    N_act = np.asarray(N_act, dtype="float64")
    cpd1 = (c - P) * (N_act - b) + a  # (3)
    n = d * (P - c) ** 2  # (5)
    # (4); the root is real for 1 <= N_act <= 2m - 1, clipped at 0 outside (fewer than one warp)
    cpd2 = (n / (m - 1.0)) * np.sqrt(np.clip((m - 1.0) ** 2 - (N_act - m) ** 2, 0.0, None)) + a
    chosen = np.where(P <= c, np.minimum(cpd1, cpd2), cpd2)
    return {"CPD1": cpd1, "CPD2": cpd2, "CPD_n": n, "CPD": np.maximum(chosen, cpd_min)}


def mpd(
    N_act: Any, N_sm: Any, Warp_bwt: Any, GPU_bwt: float, form: str = "printed", rounding: str = "printed",
) -> np.ndarray:
    """MPD (2) (or its per-SM reading), floored at 1 warp."""
    N_act = np.asarray(N_act, dtype="float64")
    N_sm = np.asarray(N_sm, dtype="float64")
    Warp_bwt = np.asarray(Warp_bwt, dtype="float64")
    floor = ROUNDINGS[rounding][1]
    with np.errstate(divide="ignore", invalid="ignore"):
        if form == "printed":
            share = floor(GPU_bwt / (N_act * N_sm * Warp_bwt))  # (2) as printed
        else:
            share = floor(GPU_bwt / (N_sm * Warp_bwt))  # (2) without the N_act factor
    share = np.where(np.isnan(share), np.inf, share)  # Warp_bwt 0 or inf -> no bandwidth limit / handled by caller
    return np.maximum(np.minimum(N_act, share), 1.0)


SMEM_NOT_COLLECTED = (
    "not collected: shared-memory instructions counted as computation at cost_comp "
    "(ncu --metrics smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum)"
)


class LuoSudaModel:
    """Luo & Suda (2011) MPD/CPD model with the four calculate-period types."""

    id = "luo-suda"
    # option values beyond the paper (reports and calibrate mark them EXTENSION); see "Options" above
    extension_options = {"global_memory": ("levels",), "rounding": ("continuous",)}
    # forms calibrate tries, keeping the one whose fit reaches the lowest training objective (the printed
    # floors make the objective piecewise constant between kernels: docs/calibration.md)
    calibration_options = {"rounding": tuple(ROUNDINGS)}
    version = "1.0.0"
    description = "Luo-Suda: memory/computation parallel degree (MPD, CPD) and four calculate-period types"
    paper = (
        "Luo Cheng, Reiji Suda, An execution time prediction analytical model for GPU with instruction-level "
        "and thread-level parallelism awareness, IPSJ SIG Technical Report 2011-HPC-130, 2011"
    )
    requires = Requirements(
        required=(
            "grid_blocks", "block_threads", "inst_executed", "inst_global_ld", "inst_global_st",
            "global_ld_sectors", "global_st_sectors",
        ),
        optional=(
            "achieved_occupancy", "theoretical_occupancy", "registers_per_thread", "shared_mem_per_block_bytes",
            "inst_shared_ld", "inst_shared_st",
            "dram_bytes", "dram_read_bytes", "dram_write_bytes", "l2_read_bytes", "l2_write_bytes",  # levels
        ),
    )
    constants = (
        ConstantSpec("a", 3.0, "warps", (0.01, 64.0), "CPD at N_act = b in (3) and the offset of (4)",
                     "Luo & Suda 2011, Section 3.4: GTX 260 micro-benchmark, a = 3 (default to calibrate)"),
        ConstantSpec("b", 11.0, "warps", (0.0, 64.0), "warp count where CPD1 (3) equals a",
                     "Luo & Suda 2011, Section 3.4: GTX 260, b = 11 (default to calibrate)"),
        ConstantSpec("c", 0.5, "fraction", (0.01, 1.0), "computation proportion where CPD1's slope changes sign (3), (5)",
                     "Luo & Suda 2011, Section 3.4: GTX 260, c = 0.5 (default to calibrate)"),
        ConstantSpec("d", 80.0, "warps", (0.1, 1000.0), "scale of CPD2's height, n = d (P - c)^2 (5)",
                     "Luo & Suda 2011, Section 3.4: GTX 260, d = 80 (default to calibrate)"),
        ConstantSpec("t_mem", 200.0, "cycles", (1.0, 5000.0), "cost of one memory transaction (latency of a memory access)",
                     "Luo & Suda 2011, Table 1: ld/st 200 GPU clocks on the GTX 260 (default to calibrate)"),
        ConstantSpec("cost_comp", 65.0, "cycles", (1.0, 2000.0), "cost of one computation instruction",
                     "Luo & Suda 2011, Table 1: add/sub with register operands (int and float) 65 GPU clocks on the "
                     "GTX 260 (default to calibrate)"),
        ConstantSpec("cost_shared", 65.0, "cycles", (1.0, 2000.0), "cost of one shared-memory instruction",
                     "no Table 1 entry; assumed equal to the register add of Table 1 (65 GPU clocks); calibrate"),
        ConstantSpec("t_l2", 100.0, "cycles", (1.0, 5000.0),
                     "cost of one memory transaction served by L2 (global_memory=levels EXTENSION, not in the paper; "
                     "used at most t_mem)",
                     "assumed half of Table 1's t_mem (200): L2 hits answer in about half the DRAM round trip in "
                     "pointer-chasing microbenchmarks (221 vs 460 cycles on a V100, github.com/markdewing/AI_kernels "
                     "latency/README.md); calibrate"),
        ConstantSpec("t_l1", 15.0, "cycles", (1.0, 5000.0),
                     "cost of one memory transaction served by L1 (global_memory=levels EXTENSION, not in the paper; "
                     "used at most the L2 cost)",
                     "assumed: 200 x 33 / 460 (L1 hits about 33 cycles, github.com/ooreilly/cuda cache/README.md, against "
                     "a DRAM round trip of 460 on a V100); calibrate"),
        LAUNCH_CONSTANT,
    )

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        result = empty_result(kernels)
        inputs = _Inputs(self, kernels, gpu, options)
        timing = inputs.timing(self.constant_values(gpu, options))
        cycles = timing["cycles"]

        # ---- errors: the reasons that do not depend on the constants, then the time itself ------------
        error = inputs.error.copy()
        good = inputs.good.copy()
        failed = good & ~np.asarray(np.isfinite(cycles) & (cycles > 0), dtype=bool)
        error[failed] = "Luo-Suda gave no finite positive time for these inputs"
        good &= ~failed
        error = pd.Series(error, index=kernels.index, dtype="object", copy=False)

        # ---- labels -----------------------------------------------------------------
        K, N_act, MPD = inputs.K, inputs.N_act, timing["MPD"]
        first, steady = timing["first"], timing["steady"]
        steady_used = K > 1.0
        kind = pd.Series(np.where(steady_used, steady["type"], first["type"]), index=kernels.index)
        T_p = pd.Series(np.where(steady_used, steady["T_p"], first["T_p"]), index=kernels.index)
        T_c = pd.Series(np.where(steady_used, steady["T_c"], first["T_c"]), index=kernels.index)
        stall = (T_p + T_c) > 0
        at_limit = N_act >= gpu.max_warps_per_sm - 1e-9
        # text columns as codes into a few labels (nvperf_bridge.labels), never a string built per kernel; a
        # kernel that is not good takes its fallback label in the same pass ("unknown"; code 0, "", for the state)
        bottleneck = labels.select(
            [~good, ~stall, MPD < N_act, ~at_limit],
            ["unknown", "compute", "memory-bandwidth", "parallelism"],
            default="memory-latency",
        )
        result["bottleneck"] = labels.column(bottleneck, kernels.index, owned=True, text=True)
        period_labels = [PERIOD_TYPE_LABELS.get(code, "") for code in range(max(PERIOD_TYPE_LABELS) + 1)]
        result["state"] = labels.column(labels.take(period_labels, np.where(good, kind, 0)), kernels.index, owned=True,
                                        text=True)
        result["predicted_cycles"] = timing["cycles_out"].where(good)
        result["predicted_ns"] = timing["ns"].where(good)
        result["error"] = error

        cp = timing["cp"]
        details = {
            "N_act": N_act, "N_act_source": inputs.N_source, "N_sm": inputs.N_sm, "N_trans": inputs.N_trans,
            "D_mem": inputs.D_mem, "Warp_bwt": timing["Warp_bwt"], "GPU_bwt": inputs.GPU_bwt, "MPD": MPD,
            "P": timing["P"], "CPD1": cp["CPD1"], "CPD2": cp["CPD2"], "CPD": cp["CPD"], "c_i": timing["c_i"],
            "m_i": timing["m_i"], "periods": K,
            "T_first": first["T_i"], "T_steady": np.where(steady_used, steady["T_i"], np.nan),
            "T_p": T_p, "T_c": T_c, "period_type": kind.where(good), "Rep": inputs.Rep,
            "clock_source": inputs.clock_source, "I_smem_source": inputs.I_smem_source,
            "sectors_per_transaction": inputs.sectors_per_transaction, "sectors_source": inputs.sectors_source,
            "mpd_form": inputs.form, "memory_cost": inputs.memory_cost, "global_memory": inputs.global_memory,
            "t_mem_served": timing["t_mem"], "launch_ns": timing["launch_ns"],
        }
        if inputs.levels is not None:
            levels = inputs.levels
            details.update(f_dram=levels["f_dram"], f_l2=levels["f_l2"], f_l1=levels["f_l1"],
                           levels_source=levels["levels_source"])
        for name, values in details.items():
            result[name] = constant_column(values, kernels.index) if np.isscalar(values) \
                else labels.column(values, kernels.index)
        result["memory_source"] = constant_column("global requests and transactions (L1/L2 hits counted as memory "
                                                  "accesses, as the paper assumes)", kernels.index)
        return result

    def constant_values(self, gpu: GpuProfile, options: Mapping[str, Any],
                        trial: Mapping[str, float] | None = None) -> dict[str, float]:
        """The constants evaluate uses: the profile's (or the defaults), ``trial`` values over them, and an
        option of a constant's name over both."""
        values = {**constant_values(self, gpu), **dict(trial or {})}
        return {name: number_option(options, name, value, self.id) for name, value in values.items()}

    def fit_predictor(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> Any:
        """For ``calibrate``: a function of trial constants giving predicted_ns as an array (NaN where
        ``evaluate`` gives a reason), equal to evaluate's. The inputs that do not depend on the
        constants (counts per warp, transactions, served levels, launch geometry) are computed once
        here, not once per trial (speed only)."""
        inputs = _Inputs(self, kernels, gpu, options)

        def predict(trial: Mapping[str, float]) -> np.ndarray:
            timing = inputs.timing(self.constant_values(gpu, options, trial))
            ns = timing["ns"].to_numpy(dtype="float64", copy=True)
            cycles = np.asarray(timing["cycles"], dtype="float64")
            ns[~(inputs.good & np.isfinite(cycles) & (cycles > 0))] = np.nan
            return ns

        return predict


class _Inputs:
    """What Luo-Suda's time is computed from, apart from its constants: options, per-warp counts,
    transactions, served levels and launch geometry of ``kernels`` on ``gpu``, and the reasons
    (missing or zero inputs) that no constant can change."""

    def __init__(self, model: LuoSudaModel, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> None:
        model_id = model.id
        self.D_mem = number_option(options, "D_mem", 4.0, model_id, positive=True)
        self.mem_per_task = number_option(options, "mem_insts_per_task", 1.0, model_id, positive=True)
        # one transaction = what a coalesced warp request moves on this GPU (the profile's
        # coalesced_sectors_per_request: 1 nvprof transaction on compute 1.x, 4 x 32-byte sectors after)
        profile_c = float(gpu.get("coalesced_sectors_per_request", DEFAULT_COALESCED_SECTORS))
        self.sectors_per_transaction = number_option(options, "sectors_per_transaction", profile_c, model_id,
                                                     positive=True)
        self.cpd_min = number_option(options, "cpd_min", 1.0, model_id, positive=True)
        self.form = choice_option(options, "mpd_form", MPD_FORMS, model_id)  # per-sm by default (note 6)
        self.memory_cost = choice_option(options, "memory_cost", MEMORY_COSTS, model_id)  # per-transaction (note 7)
        self.global_memory = choice_option(options, "global_memory", GLOBAL_MEMORY, model_id)
        self.rounding = choice_option(options, "rounding", tuple(ROUNDINGS), model_id)

        self.clock_hz, self.clock_source = sm_clock(kernels, gpu)
        geometry = launch_geometry(kernels, gpu)  # computed once per frame, shared by the models
        warps = geometry.total_warps
        # Per-warp (= the paper's per-thread) instruction counts.
        I_total = column_or_nan(kernels, "inst_executed") / warps
        self.I_gmem = (column_or_nan(kernels, "inst_global_ld") + column_or_nan(kernels, "inst_global_st")) / warps
        shared_ld, shared_st = column_or_nan(kernels, "inst_shared_ld"), column_or_nan(kernels, "inst_shared_st")
        smem_known = shared_ld.notna() | shared_st.notna()
        # Not collected: shared instructions stay inside I_comp (costed as computation), and the output says so.
        self.I_smem = (shared_ld.fillna(0.0) + shared_st.fillna(0.0)) / warps
        self.I_smem_source = labels.where(smem_known, "inst_shared_ld + inst_shared_st", SMEM_NOT_COLLECTED)
        self.I_comp = np.maximum(I_total - self.I_gmem - self.I_smem, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            requests = column_or_nan(kernels, "inst_global_ld") + column_or_nan(kernels, "inst_global_st")
            ld_sectors, st_sectors, self.sectors_source = global_sectors(kernels, gpu)  # 32-byte sectors on every GPU
            sectors = ld_sectors + st_sectors
            self.N_trans = (sectors / requests / self.sectors_per_transaction).where(requests > 0, 0.0)
        # EXTENSION (levels): a transaction costs the latency of the level that served it (memory_levels);
        # only the DRAM share draws on the device bandwidth of (1)-(2)
        self.levels = served_fractions(kernels, sectors) if self.global_memory == "levels" else None
        self.index = kernels.index
        # K identical calculate periods per warp (at least one).
        self.K = np.maximum(self.I_gmem / self.mem_per_task, 1.0)
        self.N_act, self.N_source = geometry.active_warps_per_sm, geometry.active_warps_source
        self.N_sm = geometry.active_sms
        self.Rep = geometry.repetitions
        self.GPU_bwt = gpu.memory_bandwidth_bytes_per_s / self.clock_hz  # bytes per GPU clock
        self.warp_size = gpu.warp_size
        self.max_warps_per_sm = float(gpu.max_warps_per_sm)

        error = missing_inputs(kernels, model.requires.required).to_numpy(dtype=object, copy=True)
        good = without_reason(error)  # kept up to date as reasons are given, first reason wins
        checks = [
            (~(I_total > 0), "inst_executed is zero: no instructions to time"),
            (~(self.N_act > 0), "no active warps per SM: " + describe_missing(["achieved_occupancy"])
             + " and the launch shape gives no resource limit"),
            ((requests > 0) & ~(sectors > 0),
             "global memory requests with zero transactions (global_ld_sectors + global_st_sectors = 0)"),
        ]
        for failed, reason in checks:
            take = good & np.asarray(failed, dtype=bool)
            error[take] = reason
            good &= ~take
        self.error, self.good = error, good

    def timing(self, k: Mapping[str, float]) -> dict[str, Any]:
        """Eqs. (1)-(13) with the constants ``k``: the kernel's cycles and ns and the terms on the way."""
        I_gmem, N_trans, K, N_act = self.I_gmem, self.N_trans, self.K, self.N_act
        cost_c = self.I_comp * k["cost_comp"] + self.I_smem * k["cost_shared"]  # computation cost per warp (Table 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.levels is not None:
                # a level nearer the SM never costs more than the one behind it: t_l1 <= t_l2 <= t_mem
                t_l2 = min(k["t_l2"], k["t_mem"])
                t_mem = served_latency(self.levels, k["t_mem"], t_l2, min(k["t_l1"], t_l2))
                dram_share = self.levels["f_dram"]
            else:
                t_mem = pd.Series(k["t_mem"], index=self.index)
                dram_share = pd.Series(1.0, index=self.index)
            # the memory cost per warp in the unit of the memory tasks m_i (t_mem per transaction), or as
            # Section 3.4 prints it: every PTX ld/st at Table 1's t_mem, whatever its transactions
            cost_m = I_gmem * N_trans * t_mem if self.memory_cost == "per-transaction" else I_gmem * t_mem
            P = cost_c / (cost_c + cost_m)  # computation instruction proportion, Section 3.4

        c_i = cost_c / K
        m_i = (I_gmem / K) * N_trans * t_mem
        with np.errstate(divide="ignore", invalid="ignore"):
            Warp_bwt = dram_share * self.warp_size * self.D_mem / (N_trans * t_mem)  # (1) (x the DRAM share: levels)
        MPD = pd.Series(mpd(N_act, self.N_sm, Warp_bwt, self.GPU_bwt, self.form, self.rounding), index=self.index)
        MPD = MPD.where(N_trans > 0, N_act)  # no global memory traffic: nothing limits concurrency
        cp = cpd(P, N_act, k["a"], k["b"], k["c"], k["d"], self.max_warps_per_sm, self.cpd_min)

        # the first and the steady periods share this period's own terms (Eqs. (6)-(8)): computed once
        terms = period_terms(c_i, m_i, N_act, cp["CPD"], rounding=self.rounding)
        first = period_times(0.0, 0.0, c_i, m_i, N_act, MPD, cp["CPD"], has_prev=False, rounding=self.rounding,
                             terms=terms)
        steady = period_times(c_i, m_i, c_i, m_i, N_act, MPD, cp["CPD"], has_prev=True, rounding=self.rounding,
                              terms=terms)
        T_round = first["T_i"] + (K - 1.0) * steady["T_i"]
        cycles = self.Rep * T_round
        ns, cycles_out = with_launch(cycles / self.clock_hz * 1e9, cycles, k["launch_ns"], self.clock_hz)  # EXTENSION
        return {"t_mem": t_mem, "P": P, "c_i": c_i, "m_i": m_i, "Warp_bwt": Warp_bwt, "MPD": MPD, "cp": cp,
                "first": first, "steady": steady, "cycles": cycles, "ns": ns, "cycles_out": cycles_out,
                "launch_ns": k["launch_ns"]}


MODEL = LuoSudaModel()


@hookimpl
def register_models(register: Any) -> None:
    register(MODEL)
