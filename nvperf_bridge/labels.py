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
    codes = np.full(shape, len(arrays), dtype=np.intp)
    for i in range(len(arrays) - 1, -1, -1):  # the first true condition wins: write it last
        codes[np.broadcast_to(arrays[i], shape)] = i
    return codes


def take(names: Sequence[str], codes: Any) -> np.ndarray:
    """``names[code]`` per row, as an object array."""
    table = np.empty(len(names), dtype=object)
    table[:] = list(names)
    return table[np.asarray(codes, dtype=np.intp)]


def select(conditions: Sequence[Any], choices: Sequence[str], default: str = "") -> np.ndarray:
    """``np.select(conditions, choices, default)`` for text choices; returns an object array."""
    if len(conditions) != len(choices):
        raise ValueError("select needs one choice per condition")
    return take([*choices, default], choice_codes(conditions))


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


@functools.cache
def text_dtype() -> Any:
    """The dtype ``Series.astype(str)`` gives: pandas' string dtype ``str`` (pandas >= 3), else object."""
    return pd.Series(["text"], dtype=object).astype(str).dtype


def text_array(values: Any) -> Any:
    """Object values (all str) as a copy in the dtype ``Series.astype(str)`` gives (``text_dtype``)."""
    return pd.array(np.asarray(values, dtype=object), dtype=text_dtype(), copy=True)


def column(values: Any, index: pd.Index) -> pd.Series:
    """``values`` as the column ``frame[name] = np.asarray(values)`` stores, without its costs.

    pandas (>= 3) turns an object array of str into its ``str`` dtype by checking and converting
    element by element (45 ms per million rows); here one pass checks that every value is a str and
    the conversion is ``text_array``. Anything else keeps its dtype and is not copied: a Series on
    ``index`` is returned as it is (copy-on-write protects it), an array is wrapped."""
    if isinstance(values, pd.Series) and values.dtype != object and values.index.equals(index):
        return values
    array = np.asarray(values)
    if (array.dtype == object and text_dtype() != object and len(array)
            and pd.api.types.infer_dtype(array, skipna=False) == "string"):
        return pd.Series(text_array(array), index=index, copy=False)
    if isinstance(values, pd.Series):  # its own memory is read-only under copy-on-write: a Series takes a copy
        return pd.Series(array, index=index)
    return pd.Series(array, index=index, copy=False)


__all__ = ["choice_codes", "column", "full", "render", "select", "take", "text_array", "text_dtype", "where"]
