"""One GPU profile per device (issue 12 item 5), on real files from two GPUs in one run:
a GTX 1080 Ti nvprof pair (magus lud) and an RTX 5090 ncu file whose device is the index '0'."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nvperf_bridge.analysis import analyze_files

LUD = ("magus/magus__metrics_rodinia_lud.csv", "magus/magus__traces_rodinia_lud.csv")
RTX5090 = "llm-perf-opt/llm-perf-opt__ncu-v2__kernel_0009_60b6526c428eef70c521b6a4c8ca71db__ncu.details.csv"
MODELS = ["hong-kim", "roofline", "luo-suda"]  # per-kernel models (kerr learns across kernels)


def test_each_device_gets_its_own_profile(realdata_dir: Path) -> None:
    both = analyze_files([realdata_dir / n for n in (*LUD, RTX5090)], model_ids=MODELS)
    assert both.gpus["GeForce GTX 1080 Ti"].id == "gtx-1080-ti"
    # the device printed as index '0' gets the stand-in of its architecture (compute capability 12.0)
    stand_in = both.gpus["0"]
    assert str(stand_in.compute_capability) == "12.0"
    assert "gtx-1080-ti for 'GeForce GTX 1080 Ti'" in both.gpu_choice and f"{stand_in.id} for '0'" in both.gpu_choice
    alone = {
        "gtx": analyze_files([realdata_dir / n for n in LUD], model_ids=MODELS),
        "rtx": analyze_files([realdata_dir / RTX5090], model_ids=MODELS),
    }
    assert alone["rtx"].gpu.id == stand_in.id
    devices = both.kernels["device"].astype(str)
    for key, device in (("gtx", "GeForce GTX 1080 Ti"), ("rtx", "0")):
        rows = both.kernels.index[devices == device]
        for mid in MODELS:
            mixed = both.runs[mid].result.loc[rows, "predicted_ns"].to_numpy(dtype=float)
            single = alone[key].runs[mid].result["predicted_ns"].to_numpy(dtype=float)
            assert np.allclose(mixed, single, equal_nan=True), (key, mid)
    assert any("several GPUs in one run" in w for w in both.warnings)


def test_profile_with_another_compute_capability_is_a_warning(realdata_dir: Path) -> None:
    analysis = analyze_files([realdata_dir / RTX5090], gpu="b200", model_ids=["roofline"])
    assert any("GPU profile b200 has compute capability 10.0, but the file reports 12.0" in w
               for w in analysis.warnings)
    matched = analyze_files([realdata_dir / RTX5090], gpu="rtx-5090", model_ids=["roofline"])
    assert not any("has compute capability" in w for w in matched.warnings)
