"""Columns that repeat between the model results of one run, held once.

On a million kernels every result column is 8 MB of new memory, and the models write a few
hundred of them. Many hold the same values as a column an earlier result (or the same result)
already holds: a constant per GPU (``Mem_L_Coal``, ``D``), an option's or a source's name, a
detail that is all NaN because the file lacks its counter, a latency term that equals the
prediction where nothing else binds. Where the machine backs fresh memory slowly (a virtual
machine whose free pages the host reclaims: measured 9-10 us per 4 KiB page on this project's
benchmark machine, idle, against 1-1.5 us for memory the process freed a moment before), that
first touch costs more than the models' arithmetic.

``ColumnPool.share`` compares each numeric, boolean and text column of a new result with the
columns the run's earlier results hold (exactly: the same bits, or for text the same string
objects) and, where they are equal, stores the earlier column in its place. The model's own array
is then freed and reused by the next model instead of fresh memory. pandas' copy-on-write copies a
shared column before anything writes to it, so no result ever sees another's change: the values,
dtypes and column order of every result are the same as before, only the memory is shared.

A column that holds one value in every row (a GPU constant, an option's name, a source note: a
third of the results' memory on a million kernels) is stored as that one value repeated
(``repeated``: a read-only numpy view whose stride is 0, 8 bytes however many kernels) when it is
float64 or text; integer and boolean columns stay as they are (some writers hand those to C code
that wants contiguous memory). Its values, dtype and every read are the same; a write goes through
copy-on-write as for any shared column, which makes a full array first.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from nvperf_bridge.labels import addresses

_SAMPLES = 16  # values read from each column for its fingerprint (then an exact comparison)
# Results of fewer rows are kept as the models made them: a column is then at most 32 KiB, whose first
# touch costs less than comparing it with the pool (about 0.1 ms a column: 21 ms of the 0.3 s analysis
# of a 46-launch nvprof pair, 199 result columns). The values are the same either way.
SHARE_MIN_ROWS = 4096


def _comparable(series: pd.Series) -> np.ndarray | None:
    """The column's memory as unsigned integers (a view: equal integers are equal bits; for text,
    the addresses of its string objects), or None where it cannot be compared so."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "fiub":
        values = series.to_numpy(copy=False)
        return values.view(f"u{values.itemsize}") if values.ndim == 1 else None
    if dtype == object or isinstance(dtype, pd.StringDtype):
        # the object pointers themselves: the same address is the same string (a different address
        # may still hold an equal string; it is then not shared, never wrongly shared)
        return addresses(getattr(series.array, "_ndarray", None))  # pandas' python-backed strings, or object
    return None


class _OneValue:
    """The memory of a repeated column: one value, seen by numpy as ``n`` rows with stride 0 (read only).

    It also holds a Series of that view (``keeper``), from which every column handed out is derived:
    pandas' copy-on-write then always finds another reference to the values and copies them before a
    write (a frame that owned a read-only view alone would try to write into it and fail). The Series
    lives as long as any array viewing this memory does (numpy keeps this object as the view's base);
    then the cycle is garbage."""

    def __init__(self, one: np.ndarray, n: int) -> None:
        self.one = one
        self.__array_interface__ = {"shape": (n,), "typestr": one.dtype.str, "data": (one.ctypes.data, True),
                                    "strides": (0,), "version": 3}
        self.keeper: pd.Series | None = None


def repeated(series: pd.Series, index: pd.Index | None = None) -> pd.Series | None:
    """``series``' first value in every row of ``index`` (default: ``series``' own), with its dtype,
    name and bits, held in 8 bytes (a read-only stride-0 view of a copy of that one value, see
    ``_OneValue``); None where the column's storage is not a float64 or text numpy array (see the
    module docstring) or it has no row."""
    array = series.array
    values = getattr(array, "_ndarray", None)
    if not isinstance(values, np.ndarray) or values.ndim != 1 or not len(values) \
            or not (values.dtype == np.float64 or values.dtype == object):
        return None
    index = series.index if index is None else index
    memory = _OneValue(values[:1].copy(), len(index))  # a copy: a view would keep the column's memory alive
    view = np.asarray(memory)
    if isinstance(series.dtype, np.dtype):  # float64, object: the array itself (object text stays object)
        keeper = pd.Series(view, index=index, dtype=series.dtype, name=series.name, copy=False)
    elif hasattr(array, "_from_backing_data"):  # pandas' Python-backed strings
        keeper = pd.Series(array._from_backing_data(view), index=index, name=series.name, copy=False)
    else:
        return None
    if keeper.dtype != series.dtype or not np.shares_memory(keeper.to_numpy(copy=False) if keeper.dtype == np.float64
                                                            else keeper.array._ndarray, view):
        return None  # pandas copied or converted it: keep the column as it is
    memory.keeper = keeper
    return keeper.copy(deep=False)


