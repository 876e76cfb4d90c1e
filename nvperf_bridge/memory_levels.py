"""Where a kernel's global memory traffic is served: DRAM, L2 or L1, from counts only.

The paper models (Hong & Kim, Kothapalli, Luo & Suda) charge every global transaction the
DRAM latency: their GPUs (G80, GT200) had no data cache. On every GPU since Fermi a share of
the sectors a warp asks for is served by L2 or L1, which answer in a fraction of the DRAM
round trip. This module splits the global sectors by the level that served them, from
counters the profiler counted (never from a rate over the kernel's time):

- S = global load + store sectors (``counters.global_sectors``: 32-byte sectors at the L1/L2
  boundary on every GPU, nvprof's per-architecture units converted);
- L2 = (``l2_read_bytes`` + ``l2_write_bytes``) / 32, the sectors that reached L2
  (nvprof ``l2_read/write_transactions``, ncu ``lts__t_sectors_op_read/write.sum``);
- D = DRAM bytes / 32 (``counters.dram_bytes``: nvprof ``dram_read/write_transactions``,
  ncu ``dram__bytes.sum``).

Fractions of the global sectors (each in [0, 1], summing to 1)::

    reach_l2 = min(1, L2 / S)             (1 where L2 was not collected: no L1 share claimed)
    f_dram   = min(reach_l2, D / S)       served by DRAM
    f_l2     = reach_l2 - f_dram          L2 hits
    f_l1     = 1 - reach_l2               L1 hits (never reached L2)

L2 and DRAM counters include traffic that is not global (texture, local spills, atomics), so
each ratio is clipped: a kernel whose DRAM traffic exceeds its global sectors is all DRAM.
A kernel without DRAM counters gets ``f_dram = 1`` (the paper's assumption) and says so; so does a
kernel whose DRAM or L2 bytes were computed from its own duration (``importers.derivations.time_derived``:
e.g. ncu's throughput x duration), which must never reach its prediction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nvperf_bridge import labels
from nvperf_bridge.counters import dram_bytes, l2_bytes

SECTOR_BYTES = 32.0

SOURCE_COUNTED = "counted: DRAM and L2 sectors over global sectors"
SOURCE_NO_L2 = "counted: DRAM sectors over global sectors (L2 not collected: no L1 share)"
SOURCE_NO_DRAM = "DRAM traffic not collected: every global sector charged to DRAM (the paper's assumption)"
SOURCE_NO_TRAFFIC = "no global sectors"


# the columns served_fractions reads besides the sectors it is given
_READS = ("dram_bytes", "dram_read_bytes", "dram_write_bytes", "l2_read_bytes", "l2_write_bytes", "derived")


def served_fractions(kernels: pd.DataFrame, sectors: pd.Series) -> dict[str, pd.Series]:
    """``f_dram``, ``f_l2``, ``f_l1`` (shares of ``sectors``, the kernel's global sectors) and
    ``levels_source`` per row; see the module docstring.

    Within one run of the models (``model.shared_evaluations``) the fractions of the same rows and the
    same sectors (bit for bit) are computed once: Hong-Kim, Kothapalli, Luo-Suda and the recommended
    estimate ask for them with the sectors each computes itself, usually the same. The Series returned
    are then shared between the callers, which only read them (speed only)."""
    from nvperf_bridge.model import index_key, memory_key, run_value

    columns = [kernels[name].to_numpy(copy=False) for name in _READS if name in kernels.columns]
    given = sectors.to_numpy(copy=False) if isinstance(sectors, pd.Series) else None
    if not all(isinstance(values, np.ndarray) for values in columns) or not isinstance(given, np.ndarray) \
            or given.dtype != np.float64 or not sectors.index.equals(kernels.index):
        return _served_fractions(kernels, sectors)
    # the run's earlier answers for these rows: (sectors' bits, fractions), compared bit for bit
    key = ("served_fractions", *[(name in kernels.columns) for name in _READS],
           *[memory_key(values) for values in columns], *index_key(kernels.index))
    earlier: list[tuple[np.ndarray, dict[str, pd.Series]]] = run_value(key, columns, list)
    bits = given.view(np.uint64)
    for held, fractions in earlier:
        if np.array_equal(held, bits):
            return dict(fractions)
    fractions = _served_fractions(kernels, sectors)
    earlier.append((bits.copy(), fractions))  # outside a run the list is a new one, dropped with this call
    return dict(fractions)


def _served_fractions(kernels: pd.DataFrame, sectors: pd.Series) -> dict[str, pd.Series]:
    """``served_fractions`` computed."""
    from nvperf_bridge.importers.derivations import time_derived_any

    index = kernels.index
    dram_sectors = dram_bytes(kernels) / SECTOR_BYTES
    l2_sectors = l2_bytes(kernels) / SECTOR_BYTES
    # a traffic count computed from the kernel's own duration (ncu throughput x time) would carry the measured
    # time into the prediction: such a kernel is split as if the counter were not collected
    dram_sectors = dram_sectors.mask(time_derived_any(kernels, ["dram_bytes", "dram_read_bytes", "dram_write_bytes"]))
    l2_sectors = l2_sectors.mask(time_derived_any(kernels, ["l2_read_bytes", "l2_write_bytes"]))
    with np.errstate(divide="ignore", invalid="ignore"):
        reach_l2 = (l2_sectors / sectors).clip(upper=1.0).where(l2_sectors.notna(), 1.0)
        f_dram = np.minimum(reach_l2, (dram_sectors / sectors).clip(lower=0.0))
    no_dram = dram_sectors.isna()
    no_traffic = ~(sectors > 0)
    reach_l2 = reach_l2.where(~(no_dram | no_traffic), 1.0).fillna(1.0)
    f_dram = pd.Series(f_dram, index=index).where(~(no_dram | no_traffic), 1.0).fillna(1.0)
    f_l2 = (reach_l2 - f_dram).clip(lower=0.0)
    f_l1 = (1.0 - reach_l2).clip(lower=0.0)
    # one code per kernel and four shared strings (labels.select): np.where on text makes a new string per row
    source = pd.Series(labels.select([no_traffic.to_numpy(), no_dram.to_numpy(), l2_sectors.notna().to_numpy()],
                                     [SOURCE_NO_TRAFFIC, SOURCE_NO_DRAM, SOURCE_COUNTED], SOURCE_NO_L2),
                       index=index, dtype="object", copy=False)
    return {"f_dram": f_dram, "f_l2": f_l2, "f_l1": f_l1, "levels_source": source}


def served_latency(fractions: dict[str, pd.Series], dram: float | pd.Series, l2: float, l1: float) -> pd.Series:
    """The mean latency of one global transaction: f_dram x dram + f_l2 x l2 + f_l1 x l1."""
    return fractions["f_dram"] * dram + fractions["f_l2"] * l2 + fractions["f_l1"] * l1
