"""The CSV report is written a slice of kernels at a time (issue 17: never the whole long table in
memory); the chunks joined are exactly the whole table written at once, on real profiler files."""

from __future__ import annotations

import io

import pandas as pd

from nvperf_bridge.analysis import analyze
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.reports.csv_report import TEXT_COLUMNS, _text_field, build_table, iter_csv


def _whole(analysis) -> str:
    """The whole long table written with one to_csv (the code before chunking)."""
    table = build_table(analysis)
    for column in TEXT_COLUMNS:
        table[column] = table[column].map(_text_field)
    buffer = io.StringIO()
    table.to_csv(buffer, index=False, lineterminator="\n", float_format="%.12g")
    return buffer.getvalue()


def test_chunks_join_to_the_whole_table(realdata_dir) -> None:
    files = sorted((realdata_dir / "magus-corpus").glob("*.csv"))[:12]
    analysis = analyze(read_profiles(files), gpu="gtx-1080-ti")
    n = len(analysis.kernels)
    assert n > 7
    chunks = list(iter_csv(analysis, chunk=7))
    assert len(chunks) == -(-n // 7)  # one chunk per 7 kernels: never the whole table at once
    whole = _whole(analysis)
    assert b"".join(chunks).decode("utf-8") == whole
    parsed = pd.read_csv(io.StringIO(whole), keep_default_na=False)
    assert len(parsed) == n * len(analysis.runs)  # every kernel x model pair
    assert chunks[1].decode("utf-8").splitlines()[0] != whole.splitlines()[0]  # the header only once


def test_chunks_number_kernels_without_ids_by_their_position_in_the_whole_table(realdata_dir) -> None:
    """Each chunk derives its kernels' names and ids from its own rows; a file without kernel ids
    gets row positions counted over the whole table, not restarted in every chunk."""
    files = sorted((realdata_dir / "magus-corpus").glob("*.csv"))[:6]
    analysis = analyze(read_profiles(files), gpu="gtx-1080-ti")
    analysis.kernels = analysis.kernels.drop(columns=["kernel_id"])
    n = len(analysis.kernels)
    assert n > 10
    joined = b"".join(iter_csv(analysis, chunk=5)).decode("utf-8")
    assert joined == _whole(analysis)
    ids = pd.read_csv(io.StringIO(joined), keep_default_na=False)["kernel_id"]
    assert sorted(set(ids)) == list(range(n))  # 0 .. n-1, each kernel its own position
