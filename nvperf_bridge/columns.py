"""The canonical KernelFrame columns: one table, units in the names.

A KernelFrame is a pandas DataFrame with one row per kernel launch (or per
kernel, with ``invocations`` > 1, for summary formats). Counts are totals over
the launch; ``inst_*`` counts are warp-level (one per warp instruction), as
ncu ``smsp__inst_executed.sum``. Raw counters without a canonical name are
kept beside these, in base units, under their profiler name.

Each row of ``CANONICAL_COLUMNS`` says what the column holds and which ncu
and nvprof metric collects it; ``nvperf-bridge metrics`` and the per-kernel
"missing counter" reasons are built from this table. The many spellings a
profiler uses for the same quantity (ncu versions, nvprof, Blackwell
renames) live in the importers' alias table, not here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # "str", "int", "float"
    unit: str  # base unit: "ns", "Hz", "bytes", "count", "fraction", "" for labels
    description: str
    ncu: str  # the ncu metric(s) that collect it ("" if not from a metric)
    nvprof: str  # the nvprof metric/event/trace column that collects it


# name, dtype, unit, description, ncu metric, nvprof metric
_TABLE: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("kernel_id", "str", "", "stable id of the row (file-local launch id or kernel name)", "ID", "Correlation_ID"),
    ("kernel_name", "str", "", "full kernel name as the profiler printed it", "Kernel Name", "Kernel / Name"),
    ("kernel", "str", "", "short display name (no parameter list, no correlation suffix)", "", ""),
    ("source", "str", "", "input file the row came from", "", ""),
    ("source_row", "int", "", "1-based line in that file where the row (or its first metric) starts", "", ""),
    ("device", "str", "", "device name, or the device index when the file has no name", "device__attribute_display_name", "Device"),
    ("cc", "str", "", "compute capability, e.g. '8.0'", "CC", ""),
    ("invocations", "int", "count", "launches this row stands for (1 for per-launch formats)", "", "Invocations"),
    ("grid_blocks", "int", "count", "thread blocks in the grid (x*y*z)", "launch__grid_size", "Grid X*Y*Z (trace)"),
    ("block_threads", "int", "count", "threads per block (x*y*z)", "launch__block_size", "Block X*Y*Z (trace)"),
    ("registers_per_thread", "int", "count", "registers per thread", "launch__registers_per_thread", "Registers Per Thread (trace)"),
    ("shared_mem_per_block_bytes", "float", "bytes", "static + dynamic shared memory per block", "launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic", "Static SMem + Dynamic SMem (trace)"),
    ("duration_ns", "float", "ns", "measured kernel duration", "gpu__time_duration.sum", "Duration (trace)"),
    ("sm_cycles", "float", "cycles", "elapsed SM cycles (average over SMs; nvprof's elapsed_cycles_sm is the sum over SMs: sm_cycles_sum)", "sm__cycles_elapsed.avg", ""),
    ("sm_clock_hz", "float", "Hz", "measured SM clock during the launch", "sm__cycles_elapsed.avg.per_second", ""),
    ("achieved_occupancy", "float", "fraction", "active warps / max warps per SM, 0..1", "sm__warps_active.avg.pct_of_peak_sustained_active", "achieved_occupancy"),
    ("theoretical_occupancy", "float", "fraction", "theoretical occupancy, 0..1", "sm__maximum_warps_per_active_cycle_pct", ""),
    ("inst_executed", "float", "count", "warp instructions executed", "smsp__inst_executed.sum", "inst_executed"),
    ("inst_issued", "float", "count", "warp instructions issued (incl. replays)", "smsp__inst_issued.sum", "inst_issued"),
    ("inst_global_ld", "float", "count", "warp-level global load instructions (= requests)", "smsp__inst_executed_op_global_ld.sum", "gld_request"),
    ("inst_global_st", "float", "count", "warp-level global store instructions (= requests)", "smsp__inst_executed_op_global_st.sum", "gst_request"),
    ("global_ld_sectors", "float", "count", "global load transactions (32-byte sectors)", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "gld_transactions"),
    ("global_st_sectors", "float", "count", "global store transactions (32-byte sectors)", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "gst_transactions"),
    ("inst_shared_ld", "float", "count", "warp-level shared load instructions", "smsp__inst_executed_op_shared_ld.sum", "shared_load"),
    ("inst_shared_st", "float", "count", "warp-level shared store instructions", "smsp__inst_executed_op_shared_st.sum", "shared_store"),
    ("shared_ld_wavefronts", "float", "count", "shared load wavefronts (transactions)", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared_load_transactions"),
    ("shared_st_wavefronts", "float", "count", "shared store wavefronts (transactions)", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "shared_store_transactions"),
    ("inst_barrier", "float", "count", "warp-level barrier (__syncthreads) instructions", "smsp__inst_executed_op_barrier.sum", ""),
    ("dram_read_bytes", "float", "bytes", "DRAM bytes read", "dram__bytes_read.sum", "dram_read_transactions x 32"),
    ("dram_write_bytes", "float", "bytes", "DRAM bytes written", "dram__bytes_write.sum", "dram_write_transactions x 32"),
    ("dram_bytes", "float", "bytes", "DRAM bytes read + written (filled from the two above, or from dram__bytes.sum)", "dram__bytes.sum", "dram_read_transactions + dram_write_transactions, x 32"),
    ("flop_sp", "float", "count", "thread-level single-precision FLOPs (FMA = 2)", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "flop_count_sp"),
    ("flop_dp", "float", "count", "thread-level double-precision FLOPs (FMA = 2)", "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum,smsp__sass_thread_inst_executed_op_dmul_pred_on.sum,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", "flop_count_dp"),
    ("flop_hp", "float", "count", "thread-level half-precision FLOPs (FMA = 2)", "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum,smsp__sass_thread_inst_executed_op_hmul_pred_on.sum,smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", "flop_count_hp"),
    ("l2_hit_rate", "float", "fraction", "L2 sector hit rate, 0..1 (for the cache-aware extensions)", "lts__t_sector_hit_rate.pct", "l2_tex_hit_rate"),
    ("sol_sm_fraction", "float", "fraction", "Nsight Compute 'Compute (SM) Throughput', 0..1 of peak", "sm__throughput.avg.pct_of_peak_sustained_elapsed", ""),
    ("sol_memory_fraction", "float", "fraction", "Nsight Compute 'Memory Throughput', 0..1 of peak", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", ""),
    ("sol_dram_fraction", "float", "fraction", "Nsight Compute 'DRAM Throughput', 0..1 of peak (nvprof: its 0-10 level / 10)", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram_utilization"),
    ("sol_l2_fraction", "float", "fraction", "Nsight Compute 'L2 Cache Throughput', 0..1 of peak (nvprof: its 0-10 level / 10)", "lts__t_sectors.avg.pct_of_peak_sustained_elapsed", "l2_utilization"),
    ("sol_l1tex_fraction", "float", "fraction", "Nsight Compute 'L1/TEX Cache Throughput', 0..1 of peak (nvprof: its 0-10 level / 10)", "l1tex__throughput.avg.pct_of_peak_sustained_active", "tex_utilization"),
    ("sm_cycles_sum", "float", "cycles", "elapsed SM cycles summed over all SMs (sm_cycles x SM count)", "sm__cycles_elapsed.sum", "elapsed_cycles_sm"),
    ("sm_active_cycles_sum", "float", "cycles", "cycles with at least one warp active, summed over all SMs", "sm__cycles_active.sum", "active_cycles"),
    ("warps_active_sum", "float", "count", "active warps accumulated every cycle, summed over all SMs (/ sm_active_cycles_sum = mean active warps per SM)", "sm__warps_active.sum", "active_warps"),
    ("warps_launched", "float", "count", "warps launched", "smsp__warps_launched.sum", "warps_launched"),
    ("blocks_launched", "float", "count", "thread blocks (CTAs) launched", "sm__ctas_launched.sum", "sm_cta_launched"),
    ("thread_inst_executed", "float", "count", "thread-level instructions executed (warp instructions x active threads)", "smsp__thread_inst_executed.sum", "thread_inst_executed"),
    ("inst_local_ld", "float", "count", "warp-level local memory load instructions (= requests)", "smsp__inst_executed_op_local_ld.sum", "local_load"),
    ("inst_local_st", "float", "count", "warp-level local memory store instructions (= requests)", "smsp__inst_executed_op_local_st.sum", "local_store"),
    ("local_ld_sectors", "float", "count", "local memory load transactions (32-byte sectors)", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "local_load_transactions"),
    ("local_st_sectors", "float", "count", "local memory store transactions (32-byte sectors)", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "local_store_transactions"),
    ("l2_read_bytes", "float", "bytes", "L2 bytes read (all clients; ncu counts 32-byte sectors)", "lts__t_sectors_op_read.sum", "l2_read_transactions x 32"),
    ("l2_write_bytes", "float", "bytes", "L2 bytes written (all clients; ncu counts 32-byte sectors)", "lts__t_sectors_op_write.sum", "l2_write_transactions x 32"),
    ("derived", "str", "", "canonical columns of this row computed from other counters, not counted ('(time)': from the duration or a rate over it); see inspect", "", ""),
)

CANONICAL_COLUMNS: dict[str, Column] = {row[0]: Column(*row) for row in _TABLE}

# Measured columns that carry the kernel's time in another form: the duration itself, cycles
# elapsed or active over the launch (and warps accumulated per cycle), the clock, and fractions
# of peak over the elapsed time. They are counted, not derived, but a model whose prediction is
# judged against the measured time must not read them (Kerr's feature list excludes them too).
# Derived values computed from these are marked per kernel in ``derived`` (importers/derivations.py).
TIME_MEASURES: frozenset[str] = frozenset({
    "duration_ns", "sm_cycles", "sm_cycles_sum", "sm_active_cycles_sum", "warps_active_sum", "sm_clock_hz",
    "sol_sm_fraction", "sol_memory_fraction", "sol_dram_fraction", "sol_l2_fraction", "sol_l1tex_fraction",
})

# Columns that identify or describe a row rather than measure it.
IDENTITY_COLUMNS: tuple[str, ...] = (
    "kernel_id", "kernel_name", "kernel", "source", "source_row", "device", "cc", "invocations", "derived",
)

# Columns the launch geometry (nvperf_bridge.launch) reads: a change in any of them means another geometry,
# so an evaluation shared within a run (model.evaluate_shared) is keyed on them too.
GEOMETRY_INPUT_COLUMNS: tuple[str, ...] = (
    "grid_blocks", "block_threads", "registers_per_thread", "shared_mem_per_block_bytes", "achieved_occupancy",
    "theoretical_occupancy",
)


def collecting_metric(column: str, profiler: str = "ncu") -> str:
    """The ncu (or nvprof) metric that collects a canonical column, for messages."""
    col = CANONICAL_COLUMNS.get(column)
    if col is None:
        return ""
    return col.ncu if profiler == "ncu" else col.nvprof


def describe_missing(columns: list[str] | tuple[str, ...]) -> str:
    """'missing inst_executed (ncu --metrics smsp__inst_executed.sum), ...' for error reasons."""
    parts = []
    for name in columns:
        metric = collecting_metric(name)
        parts.append(f"{name} (ncu --metrics {metric})" if metric else name)
    return "missing " + ", ".join(parts)
