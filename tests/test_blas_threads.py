"""blas_threads: OpenBLAS on one thread inside a block (the caller's count restored after), or from its load in a
command on small inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nvperf_bridge import blas_threads


def _thread_counts() -> dict[str, int]:
    counts = {}
    for path in blas_threads._loaded_openblas():
        controls = blas_threads._controls(path)
        if controls is not None:
            counts[path] = int(controls[0]())  # type: ignore[operator]
    return counts


def test_one_thread_inside_the_block_and_the_count_restored_after() -> None:
    before = _thread_counts()
    if not before:
        pytest.skip("no OpenBLAS found in this process (another BLAS or platform): one_thread changes nothing")
    a = np.arange(40_000, dtype=float).reshape(-1, 4)
    outside = a.T @ a
    with blas_threads.one_thread():
        assert set(_thread_counts().values()) == {1}
        with blas_threads.one_thread():  # nested: still one thread, and the inner end restores nothing yet
            inside = a.T @ a
        assert set(_thread_counts().values()) == {1}
    assert _thread_counts() == before
    assert np.array_equal(inside, outside)  # exact integers: the same product on any thread count


_SMALL_PAIR = ("magus__metrics_rodinia_lud.csv", "magus__traces_rodinia_lud.csv")
# the console command in a fresh process (argv None: its own process), then the OpenBLAS thread counts it ran with
_COMMAND_THEN_COUNTS = (
    "import sys\n"
    "from nvperf_bridge import blas_threads, cli\n"
    "sys.argv = ['nvperf-bridge'] + sys.argv[1:]\n"
    "code = cli.main()\n"
    "counts = [int(c[0]()) for c in map(blas_threads._controls, blas_threads._loaded_openblas()) if c]\n"
    "print(sorted(set(counts)), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _command_thread_counts(realdata_dir: Path, tmp_path: Path, environment: dict[str, str]) -> list[int]:
    pair = [realdata_dir / "magus" / name for name in _SMALL_PAIR]
    if not all(p.exists() for p in pair):
        pytest.skip("magus rodinia lud pair not found")
    # cwd away from the checkout: `python -c` puts the working folder first on sys.path (test_collector.py)
    done = subprocess.run([sys.executable, "-c", _COMMAND_THEN_COUNTS, "analyze", *map(str, pair),
                           "-o", str(tmp_path / "r.json"), "--force", "-q"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=environment)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stderr.strip().splitlines()[-1])
    if not counts:
        pytest.skip("no OpenBLAS found (another BLAS or platform): the thread count is not ours to set")
    return counts


def _environment(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    return {**base, **extra}


def test_the_analyze_command_starts_openblas_on_one_thread(realdata_dir: Path, tmp_path: Path) -> None:
    """analyze's products are too narrow to split, and a pool's start spins a second core the figure worker
    or the reader needs: one thread from the load. The user's own setting wins."""
    assert _command_thread_counts(realdata_dir, tmp_path, _environment()) == [1]
    assert _command_thread_counts(realdata_dir, tmp_path, _environment(OPENBLAS_NUM_THREADS="2")) == [2]


def test_one_thread_from_load_leaves_a_loaded_numpy_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once numpy is imported its pool is running: the environment is not touched (a test or notebook calling
    the command in process keeps its settings, and its subprocesses theirs)."""
    monkeypatch.delenv(blas_threads.THREADS_VARIABLE, raising=False)
    blas_threads.one_thread_from_load()
    assert blas_threads.THREADS_VARIABLE not in os.environ
