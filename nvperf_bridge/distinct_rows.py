"""Rows that are bit-for-bit equal in every column, found once and computed once (speed only).

A profile of a million launches repeats a few thousand workloads, and far fewer launch shapes:
a quantity that is a function of a row's values alone (the occupancy calculator's limits of a
launch shape; Kerr's fit, weighted by the counts) is computed on the distinct rows and taken back
to every kernel. Rows are merged only when every column holds the same bits, so each kernel gets
exactly the values its own row would give.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Distinct:
    """Distinct rows of a kernel table: ``first`` (one kernel per distinct row), ``inverse``
    (the distinct row of each kernel) and ``counts`` (kernels per distinct row, as floats).
    A profile of a million launches repeats a few thousand workloads: the fit on distinct rows
    weighted by their counts is the fit on every row (sums over kernels), at a fraction of the
    cost (speed only)."""

    first: np.ndarray
    inverse: np.ndarray
    counts: np.ndarray

    @property
    def n(self) -> int:
        """Number of kernels (rows before deduplication)."""
        return len(self.inverse)

    @property
    def all_single(self) -> bool:
        """Every kernel is its own row (nothing was merged)."""
        return len(self.first) == len(self.inverse)

    @staticmethod
    def each(n: int) -> "Distinct":
        """Every row its own distinct row."""
        return Distinct(np.arange(n), np.arange(n), np.ones(n))


_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio (Fibonacci hashing), odd


def distinct_rows(columns: list[np.ndarray]) -> Distinct:
    """Rows that are bit-for-bit equal in every column merged into one, in order of first appearance.

    A 64-bit hash per row (each column's float64 bits mixed in turn) is factorised, then every
    kernel is checked against its representative bit for bit: should two different rows share a
    hash, nothing is merged (exact either way)."""
    n = len(columns[0]) if columns else 0
    if n < 2:
        return Distinct.each(n)
    bits = [np.ascontiguousarray(c, dtype=np.float64).view(np.uint64) for c in columns]
    h = np.zeros(n, dtype=np.uint64)
    for b in bits:
        np.bitwise_xor(h, b, out=h)
        np.multiply(h, _HASH_MULTIPLIER, out=h)
        np.bitwise_xor(h, h >> np.uint64(31), out=h)
    codes = pd.factorize(h)[0]  # codes in order of first appearance
    running = np.maximum.accumulate(codes)
    first = np.flatnonzero(np.concatenate(([True], running[1:] > running[:-1])))
    if len(first) == n:
        return Distinct.each(n)
    for b in bits:
        if not np.array_equal(b[first][codes], b):
            return Distinct.each(n)  # a hash collision: fall back to every row (exact, slower)
    return Distinct(first, codes, np.bincount(codes, minlength=len(first)).astype(np.float64))


__all__ = ["Distinct", "distinct_rows"]
