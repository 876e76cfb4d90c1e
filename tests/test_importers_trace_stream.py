"""nvprof GPU traces are streamed from the file (never held as one text) into what the whole-text path gives.

Each case is read twice, streamed and with streaming turned off, and the two must agree value for value
and note for note; what the stream cannot settle alone (text after the table, the header repeated under
the rows) goes to the whole-text path.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.importers import nvprof_trace, read_parts
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
