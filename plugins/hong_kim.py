"""Hong & Kim (ISCA'09): the MWP/CWP analytical model, Eqs. (1)-(27).

S. Hong and H. Kim, "An Analytical Model for a GPU Architecture with
Memory-level and Thread-level Parallelism Awareness", ISCA 2009
(``shared/seeds/000_edf006a3402fc16c.txt``).

The model works per SM and per warp: a memory warp waits ``Mem_L`` cycles;
``MWP`` memory warps can be in flight at once (limited by departure delay,
bandwidth and the active warps ``N``); ``CWP`` warps can compute while one
waits. The case (MWP vs CWP vs N) picks Eq. (22), (23) or (24); the barrier
delay of Eq. (26) is added in Eq. (27).

Where each paper symbol comes from
----------------------------------
Per-thread counts are warp-level totals / total warps (``launch.per_thread``;
total warps = grid_blocks x ceil(block_threads / 32)); the paper counts each
instruction once per thread (Table 1 rows 13-18).

=========================  ===================================================
paper symbol (equation)    source
=========================  ===================================================
#Total_insts (19, 25)      ``inst_executed`` / total warps. Includes barriers,
                           as the paper's own count does: Table 2's
                           #Comp_insts = 27 counts the two ``bar.sync`` of
                           Figure 13 (lines 8, 13) among the 9 instructions.
#Mem_insts (2, 18, 22-23)  (``inst_global_ld`` + ``inst_global_st``) / total
                           warps (option ``memory_inputs=dram``: see below)
#Comp_insts                #Total_insts - #Mem_insts (detail only)
#Uncoal_Mem_insts,         #Mem_insts split by transactions per memory warp
#Coal_Mem_insts (13, 14,   r = (``global_ld_sectors`` + ``global_st_sectors``)
18)                        / requests: fraction uncoalesced
                           = clip((r - c) / (Uncoal_per_mw - c), 0, 1) with
                           c = the profile's ``coalesced_sectors_per_request``
                           (1 on compute 1.x, 4 when absent: 4 x 32-byte
                           sectors for a 4-byte-per-thread warp). A linear mix
                           of the paper's two kinds of memory warp whose mean
                           transactions per warp equal the measured r.
#Synch_insts (26)          ``inst_barrier`` / total warps. Counted apart from
                           #Total_insts only in Eq. (26): Comp_cycles is
                           Issue_cycles x #Total_insts (Table 2: 4 x (27 + 6)),
                           never 4 x (27 + 6 + 6). When the input has no
                           barrier count (nvprof cannot collect one), the
                           kernel is predicted without Synch_cost and its
                           ``state`` and ``Synch_source`` say so.
N (20)                     ``LaunchGeometry.active_warps_per_sm``: achieved_occupancy
                           x ``max_warps_per_sm`` (else theoretical occupancy,
                           else the occupancy calculator's resident warps), at
                           most the grid's warps per SM; at least 1.
#Active_SMs (6, 21)        ``LaunchGeometry.active_sms``: min(``sm_count``, grid_blocks)
#Active_blocks_per_SM      ``LaunchGeometry.active_blocks_per_sm``: N / warps per
(21, 26)                   block (fractional when N is a measured occupancy)
#Rep (21)                  ``LaunchGeometry.repetitions``: warps per SM / N, so
                           that N x #Rep is the warps each SM runs (Eq. 21
                           when N is the resident warps)
#Threads_per_block,        ``block_threads``, ``grid_blocks`` (25)
#Blocks
Freq (7)                   ``sm_clock_hz`` when measured, else the profile's
                           ``sm_clock_mhz`` (detail ``clock_source``)
Mem_Bandwidth (6)          profile ``memory_bandwidth_gb_per_s``
Mem_LD (10, 11)            constant ``Mem_LD`` (Table 6)
Departure_del_uncoal,      constants (Table 6)
Departure_del_coal (15)
Issue_cycles (19)          constant ``Issue_cycles`` (Table 1: 4)
#Uncoal_per_mw (10, 15)    constant ``Uncoal_per_mw`` (Table 3: 32)
#Coal_per_mw               1 by the paper's definition (Table 1 row 19)
Load_bytes_per_warp (7)    Table 1: data size x 32 threads. Option
                           ``load_bytes=requested`` (default): per kernel,
                           requested sectors per request x 32 B
                           (``counters.requested_sectors``); the constant
                           ``Load_bytes_per_warp`` (4 B x 32) where the
                           load/store efficiencies were not collected
=========================  ===================================================

predicted_cycles is Eq. (27), ``Exec_cycles_with_synch``; predicted_ns is
predicted_cycles / Freq. Eq. (25) CPI is reported as a detail.

Options (``options`` mapping, all optional)
-------------------------------------------
``memory_inputs``: ``requests`` (default, the paper: every global request is
    a memory warp that goes to DRAM) or ``dram`` (EXTENSION, not the paper:
    only the share of memory warps whose transactions reach DRAM waits
    Mem_L, #Mem_insts x min(1, DRAM sectors / L1 global sectors) with DRAM
    sectors = DRAM bytes / 32, and Load_bytes_per_warp becomes the DRAM bytes
    per such warp; needs ``dram_bytes`` or ``dram_read_bytes`` +
    ``dram_write_bytes``). The memory instructions still count in
    #Total_insts, so they still cost issue cycles. Detail ``memory_inputs``
    says which was used.
``load_bytes``: ``requested`` (default: Eq. (7)'s Load_bytes_per_warp is what the threads of
    one memory warp ask for, the kernel's data size x 32 as Table 1 defines it, read from the
    requested sectors), ``constant`` (the constant ``Load_bytes_per_warp`` for every kernel, as the
    worked example) or ``sectors`` (EXTENSION, not the paper: what the warp moves, its sectors per
    request x 32 B). Detail ``load_bytes``.
``cache_aware``: ``false`` (default) or ``true`` (EXTENSION, not the paper:
    Mem_LD is blended by the L2 hit rate, Mem_LD' = h x L2_LD +
    (1 - h) x Mem_LD with h = ``l2_hit_rate``; needs that counter). Not
    combinable with ``memory_inputs=dram``, which already leaves the cache
    hits out.
``l2_reads``: ``off`` (default, the paper: #Mem_insts are the global load and store
    requests) or ``memory-warps`` (EXTENSION, not the paper: the read sectors L2 served
    beyond the global loads' own, ``l2_read_bytes`` / 32 - global load sectors, are
    texture and constant fetches through L1/TEX that ``inst_global_ld`` does not count;
    they become coalesced memory warps of c sectors each, added to #Mem_insts (capped so
    that memory warps never exceed #Total_insts). Hong & Kim leave texture caches out
    (Section 3.5); a kernel that streams its input with ``tex1Dfetch`` still waits on DRAM.
    Needs ``l2_read_bytes``; without it nothing is added. Detail ``Unseen_mem_insts``.
``case_selection``: ``published`` (default: Eq. (23) when CWP >= MWP *or*
    Comp_cycles > Mem_cycles, as printed above Eq. (23)) or ``section-3.2``
    (Eq. (23) only when CWP >= MWP; a kernel with Comp_cycles > Mem_cycles and
    MWP > CWP takes Eq. (24), as Section 3.2.2 Case 5 describes: "N
    computation periods plus one memory waiting period"). The printed
    condition can predict a compute-bound kernel below its issue time
    (Eq. (23) counts only MWP - 1 computation periods) and makes the
    prediction drop when instructions are added at the Comp = Mem boundary;
    ``section-3.2`` is monotone in the instruction count.

Bottleneck (shared vocabulary) from the paper's case
----------------------------------------------------
MWP = CWP = N (Eq. 22)                    -> parallelism
MWP < CWP (Eq. 23), MWP limited by the
    bandwidth term MWP_peak_BW            -> memory-bandwidth
MWP < CWP, MWP limited by departure
    delay (Mem_L / Departure_delay) or N  -> memory-latency
MWP = CWP (not N)                         -> balanced
MWP > CWP (Eq. 24), or Eq. (23) taken
    because Comp_cycles > Mem_cycles      -> compute
no global memory instructions             -> compute
and, overriding all of these, ``synchronization`` when Synch_cost >=
Exec_cycles_app (the barrier delay of Eq. (26) is at least half of Eq. (27)).

Guards the paper does not need (documented deviations)
------------------------------------------------------
- No global memory instructions: Eqs. (2), (22), (23) divide by #Mem_insts.
  Such a kernel is predicted as Comp_cycles x N x #Rep (Eq. (24) without a
  memory waiting period) and Synch_cost = 0 (the barrier delay of Eq. (26)
  is a memory-warp departure effect).
- MWP below 1 (a single warp exceeds the SM's share of the bandwidth) is kept
  in Mem_cycles x N / MWP, but the (MWP - 1) factors of Eqs. (22), (23) and
  (26) are taken as max(MWP - 1, 0) so no term turns negative.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge import labels, launch
from nvperf_bridge.counters import global_sectors, requested_sectors, sm_clock
from nvperf_bridge.errors import ModelError
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
    constant_column,
    constant_values,
    detail_column,
    either_column,
    empty_result,
    missing_inputs,
    without_reason,
)

# A global memory transaction in the canonical columns is a 32-byte sector
# (columns.py: global_ld_sectors, dram_*_bytes = transactions x 32).
SECTOR_BYTES = 32.0
# Profiles without ``coalesced_sectors_per_request`` are sector GPUs (compute
# >= 2.0 report 32-byte sectors): a warp of 4-byte words needs 4 sectors.
DEFAULT_COALESCED_SECTORS = 4.0

MEMORY_INPUTS = ("requests", "dram", "levels")
CASE_SELECTIONS = ("published", "section-3.2")
SHARED_MEMORY = ("pipe", "off")  # the first is the default
LOAD_BYTES = ("requested", "sectors", "constant")  # the first is the default
L2_READS = ("off", "memory-warps")  # the first (the paper's global requests only) is the default

STATE_NO_MEMORY = "no global memory instructions"
STATE_EQ22 = "MWP = CWP = N (not enough warps)"
STATE_MWP_LT_CWP = "MWP < CWP"
STATE_MWP_EQ_CWP = "MWP = CWP"
STATE_COMP_GT_MEM = "MWP > CWP, Comp_cycles > Mem_cycles (Eq. 23 as printed)"
STATE_MWP_GT_CWP = "MWP > CWP"
STATE_SUFFIX_NO_SYNCH = " (no Synch_cost: inst_barrier not collected)"
SYNCH_NOT_COLLECTED = (
    "not collected: Eq. (26) synchronization cost left out (ncu --metrics smsp__inst_executed_op_barrier.sum; "
    "nvprof has no barrier counter)"
)


class HongKimModel:
    """The MWP/CWP model; see the module docstring for inputs, options and rules."""

    id = "hong-kim"
    version = "1.0.0"
    description = (
        "Memory warp parallelism (MWP) vs computation warp parallelism (CWP): memory latency hidden "
        "by concurrent memory warps, bounded by departure delay, bandwidth and active warps; plus barrier cost."
    )
    paper = (
        "S. Hong and H. Kim, An Analytical Model for a GPU Architecture with Memory-level and "
        "Thread-level Parallelism Awareness, ISCA 2009, Eqs. (1)-(27)"
    )
    # what calibrate chooses on its training data (default first): the case condition printed above
    # Eq. (23) or the one Section 3.2.2 describes (the paper contradicts itself; see the module docstring),
    # and whether texture fetches seen only in L2 count as memory warps (an EXTENSION)
    calibration_options = {"case_selection": CASE_SELECTIONS, "l2_reads": L2_READS}
    # option values beyond the paper (reports and calibrate mark them EXTENSION); see "Options" above
    extension_options = {"memory_inputs": ("dram", "levels"), "load_bytes": ("sectors",), "cache_aware": (True, "true"),
                         "l2_reads": ("memory-warps",), "shared_memory": ("pipe",)}
    requires = Requirements(
        required=(
            "grid_blocks",
            "block_threads",
            "inst_executed",
            "inst_global_ld",
            "inst_global_st",
        ),
        optional=(
            "inst_barrier",  # Eq. (26); without it (nvprof cannot count barriers) Synch_cost is left out, and said
            "global_ld_sectors",  # needed when there are global loads
            "global_st_sectors",  # needed when there are global stores
            "achieved_occupancy",
            "theoretical_occupancy",
            "registers_per_thread",
            "shared_mem_per_block_bytes",
            "sm_clock_hz",
            "dram_bytes",  # memory_inputs=dram
            "dram_read_bytes",
            "dram_write_bytes",
            "l2_hit_rate",  # cache_aware=true
            "l2_read_bytes",  # memory_inputs=levels: the sectors that reached L2
            "l2_write_bytes",
        ),
    )
    constants = (
        ConstantSpec(
            "Mem_LD", 420.0, "cycles", (1.0, 5000.0),
            "DRAM round-trip latency of one memory transaction (Eqs. 10, 11)",
            "Hong & Kim ISCA'09 Table 6 (FX5600: 420; GTX280: 450). A default to calibrate on other GPUs: "
            "microbenchmark studies (Wong et al. ISPASS'10 for GT200; Jia et al. arXiv:1804.06826 for Volta) "
            "measure several hundred SM cycles",
        ),
        ConstantSpec(
            "Departure_del_uncoal", 10.0, "cycles", (0.01, 1000.0),
            "delay between two uncoalesced transactions of one memory warp (Eqs. 10, 15)",
            "Hong & Kim ISCA'09 Table 6 (FX5600: 10; GTX280: 40); calibrate on other GPUs",
        ),
        ConstantSpec(
            "Departure_del_coal", 4.0, "cycles", (0.01, 1000.0),
            "delay between two coalesced memory warps (Eq. 15)",
            "Hong & Kim ISCA'09 Table 6 (FX5600 and GTX280: 4); calibrate on other GPUs",
        ),
        ConstantSpec(
            "Issue_cycles", 4.0, "cycles", (0.01, 64.0),
            "SM cycles to issue one warp instruction (Eq. 19)",
            "Hong & Kim ISCA'09 Table 1 row 2: 4 cycles (32 threads on 8 SPs). On later SMs about "
            "1 / (warp instructions the SM issues per cycle), e.g. 0.25 with four schedulers; calibrate",
        ),
        ConstantSpec(
            "Uncoal_per_mw", 32.0, "transactions", (1.0, 64.0),
            "transactions of one uncoalesced memory warp (Eqs. 10, 15); also the top of the coalescing mix",
            "Hong & Kim ISCA'09 Table 3 (#Uncoal_per_mw = 32 on compute 1.0/1.1: one transaction per thread)",
        ),
        ConstantSpec(
            "Load_bytes_per_warp", 128.0, "bytes", (1.0, 4096.0),
            "bytes one memory warp moves (Eq. 7)",
            "Hong & Kim ISCA'09 Table 1 row 21: data size (typically 4 B) x 32 threads",
        ),
        ConstantSpec(
            "Shared_cycles_per_wavefront", 1.0, "cycles", (0.01, 64.0),
            "SM cycles the shared-memory pipe takes per wavefront; used only by the shared_memory=pipe "
            "EXTENSION (not in the paper)",
            "CUDA C++ Programming Guide, 'Shared Memory' (compute 3.x-9.x): 32 banks, each 32 bits per clock "
            "cycle, so one conflict-free 128-byte wavefront per cycle per SM; a k-way conflict is k wavefronts",
        ),
        ConstantSpec(
            "L2_LD", 200.0, "cycles", (1.0, 5000.0),
            "L2 hit latency, used only by the cache_aware and memory_inputs=levels EXTENSIONS (not in the paper)",
            "order of magnitude of L2 hit latency reported by microbenchmarks on Volta-class GPUs "
            "(Jia et al. arXiv:1804.06826; 221 cycles measured on a V100 by github.com/markdewing/AI_kernels "
            "latency/README.md); a default to calibrate",
        ),
        ConstantSpec(
            "L1_LD", 33.0, "cycles", (1.0, 5000.0),
            "L1 hit latency, used only by the memory_inputs=levels EXTENSION (not in the paper)",
            "pointer-chasing L1 hits of about 33 cycles (github.com/ooreilly/cuda cache/README.md, after Mei & Chu "
            "TPDS 2017); 36 on a V100 (github.com/markdewing/AI_kernels latency/README.md); a default to calibrate",
        ),
        LAUNCH_CONSTANT,
    )

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        """Predict every kernel with Eqs. (1)-(27); vectorised over the frame."""
        options = options or {}
        memory_inputs = choice_option(options, "memory_inputs", MEMORY_INPUTS, self.id)
        case_selection = choice_option(options, "case_selection", CASE_SELECTIONS, self.id)
        shared_memory = choice_option(options, "shared_memory", SHARED_MEMORY, self.id)
        load_bytes = choice_option(options, "load_bytes", LOAD_BYTES, self.id)
        l2_reads = choice_option(options, "l2_reads", L2_READS, self.id)
        cache_aware = bool_option(options, "cache_aware", False, self.id)
        if cache_aware and memory_inputs != "requests":
            raise ModelError(
                f"options cache_aware=true and memory_inputs={memory_inputs} cannot be combined "
                "(memory_inputs=dram / levels already treat the cache hits apart)",
                model_id=self.id,
            )

        index = kernels.index
        const = constant_values(self, gpu)
        U = const["Uncoal_per_mw"]
        c = float(gpu.get("coalesced_sectors_per_request", DEFAULT_COALESCED_SECTORS))

        with np.errstate(divide="ignore", invalid="ignore"):
            geometry = launch.launch_geometry(kernels, gpu)  # computed once per frame, shared by the models
            total_warps = geometry.total_warps
            warps_per_block = geometry.warps_per_block
            blocks = column_or_nan(kernels, "grid_blocks")
            ld = column_or_nan(kernels, "inst_global_ld")
            st = column_or_nan(kernels, "inst_global_st")
            requests = ld + st

            # --- which counters this kernel needs (sectors only where there are requests) ---
            needed: dict[str, pd.Series] = {name: column_or_nan(kernels, name) for name in self.requires.required}
            # 32-byte sectors on every GPU (nvprof's transactions converted per compute capability)
            ld_sectors, st_sectors, sectors_source = global_sectors(kernels, gpu)
            ld_sectors = ld_sectors.where(~(ld == 0), 0.0)
            st_sectors = st_sectors.where(~(st == 0), 0.0)
            needed["global_ld_sectors"] = ld_sectors
            needed["global_st_sectors"] = st_sectors
            dram = column_or_nan(kernels, "dram_bytes").fillna(
                column_or_nan(kernels, "dram_read_bytes") + column_or_nan(kernels, "dram_write_bytes")
            )
            if memory_inputs in ("dram", "levels"):
                needed["dram_bytes"] = dram.where(~(requests == 0), 0.0)
            hit_rate = column_or_nan(kernels, "l2_hit_rate")
            if cache_aware:
                needed["l2_hit_rate"] = hit_rate.where(~(requests == 0), 0.0)
            error = missing_inputs(pd.DataFrame(needed, index=index, copy=False), list(needed))

            # --- per-thread counts (Table 1 rows 13-18) ---
            Total_insts = column_or_nan(kernels, "inst_executed") / total_warps  # #Total_insts, barriers included
            Mem_insts_requests = requests / total_warps
            Synch_insts = column_or_nan(kernels, "inst_barrier") / total_warps
            # nvprof has no barrier counter: predict without Eq. (26) and say so per kernel.
            synch_known = Synch_insts.notna()
            Synch_insts = Synch_insts.fillna(0.0)
            sectors = ld_sectors + st_sectors
            transactions_per_mw = sectors / requests  # r: mean transactions per memory warp
            # what a coalesced warp of this kernel's word size needs: c sectors for 4-byte words,
            # more for 8/16-byte words (the threads' requested bytes / 32) where the efficiency is known
            wide = (requested_sectors(kernels, ld_sectors, st_sectors) / requests).where(requests > 0)
            coalesced_per_mw = np.maximum(c, wide.fillna(c))
            coalesced_source = either_column(wide > c, "requested bytes (wide words)",
                                             "profile coalesced_sectors_per_request", index)
            if l2_reads == "memory-warps":
                # EXTENSION (not the paper, which counts global requests only and leaves texture caches out,
                # Section 3.5): the sectors L2 served to reads beyond the global loads' own (texture and
                # constant fetches through L1/TEX, which inst_global_ld does not count) are memory warps too,
                # coalesced ones of c sectors each, and wait Mem_L like any other
                unseen = (column_or_nan(kernels, "l2_read_bytes") / SECTOR_BYTES - ld_sectors.fillna(0.0)).clip(lower=0.0)
                unseen_requests = np.minimum((unseen / c).fillna(0.0),
                                             (column_or_nan(kernels, "inst_executed") - requests).clip(lower=0.0))
                requests = requests + unseen_requests
                sectors = sectors + unseen_requests * c
                transactions_per_mw = sectors / requests
                Mem_insts_requests = requests / total_warps
            else:
                unseen_requests = constant_column(0.0, index)  # one value: 8 bytes (speed only)
            if U > c:
                span = (U - coalesced_per_mw).clip(lower=1e-9)
                uncoal_fraction = ((transactions_per_mw - coalesced_per_mw) / span).clip(lower=0.0, upper=1.0)
            else:  # a profile may set Uncoal_per_mw <= c: then any excess over c is uncoalesced
                uncoal_fraction = (transactions_per_mw > coalesced_per_mw).astype("float64")
            uncoal_fraction = uncoal_fraction.where(requests > 0, 0.0)

            if memory_inputs == "dram":
                # EXTENSION: only the memory warps whose transactions reach DRAM wait Mem_L.
                dram_fraction = ((dram / SECTOR_BYTES) / sectors).clip(lower=0.0, upper=1.0)
                dram_fraction = dram_fraction.where(sectors > 0, (dram > 0).astype("float64"))
                Mem_insts = Mem_insts_requests * dram_fraction
                dram_warps = requests * dram_fraction
                Load_bytes_per_warp = (dram / dram_warps).where(dram_warps > 0, const["Load_bytes_per_warp"])
                memory_label = "dram (DRAM share of global requests; extension)"
            elif memory_inputs == "levels":
                # EXTENSION: every memory warp waits, but for the level that served its sectors
                # (memory_levels.served_fractions); only the DRAM share loads the DRAM bandwidth of Eq. (6)
                levels = served_fractions(kernels, sectors)
                Mem_insts = Mem_insts_requests
                Load_bytes_per_warp = const["Load_bytes_per_warp"] * levels["f_dram"]
                memory_label = "levels (DRAM, L2 and L1 shares of the global sectors; extension)"
            else:
                Mem_insts = Mem_insts_requests
                Load_bytes_per_warp = constant_column(const["Load_bytes_per_warp"], index)
                memory_label = "requests (global ld/st requests, all assumed to reach DRAM, as the paper)"
            if load_bytes != "constant" and memory_inputs != "dram":
                # Table 1 row 21 defines Load_bytes_per_warp as the kernel's data size x 32 threads; the counters
                # give it per kernel: "requested", the bytes the threads ask for per memory warp (requested sectors
                # x 32 B: 128 B for 4-byte words, 512 B for 16-byte words); "sectors" (EXTENSION), what one memory
                # warp moves, its sectors per request (r) x 32 B (up to 1 KiB for an uncoalesced warp)
                per_warp = wide if load_bytes == "requested" else transactions_per_mw
                counted = (per_warp * SECTOR_BYTES).where(requests > 0).fillna(const["Load_bytes_per_warp"])
                Load_bytes_per_warp = counted * (levels["f_dram"] if memory_inputs == "levels" else 1.0)
            Comp_insts = Total_insts - Mem_insts_requests
            Uncoal_Mem_insts = Mem_insts * uncoal_fraction
            Coal_Mem_insts = Mem_insts - Uncoal_Mem_insts
            has_memory = Mem_insts > 0

            if cache_aware:
                # EXTENSION: latency blended by the L2 hit rate.
                h = hit_rate.clip(lower=0.0, upper=1.0).fillna(0.0)
                Mem_LD = h * const["L2_LD"] + (1.0 - h) * const["Mem_LD"]
            elif memory_inputs == "levels":
                Mem_LD = served_latency(levels, const["Mem_LD"], const["L2_LD"], const["L1_LD"])
            else:
                Mem_LD = constant_column(const["Mem_LD"], index)

            freq, clock_source = sm_clock(kernels, gpu)
            N_raw, N_source = geometry.active_warps_per_sm, geometry.active_warps_source
            N = N_raw.clip(lower=1.0)  # (20); at least the one warp that runs
            active_sms = geometry.active_sms
            active_blocks = geometry.active_blocks_per_sm
            Rep = geometry.repetitions  # (21)

            # --- memory latency and departure delay ---
            Mem_L_Uncoal = Mem_LD + (U - 1.0) * const["Departure_del_uncoal"]  # (10)
            Mem_L_Coal = Mem_LD  # (11)
            Weight_uncoal = (Uncoal_Mem_insts / (Uncoal_Mem_insts + Coal_Mem_insts)).where(has_memory, 0.0)  # (13)
            Weight_coal = (Coal_Mem_insts / (Coal_Mem_insts + Uncoal_Mem_insts)).where(has_memory, 1.0)  # (14)
            Mem_L = Mem_L_Uncoal * Weight_uncoal + Mem_L_Coal * Weight_coal  # (12)
            Departure_delay = (
                const["Departure_del_uncoal"] * U * Weight_uncoal + const["Departure_del_coal"] * Weight_coal
            )  # (15)

            # --- MWP ---
            MWP_Without_BW_full = Mem_L / Departure_delay  # (16)
            MWP_Without_BW = np.minimum(MWP_Without_BW_full, N)  # (17)
            BW_per_warp = freq * Load_bytes_per_warp / Mem_L  # (7), bytes/s
            MWP_peak_BW = gpu.memory_bandwidth_bytes_per_s / (BW_per_warp * active_sms)  # (6)
            MWP = np.minimum(np.minimum(MWP_Without_BW, MWP_peak_BW), N)  # (5)
            MWP_minus_1 = (MWP - 1.0).clip(lower=0.0)  # guard: see module docstring

            # --- CWP ---
            Mem_cycles = Mem_L_Uncoal * Uncoal_Mem_insts + Mem_L_Coal * Coal_Mem_insts  # (18)
            Issue_comp_cycles = const["Issue_cycles"] * Total_insts  # (19)
            # EXTENSION (not the paper, option shared_memory=off drops it): the SM's shared-memory pipe
            # serves one wavefront per cycle (32 banks x 32 bits per clock, CUDA C++ Programming Guide
            # 'Shared Memory'), so a warp's compute period is at least its wavefronts x Shared_cycles
            shared_waves = (column_or_nan(kernels, "shared_ld_wavefronts").fillna(0.0)
                            + column_or_nan(kernels, "shared_st_wavefronts").fillna(0.0)) / total_warps
            Shared_cycles = shared_waves * const["Shared_cycles_per_wavefront"]
            if shared_memory == "pipe":
                Comp_cycles = np.maximum(Issue_comp_cycles, Shared_cycles)
            else:
                Comp_cycles = Issue_comp_cycles
            CWP_full = (Mem_cycles + Comp_cycles) / Comp_cycles  # (8)
            CWP = np.minimum(CWP_full, N)  # (9)
            Comp_p = (Comp_cycles / Mem_insts).where(has_memory, np.nan)  # (2)

            # --- the three cases (22)-(24) ---
            mwp_is_n = np.isclose(MWP, N, rtol=1e-9, atol=0.0)
            cwp_is_n = np.isclose(CWP, N, rtol=1e-9, atol=0.0)
            cwp_eq_mwp = np.isclose(CWP, MWP, rtol=1e-9, atol=0.0)
            cwp_ge_mwp = (CWP >= MWP) | cwp_eq_mwp
            comp_gt_mem = Comp_cycles > Mem_cycles
            is_22 = has_memory & mwp_is_n & cwp_is_n
            if case_selection == "published":
                is_23 = has_memory & ~is_22 & (cwp_ge_mwp | comp_gt_mem)
            else:
                is_23 = has_memory & ~is_22 & cwp_ge_mwp
            is_24 = has_memory & ~is_22 & ~is_23

            exec_22 = (Mem_cycles + Comp_cycles + Comp_p * MWP_minus_1) * Rep  # (22)
            exec_23 = (Mem_cycles * N / MWP + Comp_p * MWP_minus_1) * Rep  # (23)
            exec_24 = (Mem_L + Comp_cycles * N) * Rep  # (24)
            exec_no_memory = Comp_cycles * N * Rep  # guard: (24) without a memory waiting period
            Exec_cycles_app = pd.Series(
                np.select([is_22, is_23, is_24], [exec_22, exec_23, exec_24], default=exec_no_memory), index=index
            )

            # --- synchronization (26)-(27) ---
            Synch_cost = (Departure_delay * MWP_minus_1 * Synch_insts * active_blocks * Rep).where(has_memory, 0.0)  # (26)
            Exec_cycles_with_synch = Exec_cycles_app + Synch_cost  # (27)
            CPI = Exec_cycles_app / (Total_insts * warps_per_block * blocks / active_sms)  # (25)
            # Eq. (27) in ns, plus the launch term (EXTENSION, launch_cost; 0 in the published form)
            predicted_ns, predicted_cycles = with_launch(Exec_cycles_with_synch / freq * 1e9, Exec_cycles_with_synch,
                                                         const["launch_ns"], freq)

        # --- what limits MWP (Eq. 5) ---
        bw_limited = MWP_peak_BW <= np.minimum(MWP_Without_BW_full, N)
        n_limited = ~bw_limited & (N <= MWP_Without_BW_full)

        # --- the paper's case and the shared vocabulary ---
        is_23_memory = is_23 & cwp_ge_mwp & ~cwp_eq_mwp
        is_23_balanced = is_23 & cwp_eq_mwp
        is_23_compute = is_23 & ~cwp_ge_mwp

        # --- kernels the model cannot handle get a reason ---
        error = error.to_numpy(dtype=object, copy=True)
        no_reason = without_reason(error)
        checks = [
            (~(blocks > 0) | ~(column_or_nan(kernels, "block_threads") > 0),
             "grid_blocks and block_threads must be positive"),
            (~(Total_insts > 0), "inst_executed is 0: no instructions to model"),
            (Mem_insts_requests > Total_insts * (1.0 + 1e-9),
             "inst_global_ld + inst_global_st exceed inst_executed (inconsistent counters)"),
            (~np.isfinite(predicted_ns) | ~(predicted_ns > 0),
             "no finite positive prediction from these counters"),
        ]
        for bad, reason in checks:
            take = no_reason & np.asarray(bad, dtype=bool)
            error[take] = reason
            no_reason &= ~take

        result = empty_result(kernels)
        ok = no_reason  # every kernel given a reason above is out
        failed = ~ok
        text = lambda values: pd.Series(values, index=index, dtype="object", copy=False)  # noqa: E731
        result["predicted_cycles"] = predicted_cycles.where(ok)
        result["predicted_ns"] = predicted_ns.where(ok)
        # text columns as codes into a few labels (nvperf_bridge.labels), never a string built per kernel; a
        # kernel given a reason above takes its fallback label in the same pass (the first condition)
        bottleneck = labels.select(
            [failed, Synch_cost >= Exec_cycles_app, ~has_memory, is_22, is_23_memory & bw_limited, is_23_memory,
             is_23_balanced, is_23_compute | is_24],
            ["unknown", "synchronization", "compute", "parallelism", "memory-bandwidth", "memory-latency", "balanced",
             "compute"],
            default="unknown",
        )
        result["bottleneck"] = labels.column(bottleneck, index, owned=True, text=True)  # new: not copied
        # the state of the paper's case, with the no-barrier-count suffix where inst_barrier was not collected
        states = [STATE_NO_MEMORY, STATE_EQ22, STATE_MWP_LT_CWP, STATE_MWP_EQ_CWP, STATE_COMP_GT_MEM, STATE_MWP_GT_CWP, ""]
        case_conditions = [~has_memory, is_22, is_23_memory, is_23_balanced, is_23_compute, is_24]

        def state_text(pattern: int) -> str:  # bit 0: failed; bits 1-6: the case conditions; bit 7: no barrier count
            if pattern & 1:
                return ""
            label = states[labels.first_true(pattern >> 1, len(case_conditions))]
            return label + STATE_SUFFIX_NO_SYNCH if pattern >> (1 + len(case_conditions)) & 1 else label

        state = labels.by_conditions([failed, *case_conditions, ~synch_known.to_numpy(dtype=bool)], state_text)
        result["state"] = labels.column(state, index, owned=True, text=True)
        result["error"] = labels.column(error, index, owned=True)
        details: dict[str, Any] = {
            "equation": text(labels.select([failed, is_22, is_23, is_24], ["", "22", "23", "24"],
                                           default="24 (no memory period)")),
            "MWP": MWP,
            "CWP": CWP,
            "MWP_limit": text(labels.select([failed, bw_limited, n_limited],
                                            ["", "bandwidth (MWP_peak_BW)", "active warps (N)"],
                                            default="departure delay (MWP_Without_BW)")),
            "N": N,
            "N_source": N_source,
            "Mem_L": Mem_L,
            "Mem_L_Uncoal": Mem_L_Uncoal,
            "Mem_L_Coal": Mem_L_Coal,
            "Mem_LD": Mem_LD,
            "Departure_delay": Departure_delay,
            "MWP_Without_BW_full": MWP_Without_BW_full,
            "MWP_Without_BW": MWP_Without_BW,
            "BW_per_warp": BW_per_warp,
            "MWP_peak_BW": MWP_peak_BW,
            "CWP_full": CWP_full,
            "Comp_cycles": Comp_cycles,
            "Mem_cycles": Mem_cycles,
            "Comp_p": Comp_p,
            "Rep": Rep,
            "Active_blocks_per_SM": active_blocks,
            "Active_SMs": active_sms,
            "Exec_cycles_app": Exec_cycles_app,
            "Synch_cost": Synch_cost,
            "Exec_cycles_with_synch": Exec_cycles_with_synch,
            "CPI": CPI,
            "Total_insts": Total_insts,
            "Comp_insts": Comp_insts,
            "Mem_insts": Mem_insts,
            "Uncoal_Mem_insts": Uncoal_Mem_insts,
            "Coal_Mem_insts": Coal_Mem_insts,
            "Synch_insts": Synch_insts.where(synch_known),
            "Synch_source": either_column(synch_known, "inst_barrier", SYNCH_NOT_COLLECTED, index),
            "Weight_uncoal": Weight_uncoal,
            "Weight_coal": Weight_coal,
            "transactions_per_mw": transactions_per_mw,
            "coalesced_per_mw": coalesced_per_mw,
            "coalesced_source": coalesced_source,
            "sectors_source": sectors_source,
            "Load_bytes_per_warp": Load_bytes_per_warp,
            "memory_inputs": memory_label,
            "cache_aware": cache_aware,
            "case_selection": case_selection,
            "shared_memory": shared_memory,
            "load_bytes": load_bytes,
            "l2_reads": l2_reads,
            "Unseen_mem_insts": unseen_requests / total_warps,
            "Issue_comp_cycles": Issue_comp_cycles,
            "Shared_cycles": Shared_cycles,
            "comp_limit": either_column((shared_memory == "pipe") & (Shared_cycles > Issue_comp_cycles),
                                        "shared-memory wavefronts (extension)", "issue (Eq. 19)", index),
            "clock_hz": freq,
            "clock_source": clock_source,
            "launch_ns": const["launch_ns"],
        }
        if memory_inputs == "levels":
            details.update(f_dram=levels["f_dram"], f_l2=levels["f_l2"], f_l1=levels["f_l1"],
                           levels_source=levels["levels_source"])
        for name, values in details.items():
            result[name] = detail_column(values, index)  # a constant: the run's shared column (speed only)
        return result


MODEL = HongKimModel()


@hookimpl
def register_models(register: Any) -> None:
    """Register the Hong-Kim model."""
    register(MODEL)
