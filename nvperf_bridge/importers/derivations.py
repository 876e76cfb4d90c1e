"""Derived canonical columns: the ways to compute one from others (a table), the record of which kernels
got a derived value, and which values came from the kernel's measured time.

A value computed from the duration, or from a rate measured over it (a throughput, an IPC), is the time in
disguise: ``time_derived`` tells them apart per kernel so that accuracy figures never feed a kernel's time
into its own prediction (``without_time_derived``). ``importers.canonical`` computes the derivations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from nvperf_bridge.importers.aliases import aliases
from nvperf_bridge.labels import factorize_text


@dataclass(frozen=True)
class Derivation:
    """One way to compute a canonical column from others (see ``DERIVATIONS``)."""

    target: str
    operation: str
    inputs: tuple[str, ...]
    formula: str  # what inspect shows ("" = assembling a launch shape: not recorded as derived)
    time: bool = False  # uses the kernel's duration, or a rate measured over it (throughput, IPC)


# Derived canonical columns, as data. Operations:
#   sum / product: every input must be present (a missing part is missing, not 0)
#   weighted: sum of input*weight, inputs given as "name*weight"
#   ratio: inputs[0] / inputs[1] * factor ("name*factor" on the first input)
#   requests: transactions / transactions-per-request, where no transactions means
#     no requests (nvprof reports 0 per request for a kernel that never touches
#     that memory, and 0 / 0 must read as 0 requests, not as a missing counter)
#   warps: inputs[0] x grid_blocks x ceil(block_threads / 32)
# A derivation only fills values still missing: a counted value always wins. Rows run in
# order, so a later one can use an earlier one's output; an output computed from a
# time-derived input is time-derived too (per kernel).
DERIVATIONS: tuple[Derivation, ...] = (
    Derivation("shared_mem_per_block_bytes", "sum", ("_smem_static_bytes", "_smem_dynamic_bytes"), ""),
    Derivation("grid_blocks", "product", ("_grid_x", "_grid_y", "_grid_z"), ""),
    Derivation("block_threads", "product", ("_block_x", "_block_y", "_block_z"), ""),
    Derivation("duration_ns", "ratio", ("sm_cycles*1e9", "sm_clock_hz"), "duration_ns = sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second (no duration counter in the input)", time=True),
    Derivation("dram_read_bytes", "product", ("_dram_read_per_s*1e-9", "duration_ns"), "dram_read_bytes = DRAM read throughput x duration (dram_read_throughput or dram__bytes_read.sum.per_second)", time=True),
    Derivation("dram_write_bytes", "product", ("_dram_write_per_s*1e-9", "duration_ns"), "dram_write_bytes = DRAM write throughput x duration (dram_write_throughput or dram__bytes_write.sum.per_second)", time=True),
    Derivation("dram_bytes", "sum", ("dram_read_bytes", "dram_write_bytes"), "dram_bytes = dram_read_bytes + dram_write_bytes"),
    Derivation("dram_bytes", "product", ("_dram_per_s*1e-9", "duration_ns"), "dram_bytes = DRAM throughput x duration (dram__bytes.sum.per_second or ncu Memory Throughput in byte/second)", time=True),
    Derivation("flop_sp", "weighted", ("_ffma*2", "_fadd*1", "_fmul*1"), "flop_sp = 2 x ffma + fadd + fmul (thread-level SASS counts)"),
    Derivation("flop_dp", "weighted", ("_dfma*2", "_dadd*1", "_dmul*1"), "flop_dp = 2 x dfma + dadd + dmul (thread-level SASS counts)"),
    Derivation("flop_hp", "weighted", ("_hfma*2", "_hadd*1", "_hmul*1"), "flop_hp = 2 x hfma + hadd + hmul (thread-level SASS counts)"),
    Derivation("inst_global_ld", "requests", ("global_ld_sectors", "_gld_per_request"), "inst_global_ld = gld_transactions / gld_transactions_per_request"),
    Derivation("inst_global_st", "requests", ("global_st_sectors", "_gst_per_request"), "inst_global_st = gst_transactions / gst_transactions_per_request"),
    Derivation("inst_shared_ld", "requests", ("shared_ld_wavefronts", "_shared_ld_per_request"), "inst_shared_ld = shared_load_transactions / shared_load_transactions_per_request"),
    Derivation("inst_shared_st", "requests", ("shared_st_wavefronts", "_shared_st_per_request"), "inst_shared_st = shared_store_transactions / shared_store_transactions_per_request"),
    Derivation("inst_local_ld", "requests", ("local_ld_sectors", "_local_ld_per_request"), "inst_local_ld = local_load_transactions / local_load_transactions_per_request"),
    Derivation("inst_local_st", "requests", ("local_st_sectors", "_local_st_per_request"), "inst_local_st = local_store_transactions / local_store_transactions_per_request"),
    Derivation("inst_issued", "weighted", ("_inst_issued1*1", "_inst_issued2*2"), "inst_issued = inst_issued1 + 2 x inst_issued2 (single- and dual-issue cycles)"),
    Derivation("inst_executed", "product", ("_inst_per_warp", "warps_launched"), "inst_executed = inst_per_warp x warps_launched"),
    Derivation("inst_executed", "warps", ("_inst_per_warp", "grid_blocks", "block_threads"), "inst_executed = inst_per_warp x grid_blocks x ceil(block_threads / 32)"),
    Derivation("inst_executed", "product", ("_executed_ipc", "sm_active_cycles_sum"), "inst_executed = executed_ipc x active_cycles (IPC is a rate over the kernel's cycles)", time=True),
    Derivation("inst_issued", "product", ("_issued_ipc", "sm_active_cycles_sum"), "inst_issued = issued_ipc x active_cycles (IPC is a rate over the kernel's cycles)", time=True),
)

TIME_MARK = " (time)"
INPUT_SPEC = re.compile(r"^(?P<name>[^*]+)(?:\*(?P<w>[-+0-9.eE]+))?$")


def derived_from(kernels: pd.DataFrame, notes: list[str] | None = None) -> dict[str, dict]:
    """The derivation record per canonical column: which formulas, from which counters, how many
    kernels, and how many of them are time-derived (from the duration or a rate over it).

    ``notes`` (the input files' notes) narrows the formulas to those that were used.
    A model input used to judge accuracy must not be time-derived: see ``time_derived``.
    """
    if "derived" not in kernels.columns:
        return {}
    text = kernels["derived"].dropna().astype(str)
    if text.empty:
        return {}
    labels = text.str.split("; ").explode()
    counts = labels.value_counts()
    out: dict[str, dict] = {}
    for d in DERIVATIONS:
        if not d.formula or d.target in out:
            continue
        plain, timed = int(counts.get(d.target, 0)), int(counts.get(d.target + TIME_MARK, 0))
        if not plain and not timed:
            continue
        ways = [x for x in DERIVATIONS if x.target == d.target and x.formula]
        used = [x for x in ways if notes is None or x.formula in notes] or ways
        out[d.target] = {
            "formulas": [x.formula for x in used],
            "inputs": sorted({_input_name(i) for x in used for i in x.inputs}),
            "kernels": plain + timed,
            "time_derived_kernels": timed,
            "time_derived": timed > 0,
        }
    return out


def _input_name(spec: str) -> str:
    """A derivation input as the user knows it: a canonical column, or the profiler counters of a part."""
    m = INPUT_SPEC.match(spec)
    assert m is not None
    name = m.group("name")
    if not name.startswith("_"):
        return name
    feeding = sorted(a.metric for rows in aliases().values() for a in rows if a.target == name)
    return " or ".join(feeding) or name


def time_derived(kernels: pd.DataFrame, column: str) -> pd.Series:
    """Per kernel: is ``column``'s value computed from the duration or a rate over it?

    The accuracy benchmark blanks these values (``without_time_derived``) so the
    measured time never reaches a prediction through a derived counter.
    """
    return time_derived_any(kernels, [column])


def time_derived_any(kernels: pd.DataFrame, columns: Iterable[str]) -> pd.Series:
    """Per kernel: is any of ``columns`` computed from the duration (``time_derived`` of each, or-ed)?
    One pass over the ``derived`` text for all of them (a model reads a dozen columns)."""
    names = list(dict.fromkeys(columns))
    if "derived" not in kernels.columns or not names:
        return pd.Series(False, index=kernels.index)
    from nvperf_bridge.model import memory_key, run_value

    # a frame repeats a few derivation records: the pattern is searched once per distinct text, not per
    # kernel (asked per model about 20 times per report; per kernel it cost seconds at 100k launches);
    # within one run of the models the texts are factorised once (model.run_value), and by the few string
    # objects the rows share (factorize_text: the report asks again outside the run; speed only)
    derived = kernels["derived"].to_numpy(dtype=object)
    codes, distinct = run_value(("derived texts", memory_key(derived)), [derived],
                                lambda: factorize_text(derived))
    alternatives = "|".join(re.escape(name) for name in names)
    pattern = re.compile(f"(?:^|; )(?:{alternatives}){re.escape(TIME_MARK)}")
    hits = np.array([pattern.search(str(text)) is not None for text in distinct.tolist()] + [False], dtype=bool)
    return pd.Series(hits[codes], index=kernels.index)  # code -1 (missing) takes the last entry: False


def without_time_derived(kernels: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``kernels`` where every time-derived value is missing (counted values stay)."""
    from nvperf_bridge.model import shared_evaluations

    records = derived_from(kernels)
    out = kernels
    with shared_evaluations():  # the ``derived`` texts factorised once for every column, not once per column
        for column, record in records.items():
            if not record["time_derived"]:
                continue
            if out is kernels:
                out = kernels.copy()
            out[column] = out[column].mask(time_derived(kernels, column))
    return out
