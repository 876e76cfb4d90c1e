"""ncu details tables are streamed from the file (never held as one text) into what the whole-text path gives.

Each case is read three ways: streamed by pyarrow's reader into coded columns, streamed by pandas' C parser
(pyarrow's reader turned off), and with streaming turned off; all three must agree value for value, note for
note and rule for rule, for every metric and for only the metrics in use. What the stream cannot settle
alone (a line with a comma after the table, the header repeated under the rows) goes to the whole-text
path, which gives the same answer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import realdata_files
from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import ncu_details, read_parts

USED = frozenset({"sm__throughput.avg.pct_of_peak_sustained_elapsed"})  # a raw name the models could ask for


def _same(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
        assert vars(a.info) == vars(b.info)
        if b.rules is None:
            assert a.rules is None
        else:
            pd.testing.assert_frame_equal(a.rules, b.rules, check_exact=True)


def _spied(monkeypatch: pytest.MonkeyPatch, name: str, used: list[bool]) -> None:
    original = getattr(ncu_details, name)

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        used.append(result is not None)
        return result

    monkeypatch.setattr(ncu_details, name, spy)


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, raw_columns: frozenset[str] | None = None, *,
          arrow: bool | None = None):
    """The file read streamed (by pyarrow, then by pandas alone) and whole; returns the streamed parts and
    whether streaming took it. ``arrow``: whether pyarrow's reader must have taken it (None: either)."""
    used: list[bool] = []
    by_arrow: list[bool] = []
    with monkeypatch.context() as patch:
        _spied(patch, "read_stream", used)
        _spied(patch, "_read_arrow", by_arrow)
        streamed = read_parts(path, raw_columns=raw_columns)
    with monkeypatch.context() as patch:
        patch.setattr(ncu_details, "_read_arrow", lambda *args, **kwargs: None)
        by_pandas = read_parts(path, raw_columns=raw_columns)
    with monkeypatch.context() as patch:
        patch.setattr(ncu_details, "read_stream", lambda *args, **kwargs: None)
        whole = read_parts(path, raw_columns=raw_columns)
    _same(streamed, whole)
    _same(by_pandas, whole)
    if arrow is not None:
        assert any(by_arrow) == arrow, "pyarrow's reader took it" if not arrow else "pyarrow's reader gave up"
    return streamed, any(used)


def _details() -> list[Path]:
    from nvperf_bridge.importers import sniff

    found = []
    for path in realdata_files():
        try:
            if sniff(path) == "ncu-details":
                found.append(path)
        except Exception:  # not a profiler file: not this test's
            continue
    return found


@pytest.mark.parametrize("raw_columns", [None, USED], ids=["every metric", "metrics in use"])
@pytest.mark.parametrize("path", _details()[:40], ids=lambda p: p.name)
def test_real_details_stream_to_what_the_whole_text_gives(path: Path, raw_columns, monkeypatch) -> None:
    parts, streamed = _both(path, monkeypatch, raw_columns, arrow=True)
    assert streamed, "a details table followed by nothing or by banner lines is streamed"
    assert len(parts[0].frame) > 0


def _real_details(realdata_dir: Path) -> str:
    path = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    if not path.exists():
        pytest.skip("no cfd details log")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("tail, streams", [
    ("\n\n", True),
    ("==PROF== Disconnected from process 1742833\n", True),  # named in a note, with its line, both ways
    ("\nTotal CPU Page faults: 49\nend of run\n", True),
    ('\n"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","k","a","b","1"\n', False),  # a table
])
def test_text_after_the_table(realdata_dir: Path, tmp_path: Path, monkeypatch, tail: str, streams: bool) -> None:
    path = tmp_path / "details.log"
    path.write_text(_real_details(realdata_dir).rstrip("\n") + "\n" + tail, encoding="utf-8")
    parts, streamed = _both(path, monkeypatch)
    assert streamed == streams
    if tail.strip() and streams:
        assert any(note.startswith("ignored ") for note in parts[0].info.notes), "the lines after it are named"


def test_header_again_under_the_rows_goes_the_whole_text_way(realdata_dir: Path, tmp_path: Path,
                                                             monkeypatch) -> None:
    text = _real_details(realdata_dir)
    lines = text.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = lines[header:]
    path = tmp_path / "appended.log"
    path.write_text("".join(lines[:header] + rows + rows[:40]), encoding="utf-8")  # a second run's rows
    parts, streamed = _both(path, monkeypatch)
    assert not streamed
    assert len(parts[0].frame) > 0


