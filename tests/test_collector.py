"""The cycle collector: frozen out of the imports only in a process the command ends (collector.py)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvperf_bridge import cli

PAIR = ("magus__metrics_rodinia_lud.csv", "magus__traces_rodinia_lud.csv")


def _pair(realdata_dir: Path) -> list[str]:
    paths = [realdata_dir / "magus" / name for name in PAIR]
    if not all(p.exists() for p in paths):
        pytest.skip("magus rodinia lud pair not found")
    return [str(p) for p in paths]


def test_a_caller_running_main_keeps_its_collector(realdata_dir: Path, tmp_path: Path) -> None:
    """A test or program that runs main with its own arguments goes on afterwards: nothing of it is frozen
    (its cycles would never be freed) and its thresholds are as before."""
    before_threshold, before_frozen = gc.get_threshold(), gc.get_freeze_count()
    out = tmp_path / "r.json"
    assert cli.main(["analyze", *_pair(realdata_dir), "-o", str(out), "-q"]) == 0
    assert gc.get_freeze_count() == before_frozen
    assert gc.get_threshold() == before_threshold
    assert json.loads(out.read_text())["kernels"]


def test_the_console_command_freezes_its_imports_and_writes_the_same_report(realdata_dir: Path,
                                                                         tmp_path: Path) -> None:
    """Run as the process's own command line (argv None), main freezes what the imports made, and the
    report is the one an in-process run writes (apart from its creation time)."""
    pair = _pair(realdata_dir)
    own, inner = tmp_path / "own.json", tmp_path / "inner.json"
    code = ("import gc, sys; from nvperf_bridge import cli; sys.argv = ['nvperf-bridge'] + sys.argv[1:]; "
            "code = cli.main(); print(gc.get_freeze_count(), file=sys.stderr); sys.exit(code)")
    # cwd away from the checkout: `python -c` puts the working folder first on sys.path, and the checkout's
    # nvperf_bridge/ (no profiles/ inside: they ship as package data) would shadow the installed package
    done = subprocess.run([sys.executable, "-c", code, "analyze", *pair, "-o", str(own), "-q"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert int(done.stderr.split()[-1]) > 10_000  # pandas and numpy alone are hundreds of thousands of objects
    assert cli.main(["analyze", *pair, "-o", str(inner), "-q"]) == 0
    first, second = json.loads(own.read_text()), json.loads(inner.read_text())
    for doc in (first, second):
        doc.pop("created", None)
    assert first == second
