"""The calibration library: recovery of known constants, bounds, identifiability,
group-aware cross-validation and the written profile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from nvperf_bridge.calibration import (
    CalibrationSettings,
    calibrate,
    calibrate_model,
    calibrated_profile_mapping,
    group_folds,
    kernel_groups,
    with_constants,
    write_profile,
)
from nvperf_bridge.errors import InputError, OutputError
from nvperf_bridge.gpu import (
    SOURCED_FIELDS,
    GpuProfile,
    load_profile_file,
    profile_from_mapping,
)
from nvperf_bridge.model import (
    ConstantSpec,
    Requirements,
    constant_values,
    empty_result,
)

TRUE = {"issue_cycles": 6.5, "mem_latency_cycles": 420.0, "launch_overhead_ns": 2500.0}


@dataclass
class FakeModel:
    """t = (issue * inst + latency * mem_ops / parallel) / clock + overhead + sync * barriers.

    ``sync_cycles`` multiplies a counter that is zero in the test data (no variation: it cannot be
    fitted) and ``unused_cycles`` enters nothing."""

    id: str = "fake-model"
    version: str = "1"
    description: str = "test model"
    paper: str = "none"
    requires: Requirements = Requirements(("inst_executed", "mem_ops", "parallel"), ("inst_barrier",))
    constants: tuple[ConstantSpec, ...] = (
        ConstantSpec("issue_cycles", 4.0, "cycles", (1.0, 64.0), "cycles per warp instruction", "test"),
        ConstantSpec("mem_latency_cycles", 300.0, "cycles", (50.0, 2000.0), "memory latency", "test"),
        ConstantSpec("launch_overhead_ns", 1000.0, "ns", (0.0, 20000.0), "launch overhead", "test"),
        ConstantSpec("sync_cycles", 20.0, "cycles", (1.0, 500.0), "barrier cost", "test"),
        ConstantSpec("unused_cycles", 7.0, "cycles", (1.0, 100.0), "enters nothing", "test"),
    )

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        c = constant_values(self, gpu)
        cycles = (c["issue_cycles"] * kernels["inst_executed"]
                  + c["mem_latency_cycles"] * kernels["mem_ops"] / kernels["parallel"]
                  + c["sync_cycles"] * kernels.get("inst_barrier", 0.0))
        result = empty_result(kernels)
        result["predicted_cycles"] = cycles
        result["predicted_ns"] = cycles / gpu.sm_clock_hz * 1e9 + c["launch_overhead_ns"]
        result["bottleneck"] = "compute"
        return result


BASE_PROFILE: dict[str, Any] = {
    "schema_version": 1, "id": "test-gpu", "name": "Test GPU", "match": ["Test GPU"], "compute_capability": "6.1",
    "sm_count": 28, "cores_per_sm": 128, "max_warps_per_sm": 64, "max_blocks_per_sm": 32,
    "registers_per_sm": 65536, "shared_mem_per_sm_bytes": 98304, "sm_clock_mhz": 1480,
    "memory_bandwidth_gb_per_s": 484.0, "sources": {name: "test fixture" for name in SOURCED_FIELDS},
    "models": {"other-model": {"x": {"value": 1.0, "source": "paper", "status": "paper"}}},
}


@pytest.fixture
def gpu() -> GpuProfile:
    """A profile built in the test, so other profiles being edited cannot break these tests."""
    return profile_from_mapping(dict(BASE_PROFILE), "test-gpu.yaml")


def synthetic_kernels(model: Any, gpu: GpuProfile, true: Mapping[str, float], groups: int = 12,
                      rows_per_group: int = 2, seed: int = 1) -> pd.DataFrame:
    """Kernels whose measured time is the model's own prediction with ``true`` constants."""
    rng = np.random.default_rng(seed)
    n = groups * rows_per_group
    frame = pd.DataFrame({
        "kernel": [f"k{i // rows_per_group}" for i in range(n)],
        "inst_executed": rng.uniform(1e3, 1e5, n),
        "mem_ops": rng.uniform(1e1, 1e4, n),
        "parallel": rng.uniform(1.0, 32.0, n),
        "inst_barrier": 0.0,
    })
    truth = with_constants(gpu, model.id, true, "truth", "calibrated")
    frame["duration_ns"] = model.evaluate(frame, truth, {})["predicted_ns"]
    return frame