def _fields(row: str, count: int) -> str:
    """The first ``count`` fields of a CSV row, as a row of their own (quoted as ncu quotes)."""
    import csv
    import io

    fields = next(csv.reader([row]))[:count]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(fields)
    return out.getvalue()


def _real_2025(realdata_dir: Path) -> str:
    path = (realdata_dir / "llm-perf-opt" /
            "llm-perf-opt__ncu-v2__kernel_0009_60b6526c428eef70c521b6a4c8ca71db__ncu.details.csv")
    if not path.exists():
        pytest.skip("no ncu 2025 details file")
    return path.read_text(encoding="utf-8")


def _metric_rows(rows: list[str]) -> list[str]:
    """The rows that end early (ncu's metric rows: 16 fields under the 20-column header)."""
    import csv

    return [row for row in rows if len(next(csv.reader([row]))) < 20]


def _without_metric_name(rows: list[str], at: int) -> list[str]:
    """``rows`` with the metric name (field 13) of row ``at`` made empty, as ncu leaves it on a rule row."""
    import csv
    import io

    fields = next(csv.reader([rows[at]]))
    fields[12] = ""
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(fields)
    return rows[:at] + [out.getvalue()] + rows[at + 1:]


@pytest.mark.parametrize("edit, arrow", [
    (lambda rows: rows[:5] + ["\n"] + rows[5:], False),  # a blank line: the table ends there
    (lambda rows: rows[:5] + ["==PROF== Connected to process 2\n"] + rows[5:], False),
    (lambda rows: rows[:5] + ["Total CPU Page faults: 49\n"] + rows[5:], False),
    (lambda rows: rows[:5] + [rows[5].rstrip("\n") + ',"x","y","z","w","v","u"\n'] + rows[6:], False),  # too wide
    (lambda rows: rows[:5] + [rows[5].replace('"', '"line\nbreak ', 1)] + rows[6:], False),  # a value on two lines
    (lambda rows: rows[:5] + ["," + rows[5].split(",", 1)[1]] + rows[6:], False),  # a row without its ID
    (lambda rows: rows[:5] + [_fields(rows[5], 8)] + rows[5:], True),  # a short row, padded as pandas pads it
    (lambda rows: rows + ["==PROF== Disconnected from process 2\n"], True),
    (lambda rows: rows, True),
    (lambda rows: _without_metric_name(_metric_rows(rows), 5), True),  # a row without a metric name among rows
    # that all end before the rule columns: a rule row whose rule columns are missing
], ids=["blank line", "banner", "line without comma", "row too wide", "line break in a value", "no ID",
        "short row", "banner after", "as written", "rule row as short as the rest"])
def test_rows_pyarrow_leaves_to_pandas(realdata_dir: Path, tmp_path: Path, monkeypatch, edit, arrow: bool) -> None:
    """Rule rows (every column) among metric rows (ending early) are read by pyarrow's reader; anything it
    would read otherwise than pandas' parser (where the table ends, a row wider than the header, a value
    with a line break, a row without an ID) is left to pandas: the three readings agree either way."""
    lines = _real_2025(realdata_dir).splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    path = tmp_path / "details.csv"
    path.write_text("".join(lines[:header + 1] + edit(lines[header + 1:])), encoding="utf-8")
    try:
        _both(path, monkeypatch, arrow=arrow)
    except InputError:  # a row without an ID is an error, which every reading must give
        with pytest.raises(InputError):
            with monkeypatch.context() as patch:
                patch.setattr(ncu_details, "read_stream", lambda *args, **kwargs: None)
                read_parts(path)


def test_chunks_decode_to_codes_in_order_of_first_appearance() -> None:
    # each chunk of the streaming reader is coded on its own; the decoded column numbers the values in the
    # order they first appear in the rows (as pandas.factorize does), -1 where a value is missing
    pa = pytest.importorskip("pyarrow")
    from nvperf_bridge.importers import coded

    rows = [["b", "a", None, "b"], [None, None], ["c", "a", "d"], [], ["d", "e"]]
    chunks = [pa.array(values, type=pa.string()).dictionary_encode() for values in rows]
    distinct, codes = coded._decode([coded._local_codes(chunk) for chunk in chunks], pa)
    flat = pd.Series([value for values in rows for value in values], dtype=object)
    expected_codes, expected_distinct = pd.factorize(flat, use_na_sentinel=True, sort=False)
    assert distinct.tolist() == list(expected_distinct) == ["b", "a", "c", "d", "e"]
    assert codes.tolist() == expected_codes.tolist()


