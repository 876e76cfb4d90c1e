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
import stat
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest
from openpyxl import load_workbook

from nvperf_bridge.cli import main

REPO = Path(__file__).resolve().parent.parent
FIXTURE_YAML = REPO / "tests" / "fixtures" / "reports" / "demo_gtx280.yaml"

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
    # a name is shown verbatim in a code span (rendered as text, never as HTML); outside one, no raw tag
    assert "<script>" not in re.sub(r"(`+).*?\1", "", out)
    assert "`<script>alert(1)</script>`" in out
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
    assert json.loads(out.read_text())["schema_version"] == 3
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


def _default_signals() -> None:
    """In a child: SIGINT and SIGTERM back to their default actions. A child inherits an ignored
    signal (pytest started by nohup, as a background job, by some CI runners), and these tests are
    about what the tool does when the signal arrives."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def _run_child(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          preexec_fn=_default_signals, env=env)


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


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_signal_between_temp_file_and_rename_keeps_the_previous_file(tmp_path: Path, signame: str) -> None:
    source = _big_input(tmp_path, 30)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.xlsx"
    assert main(["analyze", str(source), "-o", str(out), "-q"]) == 0
    previous = out.read_bytes()
    proc = _run_child("-c", INTERRUPT_IN_WRITE, signame, "analyze", str(source), "-o", str(out), "--force", "-q",
                      cwd=tmp_path)
    assert out.read_bytes() == previous
    if signame in ("SIGINT", "SIGTERM"):
        assert proc.returncode == 128 + getattr(signal, signame), proc.stderr
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
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
                                 "--force", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                preexec_fn=_default_signals, env={**os.environ, "TMPDIR": str(tmp_path)})
        time.sleep(delay)
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=300)
        assert "Traceback" not in err
        replaced = out.read_bytes() != b"previous complete report"
        assert replaced or proc.returncode != 0, "a run that finished wrote its workbook"
        if replaced:
            # the run got as far as the atomic rename before the signal (it may still have been
            # exiting, so the return code says nothing here): the file is a complete new workbook
            with zipfile.ZipFile(out) as archive:
                assert archive.testzip() is None
            load_workbook(out, read_only=True).close()
            out.write_bytes(b"previous complete report")
        if signame == "SIGINT":
            assert _strays(out_dir) == []
            assert list(tmp_path.glob("openpyxl.*")) == []  # openpyxl's sheet files too
        else:  # SIGKILL: openpyxl's sheet files stay in TMPDIR (here tmp_path), as they would for any program
            assert all(re.fullmatch(r"\.out\.xlsx\..+\.tmp", name) for name in _strays(out_dir))


INTERRUPT_IN_WORKBOOK = """
import os, signal, sys
from openpyxl.worksheet import _write_only
real_append = _write_only.WriteOnlyWorksheet.append
calls = []
def append_then_signal(self, row):
    calls.append(1)
    if len(calls) == int(sys.argv[2]):  # in the middle of building the workbook, as Ctrl-C under load lands
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    return real_append(self, row)
_write_only.WriteOnlyWorksheet.append = append_then_signal
from nvperf_bridge.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_signal_while_the_workbook_is_built_prints_one_line(tmp_path: Path, signame: str) -> None:
    """A signal inside openpyxl: no "Exception ignored" tracebacks from its half-built sheets, the
    previous file kept, no temporary file left: neither ours beside the output nor openpyxl's sheet
    files in the temporary folder."""
    source = _big_input(tmp_path, 30)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.xlsx"
    out.write_bytes(b"previous complete report")
    temp_dir = tmp_path / "tmp"
    temp_dir.mkdir()
    for at in (3, 12):
        proc = _run_child("-c", INTERRUPT_IN_WORKBOOK, signame, str(at), "analyze", str(source), "-o", str(out),
                          "--force", "-q", cwd=tmp_path, env={**os.environ, "TMPDIR": str(temp_dir)})
        assert sorted(p.name for p in temp_dir.iterdir()) == []
        assert proc.returncode == 128 + getattr(signal, signame), proc.stderr
        assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr
        assert out.read_bytes() == b"previous complete report"
        assert _strays(out_dir) == []


def test_stale_temporary_file_of_a_killed_run_is_removed_next_time(tmp_path: Path) -> None:
    """A SIGKILLed run leaves its temporary file; the next write to that output removes it when its
    process is gone, and keeps one whose process still runs (it may be writing it)."""
    from nvperf_bridge.reports.write import _temp_name

    out = tmp_path / "out.json"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = Path(_temp_name(out).replace(f"-{os.getpid()}-", f"-{int(dead.stdout)}-"))
        busy = Path(_temp_name(out).replace(f"-{os.getpid()}-", f"-{alive.pid}-"))
        other = tmp_path / ".other.json.nvperf-x-1-00000000.tmp"  # another output's: not ours to judge
        for path in (stale, busy, other):
            path.write_bytes(b"half a report")
        assert main(["analyze", str(FIXTURE_YAML), "-o", str(out), "-q"]) == 0
        assert json.loads(out.read_text())["schema_version"] >= 1
        assert not stale.exists() and busy.exists() and other.exists()
    finally:
        alive.kill()
        alive.wait()


# ---- what an output path names --------------------------------------------------------

