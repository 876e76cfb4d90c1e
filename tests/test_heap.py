"""heap.keep_freed: inside the block memory the process frees is reused, not touched afresh; the
thresholds are set on entry to the outermost block and put back at its end."""

from __future__ import annotations

import resource

import numpy as np
import pytest

from nvperf_bridge import heap
from nvperf_bridge.hugepages import small_pages


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _write_arrays(count: int) -> list[np.ndarray]:
    arrays = []
    for _ in range(count):
        array = np.empty(1_000_000)  # 8 MB, a model's column on a million kernels
        array.fill(1.0)
        arrays.append(array)
    return arrays


@pytest.mark.skipif(heap._glibc() is None, reason="not glibc: keep_freed changes nothing")
def test_arrays_freed_inside_the_block_are_reused_without_new_page_faults() -> None:
    pages = 30 * 8_000_000 // 4096
    with small_pages(), heap.keep_freed():
        arrays = _write_arrays(30)
        del arrays  # freed: with the heap keeping it, the next arrays are the same memory
        before = _faults()
        again = _write_arrays(30)
        faulted = _faults() - before
        del again
    assert faulted < pages // 10, f"{faulted} page faults writing 30 arrays again (fresh memory: {pages})"


def test_the_thresholds_are_set_once_for_nested_blocks_and_put_back(monkeypatch) -> None:
    calls: list[tuple[int, int]] = []

    class FakeLibc:
        @staticmethod
        def mallopt(parameter: int, value: int) -> int:
            calls.append((parameter, value))
            return 1

    monkeypatch.setattr(heap, "_glibc", lambda: FakeLibc)
    with heap.keep_freed():
        with heap.keep_freed():  # nested: nothing set again, nothing put back at its end
            pass
        assert calls == [(heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD), (heap.M_TRIM_THRESHOLD, heap.KEEP_ALL)]
    assert calls[2:] == [(heap.M_TRIM_THRESHOLD, heap.TRIM_AFTER)]


def test_without_glibc_the_block_runs_unchanged(monkeypatch) -> None:
    monkeypatch.setattr(heap, "_glibc", lambda: None)
    with heap.keep_freed():
        values = np.arange(5.0) * 2
    assert values.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