def test_recovers_known_constants_within_2_percent(gpu: GpuProfile) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE)
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=3, restarts=1))
    values = outcome.values
    assert set(values) == set(TRUE)
    for name, true in TRUE.items():
        assert values[name] == pytest.approx(true, rel=0.02), name
    assert outcome.after["mape"] < 1e-3 < outcome.before["mape"]
    assert outcome.cv is not None and outcome.cv.held_out["mape"] < 0.01


def test_non_identifiable_constants_are_reported_and_keep_their_default(gpu: GpuProfile) -> None:
    model = FakeModel()
    outcome = calibrate_model(model, synthetic_kernels(model, gpu, TRUE), gpu, CalibrationSettings(folds=0, restarts=0))
    unfitted = {c.name: c for c in outcome.unfitted}
    assert set(unfitted) == {"sync_cycles", "unused_cycles"}
    assert unfitted["sync_cycles"].value == 20.0 and unfitted["unused_cycles"].value == 7.0
    assert "moves no prediction" in unfitted["sync_cycles"].reason


def test_too_few_kernel_groups_limits_the_fitted_constants(gpu: GpuProfile) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE, groups=3, rows_per_group=4)
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=5, restarts=0))
    assert len(outcome.fitted) == 1  # 3 groups // 2 groups per constant
    assert any("too few kernels" in c.reason for c in outcome.unfitted)
    assert outcome.cv is not None and outcome.cv.folds == 3 and "reduced from 5 to 3" in outcome.cv.note


def test_collinear_constants_are_not_both_fitted(gpu: GpuProfile) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE)
    kernels["mem_ops"] = kernels["inst_executed"] * kernels["parallel"] * 0.01  # latency term moves with issue term
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=0))
    fitted = {c.name for c in outcome.fitted}
    assert not {"issue_cycles", "mem_latency_cycles"} <= fitted
    reasons = " ".join(c.reason for c in outcome.unfitted)
    assert "cannot be told apart" in reasons


@hyp_settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    log_scale=st.lists(st.floats(-6.0, 6.0), min_size=8, max_size=8),
    seed=st.integers(0, 10_000),
)
def test_fitted_constants_never_leave_their_bounds(gpu: GpuProfile, log_scale: list[float], seed: int) -> None:
    """Whatever the measured times (even ones no constants inside the bounds can reach)."""
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE, groups=8, rows_per_group=1, seed=seed)
    kernels["duration_ns"] = kernels["duration_ns"] * np.exp(log_scale)
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=1, seed=seed, max_nfev=40))
    bounds = {spec.name: spec.bounds for spec in model.constants}
    for constant in outcome.fitted:
        lo, hi = bounds[constant.name]
        assert lo <= constant.after <= hi, constant


def test_group_folds_keep_each_kernel_name_in_one_fold() -> None:
    groups = pd.Series([f"k{i % 9}" for i in range(50)])
    plan = group_folds(groups, 4, seed=3)
    assert plan.folds == 4
    for name in groups.unique():
        assert len(set(plan.fold_of_row[(groups == name).to_numpy()])) == 1
    assert set(plan.fold_of_row) == {0, 1, 2, 3}
    counts = np.bincount([plan.fold_of_row[(groups == g).to_numpy()][0] for g in groups.unique()])
    assert counts.max() - counts.min() <= 1  # groups dealt round-robin
    again = group_folds(groups.sample(frac=1.0, random_state=0).reset_index(drop=True), 4, seed=3)
    assert {g: f for g, f in zip(groups.sample(frac=1.0, random_state=0), again.fold_of_row)} == \
        {g: f for g, f in zip(groups, plan.fold_of_row)}  # row order does not change the split