def test_fifo_is_streamed_to_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["analyze", str(FIXTURE_YAML), "-f", "json", "-o", str(fifo), "--force", "-q"]) == 0, \
        capsys.readouterr().err
    reader.join(60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(received[0])["kernel_count"]
    assert _strays(tmp_path) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_dev_full_with_force_keeps_the_device_node(capsys: pytest.CaptureFixture[str]) -> None:
    """As root the old rename-over-target replaced /dev/full with a regular file."""
    before = os.lstat("/dev/full")
    assert main(["analyze", str(FIXTURE_YAML), "-f", "json", "-o", "/dev/full", "--force", "-q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/dev/full" in err and "No space left on device" in err, err
    after = os.lstat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_dev_null_and_dash(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["analyze", str(FIXTURE_YAML), "-f", "csv", "-o", "/dev/null", "-q"]) == 0
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["analyze", str(FIXTURE_YAML), "-f", "csv", "-o", "-", "-q"]) == 0
    assert capsys.readouterr().out.startswith("kernel_id")  # the report went to stdout...
    assert list(tmp_path.iterdir()) == []  # ...not to a file named '-'


def test_symlink_target_is_replaced_only_with_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "data" / "report.json"
    real.parent.mkdir()
    real.write_text("precious")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    assert main(["analyze", str(FIXTURE_YAML), "-o", str(link), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err and "--force" in err
    assert real.read_text() == "precious"
    assert main(["analyze", str(FIXTURE_YAML), "-o", str(link), "--force", "-q"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text())["kernel_count"]
    assert _strays(real.parent) == [] and _strays(tmp_path) == []
    assert main(["analyze", "--help"]) == 0
    assert "symbolic link" in " ".join(capsys.readouterr().out.split())


def test_folder_or_unwritable_output_fails_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import nvperf_bridge.commands.analyze as analyze

    def no_work(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("the analysis ran before the output was checked")

    monkeypatch.setattr(analyze, "build_analysis", no_work)
    assert main(["analyze", str(FIXTURE_YAML), "-o", str(tmp_path), "-f", "json", "--force"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a folder" in err
    assert main(["analyze", str(FIXTURE_YAML), "-o", str(tmp_path / "missing" / "r.json")]) == 1
    assert "does not exist" in capsys.readouterr().err
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert main(["analyze", str(FIXTURE_YAML), "-o", str(locked / "r.json")]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "permission denied" in err


# ---- CSV and Markdown: formula injection --------------------------------------------------

def _formula_like(text: str) -> bool:
    if len(text) < 2 or text[0] not in "=+-@\t\r":
        return False
    try:
        float(text)
    except ValueError:
        return True
    return False


def test_csv_neutralises_formula_leading_text(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    out = tmp_path / "r.csv"
    assert main(["analyze", str(hostile), "-o", str(out), "-q"]) == 0
    rows = list(csv.DictReader(out.open(newline="", encoding="utf-8")))
    assert rows
    offenders = [(row["kernel_id"], key, value) for row in rows for key, value in row.items() if _formula_like(value)]
    assert not offenders, offenders[:5]
    names = {row["kernel_name"] for row in rows}
    assert len(rows) == len(HOSTILE_NAMES) * len({row["model"] for row in rows})  # no row split by a CR
    for name in HOSTILE_NAMES:
        expected = ("'" + name if _formula_like(name) else name).replace("\r", "\n")
        assert expected in names, (name, sorted(names)[:5])
    # numbers stay numbers: negative errors are not prefixed
    assert any(row["error_pct"].startswith("-") for row in rows if row["error_pct"])


def test_markdown_name_cells_are_not_formulas(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(hostile), "-q"]) == 0
    out = capsys.readouterr().out
    cells = [cell.strip() for line in out.splitlines() if line.startswith("|") and not re.fullmatch(r"[|:\- ]+", line)
             for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
    offenders = [cell for cell in cells if _formula_like(cell) and not re.fullmatch(r"[-+][\d.,]+ ?%?", cell)]
    assert not offenders, offenders[:5]
    assert "| `'=HYPERLINK" in out  # the name in its code span, apostrophe first


def test_neutralise_formula_rules() -> None:
    from nvperf_bridge.reports.common import neutralise_formula

    assert neutralise_formula("=1+2") == "'=1+2"
    assert neutralise_formula("@SUM(1,1)") == "'@SUM(1,1)"
    assert neutralise_formula("\tTAB") == "'\tTAB"
    assert neutralise_formula("-5.25") == "-5.25" and neutralise_formula("+1e3") == "+1e3"
    assert neutralise_formula("-") == "-" and neutralise_formula("kernel<float>") == "kernel<float>"


def test_concurrent_writers_leave_one_complete_report(tmp_path: Path) -> None:
    """Two runs replacing one output at the same moment: the file is then one whole report (of one of
    the two inputs), never a mix or half of one, and no temporary file is left."""
    small = FIXTURE_YAML
    big = _big_input(tmp_path, 40)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "report.json"
    for _ in range(3):
        procs = [subprocess.Popen([sys.executable, "-m", "nvperf_bridge", "analyze", str(path), "-f", "json", "-o",
                                   str(out), "--force", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, cwd=tmp_path) for path in (small, big)]
        results = [(p.wait(300), p.stderr.read()) for p in procs]
        assert [code for code, _ in results] == [0, 0], results
        report = json.loads(out.read_text())
        assert (report["kernel_count"], Path(report["inputs"][0]["path"]).name) in {(12, small.name), (40, big.name)}
        assert _strays(out_dir) == []
