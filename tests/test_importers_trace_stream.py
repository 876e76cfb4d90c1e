"""nvprof GPU traces are streamed from the file (never held as one text) into what the whole-text path gives.

Each case is read twice, streamed and with streaming turned off, and the two must agree value for value
and note for note; what the stream cannot settle alone (text after the table, the header repeated under
the rows) goes to the whole-text path.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.errors import InputError
from nvperf_bridge.importers import nvprof_trace, read_parts, text
from conftest import realdata_files

FIX = Path(__file__).resolve().parent / "fixtures" / "import"


def _both(path: Path, monkeypatch: pytest.MonkeyPatch):
    used = []
    original = nvprof_trace.read_stream

    def spy(*args, **kwargs):
        parsed = original(*args, **kwargs)
        used.append(parsed is not None)
        return parsed

    with monkeypatch.context() as patch:
        patch.setattr(nvprof_trace, "read_stream", spy)
        streamed = read_parts(path)
    with monkeypatch.context() as patch:
        patch.setattr(nvprof_trace, "read_stream", lambda *args, **kwargs: None)
        whole = read_parts(path)
    assert len(streamed) == len(whole)
    for a, b in zip(streamed, whole):
        # what a join reads before the launch ids are made (Parsed.deferred): the frame's columns and rows
        assert a.columns == list(b.frame.columns) and len(a.lean) == len(b.frame)
        pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
        assert vars(a.info) == vars(b.info)
    return streamed, any(used)


def _traces() -> list[Path]:
    from nvperf_bridge.importers import sniff

    found = []
    for path in realdata_files():
        try:
            if sniff(path) == "nvprof-trace":
                found.append(path)
        except Exception:  # not a profiler file: not this test's
            continue
    return found


@pytest.mark.parametrize("path", _traces()[:60], ids=lambda p: p.name)
def test_real_traces_stream_to_what_the_whole_text_gives(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, streamed = _both(path, monkeypatch)
    assert streamed, "a plain trace is streamed"
    assert len(parts[0].frame) > 0


def _real_trace(realdata_dir: Path) -> str:
    traces = sorted((realdata_dir / "magus").glob("*trace*"))
    if not traces:
        pytest.skip("no magus trace")
    return traces[0].read_text(encoding="utf-8")


@pytest.mark.parametrize("tail", ["\n\n", "\n==1== API calls:\nTime(%),Time,Calls,Avg,Min,Max,Name\n1,2,3,4,5,6,cudaMalloc\n",
                                  "\nTotal CPU Page faults: 49\n"])
def test_text_after_the_trace_goes_the_whole_text_way(realdata_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch, tail: str) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(_real_trace(realdata_dir).rstrip("\n") + "\n" + tail, encoding="utf-8")
    parts, streamed = _both(path, monkeypatch)
    assert streamed == (not tail.strip()), "only blank lines after the table keep it streamed"
    assert len(parts[0].frame) > 0


def test_a_repeated_header_goes_the_whole_text_way(monkeypatch: pytest.MonkeyPatch) -> None:
    (part,), streamed = _both(FIX / "nvprof_trace_runs_appended.csv", monkeypatch)
    assert not streamed and part.info.kernels == 3


@pytest.mark.parametrize("memcpy", ["late", "none"])
def test_small_blocks_with_columns_empty_at_first_or_throughout(realdata_dir: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch, memcpy: str) -> None:
    # pyarrow's reader leaves a number column untouched until its first value (memcpy's Size and Throughput
    # on kernel rows) and holds a column without any value as one NaN: both give pandas' frame
    lines = (realdata_dir / "magus" / "magus__traces_rodinia_lud.csv").read_text(encoding="utf-8").splitlines(True)
    copies = [i for i, line in enumerate(lines) if "[CUDA memcpy" in line]
    dropped = set(copies[:1] if memcpy == "late" else copies)
    path = tmp_path / "trace.csv"
    path.write_text("".join(line for i, line in enumerate(lines) if i not in dropped), encoding="utf-8")
    monkeypatch.setattr(nvprof_trace, "ARROW_BLOCK", 512)  # a few rows per block
    monkeypatch.setattr(nvprof_trace, "RELEASE_EVERY", 1)
    read = []
    original = nvprof_trace._arrow_table
    monkeypatch.setattr(nvprof_trace, "_arrow_table", lambda *a, **k: read.append(original(*a, **k)) or read[-1])
    (part,), streamed = _both(path, monkeypatch)
    assert streamed and read[0] is not None, "pyarrow's reader read it"
    assert part.info.kernels == len(lines) - 5 - len(copies)
    assert any("memcpy" in entry for entry in part.info.skipped) == (memcpy == "late")


def _parse_threads() -> list:
    import threading

    return [t for t in threading.enumerate() if t.name == "nvprof-trace-parse"]


@pytest.mark.parametrize("change", ["crlf", "nul", "ragged"])
def test_what_pyarrow_must_not_read_goes_to_pandas_and_its_parse_thread_stops(
        realdata_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    # pyarrow parses on a thread of its own while carriage returns and NUL bytes are looked for, and a ragged
    # row stops it blocks later: each time the whole-text path reads the file, and no parse thread is left
    lines = (realdata_dir / "magus" / "magus__traces_rodinia_lud.csv").read_text(encoding="utf-8").splitlines(True)
    head = next(i for i, line in enumerate(lines) if line.startswith('"Start"')) + 2  # header and units rows
    rows = lines[head:]
    lines = lines[:head] + rows * (text.STREAM_HEAD_BYTES // len("".join(rows)) + 2)  # past the head read first
    if change == "crlf":
        lines[-3] = lines[-3].replace("\n", "\r\n")
    elif change == "nul":
        lines[-3] = lines[-3].replace("lud_", "lud\x00_", 1)
    else:
        lines[-3] = lines[-3].rstrip("\n") + ",1\n"
    path = tmp_path / "trace.csv"
    path.write_text("".join(lines), encoding="utf-8", newline="")
    monkeypatch.setattr(nvprof_trace, "ARROW_BLOCK", 1 << 16)  # many blocks: the parse runs ahead
    read = []
    original = nvprof_trace._arrow_table
    monkeypatch.setattr(nvprof_trace, "_arrow_table", lambda *a, **k: read.append(original(*a, **k)) or read[-1])
    if change == "nul":  # the whole-text path's one-line error, naming the line
        with pytest.raises(InputError, match=f"line {len(lines) - 2} holds a NUL byte"):
            read_parts(path)
    else:
        _both(path, monkeypatch)
    assert read and read[0] is None, "pyarrow's reader handed the file on"
    assert not _parse_threads()


def test_a_read_ahead_stopped_early_leaves_no_thread() -> None:
    # the consumer may stop after the first block (a row without a name): closing waits for the thread
    stream = nvprof_trace._ReadAhead(iter(range(100)), 2)
    assert next(stream) == 0
    stream.close()
    assert not _parse_threads()
    with nvprof_trace._ReadAhead(iter([1, 2]), 1) as both:
        assert list(both) == [1, 2]
    failing = nvprof_trace._ReadAhead((1 / x for x in (1, 0)), 1)
    assert next(failing) == 1.0
    with pytest.raises(ZeroDivisionError):
        next(failing)
    failing.close()
    assert not _parse_threads()


def test_the_file_is_read_no_further_ahead_than_the_batches_taken_allow(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # pyarrow's I/O thread would read up to 32 blocks ahead of its parse: FileRegion(ahead=2) gives out two
    # reads, the third waits for a batch taken (or for unpace), and the bytes read are the file's
    import threading

    from nvperf_bridge.importers.arrow_csv import FileRegion

    monkeypatch.setattr(FileRegion, "PACE_WAIT_S", 60.0)  # the wait's own limit out of the way
    path = tmp_path / "blocks.bin"
    path.write_bytes(b"abcdefghij" * 3)
    got: list[bytes] = []
    two_read = threading.Event()
    with FileRegion(path, 2, 28, ahead=2) as source:
        def read_all() -> None:
            while block := source.read(8):
                got.append(block)
                if len(got) == 2:
                    two_read.set()

        reader = threading.Thread(target=read_all)
        reader.start()
        assert two_read.wait(10)
        reader.join(0.3)
        assert len(got) == 2 and reader.is_alive(), "the third read waits"
        source.taken()
        while len(got) < 3 and reader.is_alive():
            reader.join(0.01)
        assert len(got) == 3, "a batch taken lets one more read go"
        source.unpace()  # a consumer that stops: every read goes on
        reader.join(10)
        assert not reader.is_alive()
    assert b"".join(got) == (b"abcdefghij" * 3)[2:28]


def _blank_cells(text: str, column: str, which) -> str:
    """The trace ``text`` with ``column`` left empty on the data rows ``which(i, name)`` picks."""
    import csv
    import io

    lines = text.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith('"Start"'))
    names = next(csv.reader([lines[header]]))
    at, name_at = names.index(column), names.index("Name")
    out = lines[:header + 2]
    for i, line in enumerate(lines[header + 2:]):
        row = next(csv.reader([line]))
        if len(row) == len(names) and which(i, row[name_at]):
            row[at] = ""
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(row)
        out.append(buffer.getvalue())
    return "".join(out)


@pytest.mark.parametrize("column, which", [
    ("Context", lambda i, name: i % 2 == 1),  # a gap every other launch: kept, the gaps missing
    ("Stream", lambda i, name: not name.startswith("[")),  # only the memcpy rows name a stream: left out
], ids=["context-with-gaps", "stream-only-on-memcpy-rows"])
def test_context_and_stream_of_the_kept_launches_as_the_whole_text_gives(
        realdata_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str, which) -> None:
    # the streamed trace makes these columns only when its launches are read (LaunchIds): which launches
    # have a stream or context, and whether the column is kept at all, must come out as read whole
    path = tmp_path / "trace.csv"
    path.write_text(_blank_cells(_real_trace(realdata_dir), column, which), encoding="utf-8")
    parts, streamed = _both(path, monkeypatch)
    assert streamed
    frame = parts[0].frame
    if column == "Stream":
        assert "Stream" not in frame.columns and frame["Context"].notna().all()
    else:
        assert frame["Context"].isna().any() and frame["Context"].notna().any()