def test_group_folds_reduce_k_or_refuse_with_a_note() -> None:
    assert group_folds(["a", "b", "a"], 5, 0).folds == 2
    single = group_folds(["a", "a"], 5, 0)
    assert single.folds == 0 and "at least 2 groups" in single.note
    assert group_folds(["a", "b"], 1, 0).folds == 0


def test_cross_validation_holds_out_whole_groups(gpu: GpuProfile) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE, groups=6, rows_per_group=3)
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=3, restarts=0))
    assert outcome.cv is not None
    assert set(outcome.cv.fold_of_group) == set(kernel_groups(kernels))
    assert len(outcome.cv.fold_fits) == 3 and outcome.cv.held_out["n"] == len(kernels)


def test_model_without_constants_is_skipped(gpu: GpuProfile) -> None:
    model = FakeModel()
    model.constants = ()
    kernels = synthetic_kernels(FakeModel(), gpu, TRUE)
    result = calibrate(kernels, gpu, {"fake-model": model})
    assert "no machine constants" in result.models["fake-model"].skipped


def test_no_measured_duration_is_an_input_error(gpu: GpuProfile) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE).drop(columns="duration_ns")
    with pytest.raises(InputError):
        calibrate(kernels, gpu, {"fake-model": model})


def test_written_profile_round_trips_and_carries_provenance(gpu: GpuProfile, tmp_path: Path) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE)
    data = tmp_path / "data.csv"
    data.write_text("measured kernels\n")
    result = calibrate(kernels, gpu, {"fake-model": model}, CalibrationSettings(folds=3, restarts=0))
    document = calibrated_profile_mapping(result, "test-gpu-calibrated", [data], tool_version="9.9", date="2024-01-02")
    out = write_profile(document, tmp_path / "test-gpu-calibrated.yaml")
    loaded = load_profile_file(out)
    assert loaded.id == "test-gpu-calibrated" and loaded.match == [] and loaded.is_calibrated
    assert loaded.sm_count == gpu.sm_count
    assert loaded.constant("other-model", "x") is not None  # the base profile's constants are kept
    issue = loaded.constant("fake-model", "issue_cycles")
    assert issue is not None and issue.status == "calibrated"
    assert issue.value == pytest.approx(TRUE["issue_cycles"], rel=0.02)
    assert issue.source == "calibrated on data.csv (nvperf-bridge calibrate, 2024-01-02)"
    assert loaded.constant("fake-model", "sync_cycles") is None  # unfitted: keeps the model default
    block = loaded.raw["calibration"]
    assert block["base_profile"] == "test-gpu" and block["tool"] == "nvperf-bridge 9.9"
    assert len(block["data"][0]["sha256"]) == 64
    entry = block["models"]["fake-model"]
    assert "sync_cycles" in entry["not_fitted"] and entry["fitted"]["issue_cycles"]["before"] == 4
    assert entry["error"]["cv_held_out"]["n"] == len(kernels)
    # predictions with the written profile reproduce the measured times
    predicted = model.evaluate(kernels, loaded, {})["predicted_ns"]
    assert np.allclose(predicted, kernels["duration_ns"], rtol=1e-3)
    # the file is plain YAML (safe_load), and a second write needs force
    assert yaml.safe_load(out.read_text())["id"] == "test-gpu-calibrated"
    with pytest.raises(OutputError):
        write_profile(document, out)
    write_profile(document, out, force=True)
    assert not list(tmp_path.glob(".*.tmp"))


def test_constant_with_a_negligible_effect_is_too_small_to_fit(gpu: GpuProfile) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE)
    kernels["inst_barrier"] = np.random.default_rng(5).uniform(0.0, 0.02, len(kernels))  # sync_cycles now moves the predictions, but by ~1e-6 per 1%
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=0))
    reasons = {c.name: c.reason for c in outcome.unfitted}
    assert "too small to measure" in reasons["sync_cycles"]


