"""Theoretical occupancy per compute capability, vectorised over a KernelFrame.

The rules are those of NVIDIA's CUDA Occupancy Calculator as the CUDA toolkit
ships it (``include/cuda_occupancy.h``, ``cudaOccMaxActiveBlocksPerMultiprocessor``
with the default shared-memory carve-out preference) and, for compute 1.x, the
CUDA 4.x ``CUDA_Occupancy_Calculator.xls``. The per-SM limits and allocation
units are data: ``nvperf_bridge/data/compute_capabilities.csv``, one sourced row
per compute capability.

Blocks per SM are the smallest of four limits:

- warps: floor(max warps per SM / warps per block);
- registers: registers per warp = registers per thread x warp size rounded up to
  the allocation unit; warps that fit = floor(registers per SM / warp allocation
  granularity / registers per warp) x granularity (cc >= 2.0; the granularity is the
  number of SM sub-partitions); blocks = floor(warps that fit / warps per block).
  On cc 1.x registers are allocated per block: ceil(warps rounded up to the
  granularity x warp size x registers per thread, unit);
- shared memory: (static + dynamic + the driver's reserved bytes per block,
  1 KB on cc >= 8.0) rounded up to the allocation unit; blocks = floor(shared
  memory of the SM's carve-out / that). The carve-out is the largest one unless
  the caller passes the configured size (ncu ``launch__shared_mem_config_size``);
- blocks: the maximum resident blocks per SM.

A launch the hardware refuses (block too large, too many registers per thread or
per block, more shared memory than the opt-in maximum) has 0 blocks per SM, the
limiter ``invalid launch`` and a reason.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from nvperf_bridge.errors import UsageError

if TYPE_CHECKING:  # numpy and pandas load on first calculation: the table alone serves `gpus` and profile loading
    import numpy as np
    import pandas as pd

    from nvperf_bridge.gpu import GpuProfile

TABLE_FILE = "compute_capabilities.csv"

# Limiter labels, in the order a tie is reported: the SM's own caps first, since when one of them
# binds as well, using fewer registers or less shared memory gains no block.
LIMIT_WARPS = "warps"
LIMIT_BLOCKS = "blocks"
LIMIT_REGISTERS = "registers"
LIMIT_SHARED = "shared memory"
LIMIT_INVALID = "invalid launch"
LIMITERS = (LIMIT_WARPS, LIMIT_BLOCKS, LIMIT_REGISTERS, LIMIT_SHARED, LIMIT_INVALID)

OCCUPANCY_COLUMNS = (
    "warps_per_block", "blocks_limit_warps", "blocks_limit_registers", "blocks_limit_shared_mem",
    "blocks_limit_blocks", "theoretical_blocks_per_sm", "theoretical_warps_per_sm", "theoretical_occupancy",
    "occupancy_limiter", "occupancy_limiters", "occupancy_invalid_reason", "occupancy_missing_inputs",
    "allocated_registers_per_block", "allocated_shared_mem_per_block_bytes",
)


@dataclass(frozen=True)
class SmLimits:
    """One row of the compute-capability table: per-SM limits and allocation rules."""

    cc: str
    architecture: str
    warp_size: int
    max_threads_per_block: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_block: int
    max_registers_per_thread: int
    register_allocation_unit: int
    register_allocation_granularity: str  # 'warp' or 'block'
    warp_allocation_granularity: int
    shared_mem_per_sm_bytes: int
    shared_mem_carveouts_bytes: tuple[int, ...]
    shared_mem_allocation_unit_bytes: int
    max_shared_mem_per_block_bytes: int
    max_shared_mem_per_block_optin_bytes: int
    reserved_shared_mem_per_block_bytes: int
    source: str
    allocation_source: str

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * self.warp_size


_INT_FIELDS = tuple(f.name for f in dataclasses.fields(SmLimits)
                    if f.type == "int" and f.name not in ("shared_mem_carveouts_bytes",))


def _cc_key(cc: str) -> tuple[int, int]:
    major, _, minor = str(cc).strip().partition(".")
    return int(major), int(minor or 0)


@functools.lru_cache(maxsize=1)
def cc_table() -> dict[str, SmLimits]:
    """Every row of ``data/compute_capabilities.csv`` by compute capability ("8.6")."""
    text = (resources.files("nvperf_bridge") / "data" / TABLE_FILE).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    table: dict[str, SmLimits] = {}
    for row in csv.DictReader(lines):
        values: dict[str, Any] = {name: int(row[name]) for name in _INT_FIELDS}
        carveouts = tuple(int(float(kb) * 1024) for kb in row["shared_mem_carveouts_kb"].split(";") if kb.strip())
        table[row["cc"]] = SmLimits(
            cc=row["cc"], architecture=row["architecture"],
            register_allocation_granularity=row["register_allocation_granularity"],
            shared_mem_carveouts_bytes=carveouts, source=row["source"], allocation_source=row["allocation_source"],
            **values,
        )
    return table


def cc_limits(cc: str) -> SmLimits:
    """The table row for ``cc``; a compute capability the table lacks takes the nearest
    lower one of the same major version (a newer minor revision keeps its major's rules),
    and one newer than every row the newest row."""
    table = cc_table()
    cc = str(cc).strip()
    if cc in table:
        return table[cc]
    try:
        wanted = _cc_key(cc)
    except ValueError:
        raise UsageError(f"compute capability {cc!r} is not of the form '8.6'") from None
    same_major = [key for key in table if _cc_key(key)[0] == wanted[0] and _cc_key(key) <= wanted]
    if not same_major:
        same_major = [key for key in table if _cc_key(key)[0] == wanted[0]]
    if same_major:
        return table[max(same_major, key=_cc_key)]
    # a compute capability newer than the table: the newest rules (a profile's own limits override them)
    newest = max(table, key=_cc_key)
    if wanted > _cc_key(newest):
        return table[newest]
    raise UsageError(f"no occupancy rules for compute capability {cc}",
                     hint=f"known: {', '.join(table)}; add a row to nvperf_bridge/data/{TABLE_FILE}")


# Profile fields that override the table (a hand-written or hypothetical profile is taken at its word).
_PROFILE_OVERRIDES = {
    "warp_size": "warp_size", "max_threads_per_block": "max_threads_per_block",
    "max_warps_per_sm": "max_warps_per_sm", "max_blocks_per_sm": "max_blocks_per_sm",
    "registers_per_sm": "registers_per_sm", "shared_mem_per_sm_bytes": "shared_mem_per_sm_bytes",
    "register_allocation_unit": "register_allocation_unit",
    "shared_mem_allocation_unit_bytes": "shared_mem_allocation_unit_bytes",
    "max_shared_mem_per_block_bytes": "max_shared_mem_per_block_optin_bytes",
}


def limits_for_profile(gpu: "GpuProfile") -> SmLimits:
    """The compute-capability rules of ``gpu``, with the profile's own hardware facts where it gives them."""
    base = cc_limits(gpu.compute_capability)
    given = {dest: int(gpu.raw[key]) for key, dest in _PROFILE_OVERRIDES.items() if key in gpu.raw}
    return dataclasses.replace(base, **given) if given else base


def _round_up(x: np.ndarray, unit: float) -> np.ndarray:
    import numpy as np

    return np.ceil(x / unit) * unit


def _as_array(values: Any, n: int) -> np.ndarray:
    """Floats of length ``n`` from None (all missing), a scalar, or an array-like (non-numbers missing)."""
    import numpy as np
    import pandas as pd

    if values is None:
        return np.full(n, np.nan)
    if np.isscalar(values):
        return np.full(n, float(values))
    return pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def occupancy_arrays(
    block_threads: Any,
    registers_per_thread: Any,
    shared_mem_per_block_bytes: Any,
    limits: SmLimits,
    *,
    shared_mem_config_bytes: Any = None,
    index: pd.Index | None = None,
) -> dict[str, np.ndarray]:
    """:func:`occupancy` as one numpy array per column (no DataFrame: for callers on the hot path)."""
    import numpy as np

    from nvperf_bridge.labels import full as full_text, select as select_text, take as take_text

    n = len(index) if index is not None else max(
        (len(v) for v in (block_threads, registers_per_thread, shared_mem_per_block_bytes, shared_mem_config_bytes)
         if v is not None and not np.isscalar(v)), default=1)
    threads = _as_array(block_threads, n)
    regs = _as_array(registers_per_thread, n)
    smem = _as_array(shared_mem_per_block_bytes, n)
    config = _as_array(shared_mem_config_bytes, n)
    L = limits
    with np.errstate(divide="ignore", invalid="ignore"):
        wpb = np.ceil(threads / L.warp_size)
        valid_shape = threads > 0
        wpb = np.where(valid_shape, wpb, np.nan)

        # --- warps and blocks ---
        by_warps = np.floor(L.max_warps_per_sm / wpb)
        by_blocks = np.full(n, float(L.max_blocks_per_sm))

        # --- registers ---
        if L.register_allocation_granularity == "block":
            warps_alloc = _round_up(wpb, L.warp_allocation_granularity)
            regs_block = _round_up(warps_alloc * L.warp_size * regs, L.register_allocation_unit)
            by_regs = np.floor(L.registers_per_sm / regs_block)
            regs_check = regs_block
        else:
            regs_warp = _round_up(regs * L.warp_size, L.register_allocation_unit)
            regs_block = regs_warp * wpb
            # the hardware's per-block check assumes every sub-partition gets the block's warps
            regs_check = regs_warp * _round_up(wpb, L.warp_allocation_granularity)
            g = L.warp_allocation_granularity
            warps_fit = np.floor(L.registers_per_sm / g / regs_warp) * g
            by_regs = np.floor(warps_fit / wpb)
        by_regs = np.where(regs == 0, np.inf, by_regs)

        # --- shared memory ---
        smem_used = smem + L.reserved_shared_mem_per_block_bytes
        smem_alloc = _round_up(smem_used, L.shared_mem_allocation_unit_bytes)
        capacity = np.full(n, float(L.shared_mem_per_sm_bytes))
        has_config = config > 0
        if has_config.any():
            # the configured carve-out, or the smallest one that holds a block (cudaOccAlignUpShmemSizeVoltaPlus)
            carve = np.asarray(sorted(L.shared_mem_carveouts_bytes) or [L.shared_mem_per_sm_bytes], dtype="float64")
            pos = np.searchsorted(carve, smem_alloc, side="left").clip(max=len(carve) - 1)
            smallest_fit = carve[np.nan_to_num(pos, nan=0).astype(int)] if len(carve) else capacity
            configured = np.where(config >= smem_alloc, config, smallest_fit)
            capacity = np.where(has_config, configured, capacity)
        by_smem = np.floor(capacity / smem_alloc)
        by_smem = np.where(smem_alloc == 0, np.inf, by_smem)

        # --- launches the hardware refuses ---
        reason = full_text(n, "")
        optin = L.max_shared_mem_per_block_optin_bytes
        checks = (  # (what is too large, its values, the message template), first failing check wins
            (threads > L.max_threads_per_block, threads,
             f"{{:.0f}} threads per block exceeds the maximum of {L.max_threads_per_block} (cc {L.cc})"),
            (regs > L.max_registers_per_thread, regs,
             f"{{:.0f}} registers per thread exceeds the maximum of {L.max_registers_per_thread} (cc {L.cc})"),
            (regs_check > L.max_registers_per_block, regs_check,
             f"{{:.0f}} registers per block exceeds the maximum of {L.max_registers_per_block} (cc {L.cc})"),
            (smem_alloc > optin + L.reserved_shared_mem_per_block_bytes, smem,
             f"{{:.0f}} bytes of shared memory per block exceeds the maximum of {optin} (cc {L.cc}, with opt-in)"),
        )
        invalid = np.zeros(n, dtype=bool)  # given a reason already: the first failing check wins
        for failed, values, template in checks:
            rows = failed & ~invalid
            if rows.any():  # one message per distinct value, not per launch
                distinct, inverse = np.unique(values[rows], return_inverse=True)
                reason[rows] = np.asarray([template.format(v) for v in distinct], dtype=object)[inverse.ravel()]
                invalid |= rows

        limits_in_order = (by_warps, by_blocks, by_regs, by_smem)  # LIMITERS order
        # the least limit, a missing one left out (by_blocks is never missing); fmin skips NaN
        blocks = np.fmin(np.fmin(by_warps, by_blocks), np.fmin(by_regs, by_smem))
        blocks[~valid_shape] = np.nan
        blocks[invalid] = 0.0
        warps = blocks * wpb
        occ = warps / L.max_warps_per_sm

    # every binding limit as a bit pattern (16 combinations; NaN compares False: a missing input never
    # binds), its text made once per pattern; the limiter is the pattern's first bit (LIMITERS order)
    code = np.zeros(n, dtype=np.intp)
    for bit, limit in enumerate(limits_in_order):
        code |= (limit == blocks).astype(np.intp) << bit
    names = LIMITERS[:4]
    every_text = [" and ".join(names[bit] for bit in range(4) if combo >> bit & 1) for combo in range(16)]
    first_text = [next((names[bit] for bit in range(4) if combo >> bit & 1), "") for combo in range(16)]
    # code 16: an invalid launch (its own label); 17: blocks unknown (NaN), no label, which wins over 16
    unknown = np.isnan(blocks)
    code[invalid] = 16
    code[unknown] = 17
    limiter = take_text([*first_text, LIMIT_INVALID, ""], code)
    every = take_text([*every_text, LIMIT_INVALID, ""], code)
    no_regs, no_smem = np.isnan(regs), np.isnan(smem)
    missing = select_text([~valid_shape, no_regs & no_smem, no_regs, no_smem],
                          ["block_threads", "registers_per_thread, shared_mem_per_block_bytes",
                           "registers_per_thread", "shared_mem_per_block_bytes"], "")
    return {
        "warps_per_block": wpb, "blocks_limit_warps": by_warps, "blocks_limit_registers": by_regs,
        "blocks_limit_shared_mem": by_smem, "blocks_limit_blocks": by_blocks,
        "theoretical_blocks_per_sm": blocks, "theoretical_warps_per_sm": warps, "theoretical_occupancy": occ,
        "occupancy_limiter": limiter, "occupancy_limiters": every, "occupancy_invalid_reason": reason,
        "occupancy_missing_inputs": missing,
        "allocated_registers_per_block": regs_block, "allocated_shared_mem_per_block_bytes": smem_alloc,
    }


def occupancy(
    block_threads: Any,
    registers_per_thread: Any,
    shared_mem_per_block_bytes: Any,
    limits: SmLimits,
    *,
    shared_mem_config_bytes: Any = None,
    index: pd.Index | None = None,
) -> pd.DataFrame:
    """Theoretical occupancy of each launch (array-likes of equal length, or scalars).

    Returns one row per launch with the columns of ``OCCUPANCY_COLUMNS``: the block
    limit of each resource (``inf`` when the kernel uses none of it), the theoretical
    blocks and warps per SM, the occupancy (0..1), the limiter (on a tie the first of
    ``LIMITERS``) and every limit that binds ("warps and registers"), why a launch is
    invalid, and which inputs were missing (a missing register or shared-memory
    count leaves that limit out: the result is then an upper bound, and
    ``occupancy_missing_inputs`` says so). ``shared_mem_per_block_bytes`` is static
    + dynamic; the driver's reserved bytes are added here.
    """
    import pandas as pd

    arrays = occupancy_arrays(block_threads, registers_per_thread, shared_mem_per_block_bytes, limits,
                              shared_mem_config_bytes=shared_mem_config_bytes, index=index)
    n = len(arrays["warps_per_block"])
    return pd.DataFrame(arrays, index=index if index is not None else pd.RangeIndex(n))


def _column(kernels: pd.DataFrame, name: str) -> Any:
    return kernels[name] if name in kernels.columns else None


# From this many launches on, the calculator runs once per distinct launch shape (speed only, below).
DISTINCT_SHAPES_FROM = 4096


def frame_occupancy_arrays(kernels: pd.DataFrame, gpu: "GpuProfile") -> dict[str, np.ndarray]:
    """:func:`frame_occupancy` as one numpy array per column.

    Every value is a function of one launch's block threads, registers and shared memory alone, and
    a large profile repeats a few launch shapes (a million launches of a training step: a few
    hundred): the calculator runs on the distinct shapes (rows of the same bits,
    ``distinct_rows``) and its arrays are taken back to every launch, the same values (speed only)."""
    arrays, inverse = frame_occupancy_shapes(kernels, gpu)
    return arrays if inverse is None else {name: values[inverse] for name, values in arrays.items()}


def frame_occupancy_shapes(kernels: pd.DataFrame, gpu: "GpuProfile") -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """:func:`frame_occupancy_arrays` before its arrays are taken back to every launch: the calculator's
    arrays per distinct launch shape and each launch's shape (``values[inverse]`` is a launch's column),
    or the arrays of every launch and None where the calculator ran on every launch (a small frame,
    many shapes). A caller that needs a column for a few launches, or not at all, takes only that."""
    columns = (_column(kernels, "block_threads"), _column(kernels, "registers_per_thread"),
               _column(kernels, "shared_mem_per_block_bytes"))
    limits = limits_for_profile(gpu)
    n = len(kernels)
    if n >= DISTINCT_SHAPES_FROM:
        from nvperf_bridge.distinct_rows import distinct_rows

        inputs = [_as_array(values, n) for values in columns]
        shapes = distinct_rows(inputs)
        if len(shapes.first) <= n // 4:
            return occupancy_arrays(*(values[shapes.first] for values in inputs), limits), shapes.inverse
    return occupancy_arrays(*columns, limits, index=kernels.index), None


def frame_occupancy(kernels: pd.DataFrame, gpu: "GpuProfile", *, shared_mem_config_bytes: Any = None) -> pd.DataFrame:
    """:func:`occupancy` of every kernel of a KernelFrame on ``gpu`` (rules of its compute capability)."""
    return occupancy(
        _column(kernels, "block_threads"), _column(kernels, "registers_per_thread"),
        _column(kernels, "shared_mem_per_block_bytes"), limits_for_profile(gpu),
        shared_mem_config_bytes=shared_mem_config_bytes, index=kernels.index,
    )


__all__ = ["LIMITERS", "OCCUPANCY_COLUMNS", "SmLimits", "cc_limits", "cc_table", "frame_occupancy",
           "frame_occupancy_arrays", "frame_occupancy_shapes", "limits_for_profile", "occupancy", "occupancy_arrays"]
