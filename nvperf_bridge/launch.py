"""Launch geometry: computed once per KernelFrame and read by every model.

One :class:`LaunchGeometry` holds, per kernel, the papers' inputs that come from
the launch shape, the occupancy and the GPU profile (DESIGN.md, "Mapping
counters to the papers' inputs"):

- warps per block = ceil(block_threads / warp size); total warps = grid_blocks x that;
- theoretical blocks, warps and occupancy per SM (``theoretical_occupancy_calc``,
  beside the profiler's own ``theoretical_occupancy`` column) with the limiter and
  each resource's block limit, from the occupancy calculator
  (:mod:`nvperf_bridge.occupancy`) for the profile's compute capability;
- active SMs = min(SM count, grid_blocks);
- resident blocks per SM = min(theoretical blocks per SM, ceil(grid_blocks / active SMs));
- warps per SM = total warps / active SMs: every warp one SM runs over the launch;
- N, the active warps per SM = achieved_occupancy x max warps per SM; without an
  achieved occupancy, the theoretical occupancy the profiler printed; without
  that, the calculator's resident warps. N is at least one warp and never more
  than the SM's warps per SM;
- #Rep = warps per SM / N, so that N x #Rep is exactly the warps each SM runs.
  With N = resident warps this is Hong-Kim Eq. 21, grid_blocks / (active blocks
  per SM x active SMs). (The earlier form floor(N / warps per block) blocks and
  #Rep = grid / (blocks x SMs) made N x #Rep up to twice the SM's warps when the
  achieved occupancy was fractional: issue 15's launch-geometry defect.)
- active blocks per SM = N / warps per block (a time average, fractional when N
  comes from a measured occupancy), so active blocks x #Rep = grid / active SMs;
- waves = grid_blocks / (theoretical blocks per SM x SM count), as ncu's
  ``launch__waves_per_multiprocessor``; full waves = ceil(waves), the last one a
  tail wave when waves is not whole.

``analysis.run_models`` computes the geometry once (:func:`shared_geometry`) and
every model's :func:`launch_geometry` call during that run returns the same
object; a third-party plugin (or a call outside ``run_models``) gets a fresh
computation. On a large frame the occupancy calculator runs once per launch
shape, and its details that the geometry does not compute with (the limiter,
each resource's block limit, the allocations) are taken back to every launch
when first read (:class:`GeometryColumns`). The module-level functions
(``active_warps_per_sm``, ``repetitions``, ...) are kept for plugins written
against them and read the same geometry.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nvperf_bridge import labels
from nvperf_bridge.column_pool import compact
from nvperf_bridge.columns import GEOMETRY_INPUT_COLUMNS
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.model import column_or_nan
from nvperf_bridge.occupancy import frame_occupancy_shapes

# Where N came from, per kernel.
N_FROM_ACHIEVED = "achieved_occupancy"
N_FROM_THEORETICAL = "theoretical_occupancy"
N_FROM_CALCULATOR = "occupancy calculator"

# The calculator's per-resource block limits and allocations, carried into the geometry for reports and advice.
_CALCULATOR_COLUMNS = ("blocks_limit_warps", "blocks_limit_registers", "blocks_limit_shared_mem",
                       "blocks_limit_blocks", "allocated_registers_per_block", "allocated_shared_mem_per_block_bytes")

GEOMETRY_COLUMNS = (
    "warps_per_block", "total_warps", "active_sms", "theoretical_blocks_per_sm", "theoretical_warps_per_sm",
    "theoretical_occupancy_calc", "occupancy_limiter", "occupancy_limiters", "occupancy_invalid_reason",
    "occupancy_missing_inputs",
    "resident_blocks_per_sm", "warps_per_sm", "active_warps_per_sm", "active_warps_source",
    "active_blocks_per_sm", "repetitions", "waves", "full_waves", *_CALCULATOR_COLUMNS,
)


class GeometryColumns(Mapping[str, pd.Series]):
    """The geometry's columns by name, in ``GEOMETRY_COLUMNS`` order. A deferred column (the occupancy
    calculator's details on a large frame: its per-shape values taken back to every launch) is made on
    its first read, once, under a lock (a model may run in a thread of its own): the models read a few
    of them, and a million launches make each one 8 MB of new memory (speed only: the same values)."""

    def __init__(self, made: dict[str, pd.Series], deferred: dict[str, Callable[[], pd.Series]] | None = None) -> None:
        self._made = dict(made)
        self._deferred = dict(deferred or {})
        self._order = [name for name in GEOMETRY_COLUMNS if name in self._made or name in self._deferred]
        self._order += [name for name in (*self._made, *self._deferred) if name not in self._order]
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> pd.Series:
        found = self._made.get(name)
        if found is not None:
            return found
        make = self._deferred.get(name)
        if make is None:
            raise KeyError(name)
        with self._lock:
            if name not in self._made:
                self._made[name] = make()
            return self._made[name]

    def __contains__(self, name: object) -> bool:
        return name in self._made or name in self._deferred

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def made(self) -> dict[str, pd.Series]:
        """The columns made so far (every column not deferred, and the deferred ones read), without making
        the others."""
        with self._lock:
            return {name: self._made[name] for name in self._order if name in self._made}


@dataclass(frozen=True)
class LaunchGeometry:
    """Per-kernel launch geometry on one GPU profile: one Series per name of ``GEOMETRY_COLUMNS``
    (``columns``, a ``GeometryColumns``), each also an attribute (``geometry.active_warps_per_sm``);
    ``table`` is them as one DataFrame."""

    columns: Mapping[str, pd.Series]
    index: pd.Index
    gpu_id: str

    @functools.cached_property
    def table(self) -> pd.DataFrame:
        """Every column as one DataFrame (built on first use: the models read single columns)."""
        return pd.DataFrame(dict(self.columns), index=self.index)

    def __getattr__(self, name: str) -> pd.Series:
        columns = self.__dict__.get("columns")
        if columns is not None and name in columns:
            return columns[name]
        raise AttributeError(name)

    def made_columns(self) -> dict[str, pd.Series]:
        """The columns made so far, without making a deferred one (``GeometryColumns.made``)."""
        columns = self.columns
        return columns.made() if isinstance(columns, GeometryColumns) else dict(columns)


def compute_geometry(kernels: pd.DataFrame, gpu: GpuProfile) -> LaunchGeometry:
    """The launch geometry of every kernel of ``kernels`` on ``gpu`` (see the module docstring)."""
    index = kernels.index
    per_shape, inverse = frame_occupancy_shapes(kernels, gpu)

    def occupancy_column(name: str) -> pd.Series:
        # the calculator's arrays are new: wrapped, not copied (its texts as pd.Series(values) stores them, without
        # pandas' check of every value: labels.column)
        values = per_shape[name] if inverse is None else per_shape[name][inverse]
        return labels.column(values, index, owned=True)

    # the calculator's columns the geometry computes with, now; its other details (the limiter, each resource's
    # block limit) as the models and reports read them (GeometryColumns: deferred where its values are per shape)
    occ = {name: occupancy_column(name) for name in ("warps_per_block", "theoretical_blocks_per_sm")}
    grid = column_or_nan(kernels, "grid_blocks").where(lambda g: g > 0)
    wpb = occ["warps_per_block"]
    max_warps = float(gpu.max_warps_per_sm)
    with np.errstate(divide="ignore", invalid="ignore"):
        total_warps = grid * wpb
        active_sms = np.minimum(grid, float(gpu.sm_count))
        blocks_t = occ["theoretical_blocks_per_sm"].where(lambda b: b > 0)  # invalid launch: no resident blocks
        resident_blocks = np.minimum(blocks_t, np.ceil(grid / active_sms))
        resident_warps = resident_blocks * wpb
        warps_per_sm = total_warps / active_sms

        achieved = column_or_nan(kernels, "achieved_occupancy") * max_warps
        theoretical = column_or_nan(kernels, "theoretical_occupancy") * max_warps
        n = achieved.where(achieved > 0)
        use_theory = n.isna() & (theoretical > 0)
        n = n.where(~use_theory, theoretical)
        use_calc = n.isna()
        n = n.where(~use_calc, resident_warps)
        # At least the one warp that runs; never more warps than the grid gives one SM.
        n = n.clip(lower=1.0)
        n = n.where(~(n > warps_per_sm), warps_per_sm)
        source = pd.Series(labels.select([n.isna(), use_calc, use_theory],
                                         ["", N_FROM_CALCULATOR, N_FROM_THEORETICAL], N_FROM_ACHIEVED),
                           index=index, dtype="object", copy=False)

        repetitions = warps_per_sm / n  # N x #Rep = warps per SM
        active_blocks = n / wpb
        waves = grid / (blocks_t * float(gpu.sm_count))
    # a column of one value (every launch the same shape: the calculator's limits, a source note) is held
    # in 8 bytes (column_pool.repeated: the same dtype and bits)
    series = lambda values: compact(values if isinstance(values, pd.Series) else pd.Series(values, index=index))  # noqa: E731
    columns = {name: series(values) for name, values in {
        "warps_per_block": wpb,
        "total_warps": total_warps,
        "active_sms": active_sms,
        "theoretical_blocks_per_sm": occ["theoretical_blocks_per_sm"],
        "resident_blocks_per_sm": resident_blocks,
        "warps_per_sm": warps_per_sm,
        "active_warps_per_sm": n,
        "active_warps_source": source,
        "active_blocks_per_sm": active_blocks,
        "repetitions": repetitions,
        "waves": waves,
        "full_waves": np.ceil(waves),
    }.items()}
    # the calculator's details: column name -> its name among the calculator's arrays
    details = {"theoretical_warps_per_sm": "theoretical_warps_per_sm",
               "theoretical_occupancy_calc": "theoretical_occupancy", "occupancy_limiter": "occupancy_limiter",
               "occupancy_limiters": "occupancy_limiters", "occupancy_invalid_reason": "occupancy_invalid_reason",
               "occupancy_missing_inputs": "occupancy_missing_inputs", **{name: name for name in _CALCULATOR_COLUMNS}}
    if inverse is None:  # every launch computed: its arrays are there already
        columns.update({name: series(occupancy_column(source_name)) for name, source_name in details.items()})
        return LaunchGeometry(GeometryColumns(columns), index, gpu.id)
    deferred = {name: functools.partial(lambda source_name: series(occupancy_column(source_name)), source_name)
                for name, source_name in details.items()}
    return LaunchGeometry(GeometryColumns(columns, deferred), index, gpu.id)


# ---- one geometry per frame during a run --------------------------------------

_SHARED: dict[tuple, LaunchGeometry] = {}
_SHARED_LOCK = threading.Lock()


def _fingerprint(kernels: pd.DataFrame, gpu: GpuProfile) -> tuple | None:
    """Identity of the inputs: the GPU object and the memory of each input column.

    A shallow copy of the frame (what each model receives) shares its columns' memory,
    so it has the same fingerprint; a replaced column does not. None when a column
    is not a plain numpy array (then nothing is shared and the geometry is recomputed).
    """
    parts: list[object] = [id(gpu), len(kernels)]
    for name in GEOMETRY_INPUT_COLUMNS:
        if name not in kernels.columns:
            parts.append(None)
            continue
        values = kernels[name].to_numpy(copy=False)
        if not isinstance(values, np.ndarray) or values.dtype == object:
            return None
        parts.append((values.__array_interface__["data"][0], values.dtype.str, values.strides))
    return tuple(parts)


@contextmanager
def shared_geometry(kernels: pd.DataFrame, gpu: GpuProfile) -> Iterator[LaunchGeometry]:
    """Compute the geometry once; every :func:`launch_geometry` call on this frame (or a shallow
    copy of it) with this profile returns it until the block ends. Inside a block for the same frame
    and profile (a caller running the models one by one), the outer block's geometry is reused."""
    key = _fingerprint(kernels, gpu)
    if key is not None:
        with _SHARED_LOCK:
            outer = _SHARED.get(key)
        if outer is not None and outer.index.equals(kernels.index):
            yield outer
            return
    geometry = compute_geometry(kernels, gpu)
    if key is None:
        yield geometry
        return
    with _SHARED_LOCK:
        _SHARED[key] = geometry
    try:
        yield geometry
    finally:
        with _SHARED_LOCK:
            _SHARED.pop(key, None)


