"""Per-kernel quantities several models derive from the same counters, in one place.

Launch-shape quantities (warps, active warps per SM, #Rep) live in
``nvperf_bridge.launch``; this module holds the counter-derived ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.model import column_or_nan, constant_column, either_column


def dram_bytes(kernels: pd.DataFrame) -> pd.Series:
    """``dram_bytes``, else read + write (both needed: one alone would understate traffic)."""
    total = column_or_nan(kernels, "dram_bytes")
    parts = column_or_nan(kernels, "dram_read_bytes") + column_or_nan(kernels, "dram_write_bytes")
    return total.where(total.notna(), parts)


def l2_bytes(kernels: pd.DataFrame) -> pd.Series:
    """Bytes the L2 served: ``l2_read_bytes`` + ``l2_write_bytes`` (missing unless both were collected)."""
    return column_or_nan(kernels, "l2_read_bytes") + column_or_nan(kernels, "l2_write_bytes")


def sm_clock(kernels: pd.DataFrame, gpu: GpuProfile) -> tuple[pd.Series, pd.Series]:
    """SM clock per kernel for cycles <-> ns: the measured ``sm_clock_hz`` when present
    and positive (GPUs boost and throttle), else the profile's clock; and which was used."""
    measured = column_or_nan(kernels, "sm_clock_hz")
    use_measured = measured > 0
    hz = measured.where(use_measured, gpu.sm_clock_hz)
    source = either_column(use_measured, "measured sm_clock_hz", f"profile sm_clock_mhz ({gpu.sm_clock_mhz:g} MHz)",
                           kernels.index)
    return hz, source


# nvprof's gld_transactions / gst_transactions count different units per compute capability
# (issue 15 item 7). Which rows came from nvprof's metrics: the importer keeps nvprof's own
# *_per_request metrics as raw columns, and ncu and kernel-yaml files never carry them.
NVPROF_ROW_MARKERS = ("gld_transactions_per_request", "gst_transactions_per_request")
# nvprof metrics the models read under nvprof's own name (kept raw by the importer): the row markers,
# global_hit_rate for the 16-byte units, the Kepler L2 sector counts and the load/store efficiencies
NVPROF_RAW_INPUTS = ("gld_transactions_per_request", "gst_transactions_per_request", "global_hit_rate",
                     "l2_l1_read_transactions", "l2_l1_write_transactions", "gld_efficiency", "gst_efficiency")
SECTOR_SOURCE_CANONICAL = "32-byte sectors as read (ncu l1tex sectors, or converted by the importer)"
SECTOR_SOURCE_NVPROF_16B = ("nvprof cc 5.x/6.x: gld_transactions count pieces of sectors (16-byte: 8 per coalesced "
                            "4-byte warp; 8-byte with -dlcm=ca); sectors = transactions x (1 - global_hit_rate), "
                            "else transactions / 2")
SECTOR_SOURCE_NVPROF_L2 = "nvprof cc 2.x/3.x: l2_l1_read/write_transactions (32-byte L2 sectors requested by L1)"
SECTOR_SOURCE_NVPROF_LINES = ("nvprof cc 2.x/3.x: gld/gst_transactions count 128-byte lines (1 per coalesced warp); "
                              "sectors = transactions x 4, an upper bound (l2_l1_read_transactions not collected)")