def _one_value(bits: np.ndarray, positions: np.ndarray) -> bool:
    """Does every row hold the first row's bits (an integer view, ``_comparable``)? The sampled
    rows first, so a column of many values costs a few reads."""
    if not len(bits) or (len(bits) > 1 and bits.strides[0] == 0):
        return False  # empty, or a repeated value already
    first = bits[0]
    return bool((bits[positions] == first).all() and (bits == first).all())


def compact(series: pd.Series) -> pd.Series:
    """``series`` itself, or where every row holds the same value (and ``repeated`` can hold it) that
    value repeated in 8 bytes: the same dtype, bits and name."""
    bits = _comparable(series)
    if bits is None or len(bits) < 2:
        return series
    positions = np.linspace(0, len(bits) - 1, _SAMPLES).astype(np.intp)
    if not _one_value(bits, positions):
        return series
    one = repeated(series)
    return series if one is None else one


class ColumnPool:
    """The columns of one run's results so far, by a fingerprint of their values (see the module docstring)."""

    def __init__(self) -> None:
        # (dtype, length, fingerprint) -> [(integer view, the Series holding that memory)]
        self._columns: dict[tuple, list[tuple[np.ndarray, pd.Series]]] = {}
        self.shared: list[pd.DataFrame] = []  # the last ``share`` call's other frames, shared

    def share(self, frame: pd.DataFrame, *more: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with each column equal to one held before replaced by that column (a shallow
        copy when anything is replaced); its other columns join the pool. ``more``: frames that may
        hold the same arrays as ``frame`` (the model's own frame before the result checks), shared in
        the same way; returns ``frame``'s, and keeps the others' (``shared``)."""
        if len(frame) < SHARE_MIN_ROWS:
            self.shared = list(more)
            return frame
        given: dict[int, pd.Series] = {}  # the memory of a replaced column -> its replacement, within this call
        out = self._share(frame, given)
        self.shared = [self._share(other, given) for other in more]
        return out

    def offer(self, columns: dict[str, pd.Series]) -> None:
        """Hold ``columns`` (same length, e.g. the run's launch geometry) as if an earlier result held
        them: a result column equal to one of them is stored as it."""
        if columns and len(next(iter(columns.values()))) >= SHARE_MIN_ROWS:
            self._share(pd.DataFrame(columns, copy=False), {})

    def _share(self, frame: pd.DataFrame, given: dict[int, pd.Series]) -> pd.DataFrame:
        if not frame.columns.is_unique:
            return frame
        replaced: dict[Any, pd.Series] = {}
        n = len(frame)
        positions = np.linspace(0, n - 1, _SAMPLES).astype(np.intp) if n else np.empty(0, dtype=np.intp)
        for name in frame.columns:
            series = frame[name]
            bits = _comparable(series)
            if bits is None:
                continue
            before = given.get(bits.ctypes.data)
            if before is not None and before.dtype == series.dtype and len(before) == n:  # replaced a moment ago
                replaced[name] = before
                continue
            if _one_value(bits, positions):  # one value in every row: 8 bytes instead of a column
                one = repeated(series)
                if one is not None:
                    replaced[name] = given[bits.ctypes.data] = series = one
                    bits = _comparable(series)
            key = (str(series.dtype), n, bits[positions].tobytes())
            held = self._columns.setdefault(key, [])
            for earlier_bits, earlier in held:
                if earlier_bits.ctypes.data == bits.ctypes.data:  # already the same memory
                    break
                if np.array_equal(earlier_bits, bits):
                    replaced[name] = given[bits.ctypes.data] = earlier
                    break
            else:
                held.append((bits, series))
        if not replaced:
            return frame
        frame = frame.copy(deep=False)
        for name, earlier in replaced.items():
            frame[name] = earlier  # copy-on-write: shared until either is written
        return frame


__all__ = ["ColumnPool"]
