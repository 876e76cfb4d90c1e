"""The cycle collector: off during the imports and frozen out of them only in a process the command ends
(collector.py)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvperf_bridge import cli, collector

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


def test_the_collector_is_off_while_the_command_imports_only_in_its_own_process() -> None:
    """In the command's own process the imports run without the collector and it is on again once they are
    done (what they made frozen); a caller's process keeps its collector running throughout."""
    assert gc.isenabled()
    collector.imports_begin()  # not the command's own process: nothing changes
    assert gc.isenabled()
    collector.imports_done()
    frozen_before = gc.get_freeze_count()
    collector.own_process(True)
    try:
        collector.imports_begin()
        assert not gc.isenabled()
        collector.imports_done()
        assert gc.isenabled() and gc.get_freeze_count() >= frozen_before
        collector.imports_begin()
        collector.command_done()  # a command that failed before its imports were done: collector on again
        assert gc.isenabled()
    finally:
        collector.own_process(False)
        gc.enable()
        gc.unfreeze()  # this test process goes on: nothing of it stays out of the collector's reach
