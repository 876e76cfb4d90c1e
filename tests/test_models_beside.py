"""On large frames run_models evaluates Kerr in a thread of its own beside the other models
(analysis.BESIDE_ROWS): every result, warning and the order of both must be what the models give one
after the other, and a failure in that thread must read as it would have."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge import analysis
from nvperf_bridge.analysis import run_models
from nvperf_bridge.builtin_plugins import kerr
from nvperf_bridge.gpu import resolve_profile
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.registry import load_registry

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import generate  # noqa: E402


ROWS = 10_000  # a frame past this threshold, patched in: the threaded path on a frame the suite affords


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analysis, "BESIDE_ROWS", ROWS)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """A generated ncu raw page of 400 launches tiled past ROWS, every launch its own kernel id."""
    (path,) = generate.generate("ncu-raw", 400, tmp_path_factory.mktemp("beside"), seed=11)
    base = read_profiles([path]).kernels
    reps = -(-ROWS // len(base)) + 1
    frame = pd.concat([base] * reps, ignore_index=True)
    frame["kernel_id"] = np.arange(len(frame)).astype(str).astype(object)
    return frame


def _runs(frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, beside: bool):
    monkeypatch.setattr(analysis, "BESIDE_ROWS", analysis.BESIDE_ROWS if beside else len(frame) + 1)
    monkeypatch.setattr(analysis, "_core_free", lambda: True)  # whatever the machine's load now
    started: list[str] = []
    real = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self.name)
        real(self)

    with monkeypatch.context() as m:
        m.setattr(threading.Thread, "start", start)
        runs, warnings = run_models(frame, resolve_profile("b200"), load_registry([]))
    return runs, warnings, [name for name in started if name.startswith("nvperf-bridge-model-")]


def test_kerr_beside_the_others_gives_the_same_results_and_warnings(large: pd.DataFrame,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    together, warned_together, threads = _runs(large, monkeypatch, beside=True)
    assert threads == ["nvperf-bridge-model-kerr"]  # the threaded path was taken
    alone, warned_alone, none = _runs(large, monkeypatch, beside=False)
    assert none == []
    assert list(together) == list(alone)
    assert [mid for mid, run in together.items() if run.beside] == ["kerr"] and not any(r.beside for r in alone.values())
    for mid, run in alone.items():
        assert together[mid].failure == run.failure, mid
        pd.testing.assert_frame_equal(together[mid].result, run.result, check_exact=True, obj=mid)
        assert together[mid].wall_s > 0 and together[mid].cpu_s >= 0
    assert warned_together == warned_alone


def test_a_failure_in_its_thread_reads_as_it_would_have(large: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise ValueError("fit diverged")

    monkeypatch.setattr(kerr.MODEL, "evaluate", broken)
    together, warned_together, threads = _runs(large, monkeypatch, beside=True)
    alone, warned_alone, _ = _runs(large, monkeypatch, beside=False)
    assert threads == ["nvperf-bridge-model-kerr"]
    assert together["kerr"].result is None and together["kerr"].failure == alone["kerr"].failure == \
        "ValueError: fit diverged"
    assert warned_together == warned_alone
    assert "model kerr raised ValueError: fit diverged; its results are left out" in warned_together
    assert list(together) == list(alone)


def test_no_thread_beside_on_a_busy_machine(large: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no core is free (load average near the core count) every model runs in the calling thread."""
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    started: list[str] = []
    real = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self.name), real(self))[1])
    runs, _ = run_models(large, resolve_profile("b200"), load_registry([]), ["transit", "kerr"])
    assert not [name for name in started if name.startswith("nvperf-bridge-model-")]
    assert not any(run.beside for run in runs.values()) and runs["kerr"].result is not None
