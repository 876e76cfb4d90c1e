"""Robustness: what the tool writes is safe, and it never destroys a file.

Kernel names are attacker-controlled text (a profiled binary chooses them):
they must reach Excel as text, never a formula; Markdown must not let them
break a table or inject HTML; they must never become file paths. YAML is only
read with safe loaders. Outputs are replaced only with --force, written
atomically, and an interrupted run (SIGINT or SIGKILL mid-write) leaves
either no file or the previous complete one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nvperf_bridge.cli import main

REPO = Path(__file__).resolve().parent.parent

HOSTILE_NAMES = [
    "=1+2", "+SUM(A1:A9)", "-2+3", "@SUM(1,1)", "\tTAB_START", "\rCR_START", "=cmd|' /C calc'!A0",
    '=HYPERLINK("http://evil.example","click")', "a|b|c", "`code` **bold**", "<script>alert(1)</script>",
    "../../etc/x", "/tmp/abs_name", "name\nwith newline",
]


def kernel_yaml(names: list[str], device: str = "Tesla V100-SXM2-16GB") -> str:
    lines = [f"device: {device}", "kernels:"]
    for i, name in enumerate(names):
        lines.append(f"  - kernel_name: {json.dumps(name)}")
        lines.append(f"    kernel_id: '{i}'")
        lines.append(textwrap.indent(textwrap.dedent(f"""\
            grid_blocks: {80 + i}
            block_threads: 256
            duration_ns: {10000 + 37 * i}
            achieved_occupancy: 0.5
            inst_executed: {100000 + i}
            inst_issued: {100000 + i}
            inst_global_ld: 1000
            inst_global_st: 500
            global_ld_sectors: 4000
            global_st_sectors: 2000
            dram_read_bytes: 128000
            dram_write_bytes: 64000
            flop_sp: 1000000"""), "    "))
    return "\n".join(lines) + "\n"


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / "input" / "hostile.yaml"
    path.parent.mkdir()
    path.write_text(kernel_yaml(HOSTILE_NAMES))
    return path


# ---- Excel: formula injection -------------------------------------------------

def test_excel_keeps_hostile_names_as_text(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    out = tmp_path / "review.xlsx"
    assert main(["analyze", str(hostile), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    wb = openpyxl.load_workbook(out)
    cells = [c for ws in wb.worksheets for row in ws.iter_rows() for c in row if c.value is not None]
    found = {}
    for cell in cells:
        if isinstance(cell.value, str):
            found.setdefault(cell.value, []).append(cell)
    for name in HOSTILE_NAMES:
        # XML end-of-line normalisation turns a stored CR into LF when any XML reader loads the sheet;
        # openpyxl writes no character reference for it (documented in docs/robustness.md)
        expected = name.replace("\r", "\n")
        assert expected in found, f"{name!r} not found unchanged in any cell"
        assert all(c.data_type == "s" for c in found[expected]), name
    # no cell anywhere is a formula built from a kernel name
    for cell in cells:
        if cell.data_type == "f":
            assert not any(name.strip("=+-@\t\r") in str(cell.value) for name in HOSTILE_NAMES if len(name) > 3), \
                f"{cell.parent.title}!{cell.coordinate} = {cell.value!r}"


# ---- Markdown / HTML ------------------------------------------------------------

def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown_tables_survive_hostile_names(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(hostile), "-q"]) == 0
    out = capsys.readouterr().out
    assert "<script>" not in out
    tables: list[list[str]] = []
    previous = ""
    for line in out.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    assert tables
    for table in tables:
        width = _unescaped_pipes(table[0])
        for row in table:
            assert _unescaped_pipes(row) == width, row
    assert "a\\|b\\|c" in out


# ---- YAML -------------------------------------------------------------------------

def test_yaml_is_read_only_with_safe_loaders() -> None:
    unsafe = re.compile(r"yaml\.(unsafe_load|full_load|load_all|load)\s*\((?![^)]*SafeLoader)|yaml\.(Full|Unsafe)?Loader\b")
    offenders = []
    for folder in ("nvperf_bridge", "plugins"):
        for path in (REPO / folder).rglob("*.py"):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if unsafe.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_yaml_tags_are_not_executed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f"kernels:\n  - kernel_name: !!python/object/apply:os.system ['touch {marker}']\n")
    assert main(["inspect", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err
    assert not marker.exists()


# ---- names never become paths ----------------------------------------------------

def test_kernel_names_never_become_file_paths(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "deep" / "out"
    out_dir.mkdir(parents=True)
    before = {p for p in tmp_path.rglob("*")}
    assert main(["analyze", str(hostile), "-o", str(out_dir / "report.md"), "-q"]) == 0
    capsys.readouterr()
    created = {p for p in tmp_path.rglob("*")} - before
    assert created, "the report was written"
    assert all(p.parent == out_dir for p in created), sorted(map(str, created))
    assert not Path("/tmp/abs_name").exists() or Path("/tmp/abs_name").stat().st_mtime < time.time() - 60


# ---- replacing outputs -------------------------------------------------------------

def test_existing_output_is_replaced_only_with_force(hostile: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    out.write_text("precious")
    assert main(["analyze", str(hostile), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err and "--force" in err
    assert out.read_text() == "precious"
    assert main(["analyze", str(hostile), "-o", str(out), "--force", "-q"]) == 0
    assert json.loads(out.read_text())["schema_version"] == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_input_is_never_overwritten_by_the_output(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = hostile.read_bytes()
    code = main(["analyze", str(hostile), "-o", str(hostile.with_suffix(".md")), "-q"])
    assert code == 0
    code = main(["analyze", str(hostile), "-f", "md", "-o", str(hostile)])
    assert code == 1 and "already exists" in capsys.readouterr().err
    assert hostile.read_bytes() == before


# ---- interrupted writes --------------------------------------------------------------

def _big_input(tmp_path: Path, kernels: int) -> Path:
    path = tmp_path / "big.yaml"
    path.write_text(kernel_yaml([f"kernel_{i}<float, {i % 7}>(float*, int)" for i in range(kernels)]))
    return path


def _strays(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name or p.name.startswith("."))


INTERRUPT_IN_WRITE = """
import os, signal, sys
import nvperf_bridge.reports.write as write
real_fsync = os.fsync
def fsync_then_die(fd):
    real_fsync(fd)  # the temporary file is complete on disk; the rename has not happened yet
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
write.os.fsync = fsync_then_die
from nvperf_bridge.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGKILL"])
def test_signal_between_temp_file_and_rename_keeps_the_previous_file(tmp_path: Path, signame: str) -> None:
    source = _big_input(tmp_path, 30)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.xlsx"
    assert main(["analyze", str(source), "-o", str(out), "-q"]) == 0
    previous = out.read_bytes()
    proc = subprocess.run([sys.executable, "-c", INTERRUPT_IN_WRITE, signame, "analyze", str(source), "-o", str(out),
                           "--force", "-q"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.read_bytes() == previous
    if signame == "SIGINT":
        assert proc.returncode == 130 and "Traceback" not in proc.stderr
        assert _strays(out_dir) == []  # the temporary file was removed
    else:
        assert proc.returncode == -signal.SIGKILL
        # SIGKILL cannot be handled: the temporary file stays, under a recognisable name
        assert all(re.fullmatch(r"\.out\.xlsx\..+\.tmp", name) for name in _strays(out_dir)), _strays(out_dir)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGKILL"])
def test_signal_at_random_moments_never_leaves_a_partial_file(tmp_path: Path, signame: str) -> None:
    """Start a real run on a generated big input and interrupt it at a few moments while it works."""
    source = _big_input(tmp_path, 1500)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.xlsx"
    out.write_bytes(b"previous complete report")  # stands in for an earlier run's workbook
    for delay in (0.5, 1.5, 3.0, 5.0):
        proc = subprocess.Popen([sys.executable, "-m", "nvperf_bridge", "analyze", str(source), "-o", str(out),
                                 "--force", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        time.sleep(delay)
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=300)
        assert "Traceback" not in err
        data = out.read_bytes()
        if proc.returncode == 0:  # finished before the signal: a complete new workbook
            assert data[:2] == b"PK"
            out.write_bytes(b"previous complete report")
        else:
            assert data == b"previous complete report"
        if signame == "SIGINT":
            assert _strays(out_dir) == []
        else:
            assert all(re.fullmatch(r"\.out\.xlsx\..+\.tmp", name) for name in _strays(out_dir))
