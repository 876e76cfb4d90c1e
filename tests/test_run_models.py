"""Models run in isolation: a failing, slow or misbehaving model never stops the others."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import pytest
from profile_factory import make_profile

from nvperf_bridge.analysis import run_models
from nvperf_bridge.model import Requirements, empty_result
from nvperf_bridge.registry import LoadedModel, Registry


class Fake:
    version = "1"
    description = "fake"
    paper = "none"
    requires = Requirements(required=())
    constants = ()

    def __init__(self, mid: str, behaviour: str) -> None:
        self.id = mid
        self.behaviour = behaviour

    def evaluate(self, kernels: pd.DataFrame, gpu: Any, options: Any) -> Any:
        if self.behaviour == "raise":
            raise RuntimeError("evaluate exploded")
        if self.behaviour == "slow":
            time.sleep(5)
        if self.behaviour == "shape":
            return pd.DataFrame({"predicted_ns": [1.0]})
        if self.behaviour == "mutate":
            kernels["inst_executed"] = -1.0  # must not leak into the next model's view
        out = empty_result(kernels)
        out["predicted_ns"] = kernels["inst_executed"] * 2.0 if self.behaviour == "uses-input" else 100.0
        if self.behaviour == "nan":
            out["predicted_ns"] = np.nan
        return out


@pytest.fixture
def gpu():
    return make_profile(sm_count=2)


def registry_of(*models: Fake) -> Registry:
    return Registry(models={m.id: LoadedModel(m, "test", "test") for m in models})


def test_failures_are_isolated_and_reported(gpu) -> None:
    kernels = pd.DataFrame({"kernel_id": ["a", "b"], "inst_executed": [10.0, 20.0]})
    registry = registry_of(Fake("raises", "raise"), Fake("bad-shape", "shape"), Fake("nan", "nan"),
                           Fake("mutates", "mutate"), Fake("good", "uses-input"))
    runs, warnings = run_models(kernels, gpu, registry)
    assert runs["raises"].result is None and "evaluate exploded" in runs["raises"].failure
    assert runs["bad-shape"].result is None and "1 rows for 2 kernels" in runs["bad-shape"].failure
    assert (runs["nan"].result["error"] != "").all()
    assert list(runs["good"].result["predicted_ns"]) == [20.0, 40.0]  # unaffected by "mutates"
    assert list(kernels["inst_executed"]) == [10.0, 20.0]
    assert sum("raises" in w for w in warnings) == 1


def test_slow_model_is_abandoned_after_the_timeout(gpu) -> None:
    kernels = pd.DataFrame({"kernel_id": ["a"], "inst_executed": [1.0]})
    started = time.monotonic()
    runs, warnings = run_models(kernels, gpu, registry_of(Fake("slow", "slow"), Fake("good", "ok")), timeout_s=0.2)
    assert time.monotonic() - started < 3
    assert runs["slow"].result is None and "0.2 s model timeout" in runs["slow"].failure
    assert runs["good"].result is not None


def test_a_later_model_s_heavy_imports_load_ahead_and_a_failing_one_is_left_to_the_model(gpu, tmp_path,
                                                                                           monkeypatch) -> None:
    import sys

    module = "nvperf_import_ahead_probe"
    (tmp_path / f"{module}.py").write_text("import threading\nLOADED_IN = threading.current_thread().name\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    seen: dict[str, Any] = {}

    class Importer(Fake):
        import_ahead = (module, "nvperf_no_such_module_anywhere")

        def evaluate(self, kernels: pd.DataFrame, gpu: Any, options: Any) -> Any:
            seen["loaded"] = sys.modules.get(module)
            return super().evaluate(kernels, gpu, options)

    kernels = pd.DataFrame({"inst_executed": [1.0, 2.0]})
    first, second = Fake("first", "ok"), Importer("second", "ok")
    registry = Registry(models={m.id: LoadedModel(m, "test", "test", builtin=True) for m in (first, second)})
    # a small table imports nothing ahead (the import would cost more than it hides)
    run_models(kernels, gpu, registry)
    assert seen["loaded"] is None
    monkeypatch.setattr("nvperf_bridge.analysis.IMPORT_AHEAD_ROWS", len(kernels))
    runs, warnings = run_models(kernels, gpu, registry)
    # loaded in the background thread the run started, before the model that needs it ran; the module
    # no one can import did not stop anything
    assert seen["loaded"] is not None and seen["loaded"].LOADED_IN == "nvperf-bridge-import-ahead"
    assert runs["second"].result is not None and not warnings
