"""Kerr's cross-GPU form (Kerr et al. Sec. 5.1 Table 2, 6.2, 6.5 "GPU Modeling"): one model fitted
on runs from several GPUs, with each GPU's datasheet parameters as a second PCA, predicting a GPU
whose times it never saw. On the real Amaris et al. sweeps (nine kernels at many sizes on five
Kepler/Maxwell GPUs; skipped without ../shared/realdata)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.accuracy import accuracy_stats
from nvperf_bridge.analysis import choose_gpus, device_labels
from nvperf_bridge.builtin_plugins import kerr, kerr_machines, roofline
from nvperf_bridge.cli import main
from nvperf_bridge.discovery import read_inputs
from nvperf_bridge.errors import ModelError
from nvperf_bridge.gpu import resolve_profile

HELD_OUT = "NVIDIA GeForce GTX TITAN"


@pytest.fixture(scope="module")
def sweeps() -> tuple[pd.DataFrame, dict]:
    """The five GPUs' kernels (read once for the module) and each device's profile."""
    from conftest import REALDATA

    folder = REALDATA / "amaris-kepler-maxwell"
    if not folder.is_dir():
        pytest.skip("../shared/realdata/amaris-kepler-maxwell is not present")
    kernels = read_inputs(sorted(folder.glob("*.yaml"))).kernels
    gpus = {device: profile for device, profile, _ in choose_gpus(kernels, None)}
    assert len(gpus) == 5
    return kernels, gpus


@pytest.fixture(scope="module")
def held_out_fit(sweeps: tuple[pd.DataFrame, dict]) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The cross-GPU model fitted on four GPUs, and the fifth GPU's kernels."""
    kernels, gpus = sweeps
    on_held = device_labels(kernels) == HELD_OUT
    data = kerr.fit(kernels[~on_held], gpus[HELD_OUT], {"cross_gpu": True, "gpus": gpus})
    return data, kernels[~on_held], kernels[on_held]


def test_table_2_parameters_come_from_the_datasheet() -> None:
    values = kerr_machines.machine_values(resolve_profile("gtx-titan"))
    # GTX TITAN: 14 SMX of 192 cores at 876 MHz boost, 288.4 GB/s on a 384-bit bus, 1536 KB L2
    assert values["sm_count"] == 14 and values["sm_clock_ghz"] == pytest.approx(0.876)
    assert values["issue_width"] == 6  # 192 lanes / 32: FP32 warp instructions per cycle
    assert values["memory_controllers"] == 6  # 384 bits / 64
    assert values["bandwidth_per_controller_gb_s"] == pytest.approx(288.4 / 6)
    assert values["l2_cache_kb"] == 1536 and values["warp_size"] == 32


def test_a_held_out_gpu_is_predicted_better_than_the_scaled_roofline(
        sweeps: tuple[pd.DataFrame, dict], held_out_fit: tuple[dict, pd.DataFrame, pd.DataFrame]) -> None:
    kernels, gpus = sweeps
    data, train, test = held_out_fit
    assert data["gpu"] == "several" and set(data["machine"]["training_gpus"]) == set(gpus) - {HELD_OUT}
    assert data["machine"]["n_components"] >= 1 and data["regression"]["terms"][-1].startswith("MC")
    result = kerr.MODEL.evaluate(test, gpus[HELD_OUT], {"model_data": json.loads(json.dumps(data))})
    counted = result["error"] == ""
    assert counted.mean() > 0.9 and np.isfinite(result.loc[counted, "predicted_ns"]).all()
    assert (result.loc[counted, "predicted_ns"] > 0).all()
    measured = test["duration_ns"].astype(float)
    # the validate baseline, trained on the same four GPUs: roofline x median measured/roofline ratio
    roof_train = pd.concat([roofline.MODEL.evaluate(part, gpus[d], {})["predicted_ns"]
                            for d, part in train.groupby(device_labels(train))])
    ratio = float((train["duration_ns"].astype(float) / roof_train.reindex(train.index)).median())
    roof_test = roofline.MODEL.evaluate(test, gpus[HELD_OUT], {})["predicted_ns"] * ratio
    cross = accuracy_stats(result["predicted_ns"], measured)["median_ape"]
    baseline = accuracy_stats(roof_test, measured)["median_ape"]
    assert cross < baseline, (cross, baseline)