@pytest.mark.parametrize("n_distinct, dtype", [(0, "int8"), (126, "int8"), (127, "int8"), (128, "int16"),
                                               (32767, "int16"), (32768, "int32")])
def test_codes_are_as_narrow_as_their_values_allow(n_distinct: int, dtype: str) -> None:
    # a code + 1 still fits (the section code of a repeated metric name is shifted by one)
    from nvperf_bridge.importers import coded

    code_type = coded.code_type(n_distinct)
    assert str(code_type) == dtype
    assert np.iinfo(code_type).min <= -1 and np.iinfo(code_type).max >= n_distinct


def test_a_metrics_unit_kind_is_the_one_most_of_its_values_have_ties_to_the_first_met() -> None:
    # ncu 2025 prints one metric in Mbyte on one launch and byte on the next (one kind), but a metric whose
    # rows mix kinds keeps the kind most of its values have (the others become missing, with a note); a tie
    # goes to the kind met first. _main_kinds counts on codes what DataFrame.value_counts counted on objects.
    from nvperf_bridge.text_storage import python_text

    rng = np.random.default_rng(0)
    kinds = np.array(["byte", "second", "count", "?", "percent"], dtype=object)
    with python_text():
        for _ in range(200):
            n_metric = int(rng.integers(1, 6))
            metric = rng.integers(0, n_metric, int(rng.integers(1, 60)))
            kind = rng.choice(kinds[:int(rng.integers(1, 6))], len(metric))
            expected = (pd.DataFrame({"m": metric, "b": kind}).value_counts(sort=True).reset_index()
                        .drop_duplicates("m").set_index("m")["b"])
            found = _main_kinds_as_text(metric, kind, n_metric)
            assert found == expected.sort_index().to_dict()
    tie = _main_kinds_as_text(np.array([0, 0, 0, 0, 1]), np.array(["second", "byte", "byte", "second", "count"],
                                                                   dtype=object), 3)
    assert tie == {0: "second", 1: "count"}  # metric 2 has no value: no kind


def _main_kinds_as_text(metric: np.ndarray, kind: np.ndarray, n_metric: int) -> dict[int, str]:
    """``ncu_details._main_kinds`` on the kinds' codes (as the importer codes them: a code per distinct text,
    in order of first appearance), read back as {metric: kind text} for the metrics with a value."""
    codes, names = pd.factorize(kind, sort=False)
    found = ncu_details._main_kinds(metric, codes, n_metric, len(names))
    assert found.shape == (n_metric,)
    return {m: names[k] for m, k in enumerate(found.tolist()) if k >= 0}


def test_first_rows_are_where_each_code_is_first_met() -> None:
    # _first_rows finds a launch's first row without np.unique's sort, for codes numbered in order of first
    # appearance (pd.factorize, sort=False): the same positions, in code order
    rng = np.random.default_rng(1)
    for _ in range(300):
        values = rng.integers(0, int(rng.integers(1, 50)), int(rng.integers(0, 200)))
        codes, _distinct = pd.factorize(values, sort=False)
        expected = np.unique(codes, return_index=True)[1]
        assert ncu_details._first_rows(codes).tolist() == expected.tolist()


@pytest.mark.parametrize("column, gives_up", [("b", True), ("c", False)])
def test_a_value_not_utf8_in_a_column_read_sends_the_table_to_pandas(tmp_path: Path, column: str,
                                                                     gives_up: bool) -> None:
    # the reader leaves the UTF-8 check to the decoding of each distinct value: a value that is not UTF-8 in a
    # column it reads still makes it give up (pandas' parser then reads the table), one in a column it skips not
    from nvperf_bridge.importers import coded

    rows = [["1", "x", "p"], ["2", "y", "q"], ["3", "x", "r"]]
    data = b"".join(b",".join(f'"{field}"'.encode() for field in row) + b"\n" for row in rows)
    bad = data.replace(b'"q"', b'"\xff\xfe"') if column == "c" else data.replace(b'"y"', b'"\xff\xfe"')
    path = tmp_path / "table.csv"
    path.write_bytes(bad)
    read = coded.read_arrow_table(path, 0, len(bad), ["a", "b", "c"], ["a", "b"], 3)
    assert (read is None) == gives_up
    if read is not None:
        columns, n_rows = read
        assert n_rows == 3 and columns["b"].values().tolist() == ["x", "y", "x"]
