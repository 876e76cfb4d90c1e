"""Shared by the calibrate/validate CLI tests: a test GPU profile and kernels generated
with the fake test model, written as files the importers read."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import yaml

from nvperf_bridge.gpu import SOURCED_FIELDS, profile_from_mapping

PLUGIN = Path(__file__).resolve().parent / "fixtures" / "calibration" / "fake_models.py"


def profile_document(profile_id: str = "test-gpu") -> dict[str, Any]:
    return {
        "schema_version": 1, "id": profile_id, "name": "Test GPU", "match": ["Test GPU 9000"],
        "compute_capability": "6.1", "sm_count": 28, "cores_per_sm": 128, "max_warps_per_sm": 64,
        "max_blocks_per_sm": 32, "registers_per_sm": 65536, "shared_mem_per_sm_bytes": 98304, "sm_clock_mhz": 1480,
        "memory_bandwidth_gb_per_s": 484.0, "sources": {name: "test fixture" for name in SOURCED_FIELDS},
    }


def plugin_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("calibration_fake_models", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_inputs(folder: Path, groups: int = 8, seed: int = 1) -> tuple[Path, Path]:
    """(kernel-yaml file with measured durations from the true constants, base profile file)."""
    module = plugin_module()
    profile = profile_document()
    profile_path = folder / "test-gpu.yaml"
    profile_path.write_text(yaml.safe_dump(profile, sort_keys=False))
    gpu = profile_from_mapping(profile, str(profile_path))
    rng = np.random.default_rng(seed)
    import pandas as pd

    from nvperf_bridge.calibration import with_constants

    frame = pd.DataFrame({
        "kernel_name": [f"kernel_{i}" for i in range(groups)],
        "inst_executed": rng.uniform(1e3, 1e5, groups),
        "mem_ops": rng.uniform(1e1, 1e4, groups),
        "parallel": rng.uniform(1.0, 32.0, groups),
    })
    model = module.FakeLinear()
    truth = with_constants(gpu, model.id, module.TRUE, "truth", "calibrated")
    frame["duration_ns"] = model.evaluate(frame, truth, {})["predicted_ns"]
    data = folder / "kernels.yaml"
    records = [{key: (float(v) if not isinstance(v, str) else v) for key, v in row.items()}
               for row in frame.to_dict(orient="records")]
    data.write_text(yaml.safe_dump({"device": "Test GPU 9000", "kernels": records}, sort_keys=False))
    return data, profile_path
