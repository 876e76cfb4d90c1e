"""Launch geometry shared by the analytical models, vectorised over a KernelFrame.

The papers' inputs that come from the launch shape and occupancy (DESIGN.md,
"Mapping counters to the papers' inputs"):

- warps per block = ceil(block_threads / warp_size); total warps = grid_blocks x that.
- per-thread counts = warp-level totals / total warps (the papers count each
  instruction once per thread, and a warp executes it once for 32 threads).
- active warps per SM N = achieved_occupancy x max warps per SM; without an
  achieved occupancy, the theoretical occupancy; without that, the resource
  limit computed from registers, shared memory, threads and blocks per SM.
- active SMs = min(SM count, grid_blocks).
- #Rep = grid_blocks / (active blocks per SM x active SMs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.model import column_or_nan


def warps_per_block(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    return np.ceil(column_or_nan(kernels, "block_threads") / gpu.warp_size)


def total_warps(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    return column_or_nan(kernels, "grid_blocks") * warps_per_block(kernels, gpu)


def per_thread(kernels: pd.DataFrame, gpu: GpuProfile, column: str) -> pd.Series:
    """A warp-level total as the papers' per-thread count (= per warp instruction count)."""
    return column_or_nan(kernels, column) / total_warps(kernels, gpu)


def resource_blocks_per_sm(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """Blocks per SM the hardware limits allow (threads/warps, blocks, registers, shared memory)."""
    wpb = warps_per_block(kernels, gpu)
    limits = [pd.Series(float(gpu.max_blocks_per_sm), index=kernels.index), np.floor(gpu.max_warps_per_sm / wpb)]
    regs = column_or_nan(kernels, "registers_per_thread")
    regs_per_block = regs * wpb * gpu.warp_size
    limits.append(np.floor(gpu.registers_per_sm / regs_per_block.where(regs_per_block > 0)))
    smem = column_or_nan(kernels, "shared_mem_per_block_bytes")
    limits.append(np.floor(gpu.shared_mem_per_sm_bytes / smem.where(smem > 0)))
    frame = pd.concat(limits, axis=1)
    return frame.min(axis=1, skipna=True)


def active_warps_per_sm(kernels: pd.DataFrame, gpu: GpuProfile) -> tuple[pd.Series, pd.Series]:
    """N (active warps per SM) and where it came from, per kernel.

    Source labels: 'achieved_occupancy', 'theoretical_occupancy', 'launch resources'.
    The result never exceeds the warps the grid can put on one SM.
    """
    achieved = column_or_nan(kernels, "achieved_occupancy") * gpu.max_warps_per_sm
    theoretical = column_or_nan(kernels, "theoretical_occupancy") * gpu.max_warps_per_sm
    from_resources = resource_blocks_per_sm(kernels, gpu) * warps_per_block(kernels, gpu)
    n = achieved.where(achieved > 0)
    source = pd.Series("achieved_occupancy", index=kernels.index, dtype="object")
    use_theory = n.isna() & (theoretical > 0)
    n = n.where(~use_theory, theoretical)
    source[use_theory] = "theoretical_occupancy"
    use_resources = n.isna()
    n = n.where(~use_resources, from_resources)
    source[use_resources] = "launch resources"
    # A grid smaller than the machine cannot fill an SM beyond its own warps.
    sms = active_sms(kernels, gpu)
    grid_cap = total_warps(kernels, gpu) / sms
    n = np.minimum(n, grid_cap.where(grid_cap > 0, n))
    source[n.isna()] = ""
    return n, source


def active_sms(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """min(SM count, grid_blocks)."""
    return np.minimum(column_or_nan(kernels, "grid_blocks"), float(gpu.sm_count))


def active_blocks_per_sm(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """Resident blocks per SM implied by N (at least one when the kernel runs)."""
    n, _ = active_warps_per_sm(kernels, gpu)
    return np.maximum(np.floor(n / warps_per_block(kernels, gpu) + 1e-9), 1.0).where(n.notna())


def repetitions(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """#Rep = grid_blocks / (active blocks per SM x active SMs) (Hong-Kim Eq. 20's #Rep)."""
    return column_or_nan(kernels, "grid_blocks") / (active_blocks_per_sm(kernels, gpu) * active_sms(kernels, gpu))
