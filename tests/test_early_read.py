"""A large trace's reader opened before pandas is imported (``importers.early_read``) gives the report the
importer's own reader gives, is taken by the importer when its plan is the same, and leaves no thread or
open reader behind when it is not taken or could not open."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.importers import early_read, nvprof_trace, trace_reader


def _pair(realdata_dir: Path) -> tuple[Path, Path]:
    folder = realdata_dir / "magus"
    return folder / "magus__metrics_rodinia_lud.csv", folder / "magus__traces_rodinia_lud.csv"


def _analyze(capsys: pytest.CaptureFixture[str], *files: Path) -> str:
    assert main(["analyze", *map(str, files), "--format", "json", "-q", "--gpu", "gtx-1080-ti"]) == 0
    out = capsys.readouterr().out
    return "\n".join(line for line in out.splitlines() if '"created"' not in line)


def _all_closed() -> bool:
    """No reader thread left, nothing held open, the interpreter's switch interval back to what it was."""
    threads = [t.name for t in threading.enumerate()
               if t.name in ("early-read-open", trace_reader.PARSE_THREAD) and t.is_alive()]
    return not threads and not early_read._started and sys.getswitchinterval() == SWITCH_INTERVAL


SWITCH_INTERVAL = sys.getswitchinterval()


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every reader the importer was handed by ``early_read.take`` (None: it opened its own)."""
    out: list[object] = []
    original = early_read.take
    monkeypatch.setattr(early_read, "take", lambda plan: out.append(original(plan)) or out[-1])
    return out


def test_an_early_reader_is_taken_and_gives_the_same_report(realdata_dir: Path, capsys, monkeypatch, taken) -> None:
    metrics, trace = _pair(realdata_dir)
    monkeypatch.setattr(early_read, "EARLY_MIN_BYTES", 1 << 40)  # nothing is opened early
    usual = _analyze(capsys, metrics, trace)
    assert taken == [None]
    monkeypatch.setattr(early_read, "EARLY_MIN_BYTES", 0)  # the small trace as if it were large
    monkeypatch.setattr(trace_reader, "ARROW_BLOCK", 1 << 12)  # many blocks, parsed ahead before the take
    early = _analyze(capsys, metrics, trace)
    assert isinstance(taken[-1], trace_reader.TraceBatches), "the importer read the batches opened early"
    assert early == usual
    assert _all_closed()


def test_a_reader_not_taken_is_closed(realdata_dir: Path, tmp_path: Path, capsys, monkeypatch, taken) -> None:
    # the trace is changed after the early start (its size, so the importer's plan differs): the importer
    # opens its own reader on what the file holds now, and the early one is closed at the end of the command
    metrics, trace = _pair(realdata_dir)
    copy = tmp_path / trace.name
    copy.write_bytes(trace.read_bytes())
    monkeypatch.setattr(early_read, "EARLY_MIN_BYTES", 0)
    started = []
    original_start = early_read.start

    def start_then_append(paths):
        original_start(paths)
        started.extend(early_read._started)
        with copy.open("ab") as fh:  # one more launch row: the same layout, another size
            fh.write(copy.read_bytes().splitlines(keepends=True)[-1])

    monkeypatch.setattr(early_read, "start", start_then_append)
    out = _analyze(capsys, metrics, copy)
    assert len(started) == 1 and taken == [None]
    assert _all_closed()
    monkeypatch.setattr(early_read, "start", lambda paths: None)
    assert _analyze(capsys, metrics, copy).replace(str(copy), "") == out.replace(str(copy), "")


def test_a_reader_that_fails_to_open_sends_the_importer_to_pandas(realdata_dir: Path, tmp_path: Path, capsys,
                                                                  monkeypatch) -> None:
    # a ragged first row stops the early reader as it opens: the importer is handed the error where it would
    # have met it opening its own, and reads the file with pandas' parser as it always did
    metrics, trace = _pair(realdata_dir)
    lines = trace.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith('"Start"')) + 2  # header and units rows
    lines[first] = lines[first].rstrip("\n") + ",1\n"
    ragged = tmp_path / trace.name
    ragged.write_text("".join(lines), encoding="utf-8")
    raised = []
    original = early_read.take

    def take(plan):
        try:
            return original(plan)
        except Exception as exc:
            raised.append(exc)
            raise

    monkeypatch.setattr(early_read, "take", take)
    monkeypatch.setattr(early_read, "EARLY_MIN_BYTES", 0)
    early = _analyze(capsys, metrics, ragged)
    assert len(raised) == 1, "the early reader failed as it opened, and the importer was told"
    assert _all_closed()
    monkeypatch.setattr(early_read, "EARLY_MIN_BYTES", 1 << 40)
    assert _analyze(capsys, metrics, ragged) == early


def test_what_is_opened_early(realdata_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # only a large trace that this process reads itself: not a folder (its files are found later), not files
    # that worker processes parse, not a small file, not another layout
    from nvperf_bridge import discovery
    from nvperf_bridge.commands.analyze import start_early_reads

    metrics, trace = _pair(realdata_dir)
    early_read.start([trace])
    assert not early_read._started, "under EARLY_MIN_BYTES"
    monkeypatch.setattr(early_read, "EARLY_MIN_BYTES", 0)
    start_early_reads([metrics])
    start_early_reads([trace.parent])
    assert not early_read._started
    other = tmp_path / "other_trace.csv"
    other.write_bytes(trace.read_bytes())
    monkeypatch.setattr(discovery, "IN_PROCESS_BYTES", 0)  # two traces of one size: a pool parses them
    start_early_reads([trace, other])
    assert not early_read._started
    monkeypatch.undo()
    monkeypatch.setattr(early_read, "EARLY_MIN_BYTES", 0)
    start_early_reads([metrics, trace])
    assert [plan.path for plan in early_read._started] == [str(trace.resolve())]
    early_read.close_all()
    assert _all_closed()


def test_opening_early_imports_no_pandas() -> None:
    # the point of it: the reader opens while the command imports pandas, so it must not import pandas itself
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from nvperf_bridge.importers import early_read; "
            "early_read.start([Path(sys.argv[1])]); early_read.close_all(); "
            "print(sorted(m for m in ('pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, __file__], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