# ---- the real models: kernels generated with the model itself, known constants recovered ----

def registered_model(model_id: str) -> Any:
    from nvperf_bridge.registry import load_registry

    registry = load_registry()
    if model_id not in registry.models:
        pytest.skip(f"model {model_id} is not installed")
    return registry.get(model_id)


def test_recovers_roofline_attainable_fractions(gpu: GpuProfile) -> None:
    model = registered_model("roofline")
    rng = np.random.default_rng(7)
    n = 10
    # half the kernels compute-bound (high arithmetic intensity), half memory-bound
    intensity = np.where(np.arange(n) % 2 == 0, rng.uniform(50, 200, n), rng.uniform(0.1, 2, n))
    kernels = pd.DataFrame({"kernel": [f"k{i}" for i in range(n)], "dram_bytes": rng.uniform(1e6, 1e9, n)})
    kernels["flop_sp"] = kernels["dram_bytes"] * intensity
    true = {"attainable_bandwidth_fraction": 0.72, "attainable_flop_fraction": 0.55}
    truth = with_constants(gpu, model.id, true, "truth", "calibrated")
    kernels["duration_ns"] = model.evaluate(kernels, truth, {})["predicted_ns"]
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=0))  # starts at 1.0, 1.0
    values = dict(outcome.values)
    # the launch term (an extension, 0 in the truth) is fitted too and must find no launch time
    # where there is none: under 1% of the shortest kernel
    assert values.pop("launch_ns", 0.0) == pytest.approx(0.0, abs=0.01 * kernels["duration_ns"].min())
    assert values == pytest.approx(true, rel=0.02)


def test_recovers_hong_kim_memory_constants_of_section_5_1(gpu: GpuProfile) -> None:
    """Hong & Kim fitted Mem_LD and the two departure delays with micro-benchmarks (Section 5.1)."""
    model = registered_model("hong-kim")
    rng = np.random.default_rng(2)
    n = 16
    kernels = pd.DataFrame({"kernel": [f"k{i}" for i in range(n)],
                            "grid_blocks": rng.integers(28, 2000, n).astype(float),
                            "block_threads": rng.choice([64.0, 128.0, 256.0, 512.0], n)})
    warps = kernels["grid_blocks"] * np.ceil(kernels["block_threads"] / 32)
    kernels["inst_executed"] = warps * rng.uniform(50, 2000, n)
    memory_share = rng.uniform(0.01, 0.3, n)
    kernels["inst_global_ld"] = kernels["inst_executed"] * memory_share * 0.7
    kernels["inst_global_st"] = kernels["inst_executed"] * memory_share * 0.3
    sectors_per_request = rng.choice([4.0, 8.0, 16.0, 32.0], n)  # coalesced to fully uncoalesced
    kernels["global_ld_sectors"] = kernels["inst_global_ld"] * sectors_per_request
    kernels["global_st_sectors"] = kernels["inst_global_st"] * sectors_per_request
    kernels["inst_barrier"] = warps * rng.integers(0, 10, n)
    kernels["achieved_occupancy"] = rng.uniform(0.2, 1.0, n)
    true = {"Mem_LD": 600.0, "Departure_del_uncoal": 14.0, "Departure_del_coal": 6.0}  # defaults 420, 10, 4
    truth = with_constants(gpu, model.id, true, "truth", "calibrated")
    kernels["duration_ns"] = model.evaluate(kernels, truth, {})["predicted_ns"]
    settings = CalibrationSettings(folds=0, restarts=0, only={model.id: list(true)})
    outcome = calibrate_model(model, kernels, gpu, settings)
    assert outcome.values == pytest.approx(true, rel=0.02)
    assert {c.reason for c in outcome.unfitted} == {"not selected for fitting"}