def _cc_major(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """Compute capability major per row: the data's ``cc`` where it has one, else the profile's."""
    try:
        fallback = float(str(gpu.compute_capability).split(".")[0])
    except ValueError:
        fallback = np.nan
    if "cc" in kernels.columns:
        # a handful of distinct compute capabilities over many rows: each one parsed once
        codes, distinct = pd.factorize(kernels["cc"], use_na_sentinel=True)
        text = pd.Series(distinct, dtype=object).astype("string").str.split(".").str[0]
        majors = pd.to_numeric(text, errors="coerce").astype("float64").fillna(fallback).to_numpy()
        major = np.append(majors, fallback)[codes]  # code -1 (missing): the fallback
        return pd.Series(major, index=kernels.index, dtype="float64", copy=False)
    return pd.Series(fallback, index=kernels.index, dtype="float64")


def global_sectors(kernels: pd.DataFrame, gpu: GpuProfile) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Global load and store traffic in 32-byte sectors per kernel, and where each row's came from.

    ``global_ld_sectors`` / ``global_st_sectors`` are 32-byte sectors when they come from ncu
    (``l1tex__t_sectors_pipe_lsu_mem_global_op_ld/st.sum``) or a converted kernel-yaml file. From
    nvprof's metrics they are ``gld_transactions`` / ``gst_transactions``, whose unit depends on
    the compute capability (checked on the GTX 1080 Ti files of ``shared/realdata/magus-corpus``:
    a coalesced 4-byte warp load is 8 ``gld_transactions`` and 4 ``l2_tex_read_transactions``;
    a store is 4 of each; Kepler files of ``amaris-kepler-maxwell`` show 1 per coalesced request):

    - cc 5.x and 6.x loads: pieces of sectors, 16 bytes by default (8 per coalesced 4-byte
      warp), 8 bytes when globals are cached in L1 (``-dlcm=ca``: 16 per request). Every piece
      after the first of a sector counts as an L1 "hit", so sectors = transactions x
      (1 - ``global_hit_rate``) (exact for both unit sizes; with true L1 reuse it counts the
      sectors that reach L2); without the hit rate, transactions / 2 (the default unit).
      Stores are 32-byte sectors already.
    - cc 2.x and 3.x (L1 line transactions: 1 per coalesced 128-byte request): the L2 sector
      counts ``l2_l1_read_transactions`` / ``l2_l1_write_transactions`` when collected, else
      transactions x 4, an upper bound exact for fully used lines.
    - cc 1.x and cc >= 7 (sector-based L1): unchanged.

    Returns (load sectors, store sectors, source label per row).
    """
    ld = column_or_nan(kernels, "global_ld_sectors")
    st = column_or_nan(kernels, "global_st_sectors")
    source = constant_column(SECTOR_SOURCE_CANONICAL, kernels.index, dtype="object")  # made once per run
    markers = [name for name in NVPROF_ROW_MARKERS if name in kernels.columns]
    if not markers:
        return ld, st, source
    from_nvprof = pd.concat([kernels[name].notna() for name in markers], axis=1).any(axis=1)
    major = _cc_major(kernels, gpu)

    sixteen = from_nvprof & major.isin([5.0, 6.0])
    if sixteen.any():
        hit = column_or_nan(kernels, "global_hit_rate").clip(lower=0.0, upper=1.0)
        ld = ld.where(~sixteen, (ld * (1.0 - hit)).where(hit.notna(), ld / 2.0))
        source[sixteen] = SECTOR_SOURCE_NVPROF_16B

    lines = from_nvprof & major.isin([2.0, 3.0])
    if lines.any():
        l2_ld = column_or_nan(kernels, "l2_l1_read_transactions")
        l2_st = column_or_nan(kernels, "l2_l1_write_transactions")
        have_l2 = lines & l2_ld.notna() & l2_st.notna()
        ld = ld.where(~lines, (ld * 4.0).where(~have_l2, l2_ld))
        st = st.where(~lines, (st * 4.0).where(~have_l2, l2_st))
        source[lines & have_l2] = SECTOR_SOURCE_NVPROF_L2
        source[lines & ~have_l2] = SECTOR_SOURCE_NVPROF_LINES
    return ld, st, source


# Share of the fetched global bytes the threads asked for: nvprof gld/gst_efficiency (requested
# over transferred bytes; nvprof prints it as a ratio of two throughputs over the same launch, so
# the time cancels and what is left is a count of bytes over a count of bytes).
LOAD_EFFICIENCY_COLUMNS = ("gld_efficiency",)
STORE_EFFICIENCY_COLUMNS = ("gst_efficiency",)


def _first_fraction(kernels: pd.DataFrame, names: tuple[str, ...]) -> pd.Series:
    out = pd.Series(np.nan, index=kernels.index, dtype="float64")
    for name in names:
        out = out.fillna(column_or_nan(kernels, name))
    # a value above 1 was given in percent without its sign: not guessed, left out
    return out.where((out >= 0.0) & (out <= 1.0))


def requested_sectors(kernels: pd.DataFrame, ld_sectors: pd.Series, st_sectors: pd.Series) -> pd.Series:
    """32-byte sectors the threads' own bytes fill (sectors x global load/store efficiency): what a
    perfectly coalesced warp of the same word size would move. A warp of 16-byte words needs
    16 sectors and wastes none; a strided warp of 4-byte words needing 16 wastes 12. NaN where
    an efficiency with traffic behind it was not collected."""
    if not any(name in kernels.columns for name in (*LOAD_EFFICIENCY_COLUMNS, *STORE_EFFICIENCY_COLUMNS)):
        # no efficiency collected (every ncu file): each side is its sectors x 0.0 where it moved none, else
        # NaN, so the sum is NaN but where neither side moved a sector; there ld + st, the same bits as the
        # general form below (x x 0.0 is x for x = +-0), with one array made instead of a dozen (speed only)
        ld = ld_sectors.to_numpy(dtype="float64")
        st = st_sectors.to_numpy(dtype="float64")
        out = np.full(len(ld), np.nan)
        np.add(ld, st, out=out, where=(ld == 0) & (st == 0))
        return pd.Series(out, index=ld_sectors.index, copy=False)
    eff_ld = _first_fraction(kernels, LOAD_EFFICIENCY_COLUMNS).where(~(ld_sectors == 0), 0.0)
    eff_st = _first_fraction(kernels, STORE_EFFICIENCY_COLUMNS).where(~(st_sectors == 0), 0.0)
    return ld_sectors.fillna(0.0) * eff_ld + st_sectors.fillna(0.0) * eff_st


def normalise_global_sectors(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.DataFrame:
    """A copy of ``kernels`` whose ``global_ld_sectors`` / ``global_st_sectors`` are 32-byte sectors
    (``global_sectors``) and which no longer carries the nvprof markers, so that a second call, or a
    record rebuilt from it (``whatif``), reads the same sectors. The frame itself is not changed."""
    if not any(name in kernels.columns for name in NVPROF_ROW_MARKERS):
        return kernels
    ld, st, _ = global_sectors(kernels, gpu)
    out = kernels.drop(columns=[name for name in NVPROF_ROW_MARKERS if name in kernels.columns])
    if "global_ld_sectors" in out.columns:
        out["global_ld_sectors"] = ld
    if "global_st_sectors" in out.columns:
        out["global_st_sectors"] = st
    return out