def launch_geometry(kernels: pd.DataFrame, gpu: GpuProfile) -> LaunchGeometry:
    """The launch geometry of ``kernels`` on ``gpu``: the run's shared one when there is one, else computed."""
    key = _fingerprint(kernels, gpu)
    if key is not None:
        with _SHARED_LOCK:
            shared = _SHARED.get(key)
        if shared is not None and shared.index.equals(kernels.index):
            return shared
    return compute_geometry(kernels, gpu)


# ---- the per-quantity functions (plugins written against them keep working) ----

def warps_per_block(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    return np.ceil(column_or_nan(kernels, "block_threads").where(lambda t: t > 0) / gpu.warp_size)


def total_warps(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    return column_or_nan(kernels, "grid_blocks") * warps_per_block(kernels, gpu)


def per_thread(kernels: pd.DataFrame, gpu: GpuProfile, column: str) -> pd.Series:
    """A warp-level total as the papers' per-thread count (= per warp instruction count)."""
    return column_or_nan(kernels, column) / total_warps(kernels, gpu)


def resource_blocks_per_sm(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """Theoretical blocks per SM from the occupancy calculator (registers, shared memory, warps, blocks)."""
    return launch_geometry(kernels, gpu).theoretical_blocks_per_sm


def active_warps_per_sm(kernels: pd.DataFrame, gpu: GpuProfile) -> tuple[pd.Series, pd.Series]:
    """N (active warps per SM) and where it came from, per kernel
    ('achieved_occupancy', 'theoretical_occupancy', 'occupancy calculator')."""
    geometry = launch_geometry(kernels, gpu)
    return geometry.active_warps_per_sm, geometry.active_warps_source


def active_sms(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """min(SM count, grid_blocks)."""
    return launch_geometry(kernels, gpu).active_sms


def active_blocks_per_sm(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """Active blocks per SM = N / warps per block (fractional when N comes from a measured occupancy)."""
    return launch_geometry(kernels, gpu).active_blocks_per_sm


def repetitions(kernels: pd.DataFrame, gpu: GpuProfile) -> pd.Series:
    """#Rep = warps per SM / N (Hong-Kim Eq. 21 when N is the resident warps)."""
    return launch_geometry(kernels, gpu).repetitions


__all__ = ["GEOMETRY_COLUMNS", "GeometryColumns", "LaunchGeometry", "active_blocks_per_sm", "active_sms", "active_warps_per_sm",
           "compute_geometry", "launch_geometry", "per_thread", "repetitions", "resource_blocks_per_sm",
           "shared_geometry", "total_warps", "warps_per_block"]