def test_a_fit_that_stops_on_a_bound_says_so(gpu: GpuProfile) -> None:
    model = FakeModel()
    kernels = synthetic_kernels(model, gpu, TRUE, groups=6)
    kernels["duration_ns"] *= 1000.0  # no constants inside the bounds get there
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=0))
    sides = {c.name: c.at_bound for c in outcome.fitted}
    assert "upper" in sides.values()
    assert all(c.after <= c.bounds[1] for c in outcome.fitted)


def test_application_groups_keep_a_metrics_trace_pair_together(realdata_dir: Path) -> None:
    """Cross-validation holds out whole applications: every kernel of one nvprof metrics+trace
    pair carries the pair's name (never its launches or kernels split over folds)."""
    from nvperf_bridge.calibration import application_groups
    from nvperf_bridge.discovery import read_inputs

    corpus = realdata_dir / "magus-corpus"
    pairs = [corpus / "metrics_cudasdk_dct8x8.csv", corpus / "traces_cudasdk_dct8x8.csv",
             corpus / "metrics_rodinia_needle.csv", corpus / "traces_rodinia_needle.csv"]
    kernels = read_inputs(pairs, jobs=1).kernels
    groups = application_groups(kernels)
    assert set(groups) == {"cudasdk_dct8x8", "rodinia_needle"}
    assert (groups == "cudasdk_dct8x8").sum() == 8  # dct8x8's 8 kernels, one application
    plan = group_folds(groups, 5, 0, unit="application")
    assert plan.folds == 2 and "by application" in plan.note
    for app in set(groups):
        assert len(set(plan.fold_of_row[(groups == app).to_numpy()])) == 1


def test_application_groups_fall_back_to_the_kernel_within_one_file() -> None:
    """One input file (one kernel-yaml set) is no application boundary: the kernel function is."""
    from nvperf_bridge.calibration import application_groups

    kernels = pd.DataFrame({"source": ["gtx-680.yaml"] * 3, "kernel": ["vectorAdd", "dotProd", "vectorAdd"]})
    assert list(application_groups(kernels)) == ["vectorAdd", "dotProd", "vectorAdd"]


def test_an_added_term_off_at_zero_is_fitted(gpu: GpuProfile) -> None:
    """A constant whose default 0 switches an added term off (the launch time) has no log scale: the
    fit still selects it and recovers the value the kernels were generated with."""
    model = registered_model("roofline")
    rng = np.random.default_rng(11)
    n = 12
    kernels = pd.DataFrame({"kernel": [f"k{i}" for i in range(n)],
                            "dram_bytes": 10.0 ** rng.uniform(4, 8, n)})  # 20 ns to 200 us of traffic
    kernels["flop_sp"] = kernels["dram_bytes"] * 0.5
    true = {"attainable_bandwidth_fraction": 0.8, "launch_ns": 1500.0}
    truth = with_constants(gpu, model.id, true, "truth", "calibrated")
    kernels["duration_ns"] = model.evaluate(kernels, truth, {})["predicted_ns"]
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=0))  # launch_ns starts at 0
    assert outcome.values["launch_ns"] == pytest.approx(1500.0, rel=0.02)
    assert outcome.values["attainable_bandwidth_fraction"] == pytest.approx(0.8, rel=0.02)


@dataclass
class OverlapModel(FakeModel):
    """FakeModel with a choice of form, as a paper's printed equation against its text: ``serial``
    (the default: issue and memory time add up) or ``overlapped`` (the larger of the two)."""

    id: str = "overlap-model"
    calibration_options: Mapping[str, tuple[str, ...]] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.calibration_options = {"form": ("serial", "overlapped")}
        self.extension_options = {"form": ("overlapped",)}  # as if beyond its paper: reports must say so

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        c = constant_values(self, gpu)
        issue = c["issue_cycles"] * kernels["inst_executed"]
        memory = c["mem_latency_cycles"] * kernels["mem_ops"] / kernels["parallel"]
        form = str(options.get("form", "serial"))
        cycles = issue + memory if form == "serial" else np.maximum(issue, memory)
        result = empty_result(kernels)
        result["predicted_cycles"] = cycles
        result["predicted_ns"] = cycles / gpu.sm_clock_hz * 1e9 + c["launch_overhead_ns"]
        result["bottleneck"] = "compute"
        return result


