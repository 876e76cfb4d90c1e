"""GPU profiles from the datasheet table, name matching, architecture fallback, inherited model constants."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge import datasheet
from nvperf_bridge.analysis import analyze, analyze_files, choose_gpu
from nvperf_bridge.datasheet import cc_from_name, datasheet_rows, merge_constants
from nvperf_bridge.gpu import datasheet_profiles
from nvperf_bridge.errors import UsageError
from nvperf_bridge.gpu import builtin_profile_dir, load_profiles, match_device, profile_from_mapping
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.occupancy import cc_table


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def test_every_row_is_a_sourced_valid_profile() -> None:
    rows = datasheet_rows()
    assert len(rows) >= 90
    generated = datasheet_profiles()
    assert len(generated) == len(rows)
    for row in rows:
        assert row["source"].strip(), row["id"]
        assert row["cc"] in cc_table(), row["id"]
        profile = generated[row["id"]]
        for key in ("sm_count", "sm_clock_mhz", "memory_bandwidth_gb_per_s", "compute_capability"):
            assert profile.sources[key].strip()
        # the clock kernels run at by default is one of the board's own clocks
        assert profile.sm_clock_mhz in (float(row["base_clock_mhz"] or 0), float(row["boost_clock_mhz"] or 0))


def test_peaks_follow_from_the_table() -> None:
    # GTX 980: 16 SMs x 128 lanes x 2 x 1216 MHz = 4981 Gflop/s (NVIDIA quotes 4.98 Tflop/s).
    gtx980 = datasheet_profiles()["gtx-980"]
    assert gtx980.peak_fp32_flop_per_s == pytest.approx(4.981e12, rel=1e-3)
    # Tesla K20c at its 706 MHz: 13 x 192 x 2 x 706 = 3524 Gflop/s single,
    # 13 x 64 x 2 x 706 = 1175 double (1.17 Tflop/s quoted).
    k20 = datasheet_profiles()["k20c"]
    assert k20.peak_fp32_flop_per_s == pytest.approx(3.524e12, rel=1e-3)
    assert k20.peak_fp64_flop_per_s == pytest.approx(1.175e12, rel=1e-3)


@pytest.mark.parametrize(("device", "expected"), [
    # the five GPUs of ../shared/realdata/amaris-kepler-maxwell, as the data names them
    ("NVIDIA GeForce GTX 680", "gtx-680"),
    ("NVIDIA GeForce GTX 970", "gtx-970"),
    ("NVIDIA GeForce GTX TITAN", "gtx-titan"),
    ("NVIDIA GeForce GTX TITAN Black", "gtx-titan-black"),
    ("NVIDIA Quadro K5200", "quadro-k5200"),
    # issue 15's check GPUs, as nvprof prints them (index suffix, no "NVIDIA")
    ("GeForce GTX TITAN X (0)", "gtx-titan-x"),
    ("GeForce GTX 980 (1)", "gtx-980"),
    ("Tesla K20c (0)", "k20c"),
    ("Tesla K40c (0)", "k40"),
    # extra tokens and near names
    ("NVIDIA TITAN X (Pascal)", "titan-x-pascal"),
    ("GeForce GTX 1060 3GB", "gtx-1060-3gb"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER @ 2610 MHz", "rtx-4070-ti-super"),
    ("Tesla K80", "tesla-k80"),
])
def test_device_names_find_their_profile(profiles, device: str, expected: str) -> None:
    found = match_device(device, profiles)
    assert found is not None and found.id == expected


def test_hand_written_profiles_replace_their_rows(profiles) -> None:
    shipped = {p.stem for p in builtin_profile_dir().glob("*.yaml")}
    assert shipped <= set(profiles)
    for pid in shipped:
        assert profiles[pid].path.endswith(".yaml"), pid
    # rows that a hand-written file replaces keep the file's values (K40: its 745 MHz application clock)
    assert profiles["k40"].sm_clock_mhz == 745 and profiles["k40"].path.endswith("k40.yaml")


@pytest.mark.parametrize("name", ["gtx-680", "gtx-970", "gtx-titan", "gtx-titan-black", "quadro-k5200"])
def test_amaris_gpus_analyze_with_their_own_profile(realdata_dir: Path, name: str) -> None:
    analysis = analyze_files([realdata_dir / "amaris-kepler-maxwell" / f"{name}.yaml"],
                             model_ids=["hong-kim", "transit"])
    assert analysis.gpu.id == name and not analysis.gpu.fallback_note
    for run in analysis.runs.values():
        assert run.result is not None and (run.result["error"] == "").mean() > 0.5, run.failure


def test_unknown_device_falls_back_to_its_architecture_with_a_warning(realdata_dir: Path) -> None:
    # ncu details print the device as an index ("0") and the compute capability (12.0): no stop.
    name = "llm-perf-opt/llm-perf-opt__ncu-v2__kernel_0009_60b6526c428eef70c521b6a4c8ca71db__ncu.details.csv"
    analysis = analyze(read_profiles([realdata_dir / name]), model_ids=["roofline"])
    assert analysis.gpu.compute_capability == "12.0"
    assert "architecture fallback" in analysis.gpu_choice
    assert analysis.warnings[0].startswith("no GPU profile names") and "--gpu" in analysis.warnings[0]


def test_fallback_from_the_name_and_a_clear_stop_without_either() -> None:
    laptop = pd.DataFrame({"device": ["NVIDIA GeForce RTX 4050 Laptop GPU"]})
    profile, choice = choose_gpu(laptop, None)
    assert profile.compute_capability == "8.9" and "RTX 4050" in profile.fallback_note
    assert cc_from_name("GeForce GTX TITAN X") == "5.2" and cc_from_name("GeForce GTX TITAN Z") == "3.5"
    with pytest.raises(UsageError, match="no compute capability"):
        choose_gpu(pd.DataFrame({"device": ["Mystery Accelerator 9000"]}), None)


def test_profiles_inherit_architecture_constants_and_override_them(monkeypatch) -> None:
    arch = {"schema_version": 1, **datasheet.architectures()}
    test_models = {"hong-kim": {"Mem_LD": {"value": 300, "source": "test: Kepler value", "status": "measured"},
                                "L2_LD": {"value": 200, "source": "test: Kepler L2", "status": "measured"}}}
    patched = {key: {**arch["architectures"][key], "models": test_models} for key in ("kepler", "pascal")}
    arch["architectures"] = {**arch["architectures"], **patched}
    monkeypatch.setattr(datasheet, "architectures", lambda: arch)
    row = next(r for r in datasheet_rows() if r["id"] == "gtx-680")
    inherited = profile_from_mapping(datasheet.profile_mapping(row), "<row>")
    assert inherited.constant("hong-kim", "Mem_LD").value == 300
    own = datasheet.profile_mapping(row)
    own["models"] = merge_constants(own.get("models", {}), {
        "hong-kim": {"Mem_LD": {"value": 440, "source": "test: this board", "status": "calibrated"}}})
    mine = profile_from_mapping(own, "<row>")
    assert mine.constant("hong-kim", "Mem_LD").value == 440  # the profile's own wins
    assert mine.constant("hong-kim", "L2_LD").value == 200  # the rest still inherited
    # a hand-written profile of the architecture inherits too, and overrides with its own
    fitted = load_profiles()["gtx-1080-ti-calibrated"]
    assert fitted.constant("hong-kim", "L2_LD").value == 200
    assert fitted.constant("hong-kim", "Mem_LD").source != "test: Kepler value"
