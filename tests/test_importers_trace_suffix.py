"""The correlation suffix split of nvprof trace names (``nvprof_trace._split_suffix``): C-level calls for the
usual rows and the per-row loop for the others give, row for row, what the suffix regex says."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nvperf_bridge.importers.nvprof_trace import _SUFFIX, _split_suffix

NAMES = [
    "sgemm_kernel [1173]", "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>) [7001059]",
    "[CUDA memcpy HtoD]", "[CUDA memset]", "[Unified Memory Memcpy DtoH]", "k [12] ", "k\t[12]", "k  [12]",
    " [5]", "[5]", "k [12", "k [1a]", "k []", "k [\u0663]", "kernel(float) [3] [4]", "name with [brackets] [9]",
    "k [12]\n[13]", "", "k [", "é [7]", None,
]


def _by_regex(name):
    if name is None:
        return None, None
    found = _SUFFIX.search(name)
    return (name[:found.start()], found.group(1)) if found else (name, None)


@given(st.lists(st.sampled_from(NAMES), max_size=40))
def test_the_split_is_the_regexs_row_for_row(names: list) -> None:
    base, digits = _split_suffix(np.array(names, dtype=object))
    assert list(zip(base.tolist(), digits.tolist())) == [_by_regex(name) for name in names]


def test_a_long_trace_of_usual_names_with_memcpy_rows() -> None:
    names = [f"kernel_{i % 7}(float*) [{i}]" if i % 50 else "[CUDA memcpy HtoD]" for i in range(20_000)]
    base, digits = _split_suffix(np.array(names, dtype=object))
    assert list(zip(base.tolist(), digits.tolist())) == [_by_regex(name) for name in names]