def overlapped_kernels(model: OverlapModel, gpu: GpuProfile) -> pd.DataFrame:
    """Kernels timed by the overlapped form (issue and memory time of the same order, so the two
    forms differ on every kernel), 3 rows of each of 12 applications."""
    kernels = synthetic_kernels(model, gpu, TRUE, groups=12, rows_per_group=3)
    kernels["mem_ops"] = kernels["inst_executed"] * kernels["parallel"] * TRUE["issue_cycles"] / TRUE[
        "mem_latency_cycles"] * np.random.default_rng(3).uniform(0.3, 3.0, len(kernels))
    truth = with_constants(gpu, model.id, TRUE, "truth", "calibrated")
    kernels["duration_ns"] = model.evaluate(kernels, truth, {"form": "overlapped"})["predicted_ns"]
    return kernels


def test_calibrate_chooses_the_option_the_training_data_supports(gpu: GpuProfile) -> None:
    """A model that offers two forms: the fit picks the form the kernels were timed by, in the
    full fit and in every cross-validation fold (each on its own training applications), and
    then recovers the constants."""
    model = OverlapModel()
    kernels = overlapped_kernels(model, gpu)
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=3, restarts=0))
    assert outcome.chosen_options == {"form": "overlapped"} and outcome.options == {"form": "overlapped"}
    assert outcome.cv is not None and outcome.cv.fold_options == [{"form": "overlapped"}] * 3
    assert outcome.values["issue_cycles"] == pytest.approx(TRUE["issue_cycles"], rel=0.02)
    assert outcome.cv.held_out["mape"] < 0.01
    # an option the user sets is kept as given, never searched
    fixed = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=0,
                                                                    options={model.id: {"form": "serial"}}))
    assert fixed.chosen_options == {} and fixed.options == {"form": "serial"}


def test_the_default_form_wins_when_the_data_cannot_tell_the_forms_apart(gpu: GpuProfile) -> None:
    """Kernels without memory operations time the same in both forms: the default stays."""
    model = OverlapModel()
    kernels = overlapped_kernels(model, gpu)
    kernels["mem_ops"] = 0.0
    truth = with_constants(gpu, model.id, TRUE, "truth", "calibrated")
    kernels["duration_ns"] = model.evaluate(kernels, truth, {})["predicted_ns"]
    outcome = calibrate_model(model, kernels, gpu, CalibrationSettings(folds=0, restarts=0))
    assert outcome.options == {"form": "serial"}


def test_the_calibrated_profile_carries_the_chosen_options_and_the_user_overrides_them(
    gpu: GpuProfile, tmp_path: Path
) -> None:
    from nvperf_bridge.analysis import run_models
    from nvperf_bridge.registry import LoadedModel, Registry

    model = OverlapModel()
    kernels = overlapped_kernels(model, gpu)
    data = tmp_path / "data.csv"
    data.write_text("measured kernels\n")
    result = calibrate(kernels, gpu, {model.id: model}, CalibrationSettings(folds=3, restarts=0))
    document = calibrated_profile_mapping(result, "test-gpu-calibrated", [data], tool_version="9.9", date="2024-01-02")
    loaded = load_profile_file(write_profile(document, tmp_path / "test-gpu-calibrated.yaml"))
    assert loaded.raw["model_options"] == {model.id: {"form": "overlapped"}}
    provenance = loaded.raw["calibration"]["models"][model.id]["options"]
    assert provenance["chosen"] == {"form": "overlapped"} and len(provenance["cv_folds_chose"]) == 3
    assert provenance["extensions"] == ["form"]  # the chosen value is one the model declares beyond its paper
    from nvperf_bridge.commands.calibrate import render_report

    assert "form=overlapped (EXTENSION, not the paper)" in render_report(result)
    registry = Registry(models={model.id: LoadedModel(model, "test", "test", builtin=True)}, problems=[])
    # analyze applies the profile's options: the measured times come back
    runs, _ = run_models(kernels, loaded, registry, [model.id], {}, isolate=False)
    assert runs[model.id].options == {"form": "overlapped"}
    assert np.allclose(runs[model.id].result["predicted_ns"], kernels["duration_ns"], rtol=1e-3)
    # the user's own --option wins over the profile's
    runs, _ = run_models(kernels, loaded, registry, [model.id], {model.id: {"form": "serial"}}, isolate=False)
    assert runs[model.id].options == {"form": "serial"}
    assert (runs[model.id].result["predicted_ns"] > kernels["duration_ns"] * 1.05).all()


