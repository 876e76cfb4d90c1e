"""Per-kernel text columns (bottleneck, state, error, sources) built from a few distinct values.

A model's text columns hold a handful of distinct strings over up to millions of kernels.
Built row by row they cost far more than the model's arithmetic: ``np.where`` / ``np.select``
on strings give a fixed-width unicode array that pandas turns into one new Python string
per row, ``np.full(n, "text", dtype=object)`` does the same, and ``series + "text"``
concatenates per row. The helpers here pick a small integer code per kernel and take the
labels from a short object array, so every row refers to one of the few string objects:
the values are the same strings, as dtype ``object``, at the cost of an index lookup.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd


def full(n: int, value: str) -> np.ndarray:
    """An object array of ``n`` references to ``value`` (``np.full(n, value, dtype=object)``
    makes a new string per row)."""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out


def _objects(values: Any) -> np.ndarray:
    """A str (as a 0-d object array, so numpy never turns it into fixed-width unicode) or an
    array-like as an object array."""
    if isinstance(values, str):
        out = np.empty((), dtype=object)
        out[()] = values
        return out
    return np.asarray(values, dtype=object)


def where(condition: Any, yes: Any, no: Any) -> np.ndarray:
    """``np.where(condition, yes, no)`` for text: each of ``yes`` / ``no`` a str or an array
    of str; returns an object array."""
    return np.where(np.asarray(condition, dtype=bool), _objects(yes), _objects(no))


def choice_codes(conditions: Sequence[Any], n: int | None = None) -> np.ndarray:
    """Per row, the index of the first true condition, ``len(conditions)`` where none is true
    (the code of ``np.select``'s default). ``n``: the row count when ``conditions`` is empty."""
    arrays = [np.asarray(c, dtype=bool) for c in conditions]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else (int(n or 0),)
    bits = _condition_bits(arrays, shape)
    if bits is not None:
        return _first_true(len(arrays))[bits]
    codes = np.full(shape, len(arrays), dtype=np.intp)
    for i in range(len(arrays) - 1, -1, -1):  # the first true condition wins: write it last
        codes[np.broadcast_to(arrays[i], shape)] = i
    return codes


# up to this many conditions, each row's conditions are packed into the bits of one byte and its code
# looked up in a table of 2**count entries: a few passes over bytes, where writing each condition's rows
# into the codes is a masked pass over 8-byte integers per condition (5 conditions on a million rows:
# 3 against 16 ms; speed only, the same codes)
_PACKED_CONDITIONS = 8


def _condition_bits(arrays: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray | None:
    """Per row, condition i as bit i of one byte (an array of ``shape``), or None where ``choice_codes``
    writes its codes condition by condition (no conditions, more than ``_PACKED_CONDITIONS``, one row
    that is no array: a 0-d ``shape``, whose codes stay a 0-d array)."""
    if not arrays or len(arrays) > _PACKED_CONDITIONS or shape == ():
        return None
    bits = np.zeros(shape, dtype=np.uint8)
    step = np.empty(shape, dtype=np.uint8)
    for i, condition in enumerate(arrays):
        np.left_shift(condition.view(np.uint8), i, out=step)
        np.bitwise_or(bits, step, out=bits)
    return bits


@functools.cache
def _first_true(count: int) -> np.ndarray:
    """For each pattern of ``count`` condition bits, the index of its lowest set bit (the first true
    condition), ``count`` where none is set."""
    return np.array([(bits & -bits).bit_length() - 1 if bits else count for bits in range(1 << count)],
                    dtype=np.intp)


def _table(names: Sequence[str]) -> np.ndarray:
    """``names`` as a one-dimensional object array (numpy would make a list of str fixed-width unicode)."""
    table = np.empty(len(names), dtype=object)
    table[:] = list(names)
    return table


def take(names: Sequence[str], codes: Any) -> np.ndarray:
    """``names[code]`` per row, as an object array."""
    return _table(names)[np.asarray(codes, dtype=np.intp)]


def select(conditions: Sequence[Any], choices: Sequence[str], default: str = "") -> np.ndarray:
    """``np.select(conditions, choices, default)`` for text choices; returns an object array."""
    if len(conditions) != len(choices):
        raise ValueError("select needs one choice per condition")
    arrays = [np.asarray(c, dtype=bool) for c in conditions]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else (0,)
    bits = _condition_bits(arrays, shape)
    if bits is not None:  # each bit pattern's label, taken by the row's pattern: no codes in between
        return take([*choices, default], _first_true(len(arrays)))[bits]
    return take([*choices, default], choice_codes(arrays))


def by_conditions(conditions: Sequence[Any], text: Callable[[int], str]) -> np.ndarray:
    """Per row, ``text(pattern)`` as an object array, ``pattern`` having bit i set where ``conditions[i]``
    holds (at most ``_PACKED_CONDITIONS`` conditions, arrays of one length): ``text`` is called once for
    each possible pattern, and a label that a mask would overwrite afterwards (``where(ok, ..., "")``)
    is chosen here in the same pass (one object array instead of two)."""
    arrays = [np.asarray(c, dtype=bool) for c in conditions]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    bits = _condition_bits(arrays, shape)
    if bits is None:
        raise ValueError(f"by_conditions takes 1 to {_PACKED_CONDITIONS} conditions of at least one dimension")
    return _table([text(pattern) for pattern in range(1 << len(arrays))])[bits]


def first_true(pattern: int, count: int) -> int:
    """The index of the lowest of the ``count`` low bits set in ``pattern`` (the first true condition of a
    ``by_conditions`` pattern), ``count`` where none is."""
    pattern &= (1 << count) - 1
    return (pattern & -pattern).bit_length() - 1 if pattern else count


def render(codes: Any, text: Callable[[int], str]) -> np.ndarray:
    """``text(code)`` per row for small non-negative integer ``codes``, each distinct code's text
    made once (a bit pattern of notes, a combination of states)."""
    codes = np.asarray(codes, dtype=np.intp)
    if not len(codes):
        return np.empty(0, dtype=object)
    present = np.flatnonzero(np.bincount(codes))
    table = np.empty(int(present[-1]) + 1, dtype=object)
    for code in present:
        table[code] = text(int(code))
    return table[codes]


def addresses(values: np.ndarray) -> np.ndarray | None:
    """The addresses of an object array's objects, per row, as unsigned integers (a view of its memory:
    read it while ``values`` lives), or None where ``values`` is not a one-dimensional contiguous
    object array (or one object repeated, a stride-0 view). The same address is the same object;
    equal strings may sit at different ones."""
    if not isinstance(values, np.ndarray) or values.dtype != object or values.ndim != 1:
        return None
    if not len(values):
        return np.empty(0, dtype=np.uintp)
    if len(values) > 1 and values.strides[0] == 0:  # one object repeated (column_pool.repeated): its one address
        return np.broadcast_to(np.ctypeslib.as_array((ctypes.c_size_t * 1).from_address(values.ctypes.data)),
                               values.shape)
    if not values.flags.c_contiguous:
        return None
    return np.ctypeslib.as_array((ctypes.c_size_t * len(values)).from_address(values.ctypes.data))


def distinct_objects(values: np.ndarray, limit: int = 1024) -> tuple[np.ndarray, np.ndarray, list[Any]] | None:
    """(per-row addresses, the distinct addresses, the object at each) of an object array, or None
    where it cannot be read so or holds more than ``limit`` distinct objects. A model's text column
    refers to a few string objects (this module's helpers): one pass over integers finds them, where
    a check of every value (``infer_dtype``, ``isin``, ``== ""``) is a Python call per row."""
    where = addresses(values)
    if where is None:
        return None
    if len(where) > 1 and where.strides[0] == 0:  # one object repeated: nothing to look for
        distinct = where[:1].copy()
    else:
        distinct = _first_appearances(where)
    if len(distinct) > limit:
        return None
    # each address is an object the array holds (a reference), alive while it lives
    objects = [ctypes.cast(int(address), ctypes.py_object).value for address in distinct]
    return where, distinct, objects


# the rows whose distinct addresses are hashed first: where these hold every distinct object, a compare per
# object over the whole column confirms it (a model's label column: a few objects), cheaper than hashing it
_HEAD_ROWS = 4096
_FEW_OBJECTS = 8


def _first_appearances(where: np.ndarray) -> np.ndarray:
    """``pd.unique(where)`` (distinct addresses in order of first appearance) of a column of addresses. The
    first ``_HEAD_ROWS`` rows' distinct addresses come first in that order; when they are few and no later row
    holds another, they are all of them (speed only: the same array as ``pd.unique``)."""
    head = pd.unique(where[:_HEAD_ROWS])
    if len(where) <= _HEAD_ROWS:
        return head
    if len(head) <= _FEW_OBJECTS:
        elsewhere = where != head[0]  # rows holding none of the head's objects
        other = np.empty(len(where), dtype=bool)
        for address in head[1:]:
            np.not_equal(where, address, out=other)
            elsewhere &= other
        if not elsewhere.any():
            return head
    return pd.unique(where)


def factorize_by_identity(array: np.ndarray, most: int, use_na_sentinel: bool = True
                          ) -> tuple[np.ndarray, np.ndarray] | None:
    """``pd.factorize(array, use_na_sentinel=...)`` (codes in order of first appearance, the distinct
    values) of an object array, its rows first told apart by object identity: a text column that refers
    to a few string objects (the C parser makes one per distinct name and chunk; an importer one per
    distinct kernel name) is factorized by text on those objects only, where pandas would hash every
    row's whole string. Equal strings at different addresses get one code. None where the addresses
    cannot be read (``addresses``) or the array holds more than ``most`` distinct objects."""
    found = identity_codes(array, most)
    if found is None:
        return None
    id_codes, objects = found
    codes, distinct = pd.factorize(objects, use_na_sentinel=use_na_sentinel)
    return codes[id_codes], distinct


def identity_codes(array: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Per row of an object array, the code of its object (by address, in order of first appearance), and
    those distinct objects (an object array, one per code), or None where the addresses cannot be read
    (``addresses``), the array is empty or holds more than ``most`` distinct objects. Equal strings at
    different addresses get different codes here (``factorize_by_identity`` joins them)."""
    where = addresses(array)
    if where is None or not len(where):
        return None
    id_codes, ids = pd.factorize(where)  # in order of first appearance of each address
    if len(ids) > most:
        return None
    row_of = np.empty(len(ids), dtype=np.intp)
    row_of[id_codes] = np.arange(len(where))  # a row holding each distinct object (which one does not matter)
    return id_codes, array[row_of]  # the objects in order of first appearance, so the texts' codes are too


FACTORIZE_BY_IDENTITY_FROM = 10_000  # rows from which factorize_text looks at object identity first


def factorize_text(values: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values)`` (codes in order of first appearance, -1 where missing; the distinct
    values), fast for a long text column that repeats a few Python string objects, as the kernel names
    of a trace or a raw page do (made from their distinct names): pandas hashes every row's whole text
    (0.3 CPU s for a million names of a few hundred characters), so rows are first told apart by
    object identity (``id``, an integer per row) and only the distinct objects are factorized by text.
    The same answer for any column; a column of all different objects only pays the identity pass.
    """
    array = values.to_numpy(dtype=object) if isinstance(values, pd.Series) else np.asarray(values, dtype=object)
    found = factorize_by_identity(array, len(array) // 2) if len(array) >= FACTORIZE_BY_IDENTITY_FROM else None
    return found if found is not None else pd.factorize(array)


def text_codes(values: pd.Series) -> np.ndarray:
    """``pd.factorize(values, use_na_sentinel=False)[0]`` of a text column, by the addresses of its
    objects where it holds few (``factorize_by_identity``)."""
    array = getattr(values.array, "_ndarray", None)  # pandas' python-backed strings, or object
    if isinstance(array, np.ndarray):
        found = factorize_by_identity(array, max(1024, len(array) // 8), use_na_sentinel=False)
        if found is not None:
            return found[0]
    return pd.factorize(values, use_na_sentinel=False)[0]


def rows_holding(found: tuple[np.ndarray, np.ndarray, list[Any]], wanted: Callable[[Any], bool]) -> np.ndarray:
    """Per row of ``distinct_objects``' array, whether its object is one ``wanted`` accepts."""
    where, distinct, objects = found
    chosen = [address for address, item in zip(distinct, objects) if wanted(item)]
    if not chosen:
        return np.zeros(len(where), dtype=bool)
    if len(chosen) == len(distinct):
        return np.ones(len(where), dtype=bool)
    if len(chosen) == 1:
        return where == chosen[0]
    return np.isin(where, np.asarray(chosen, dtype=where.dtype))


def text_dtype() -> Any:
    """The dtype ``Series.astype(str)`` gives: pandas' string dtype ``str`` (pandas >= 3), else object; under
    the text storage in effect now (the command line picks Python-backed text: ``text_storage``)."""
    try:
        storage = pd.get_option("mode.string_storage")
    except KeyError:  # pragma: no cover - a pandas without the option
        storage = None
    return _text_dtype(storage)


@functools.cache
def _text_dtype(storage: str | None) -> Any:
    """``text_dtype`` for one setting of ``mode.string_storage`` (made once per setting)."""
    return pd.Series(["text"], dtype=object).astype(str).dtype


def text_array(values: Any, checked: bool = False, owned: bool = False) -> Any:
    """Object values (all str) as a copy in the dtype ``Series.astype(str)`` gives (``text_dtype``).

    ``checked``: the caller has seen that every value is a str (on its distinct objects,
    ``distinct_objects``); the copy is then wrapped as pandas' Python-backed strings hold it, where
    pandas would check and convert it again value by value (the same array and dtype; speed only).
    ``owned`` (with ``checked``): ``values`` is a new object array the caller made and hands over (the
    output of ``take``, ``where``, ``select``: nothing else refers to it); it is wrapped as it is, not
    copied (a million kernels: 8 MB of new memory and a reference count per row saved)."""
    template = _text_template(text_dtype()) if checked else None
    if template is not None:
        handed = owned and isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1 \
            and values.base is None and values.flags.writeable and values.flags.c_contiguous
        return template._from_backing_data(values if handed else np.array(values, dtype=object, copy=True))
    return pd.array(np.asarray(values, dtype=object), dtype=text_dtype(), copy=True)


@functools.cache
def _text_template(dtype: Any) -> Any:
    """A one-value array of pandas' Python-backed string dtype ``dtype``, whose ``_from_backing_data``
    wraps an object array of str as that dtype holds it; None for any other text dtype (object,
    pyarrow), which ``text_array`` converts through pandas."""
    if not isinstance(dtype, pd.StringDtype) or dtype.storage != "python":
        return None
    template = pd.array(np.array(["text"], dtype=object), dtype=dtype)
    backing = getattr(template, "_ndarray", None)
    if not hasattr(template, "_from_backing_data") or not isinstance(backing, np.ndarray) or backing.dtype != object:
        return None
    return template


def all_text(values: np.ndarray) -> bool:
    """Is every value of an object array a str (``infer_dtype(values, skipna=False) == "string"``)?
    Checked on its distinct objects where it holds few, else value by value."""
    found = distinct_objects(values)
    if found is not None:
        return bool(len(values)) and all(isinstance(item, str) for item in found[2])
    return pd.api.types.infer_dtype(values, skipna=False) == "string"


def column(values: Any, index: pd.Index, owned: bool = False, text: bool = False) -> pd.Series:
    """``values`` as the column ``frame[name] = np.asarray(values)`` stores, without its costs.

    pandas (>= 3) turns an object array of str into its ``str`` dtype by checking and converting
    element by element (45 ms per million rows); here one pass checks that every value is a str and
    the conversion is ``text_array`` (``owned``: ``values`` is a new object array the caller hands
    over, wrapped without a copy; ``text``: the caller made it from str labels alone, with ``take``,
    ``select`` or ``by_conditions``, so that pass is skipped). One str repeated (a run's constant
    column, a stride-0 view) stays one str repeated in the ``str`` dtype (``model.constant_column``),
    not a new array of a million references. Anything else keeps its dtype and is not copied: a
    Series on ``index`` is returned as it is (copy-on-write protects it), an array is wrapped."""
    if isinstance(values, pd.Series) and values.dtype != object and values.index.equals(index):
        return values
    array = np.asarray(values)
    if array.dtype == object and text_dtype() != object and len(array) and (text or all_text(array)):
        if len(array) > 1 and array.strides[0] == 0 and len(array) == len(index):
            from nvperf_bridge.model import constant_column

            return constant_column(array[0], index, dtype=text_dtype())
        return pd.Series(text_array(array, checked=True, owned=owned and array is values), index=index, copy=False)
    if isinstance(values, pd.Series):  # its own memory is read-only under copy-on-write: a Series takes a copy
        return pd.Series(array, index=index)
    return pd.Series(array, index=index, copy=False)


__all__ = ["addresses", "all_text", "by_conditions", "choice_codes", "column", "distinct_objects", "factorize_text", "first_true", "full", "identity_codes", "rows_holding", "render", "select", "take", "text_array", "text_codes", "text_dtype", "where"]