def test_the_prediction_moves_the_right_way_with_the_gpus_bandwidth(
        sweeps: tuple[pd.DataFrame, dict], held_out_fit: tuple[dict, pd.DataFrame, pd.DataFrame]) -> None:
    _, gpus = sweeps
    data, _, test = held_out_fit
    titan = gpus[HELD_OUT]
    faster = dataclasses.replace(titan, memory_bandwidth_gb_per_s=1.5 * titan.memory_bandwidth_gb_per_s)
    base = kerr.MODEL.evaluate(test, titan, {"model_data": data})
    more = kerr.MODEL.evaluate(test, faster, {"model_data": data})
    ok = base["error"] == ""
    assert (more.loc[ok, "regression_ns"] < base.loc[ok, "regression_ns"]).all()
    assert (more.loc[ok, "predicted_ns"] <= base.loc[ok, "predicted_ns"] * (1 + 1e-12)).all()
    assert (more.loc[ok, "predicted_ns"] < base.loc[ok, "predicted_ns"]).any()


def test_a_datasheet_gap_takes_the_training_gpus_mean_and_says_so(sweeps: tuple[pd.DataFrame, dict]) -> None:
    """The Quadro K5200's L2 size is in no vendor document the datasheet cites: its kernels are still
    predicted, and each says which parameter was not in the profile."""
    kernels, gpus = sweeps
    quadro = "NVIDIA Quadro K5200"
    assert not np.isfinite(kerr_machines.machine_values(gpus[quadro])["l2_cache_kb"])
    on = device_labels(kernels) == quadro
    data = kerr.fit(kernels[~on], gpus[quadro], {"cross_gpu": True, "gpus": gpus})
    assert "l2_cache_kb" in data["machine"]["features"]
    result = kerr.MODEL.evaluate(kernels[on], gpus[quadro], {"model_data": data})
    ok = result["error"] == ""
    assert ok.mean() > 0.9
    assert result.loc[ok, "state"].str.contains("not in the GPU profile, the training GPUs' mean used: l2_cache_kb").all()


def test_leave_one_gpu_out_chooses_the_form_and_is_reported(held_out_fit: tuple[dict, pd.DataFrame, pd.DataFrame]) -> None:
    data, _, _ = held_out_fit
    assert data["form"] in ("additive", "power") and set(data["form_selection"]) == {"additive", "power"}
    assert data["loo_mape"] == pytest.approx(data["form_selection"][data["form"]])
    assert data["pocs"]["per_workload"]  # Sec. 6.5: the same workload's times on the other GPUs


def test_fitting_a_mixed_folder_without_the_option_names_it(realdata_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = realdata_dir / "amaris-kepler-maxwell"
    rc = main(["fit", "kerr", *map(str, sorted(folder.glob("*.yaml"))), "-o", str(tmp_path / "k.json"), "--folds", "0"])
    err = capsys.readouterr().err
    assert rc != 0 and "come from 5 GPUs" in err and "--cross-gpu" in err
    assert not (tmp_path / "k.json").exists()


def test_cross_gpu_with_one_gpu_profile_is_refused_before_the_import(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """--gpu gives every file one profile, which the cross-GPU form cannot use: said at once, in one line,
    before any file is read (the file named here does not exist)."""
    rc = main(["fit", "kerr", str(tmp_path / "absent.yaml"), "--cross-gpu", "--gpu", "gtx-980",
               "-o", str(tmp_path / "k.json")])
    err = capsys.readouterr().err
    assert rc != 0 and "--cross-gpu" in err and "leave out --gpu" in err and "Traceback" not in err
    assert "absent.yaml" not in err and not (tmp_path / "k.json").exists()


def test_fit_cross_gpu_then_analyze_a_gpu_it_never_saw(realdata_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    folder = realdata_dir / "amaris-kepler-maxwell"
    train = [p for p in sorted(folder.glob("*.yaml")) if p.name != "gtx-titan.yaml"]
    model_json = tmp_path / "kerr-cross.json"
    rc = main(["fit", "kerr", *map(str, train), "--cross-gpu", "-o", str(model_json), "--folds", "0"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "GPU profiles gtx-680, gtx-970" in err and "(cross-GPU: one per device)" in err
    data = json.loads(model_json.read_text())
    assert len(data["provenance"]["gpus"]) == 4 and "gtx-titan" not in data["provenance"]["gpus"].values()
    out = tmp_path / "titan.json"
    rc = main(["analyze", str(folder / "gtx-titan.yaml"), "--model-data", f"kerr={model_json}", "-m", "kerr",
               "--format", "json", "-o", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    text = out.read_text()
    assert '"kerr"' in text and "trained model" in text


def test_one_gpu_is_not_enough_for_the_cross_gpu_form(sweeps: tuple[pd.DataFrame, dict]) -> None:
    kernels, gpus = sweeps
    one = kernels[device_labels(kernels) == HELD_OUT]
    with pytest.raises(ModelError, match="at least 2 GPUs"):
        kerr.fit(one, gpus[HELD_OUT], {"cross_gpu": True, "gpus": gpus})