def test_recalibrating_a_calibrated_profile_chooses_its_fitted_options_again(
    gpu: GpuProfile, tmp_path: Path
) -> None:
    """A calibrated profile's model_options hold what its fit chose: calibrating from it again on
    kernels timed by the other form chooses that form (the earlier choice is a fit result, not a
    pin). An option a person wrote under model_options stays pinned through the fit."""
    model = OverlapModel()
    overlapped = overlapped_kernels(model, gpu)
    data = tmp_path / "data.csv"
    data.write_text("measured kernels\n")
    first = calibrate(overlapped, gpu, {model.id: model}, CalibrationSettings(folds=0, restarts=0))
    document = calibrated_profile_mapping(first, "test-gpu-calibrated", [data], tool_version="9.9", date="2024-01-02")
    calibrated = load_profile_file(write_profile(document, tmp_path / "test-gpu-calibrated.yaml"))
    assert calibrated.raw["model_options"] == {model.id: {"form": "overlapped"}}
    serial = overlapped.copy()
    truth = with_constants(gpu, model.id, TRUE, "truth", "calibrated")
    serial["duration_ns"] = model.evaluate(serial, truth, {"form": "serial"})["predicted_ns"]
    again = calibrate_model(model, serial, calibrated, CalibrationSettings(folds=0, restarts=0))
    assert again.chosen_options == {"form": "serial"} and again.options == {"form": "serial"}
    # the same option written by a person (no calibration block chose it) is held as given
    hand = profile_from_mapping({**BASE_PROFILE, "model_options": {model.id: {"form": "overlapped"}}}, "hand.yaml")
    pinned = calibrate_model(model, serial, hand, CalibrationSettings(folds=0, restarts=0))
    assert pinned.chosen_options == {} and pinned.options == {"form": "overlapped"}


