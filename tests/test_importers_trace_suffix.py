"""The correlation suffix split of nvprof trace names (``nvprof_trace._split_suffix``): C-level calls for the
usual rows and the per-row loop for the others give, row for row, what the suffix regex says."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from nvperf_bridge.importers.nvprof_trace import _SUFFIX, _split_suffix

NAMES = [
    "sgemm_kernel [1173]", "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>) [7001059]",
    "[CUDA memcpy HtoD]", "[CUDA memset]", "[Unified Memory Memcpy DtoH]", "k [12] ", "k\t[12]", "k  [12]",
    " [5]", "[5]", "k [12", "k [1a]", "k []", "k [\u0663]", "kernel(float) [3] [4]", "name with [brackets] [9]",
    "k [12]\n[13]", "", "k [", "é [7]", None,
    # at the edges of the byte window read for the suffix and of Arrow's 12 inline bytes
    "k [" + "1" * 21 + "]", "k [" + "1" * 22 + "]", "k [" + "1" * 30 + "]", "abcdefghijkl [1]", "abcdefghijklm [1]",
    "abcdefghijk [1]", "éééééé [0012]", "ü€ [3]", "x" * 300 + " [42]",
    # at the edges of the 8-byte word the digits are first read from
    "k [1234567]", "k [12345678]", "k [123456789]", "[12345678]", "12345678]", " [1234567]", "k [x2345678]",
    "k [1234567٣]", "kk [/:]",
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


def _by_arrow(names: list, block: int, keep: list[bool] | None = None) -> list:
    """``_ArrowNames`` fed ``names`` in blocks of ``block`` rows: (base, digits) per row (per ``keep`` row)."""
    import pyarrow as pa

    from nvperf_bridge.importers.nvprof_trace import _ArrowNames

    split = _ArrowNames()
    for start in range(0, len(names), block):
        split.add(pa.array(names[start:start + block], type=pa.string()))
    if not split.rows:
        return []
    out = split.result()
    kept = np.ones(len(names), dtype=bool) if keep is None else np.array(keep, dtype=bool)
    bases = [None if code < 0 else out.distinct[code] for code in out.codes[kept]]
    return list(zip(bases, out.suffix.kept(kept).tolist()))


@given(st.lists(st.sampled_from(NAMES), max_size=40), st.integers(1, 7))
def test_pyarrows_split_is_the_regexs_row_for_row(names: list, block: int) -> None:
    # the pyarrow reader splits each block of the trace in C and only the unusual names in Python
    assert _by_arrow(names, block) == [_by_regex(name) for name in names]


@given(st.lists(st.tuples(st.sampled_from(NAMES), st.booleans()), max_size=40), st.integers(1, 7))
def test_pyarrows_suffixes_of_the_kept_rows_are_the_regexs(rows: list, block: int) -> None:
    # the digits stay pyarrow text until the kept rows' launch ids are made (nvprof_trace.LaunchIds)
    names, keep = [name for name, _ in rows], [kept for _, kept in rows]
    assert _by_arrow(names, block, keep) == [_by_regex(name) for name, kept in rows if kept]


def test_pyarrows_split_numbers_names_by_first_appearance_across_blocks() -> None:
    from nvperf_bridge.importers.nvprof_trace import _ArrowNames
    import pyarrow as pa

    names = [f"kernel_{i % 5}(float*) [{i}]" if i % 9 else "[CUDA memcpy HtoD]" for i in range(100)]
    split = _ArrowNames()
    for start in range(0, 100, 13):
        split.add(pa.array(names[start:start + 13]))
    out = split.result()
    codes, distinct = pd.factorize(np.array([_by_regex(n)[0] for n in names], dtype=object))
    assert out.codes.tolist() == codes.tolist() and out.distinct.tolist() == distinct.tolist()


def test_pyarrows_split_reads_a_slice_of_a_larger_array() -> None:
    # a batch may be a slice: its offsets start inside the offsets buffer and its names inside the data buffer
    import pyarrow as pa

    from nvperf_bridge.importers.nvprof_trace import _ArrowNames

    names = [name for name in NAMES if name is not None] * 3
    whole = pa.array(["padding name [1]"] * 5 + names + ["tail [2]"] * 4, type=pa.string())
    split = _ArrowNames()
    split.add(whole.slice(5, len(names)))
    out = split.result()
    bases = [None if code < 0 else out.distinct[code] for code in out.codes]
    assert list(zip(bases, out.suffix.kept(np.ones(len(names), dtype=bool)).tolist())) == \
        [_by_regex(name) for name in names]
