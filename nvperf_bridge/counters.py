"""Per-kernel quantities several models derive from the same counters, in one place.

Launch-shape quantities (warps, active warps per SM, #Rep) live in
``nvperf_bridge.launch``; this module holds the counter-derived ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.model import column_or_nan


def dram_bytes(kernels: pd.DataFrame) -> pd.Series:
    """``dram_bytes``, else read + write (both needed: one alone would understate traffic)."""
    total = column_or_nan(kernels, "dram_bytes")
    parts = column_or_nan(kernels, "dram_read_bytes") + column_or_nan(kernels, "dram_write_bytes")
    return total.where(total.notna(), parts)


def sm_clock(kernels: pd.DataFrame, gpu: GpuProfile) -> tuple[pd.Series, pd.Series]:
    """SM clock per kernel for cycles <-> ns: the measured ``sm_clock_hz`` when present
    and positive (GPUs boost and throttle), else the profile's clock; and which was used."""
    measured = column_or_nan(kernels, "sm_clock_hz")
    use_measured = measured > 0
    hz = measured.where(use_measured, gpu.sm_clock_hz)
    source = pd.Series(
        np.where(use_measured, "measured sm_clock_hz", f"profile sm_clock_mhz ({gpu.sm_clock_mhz:g} MHz)"),
        index=kernels.index,
        dtype="object",
    )
    return hz, source
