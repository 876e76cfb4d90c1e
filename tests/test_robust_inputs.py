"""Robustness: files that are not profiler output get a specific one-line message through the CLI.

For each kind of wrong file, ``analyze`` and ``inspect`` exit 1, print exactly
one line on stderr that names the file, says what the file is (or what the
tool expected) and how to produce the right input, print nothing on stdout,
and show no traceback.
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import pytest

from nvperf_bridge.cli import main

FIX = Path(__file__).resolve().parent / "fixtures" / "import"


def _xlsx() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    return buffer.getvalue()


# name -> (file name, content or None for a directory, words the message must contain)
CASES: dict[str, tuple[str, bytes | None, tuple[str, ...]]] = {
    "ncu-rep passed as csv": ("profile.csv", b"NVRP\x00\x01\x00\x00ncu report\x00\x08\x12" + bytes(range(256)) * 4,
                              ("Nsight Compute report", "ncu -i FILE --csv --page raw")),
    "ncu-rep by name": ("run.ncu-rep", b"\x0a\x0b" + bytes(range(256)) * 4,
                        ("Nsight Compute report", "ncu -i FILE --csv --page raw")),
    "png": ("roofline.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64, ("image", "ncu --csv")),
    "empty": ("empty.csv", b"", ("empty", "ncu --csv")),
    "blank lines only": ("blank.csv", b"\n\n  \n", ("empty", "ncu --csv")),
    # analyze searches a folder for profiles (discovery.py); inspect wants files
    "directory": ("results", None, ()),
    "only PROF lines": ("prof.csv", b"==PROF== Connected to process 4242 (/usr/bin/app)\n"
                                    b"==PROF== Disconnected from process 4242\n",
                        ("only profiler messages", "no kernel was profiled", "--kernel-name")),
    "profiler error only": ("err.csv", (FIX / "ncu_error_only.csv").read_bytes(),
                            ("only an error", "==ERROR== The application returned an error code (1).")),
    "nsys report": ("timeline.nsys-rep", b"\x00\x00NSYS" + b"\x01" * 100, ("Nsight Systems", "nvprof -i FILE --csv")),
    "nsys kernel summary csv": ("kern_sum.csv",
                                b'"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)",'
                                b'"Max (ns)","StdDev (ns)","Name"\n'
                                b'55.1,1000,2,500.0,500.0,400,600,141.4,"vecAdd(float*, int)"\n',
                                ("Nsight Systems", "no hardware counters", "ncu --csv --page raw")),
    "sqlite": ("report.sqlite", b"SQLite format 3\x00" + b"\x00" * 100, ("database", "--csv")),
    "excel": ("review.xlsx", _xlsx(), ("Excel workbook", "CSV")),
    "excel renamed": ("review.csv", _xlsx(), ("Excel workbook", "CSV")),
    "gzip": ("profile.csv.gz", gzip.compress(b'"ID","Kernel Name"\n"0","k"\n'), ("gzip", "gunzip -c")),
    "zip": ("results.zip", b"PK\x03\x04" + b"\x00" * 60, ("archive", "unpack")),
    "json": ("out.json", b'{"kernels": []}', ("JSON", "ncu --csv")),
    "prose": ("notes.txt", b"These are my profiling notes.\nNo table here.\n", ("no CSV table found", "ncu --csv")),
    # a profiler table with a column cut away (edited in a spreadsheet): which column, and what to pass instead
    "ncu details without units": ("details.csv", b'"ID","Kernel Name","Metric Name","Metric Value"\n'
                                                 b'"0","k","dram__bytes.sum","1024"\n',
                                  ("no 'Metric Unit' column", "ncu --csv", "--page raw")),
    # UTF-16 with a BOM is read now (issue 18, PowerShell redirects): tests/test_importers_input.py
}


def _make(tmp_path: Path, name: str) -> Path:
    file_name, content, _ = CASES[name]
    path = tmp_path / file_name
    if content is None:
        path.mkdir()
        (path / "a.csv").write_text("x")
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("command", ["analyze", "inspect"])
@pytest.mark.parametrize("name", list(CASES))
def test_not_a_profile_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                                         name: str) -> None:
    path = _make(tmp_path, name)
    code = main([command, str(path)])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert captured.out == ""
    assert "Traceback" not in captured.err
    assert captured.err.count("\n") == 1, captured.err
    line = captured.err
    assert line.startswith("nvperf-bridge: error: ") and str(path) in line
    assert "internal error" not in line
    if name == "directory":
        expected = ("no profiler output found", "ncu --csv") if command == "analyze" else ("directory", "CSV files")
        assert all(words in line for words in expected), line
    for words in CASES[name][2]:
        assert words in line, f"{words!r} not in {line!r}"


def test_files_are_never_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reading a wrong file leaves it byte for byte as it was."""
    for name in CASES:
        sub = tmp_path / name.replace(" ", "_")
        sub.mkdir()
        path = _make(sub, name)
        before = path.read_bytes() if path.is_file() else None
        main(["analyze", str(path)])
        assert (path.read_bytes() if path.is_file() else None) == before
    capsys.readouterr()


def test_missing_file_and_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tmp_path / "nope.csv")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err
    assert main(["analyze"]) == 2
    assert "Traceback" not in capsys.readouterr().err