def test_recalibrating_one_model_keeps_the_other_models_calibration_record(gpu: GpuProfile, tmp_path: Path) -> None:
    """``calibrate --model A`` from a profile that calibrated A and B: B's fitted constants stay, and so
    does its record (held-out error, the options its fit chose), marked with the calibration that made
    it. Without it B's validated accuracy (the verdicts' weight) is gone, and B's chosen options would
    read as a person's pins at the next fit."""
    from nvperf_bridge.review.verdict import validated_accuracy

    fake, overlap = FakeModel(), OverlapModel()
    kernels = overlapped_kernels(overlap, gpu)
    data = tmp_path / "data.csv"
    data.write_text("measured kernels\n")
    settings = CalibrationSettings(folds=3, restarts=0)
    first = calibrate(kernels, gpu, {fake.id: fake, overlap.id: overlap}, settings)
    document = calibrated_profile_mapping(first, "test-gpu-calibrated", [data], tool_version="9.9",
                                          date="2024-01-02", command="nvperf-bridge calibrate data.csv")
    calibrated = load_profile_file(write_profile(document, tmp_path / "test-gpu-calibrated.yaml"))
    overlap_record = calibrated.raw["calibration"]["models"][overlap.id]
    accuracy = validated_accuracy(calibrated, overlap.id)
    assert accuracy is not None and calibrated.fitted_option_names(overlap.id) == {"form"}

    second = calibrate(kernels, calibrated, {fake.id: fake}, settings)
    again = calibrated_profile_mapping(second, "test-gpu-recalibrated", [data], tool_version="9.9", date="2024-02-03")
    recalibrated = load_profile_file(write_profile(again, tmp_path / "test-gpu-recalibrated.yaml"))
    records = recalibrated.raw["calibration"]["models"]
    assert "carried_from" not in records[fake.id]  # made by this fit
    kept = records[overlap.id]
    assert kept["carried_from"] == {"profile": "test-gpu-calibrated", "date": "2024-01-02",
                                    "command": "nvperf-bridge calibrate data.csv", "data_files": 1}
    assert kept["error"] == overlap_record["error"] and kept["options"] == overlap_record["options"]
    assert validated_accuracy(recalibrated, overlap.id) == accuracy
    assert recalibrated.constant(overlap.id, "issue_cycles") == calibrated.constant(overlap.id, "issue_cycles")
    # the option the first fit chose is still a fit's choice: the next fit of that model chooses again
    assert recalibrated.fitted_option_names(overlap.id) == {"form"}
    assert recalibrated.pinned_options_for(overlap.id) == {}
    # the workbook's GPU sheet says where the kept record came from
    from nvperf_bridge.reports.excel import _calibration_fields

    rows = dict(_calibration_fields(recalibrated.raw["calibration"], "test-gpu-recalibrated.yaml"))
    assert rows[f"models.{overlap.id}"].endswith("from the calibration of 2024-01-02 (test-gpu-calibrated)")
    assert "from the calibration" not in rows[f"models.{fake.id}"]
    # a third generation keeps the record's first origin, not the profile it passed through
    third = calibrated_profile_mapping(calibrate(kernels, recalibrated, {fake.id: fake}, settings),
                                       "test-gpu-third", [data], tool_version="9.9", date="2024-03-04")
    assert third["calibration"]["models"][overlap.id]["carried_from"]["profile"] == "test-gpu-calibrated"


def test_a_yaml_switch_word_read_as_a_boolean_is_the_choice_it_spells() -> None:
    """YAML 1.1 reads ``l2_reads: off`` in a profile as False: the model takes it as ``off``,
    as ``--option hong-kim.l2_reads=off`` gives it, never as an error."""
    from nvperf_bridge.errors import ModelError
    from nvperf_bridge.model import choice_option

    switches = ("off", "memory-warps")
    assert yaml.safe_load("l2_reads: off") == {"l2_reads": False}
    assert choice_option({"l2_reads": False}, "l2_reads", switches, "hong-kim") == "off"
    assert choice_option({"l2_reads": "OFF"}, "l2_reads", switches, "hong-kim") == "off"
    with pytest.raises(ModelError, match="must be one of off, memory-warps, got True"):
        choice_option({"l2_reads": True}, "l2_reads", switches, "hong-kim")  # no 'on' among the choices


def test_a_profile_option_must_be_a_plain_value(tmp_path: Path) -> None:
    from nvperf_bridge.errors import ProfileError

    bad = {**BASE_PROFILE, "model_options": {"hong-kim": {"case_selection": ["section-3.2"]}}}
    with pytest.raises(ProfileError, match="model_options.hong-kim.case_selection"):
        profile_from_mapping(bad, "bad.yaml")
    good = profile_from_mapping({**BASE_PROFILE, "model_options": {"hong-kim": {"case_selection": "section-3.2"}}})
    assert good.options_for("hong-kim") == {"case_selection": "section-3.2"}
    assert good.options_for("hong-kim", {"case_selection": "published"}) == {"case_selection": "published"}
    assert good.options_for("transit", {"x": 1}) == {"x": 1}
