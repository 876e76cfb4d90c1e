"""pyarrow's CSV reader (a runtime dependency) reads an ncu raw page into the frame pandas' parser gives.

Every case is read twice, through pyarrow and with the pyarrow path turned off (pandas' C parser, the
path taken where pyarrow cannot be imported), and the two must agree value for value, dtype for dtype, note for note;
where the input is bad, both give the same one-line error. Skipped where pyarrow is not installed.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import ncu_raw, read_parts

pytest.importorskip("pyarrow.csv")

RAW = "roofline-analysis/roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv"
RAW_64 = "roofline-analysis/roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv"


def _model_names() -> frozenset[str]:
    from nvperf_bridge.registry import load_registry
    from nvperf_bridge.review.advice import REVIEW_COLUMNS

    registry = load_registry([])
    return frozenset(name for entry in registry.models.values()
                     for name in (*entry.model.requires.required, *entry.model.requires.optional)) | REVIEW_COLUMNS


def _both(path: Path, raw_columns: frozenset[str] | None, monkeypatch: pytest.MonkeyPatch):
    """(what the arrow path gives, what pandas' path gives, whether arrow read it): parts or an InputError."""
    used = []
    original = ncu_raw._arrow_columns

    def spy(*args, **kwargs):
        built = original(*args, **kwargs)
        used.append(built is not None)
        return built

    def read():
        try:
            return read_parts(path, raw_columns=raw_columns)
        except InputError as exc:
            return exc

    with monkeypatch.context() as patch:
        patch.setattr(ncu_raw, "_arrow_columns", spy)
        arrow = read()
    with monkeypatch.context() as patch:
        patch.setattr(ncu_raw, "_arrow_columns", lambda *args, **kwargs: None)
        plain = read()
    return arrow, plain, any(used)


def _same(arrow, plain) -> None:
    if isinstance(plain, InputError):
        assert isinstance(arrow, InputError) and str(arrow) == str(plain)
        return
    assert len(arrow) == len(plain)
    for a, b in zip(arrow, plain):
        pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
        assert vars(a.info) == vars(b.info)


@pytest.mark.parametrize("name", [RAW, RAW_64])
@pytest.mark.parametrize("keep_raw", [False, True])
def test_real_raw_pages_read_the_same_through_pyarrow(realdata_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                       name: str, keep_raw: bool) -> None:
    arrow, plain, read_by_arrow = _both(realdata_dir / name, None if keep_raw else _model_names(), monkeypatch)
    assert read_by_arrow, "a plain ncu raw page is pyarrow's to read"
    _same(arrow, plain)
    assert len(arrow[0].frame) > 10 and "duration_ns" in arrow[0].frame.columns


def test_without_pyarrow_pandas_parser_reads_the_same(realdata_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where pyarrow cannot be imported (a platform without its wheel), pandas' parser reads the page.
    Text as pandas stores it without pyarrow (and as the command line asks for: ``text_storage``)."""
    calls = []
    original = ncu_raw._stream_columns

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    with pd.option_context("mode.string_storage", "python"):
        arrow, _plain, _ = _both(realdata_dir / RAW, _model_names(), monkeypatch)
        with monkeypatch.context() as patch:
            patch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
            patch.setitem(sys.modules, "pyarrow.csv", None)
            patch.setattr(ncu_raw, "_stream_columns", spy)
            hidden = read_parts(realdata_dir / RAW, raw_columns=_model_names())
    assert calls, "pandas' streamed parser read it"
    _same(arrow, hidden)


def _rows(realdata_dir: Path) -> tuple[list[str], list[str], list[list[str]], str]:
    """The real page's header, units row, data rows, and the text before the header."""
    text = (realdata_dir / RAW).read_text(encoding="utf-8")
    start = text.index('"ID"')
    rows = list(csv.reader(io.StringIO(text[start:])))
    return rows[0], rows[1], [r for r in rows[2:] if r], text[:start]


def _write(path: Path, before: str, rows: list[list[str]], tail: str = "") -> Path:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(before + out.getvalue() + tail, encoding="utf-8")
    return path


def _edited(realdata_dir: Path, tmp_path: Path, edit, tail: str = "") -> Path:
    header, units, data, before = _rows(realdata_dir)
    rows = [list(r) for r in data * 3]  # some rows past the first ones, which only guess the column types
    edit(header, rows)
    return _write(tmp_path / "page.ncu.csv", before, [header, units, *rows], tail)


def _column(header: list[str], name: str) -> int:
    return header.index(name)


CASES = {
    # a number column printed with thousands separators after plain rows (pyarrow's float read fails)
    "grouped-numbers-late": lambda h, rows: rows[-1].__setitem__(_column(h, "gpu__time_duration.sum"), "12,532,580,352"),
    # words in a number column after plain rows: the column is text on both paths
    "words-late": lambda h, rows: rows[-1].__setitem__(_column(h, "launch__waves_per_multiprocessor"), "n/a-ish"),
    # an n/a token: missing on both paths, the column stays a number
    "n/a": lambda h, rows: rows[5].__setitem__(_column(h, "launch__waves_per_multiprocessor"), "n/a"),
    # True/False: pandas reads booleans as 1.0 / 0.0
    "booleans": lambda h, rows: [r.__setitem__(_column(h, "launch__grid_size"), "True" if i % 2 else "False")
                                 for i, r in enumerate(rows)],
    # a launch without an ID: the same error, naming the line
    "missing-id": lambda h, rows: rows[7].__setitem__(0, ""),
    # a row with more fields than the header
    "ragged": lambda h, rows: rows[4].append("extra"),
    # a row cut short
    "short": lambda h, rows: rows.__setitem__(4, rows[4][:20]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_edited_pages_give_what_pandas_gives(realdata_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             case: str) -> None:
    path = _edited(realdata_dir, tmp_path, CASES[case])
    arrow, plain, read_by_arrow = _both(path, _model_names(), monkeypatch)
    _same(arrow, plain)
    # odd values stay pyarrow's to read (a column read again as text); broken rows go to pandas' path
    assert read_by_arrow == (case not in ("missing-id", "ragged", "short"))
    # what each edit must give (checked on pandas' path too, which the frames above equal)
    if case == "grouped-numbers-late":
        assert arrow[0].frame["duration_ns"].iloc[-1] == 12532580352.0  # the separators read, not a NaN
    if case == "words-late":
        assert not pd.api.types.is_numeric_dtype(arrow[0].frame["launch__waves_per_multiprocessor"])
    if case == "n/a":
        waves = arrow[0].frame["launch__waves_per_multiprocessor"]
        assert pd.api.types.is_float_dtype(waves) and pd.isna(waves.iloc[5]) and waves.notna().sum() == len(waves) - 1
    if case == "missing-id":
        assert isinstance(arrow, InputError) and str(arrow).startswith(f"{path}:")


@pytest.mark.parametrize("tail", ["\n", "\n==PROF== Disconnected from process 1\n", "\nTotal: 4\n",
                                  '\n"ID","Kernel Name"\n"0","k"\n', "Total: 4\n"])
def test_text_after_the_table_ends_it_as_on_pandas_path(realdata_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, tail: str) -> None:
    path = _edited(realdata_dir, tmp_path, lambda h, rows: None, tail=tail)
    arrow, plain, _ = _both(path, _model_names(), monkeypatch)
    _same(arrow, plain)
    assert not isinstance(arrow, InputError) and len(arrow[0].frame) == 48
