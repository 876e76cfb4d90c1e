"""blas_threads.one_thread: OpenBLAS on one thread inside the block, the caller's count restored after."""

from __future__ import annotations

import numpy as np
import pytest

from nvperf_bridge import blas_threads


def _thread_counts() -> dict[str, int]:
    counts = {}
    for path in blas_threads._loaded_openblas():
        controls = blas_threads._controls(path)
        if controls is not None:
            counts[path] = int(controls[0]())  # type: ignore[operator]
    return counts


def test_one_thread_inside_the_block_and_the_count_restored_after() -> None:
    before = _thread_counts()
    if not before:
        pytest.skip("no OpenBLAS found in this process (another BLAS or platform): one_thread changes nothing")
    a = np.arange(40_000, dtype=float).reshape(-1, 4)
    outside = a.T @ a
    with blas_threads.one_thread():
        assert set(_thread_counts().values()) == {1}
        with blas_threads.one_thread():  # nested: still one thread, and the inner end restores nothing yet
            inside = a.T @ a
        assert set(_thread_counts().values()) == {1}
    assert _thread_counts() == before
    assert np.array_equal(inside, outside)  # exact integers: the same product on any thread count
