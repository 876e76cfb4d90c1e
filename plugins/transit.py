"""Transit (Li, Tay, Kumar, Corporaal, HPDC'15): flow balance between the computation and memory systems.

Paper: Ang Li, Y.C. Tay, Akash Kumar, Henk Corporaal, "Transit: A Visual
Analytical Model for Multithreaded Machines", HPDC'15 (shared/seeds/003).
GPUs: Tesla C2075 (Fermi) and GeForce GTX 690 (Kepler).

The model (equation numbers are the paper's)
---------------------------------------------
Per SM, the ``n`` resident threads are either in the computation system (CS,
``x`` of them) or in the memory system (MS, ``k`` of them), ``k + x = n``.
Both throughputs are roofline-shaped::

    G(x) = x for x < M, M for x >= M           CS throughput            (1)
    g(x) = G(x) / Z                            CS demand on MS           (2)
    f(k) = k R / delta for k < delta, R for k >= delta   MS supply (Fig. 4-B)
    f(k) = g(x),  k + x = n                    flow balance              (3)

The equilibrium ``r = f(k*)`` is the MS throughput and ``Z r`` the CS
throughput (Section 2.2). The four bounds of Section 2.4: *thread bound*
(both curves cross on their slopes), *memory bound* (flat part of f, slope of
g: f = R), *computation bound* (flat part of g, slope of f: g = M/Z),
*capacity bound* (both flat: M/Z = R, the roofline ridge point).

One unit system (the paper's own: threads and GB/s, per SM)
-----------------------------------------------------------
- MS throughput f, g, R in DRAM bytes per second per SM (reported in GB/s,
  as the paper's delta = (1536 threads, 8.93 GB/s)).
- CS throughput G in warp instructions per second per SM. The paper
  normalises one lane-cycle of one thread to one unit; here one unit is
  ``CS_peak / M`` so that G's flat part is the SM's peak warp-instruction
  rate ``CS_peak`` (x threads each run at the rate that M threads need to fill
  the SM: M = lanes x dependent-issue latency, Volkov GTC'10, the paper's [20]).
- ``Z`` in warp instructions per DRAM byte inside, and reported as the paper
  writes it: warp instructions issued per 32-byte DRAM transaction.
So g(x) = G(x) / Z_bytes is in bytes/s like f, and the equilibrium is exact.

Inputs: canonical KernelFrame columns and profile -> paper symbols (Section 3)
-----------------------------------------------------------------------------
- ``n`` = occupancy x max resident threads per SM: ``launch.active_warps_per_sm``
  x ``warp_size`` (achieved_occupancy, ncu ``sm__warps_active.avg.pct_of_peak_sustained_active``;
  falls back to theoretical occupancy, then the launch resource limit;
  ``n_source`` says which).
- ``Z`` = instruction_issued / (dram_read + dram_write) transactions:
  ``inst_issued`` (ncu ``smsp__inst_issued.sum``; ``inst_executed`` stands in
  when not collected, ``Z_source`` says so) over ``dram_bytes`` / 32
  (ncu ``dram__bytes.sum``, or ``dram_read_bytes + dram_write_bytes``).
- ``R`` = ``R_fraction`` x ``memory_bandwidth_gb_per_s`` / ``sm_count``
  (GB/s per SM). ``delta`` = ``delta_fraction`` x max threads per SM
  (``max_warps_per_sm`` x ``warp_size``). ``M`` = ``M_fraction`` x max threads
  per SM. ``CS_peak`` = ``cs_issue_fraction`` x ``cores_per_sm`` / ``warp_size``
  warp instructions per cycle x ``sm_clock_mhz``. The constants are fractions
  of hardware facts so that every GPU gets a finite, calibratable default;
  the paper's GPUs give the measured values in their profiles (Section 3:
  C2075 delta(SP) = (1536, 8.93), pi(SP) = (576, 24.8); GTX690 delta(SP) =
  (2048, 16.25), pi(SP) = (2048, 80); and the DP points). The ordinate of pi
  (g at x = M) depends on the micro-benchmark's own Z, so it is not an input:
  the output column ``pi_GBps`` is g(M) for the kernel's Z.
- Double precision: the paper measured delta and pi separately for DP; with
  option ``precision: auto`` (default) a kernel with ``flop_dp > flop_sp``
  uses ``R_fraction_dp``, ``delta_fraction_dp``, ``M_fraction_dp``.
- Active SMs = min(``sm_count``, grid_blocks).

MS is off-chip DRAM, as in the paper's experiments: the memory input is DRAM
traffic, so L1/L2 hits already count as CS work (``memory_source`` says so).

Outputs
-------
Time = instructions / (CS throughput x active SMs) = DRAM bytes / (MS
throughput x active SMs) (the same number, since Z ties them). Columns:
``predicted_ns``, ``predicted_cycles`` (SM cycles at ``sm_clock_mhz``),
``bottleneck``, ``state`` ("thread bound", "memory bound", "computation
bound", "capacity bound"), ``error``; details ``n``, ``Z``, ``k``, ``x``,
``R_GBps``, ``delta``, ``M``, ``pi_GBps``, ``MS_GBps`` (f(k*) per SM),
``CS_Ginst_per_s`` (Z r per SM, warp instructions), ``PCT_gflops`` (predicted
computation throughput of the GPU when FLOPs were counted, the paper's
"PCT"), ``precision``, ``active_SMs``, ``n_source``, ``Z_source``,
``memory_source``.

Bottleneck (shared vocabulary): thread bound -> ``parallelism`` (too few
threads: neither system saturates, Section 2.4.1 "insufficient threads");
memory bound -> ``memory-bandwidth`` (f = R); computation bound -> ``compute``
(g = M/Z); capacity bound -> ``balanced`` (Section 2.4.4: "workload balance
equals machine balance", both systems at their best; no latency is exposed,
so ``memory-latency`` would misstate it).

Options
-------
``precision``: "auto" | "sp" | "dp" (default "auto").
``capacity_tolerance``: a curve within this fraction of its flat part counts
as flat when classifying (default 0.02; the paper's capacity bound M/Z = R is
an equality that measured numbers never meet exactly).
Any constant name overrides that constant.

Transit figure data (for plotting, like the paper's Fig. 6)
-----------------------------------------------------------
``transit_curves(kernel, gpu, constants=None, samples=200, options=None) -> dict[str, numpy.ndarray]``

``kernel`` is either one KernelFrame row (a pandas Series or mapping of
canonical columns) or a mapping with the paper's workload inputs ``n``
(threads per SM) and ``Z`` (warp instructions per 32-byte DRAM transaction;
``inf`` for no DRAM traffic) and optionally ``precision``. ``constants``
overrides model constants by name (else the profile's, else the defaults).
Returns, all per SM, throughputs in GB/s:

- ``k``: threads in MS, ``samples`` points over 0..n; ``f``: f(k)
- ``x``: threads in CS, the same grid 0..n; ``g``: g(x)
- ``g_of_n_minus_k``: g(n - k) on the ``k`` grid (the reversed-axis curve of Fig. 5-B/6)
- ``equilibrium``: [k*, x*, r*] (r* = f(k*) = g(x*), GB/s)
- ``delta_point``: [delta, R] (on the k axis); ``pi_point``: [M, g(M)] (on the x axis: at k = n - M)
- ``n``, ``Z``, ``R``, ``delta``, ``M``, ``CS_throughput`` (Z r*, G warp-instructions/s): 0-d arrays
- ``state``: 0-d string array, the bound
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge import labels
from nvperf_bridge.columns import describe_missing
from nvperf_bridge.counters import dram_bytes, l2_bytes
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.launch import launch_geometry
from nvperf_bridge.launch_cost import LAUNCH_CONSTANT, with_launch
from nvperf_bridge.model import (
    ConstantSpec,
    Requirements,
    column_or_nan,
    constant_values,
    constant_column,
    empty_result,
    missing_inputs,
    without_reason,
    number_option,
)

DRAM_TRANSACTION_BYTES = 32.0  # nvprof dram_read/write_transactions and ncu dram__sectors are 32 bytes
CAPACITY_TOLERANCE = 0.02
PRECISIONS = ("auto", "sp", "dp")

# Section 2.4 labels, in the order ``equilibrium`` tests them (the last where neither side is flat).
BOUNDS = ("capacity bound", "memory bound", "computation bound", "thread bound")
# Section 2.4 bound -> shared bottleneck vocabulary (see the module docstring for why).
BOUND_TO_BOTTLENECK: dict[str, str] = {
    "thread bound": "parallelism",
    "memory bound": "memory-bandwidth",
    "computation bound": "compute",
    "capacity bound": "balanced",
}


def equilibrium(n: Any, w: Any, R: Any, delta: Any, M: Any, CS_peak: Any, tolerance: float = CAPACITY_TOLERANCE) -> dict[str, np.ndarray]:
    """Solve f(k) = g(n - k) (3) for roofline-shaped f and g, vectorised.

    Units: ``n``, ``delta``, ``M`` threads; ``w`` DRAM bytes per warp instruction
    (1 / Z); ``R`` bytes/s; ``CS_peak`` warp instructions/s. Returns ``k``, ``x``
    (threads), ``r`` (MS throughput, bytes/s), ``X`` (CS throughput, warp
    instructions/s) and ``bound`` (Section 2.4 labels).

    With a = R / delta (f's slope) and c1 = CS_peak / M (one thread's CS rate),
    the CS throughput at the crossing is the least of the three candidates
    R / w (f flat), CS_peak (g flat) and a c1 n / (a + c1 w) (both on their
    slopes: a k = c1 w (n - k)); f is non-decreasing in k and g(n - k)
    non-increasing, so that least value is the unique crossing height.
    """
    n, w, R, delta, M, CS_peak = (np.asarray(v, dtype="float64") for v in (n, w, R, delta, M, CS_peak))
    a = R / delta
    c1 = CS_peak / M
    # a near-zero DRAM traffic per instruction (an averaged counter of 1e-302 bytes) overflows R / w to
    # inf: the memory side never binds, the same meaning as w = 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        X_mem = np.where(w > 0, R / w, np.inf)  # f at its flat part R, in CS units
        X_lin = a * c1 * n / (a + c1 * w)  # both slopes (thread bound)
    X_cs = np.broadcast_to(CS_peak, np.broadcast_shapes(np.shape(CS_peak), X_lin.shape))  # read only: not copied
    X = np.minimum(np.minimum(X_mem, X_cs), X_lin)
    with np.errstate(invalid="ignore"):  # X = 0 with w = inf (no instructions): NaN, reported by the caller
        r = X * w
    lin_min = X_lin <= np.minimum(X_mem, X_cs)
    cs_min = ~lin_min & (X_cs <= X_mem)
    with np.errstate(divide="ignore", invalid="ignore"):
        # f on its slope (either condition: the same choice, computed once): k = r / a; f flat: g on its
        # slope gives x = X / c1; both flat (X_cs == X_mem): any k in [delta, n - M]
        k = np.where(lin_min | (cs_min & (X_cs < X_mem)), r / a,
                     np.where(X < X_cs, n - X / c1, 0.5 * (delta + n - M)))
    k = np.where(w > 0, k, 0.0)  # no memory traffic: nobody waits in MS
    x = n - k
    f_flat = X >= X_mem * (1.0 - tolerance)
    g_flat = X >= X_cs * (1.0 - tolerance)
    # the Section 2.4 label as a code into BOUNDS (nvperf_bridge.labels: no string built per kernel)
    bound_code = labels.choice_codes([f_flat & g_flat, f_flat, g_flat])
    return {"k": k, "x": x, "r": r, "X": X, "bound": labels.take(BOUNDS, bound_code), "bound_code": bound_code}


def f_supply(k: Any, R: float, delta: float) -> np.ndarray:
    """MS service supply f(k) (Fig. 4-B): k R / delta up to delta, R beyond."""
    return R * np.minimum(np.asarray(k, dtype="float64"), delta) / delta


def g_demand(x: Any, w: float, M: float, CS_peak: float) -> np.ndarray:
    """CS service demand on MS g(x) = G(x) / Z (1)-(2), bytes/s (w = 1 / Z bytes per warp instruction)."""
    return (CS_peak / M) * np.minimum(np.asarray(x, dtype="float64"), M) * w


def machine_parameters(gpu: GpuProfile, constants: Mapping[str, float], dp: Any) -> dict[str, np.ndarray]:
    """R (bytes/s per SM), delta and M (threads), CS_peak (warp instructions/s) per kernel (dp: bool array)."""
    dp = np.asarray(dp, dtype=bool)
    max_threads = float(gpu.max_threads_per_sm)

    def pick(name: str) -> np.ndarray:
        """The DP constant where the kernel is DP, the SP one elsewhere."""
        return np.where(dp, constants[f"{name}_dp"], constants[name])

    return {
        "R": pick("R_fraction") * gpu.memory_bandwidth_bytes_per_s / gpu.sm_count,
        "delta": pick("delta_fraction") * max_threads,
        "M": pick("M_fraction") * max_threads,
        "CS_peak": np.ones(dp.shape) * constants["cs_issue_fraction"] * gpu.cores_per_sm / gpu.warp_size * gpu.sm_clock_hz,
    }


class TransitModel:
    """Transit (HPDC'15): equilibrium of MS supply f(k) and CS demand g(x)."""

    id = "transit"
    version = "1.0.0"
    description = "Transit: flow balance f(k) = g(x), k + x = n, of the memory and computation systems per SM"
    paper = (
        "Ang Li, Y.C. Tay, Akash Kumar, Henk Corporaal, Transit: A Visual Analytical Model for Multithreaded "
        "Machines, HPDC'15, doi:10.1145/2749246.2749265"
    )
    requires = Requirements(
        required=("grid_blocks", "block_threads", "inst_issued", "dram_bytes"),
        optional=(
            "inst_executed", "dram_read_bytes", "dram_write_bytes", "achieved_occupancy", "theoretical_occupancy",
            "registers_per_thread", "shared_mem_per_block_bytes", "flop_sp", "flop_dp",
            "l2_read_bytes", "l2_write_bytes",  # l2_sector_cost (extension): the L2 hits' CS work
        ),
    )
    constants = (
        ConstantSpec("R_fraction", 1.0, "fraction", (0.05, 1.0),
                     "R, the MS throughput at saturation, as a fraction of the datasheet bandwidth per SM (SP kernels)",
                     "default 1.0 = datasheet; Transit Section 3 measured 8.93 GB/s x 14 SMs / 144 GB/s = 0.868 (C2075) "
                     "and 16.25 x 8 / 192.2 = 0.676 (GTX690) with STREAM: calibrate"),
        ConstantSpec("delta_fraction", 1.0, "fraction", (0.01, 4.0),
                     "delta, the MS transition point, as a fraction of the max resident threads per SM (SP kernels)",
                     "Transit Section 3: delta(SP) = 1536 on C2075 and 2048 on GTX690, the max resident threads of each "
                     "(default to calibrate)"),
        ConstantSpec("M_fraction", 0.375, "fraction", (0.01, 4.0),
                     "M, the CS transition point pi (threads that fill the execution lanes), as a fraction of the max "
                     "resident threads per SM (SP kernels)",
                     "Transit Section 3: pi(SP) = 576 of 1536 threads on C2075 (= 0.375, after Volkov GTC'10); 2048 of "
                     "2048 on GTX690 (default to calibrate)"),
        ConstantSpec("R_fraction_dp", 1.0, "fraction", (0.05, 1.0),
                     "R for DP kernels, fraction of the datasheet bandwidth per SM",
                     "default 1.0 = datasheet; Transit Section 3 measured 9.29 GB/s per SM on C2075 (0.903) and 18.86 on "
                     "GTX690 (0.785): calibrate"),
        ConstantSpec("delta_fraction_dp", 0.5, "fraction", (0.01, 4.0),
                     "delta for DP kernels, fraction of the max resident threads per SM",
                     "Transit Section 3: delta(DP) = 768 of 1536 (C2075) and 1024 of 2048 (GTX690), both 0.5 "
                     "(default to calibrate)"),
        ConstantSpec("M_fraction_dp", 0.25, "fraction", (0.01, 4.0),
                     "M for DP kernels, fraction of the max resident threads per SM",
                     "Transit Section 3: pi(DP) = 384 of 1536 threads on C2075 (0.25); 384 of 2048 on GTX690 "
                     "(default to calibrate)"),
        ConstantSpec("cs_issue_fraction", 1.0, "fraction", (0.05, 8.0),
                     "CS peak (G's flat part) in warp instructions per cycle, as a fraction of cores_per_sm / warp_size",
                     "default 1.0: one warp instruction per 32 lanes per cycle (Fermi: 1, Kepler GK104: 6 per SM); "
                     "not measured by the paper, calibrate"),
        ConstantSpec("l2_sector_cost", 0.0, "warp instructions", (0.0, 64.0),
                     "CS work of one 32-byte sector served by an L2 hit, in warp-instruction issue slots (EXTENSION, "
                     "not in the paper: 0 = the paper, where cache hits cost only the load instruction)",
                     "default 0 (the published form); fitted by calibrate. Physically the SM's issue rate over its "
                     "share of the L2 bandwidth in sectors per cycle"),
        LAUNCH_CONSTANT,
    )

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        result = empty_result(kernels)
        values = {name: number_option(options, name, value, self.id)
                  for name, value in constant_values(self, gpu).items()}
        precision = str(options.get("precision", "auto"))
        tolerance = number_option(options, "capacity_tolerance", CAPACITY_TOLERANCE, self.id)
        if precision not in PRECISIONS or not (0.0 <= tolerance < 1.0):
            from nvperf_bridge.errors import UsageError

            raise UsageError(f"transit options: precision must be one of {', '.join(PRECISIONS)} and "
                             f"capacity_tolerance in [0, 1); got {precision!r}, {tolerance!r}")

        # ---- workload inputs (Section 3) ----------------------------------------------
        geometry = launch_geometry(kernels, gpu)  # computed once per frame, shared by the models
        warps, n_source = geometry.active_warps_per_sm, geometry.active_warps_source
        n = warps * gpu.warp_size  # occupancy x max resident threads
        issued = column_or_nan(kernels, "inst_issued")
        executed = column_or_nan(kernels, "inst_executed")
        instructions = issued.where(issued.notna(), executed)
        Z_source = labels.select([instructions.isna(), issued.isna() & executed.notna()],
                                 ["", "inst_executed (inst_issued not collected)"], "inst_issued")
        dram = dram_bytes(kernels)
        # EXTENSION (l2_sector_cost > 0): the sectors L2 served without going to DRAM are CS work (the paper
        # counts cache hits in the CS, at the cost of their load instruction only); each costs l2_sector_cost
        # issue slots, so a kernel that streams from L2 is limited by the L2's bandwidth, not by DRAM's
        l2_sectors = l2_bytes(kernels) / DRAM_TRANSACTION_BYTES
        l2_hit_sectors = (l2_sectors - dram.fillna(0.0) / DRAM_TRANSACTION_BYTES).clip(lower=0.0).fillna(0.0)
        cache_work = values["l2_sector_cost"] * l2_hit_sectors
        instructions = instructions + cache_work
        with np.errstate(divide="ignore", invalid="ignore"):
            w = (dram / instructions).to_numpy()  # bytes per warp instruction = 1 / Z
            Z = instructions / (dram / DRAM_TRANSACTION_BYTES)  # the paper's Z
        # No DRAM traffic: Z is infinite (g(x) = 0); reported empty, since spreadsheets hold no infinity.
        Z = Z.where(dram > 0)

        flop_dp = column_or_nan(kernels, "flop_dp")
        flop_sp = column_or_nan(kernels, "flop_sp")
        if precision == "auto":
            dp = (flop_dp.fillna(0.0) > flop_sp.fillna(0.0)).to_numpy()
        else:
            dp = np.full(len(kernels), precision == "dp")
        machine = machine_parameters(gpu, values, dp)
        eq = equilibrium(n.to_numpy(), w, machine["R"], machine["delta"], machine["M"], machine["CS_peak"], tolerance)

        sms = geometry.active_sms
        seconds = instructions / (pd.Series(eq["X"], index=kernels.index) * sms)

        # ---- errors -------------------------------------------------------------------
        # checked after the unit conversions: a finite time in seconds can still overflow in ns
        with np.errstate(over="ignore"):
            ns, cycles = with_launch(seconds * 1e9, seconds * gpu.sm_clock_hz, values["launch_ns"], gpu.sm_clock_hz)
        error = missing_inputs(kernels, ("grid_blocks", "block_threads")).to_numpy(dtype=object, copy=True)
        good = without_reason(error)  # kept up to date as reasons are given, first reason wins
        checks = [
            (instructions.isna(), describe_missing(["inst_issued", "inst_executed"]) + " (Z needs instructions issued)"),
            (dram.isna(), describe_missing(["dram_bytes"]) + " (Z needs DRAM read + write traffic)"),
            (~(instructions > 0), "no instructions issued: nothing to time"),
            (~(n > 0), "no resident threads per SM (n): " + describe_missing(["achieved_occupancy"])),
            (~(np.isfinite(ns) & np.isfinite(cycles) & (seconds > 0)),
             "Transit gave no finite positive time for these inputs"),
        ]
        for failed, reason in checks:
            take = good & np.asarray(failed, dtype=bool)
            error[take] = reason
            good &= ~take

        result["predicted_ns"] = ns.where(good)
        result["predicted_cycles"] = cycles.where(good)
        # the bound's labels, the last code for a kernel with a reason ("" and "unknown"): one take each
        bound_code = np.where(good, eq["bound_code"], len(BOUNDS))
        result["state"] = labels.column(labels.take([*BOUNDS, ""], bound_code), kernels.index, owned=True, text=True)
        result["bottleneck"] = labels.column(
            labels.take([*(BOUND_TO_BOTTLENECK[bound] for bound in BOUNDS), "unknown"], bound_code),
            kernels.index, owned=True, text=True)
        result["error"] = pd.Series(error, index=kernels.index, dtype="object", copy=False)

        flops = flop_sp.fillna(0.0) + flop_dp.fillna(0.0)
        have_flops = flop_sp.notna() | flop_dp.notna()
        details = {
            "n": n, "Z": Z, "k": eq["k"], "x": eq["x"],
            "R_GBps": machine["R"] / 1e9, "delta": machine["delta"], "M": machine["M"],
            "pi_GBps": g_demand(machine["M"], np.nan_to_num(w, nan=0.0, posinf=np.nan), machine["M"], machine["CS_peak"]) / 1e9,
            "MS_GBps": eq["r"] / 1e9, "CS_Ginst_per_s": eq["X"] / 1e9,
            "PCT_gflops": (flops / seconds / 1e9).where(have_flops & good),
            "precision": labels.where(dp, "dp", "sp"), "active_SMs": sms, "n_source": n_source, "Z_source": Z_source,
            "L2_hit_sectors": l2_hit_sectors, "cache_work_inst": cache_work, "launch_ns": values["launch_ns"],
        }
        every_kernel_good = bool(good.all())  # then the floats are kept as they are, not copied
        for name, column in details.items():
            if every_kernel_good and isinstance(column, float):  # a constant: the run's shared column (speed only)
                result[name] = constant_column(column, kernels.index)
                continue
            values_ = np.asarray(column)
            if values_.dtype.kind == "f" and not every_kernel_good:
                column = np.where(good, values_, np.nan)
            result[name] = labels.column(column, kernels.index)
        result["memory_source"] = constant_column(
            "DRAM traffic (MS = off-chip DRAM as in the paper; cache hits count as CS work)", kernels.index)
        return result


MODEL = TransitModel()


def transit_curves(
    kernel: Mapping[str, Any] | pd.Series,
    gpu: GpuProfile,
    constants: Mapping[str, float] | None = None,
    samples: int = 200,
    options: Mapping[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """The data of a transit figure (the paper's Fig. 6) for one kernel; see the module docstring."""
    if samples < 2:
        raise ValueError("samples must be at least 2")
    options = dict(options or {})
    values = constant_values(MODEL, gpu)
    values.update({name: float(v) for name, v in (constants or {}).items()})
    values.update({name: float(options[name]) for name in values if name in options})
    tolerance = float(options.get("capacity_tolerance", CAPACITY_TOLERANCE))
    given = dict(kernel.items()) if isinstance(kernel, pd.Series) else dict(kernel)
    if "n" in given and "Z" in given:
        n = float(given["n"])
        Z = float(given["Z"])
        dp = str(given.get("precision", options.get("precision", "sp"))) == "dp"
    else:
        frame = pd.DataFrame([given])
        evaluated = MODEL.evaluate(frame, gpu, {**options, **values})
        row = evaluated.iloc[0]
        if row["error"]:
            raise ValueError(f"transit cannot place this kernel: {row['error']}")
        n, Z, dp = float(row["n"]), float(row["Z"]), row["precision"] == "dp"
    w = 0.0 if not np.isfinite(Z) or Z <= 0 else DRAM_TRANSACTION_BYTES / Z
    machine = {key: float(np.asarray(v).reshape(-1)[0]) for key, v in machine_parameters(gpu, values, [dp]).items()}
    R, delta, M, CS_peak = machine["R"], machine["delta"], machine["M"], machine["CS_peak"]
    eq = equilibrium(n, w, R, delta, M, CS_peak, tolerance)
    grid = np.linspace(0.0, n, samples)
    return {
        "k": grid,
        "f": f_supply(grid, R, delta) / 1e9,
        "x": grid.copy(),
        "g": g_demand(grid, w, M, CS_peak) / 1e9,
        "g_of_n_minus_k": g_demand(n - grid, w, M, CS_peak) / 1e9,
        "equilibrium": np.array([float(eq["k"]), float(eq["x"]), float(eq["r"]) / 1e9]),
        "delta_point": np.array([delta, R / 1e9]),
        "pi_point": np.array([M, float(g_demand(M, w, M, CS_peak)) / 1e9]),
        "n": np.asarray(n),
        "Z": np.asarray(Z),
        "R": np.asarray(R / 1e9),
        "delta": np.asarray(delta),
        "M": np.asarray(M),
        "CS_throughput": np.asarray(float(eq["X"]) / 1e9),
        "state": np.asarray(str(eq["bound"])),
    }


@hookimpl
def register_models(register: Any) -> None:
    register(MODEL)
