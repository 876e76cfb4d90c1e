"""ncu details tables are streamed from the file (never held as one text) into what the whole-text path gives.

Each case is read twice, streamed and with streaming turned off, and the two must agree value for value,
note for note and rule for rule, for every metric and for only the metrics in use; what the stream cannot
settle alone (a line with a comma after the table, the header repeated under the rows) goes to the
whole-text path, which gives the same answer.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from conftest import realdata_files
from nvperf_bridge.importers import ncu_details, read_parts

USED = frozenset({"sm__throughput.avg.pct_of_peak_sustained_elapsed"})  # a raw name the models could ask for


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, raw_columns: frozenset[str] | None = None):
    used = []
    original = ncu_details.read_stream

    def spy(*args, **kwargs):
        parsed = original(*args, **kwargs)
        used.append(parsed is not None)
        return parsed

    with monkeypatch.context() as patch:
        patch.setattr(ncu_details, "read_stream", spy)
        streamed = read_parts(path, raw_columns=raw_columns)
    with monkeypatch.context() as patch:
        patch.setattr(ncu_details, "read_stream", lambda *args, **kwargs: None)
        whole = read_parts(path, raw_columns=raw_columns)
    assert len(streamed) == len(whole)
    for a, b in zip(streamed, whole):
        pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
        assert vars(a.info) == vars(b.info)
        if b.rules is None:
            assert a.rules is None
        else:
            pd.testing.assert_frame_equal(a.rules, b.rules, check_exact=True)
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
    parts, streamed = _both(path, monkeypatch, raw_columns)
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
