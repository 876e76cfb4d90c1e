"""Kerr et al. (GPGPU-3 2010): PCA + varimax + clusters + regression + POCS, on synthetic
kernels whose structure is known, through the public model object."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.builtin_plugins import kerr
from nvperf_bridge.errors import ModelError
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.model import BOTTLENECKS, validate_result
from nvperf_bridge.registry import load_registry

MODEL = kerr.MODEL


@pytest.fixture
def gpu() -> GpuProfile:
    return GpuProfile(
        id="test-gpu", name="Test GPU", match=["Test GPU"], compute_capability="8.0", sm_count=100,
        cores_per_sm=64, max_warps_per_sm=64, max_blocks_per_sm=32, registers_per_sm=65536,
        shared_mem_per_sm_bytes=167936, sm_clock_mhz=1000.0, memory_bandwidth_gb_per_s=1000.0, sources={},
        raw={"peak_fp32_gflops": 10000.0},
    )


def additive_kernels(n: int = 60, seed: int = 1, noise: float = 0.03) -> pd.DataFrame:
    """time = a * memory requests + b * instructions, with 3% noise: two latent factors,
    each seen through several correlated counters (so PCA should keep exactly two)."""
    rng = np.random.default_rng(seed)
    mem = 10 ** rng.uniform(5, 7.5, n)
    inst = 10 ** rng.uniform(6, 8.5, n)

    def jitter() -> np.ndarray:
        return np.exp(rng.normal(0, 0.02, n))

    frame = pd.DataFrame({
        "kernel_id": [f"k{i}" for i in range(n)],
        "inst_global_ld": 0.7 * mem * jitter(), "inst_global_st": 0.3 * mem * jitter(),
        "global_ld_sectors": 2.8 * mem * jitter(), "dram_bytes": 128 * mem * jitter(),
        "inst_executed": inst * jitter(), "inst_issued": 1.05 * inst * jitter(), "flop_sp": 20 * inst * jitter(),
        "block_threads": 256.0, "grid_blocks": 1000.0,
    })
    a, b = 40.0, 2.0
    frame["duration_ns"] = (a * mem + b * inst) * np.exp(rng.normal(0, noise, n))
    # a list, not an array: pandas 2 compares attrs with == when frames are combined (concat), and an
    # array's elementwise answer has no truth value there
    frame.attrs["memory_share"] = list(a * mem / (a * mem + b * inst))
    return frame


def ape(result: pd.DataFrame, kernels: pd.DataFrame) -> pd.Series:
    return (result["predicted_ns"] - kernels["duration_ns"]).abs() / kernels["duration_ns"]


def test_registered_through_the_entry_point() -> None:
    registry = load_registry()
    assert "kerr" in registry.models
    assert callable(registry.get("kerr").fit)


def test_pca_keeps_the_two_latent_factors_and_varimax_separates_them(gpu: GpuProfile) -> None:
    kernels = additive_kernels()
    data = kerr.fit(kernels, gpu, {})
    assert data["pca"]["n_components"] == 2
    assert sum(data["pca"]["explained_variance_ratio"][:2]) >= 0.85
    assert sum(data["pca"]["explained_variance_ratio"][:1]) < 0.85
    rotated = np.asarray(data["pca"]["rotated_loadings"])
    groups = np.asarray(data["groups"])
    features = np.asarray(data["features"])
    # after varimax every count loads on one component only (|loading| > 0.9 on one, < 0.3 on the other)
    counts = np.isin(groups, ["memory", "instructions"])
    assert (np.abs(rotated[counts]).max(axis=1) > 0.9).all()
    assert (np.abs(rotated[counts]).min(axis=1) < 0.3).all()
    memory_rc = np.abs(rotated[features == "dram_bytes"][0]).argmax()
    instruction_rc = np.abs(rotated[features == "inst_executed"][0]).argmax()
    assert memory_rc != instruction_rc
    # constant launch shape carries no variance and is dropped, with the reason recorded
    assert data["dropped_features"]["grid_blocks"] == "constant over the training kernels"
    assert data["dropped_features"]["flop_dp"] == "not collected"


def test_leave_one_out_recovers_the_additive_time(gpu: GpuProfile) -> None:
    kernels = additive_kernels()
    result = MODEL.evaluate(kernels, gpu, {})
    assert (result["error"] == "").all()
    assert (result["mode"] == "leave-one-kernel-out").all()
    errors = ape(result, kernels)
    assert errors.mean() < 0.08  # 3% noise; the additive form is the truth
    assert errors.median() < 0.05
    checked, warnings = validate_result("kerr", kernels, result)
    assert warnings == []


def test_leave_one_out_shortcut_equals_refitting_the_regression_without_the_kernel(gpu: GpuProfile) -> None:
    kernels = additive_kernels(n=30, seed=4)
    table = kerr.feature_table(kernels, 4.0)
    t_ns = kernels["duration_ns"].to_numpy()
    opts = kerr._options({"form": "additive"})
    data, arrays = kerr._fit_arrays(table, t_ns, "test-gpu", 4.0, opts)
    raw_loo, _, _ = kerr._loo(arrays, data, t_ns)
    design, w = arrays["design"], arrays["row_weight"]
    for i in (0, 7, 29):
        keep = np.arange(len(t_ns)) != i
        beta, *_ = np.linalg.lstsq(design[keep] * w[keep, None], t_ns[keep] * w[keep], rcond=None)
        assert raw_loo[i] == pytest.approx(design[i] @ beta, rel=1e-8)


def test_trained_model_predicts_new_kernels_and_survives_a_json_round_trip(gpu: GpuProfile) -> None:
    data = kerr.fit(additive_kernels(), gpu, {})
    text = json.dumps(data, allow_nan=False)
    restored = json.loads(text)
    assert restored == data
    for key in ("features", "mean", "scale", "pca", "clusters", "regression", "pocs", "training_ranges", "n_train"):
        assert key in restored
    assert restored["n_train"] == 60 and restored["model_version"] == MODEL.version
    fresh = additive_kernels(n=40, seed=9)
    result = MODEL.evaluate(fresh, gpu, {"model_data": restored})
    assert (result["mode"] == "trained model").all()
    assert ape(result, fresh).mean() < 0.10
    direct = MODEL.evaluate(fresh, gpu, {"model_data": data})
    np.testing.assert_allclose(result["predicted_ns"], direct["predicted_ns"])


def test_pocs_never_returns_a_non_positive_time_even_where_the_regression_does(gpu: GpuProfile) -> None:
    # the paper's plain least squares on raw time (weighting none) goes negative on tiny kernels
    train = additive_kernels()
    data = kerr.fit(train, gpu, {"form": "additive", "weighting": "none"})
    tiny = additive_kernels(n=30, seed=3)
    scale_down = [c for c in tiny.columns if c not in ("kernel_id", "block_threads", "grid_blocks", "duration_ns")]
    tiny[scale_down] = tiny[scale_down] * 1e-3
    result = MODEL.evaluate(tiny, gpu, {"model_data": data})
    assert (result["regression_ns"] <= 0).any(), "the test needs raw regressions below zero to mean anything"
    assert (result["predicted_ns"] > 0).all()
    assert result.loc[result["regression_ns"] <= 0, "pocs_clipped"].all()
    assert (result["predicted_ns"] >= data["pocs"]["low_ns"]).all()


def test_pocs_projection_lands_in_both_constraint_sets() -> None:
    t = np.array([-5.0, 0.5, 50.0, 5000.0, np.nan])
    projected = kerr.pocs(t, np.full(5, 1.0), np.full(5, 10.0), np.full(5, 1000.0))
    np.testing.assert_array_equal(projected[:4], [10.0, 10.0, 50.0, 1000.0])
    assert np.isnan(projected[4])


def test_bottleneck_follows_the_dominant_counter_group(gpu: GpuProfile) -> None:
    kernels = additive_kernels()
    result = MODEL.evaluate(kernels, gpu, {})
    share = pd.Series(kernels.attrs["memory_share"], index=kernels.index)
    assert set(result["bottleneck"]) <= set(BOTTLENECKS)
    assert (result.loc[share > 0.9, "bottleneck"] == "memory-bandwidth").all()
    assert (result.loc[share < 0.1, "bottleneck"] == "compute").all()
    assert not (result.loc[share < 0.5, "bottleneck"] == "memory-bandwidth").any()


def test_power_law_data_selects_the_log_form(gpu: GpuProfile) -> None:
    kernels = additive_kernels(seed=2)
    rng = np.random.default_rng(2)
    kernels["duration_ns"] = 3000 * kernels["inst_global_ld"] ** 0.6 * kernels["inst_executed"] ** 0.3 * np.exp(
        rng.normal(0, 0.03, len(kernels)))
    data = kerr.fit(kernels, gpu, {})
    assert data["form"] == "power"
    assert data["form_selection"]["power"] < data["form_selection"]["additive"]
    assert data["loo_mape"] < 0.08


def test_too_few_timed_kernels_gives_every_kernel_the_way_forward(gpu: GpuProfile) -> None:
    kernels = additive_kernels().head(5)
    result = MODEL.evaluate(kernels, gpu, {})
    assert result["predicted_ns"].isna().all()
    message = result["error"].iloc[0]
    assert "nvperf-bridge fit kerr" in message and "--model-data kerr=" in message
    assert "ships" not in message  # no fit of this GPU ships with the package
    assert f"at least {kerr.MIN_KERNELS} kernels" in message
    with pytest.raises(ModelError):
        kerr.fit(kernels, gpu, {})


def test_kernels_without_time_are_predicted_and_missing_counters_are_named(gpu: GpuProfile) -> None:
    kernels = additive_kernels()
    kernels.loc[[0, 1], "duration_ns"] = np.nan
    kernels.loc[2, "dram_bytes"] = np.nan
    result = MODEL.evaluate(kernels, gpu, {})
    # dram_bytes is missing for a timed kernel, so it is no feature and kernel 2 is still predicted
    assert result.loc[2, "error"] == ""
    assert result.loc[[0, 1], "predicted_ns"].notna().all()
    assert (result.loc[[0, 1], "mode"] == "fitted on the input's timed kernels").all()
    data = kerr.fit(additive_kernels(), gpu, {})
    broken = additive_kernels(n=10, seed=5).drop(columns=["dram_bytes"])
    predicted = MODEL.evaluate(broken, gpu, {"model_data": data})
    assert predicted["predicted_ns"].isna().all()
    assert "dram_bytes (ncu --metrics dram__bytes.sum)" in predicted["error"].iloc[0]


def test_model_data_from_another_model_is_refused(gpu: GpuProfile) -> None:
    with pytest.raises(ModelError, match="fitted for model"):
        MODEL.evaluate(additive_kernels(n=10), gpu, {"model_data": {"model": "other", "format_version": 1}})


def test_held_out_residuals_equal_refitting_without_the_group() -> None:
    """Leave-one-group-out by Woodbury equals refitting least squares without the group."""
    rng = np.random.default_rng(3)
    n, p = 40, 4
    design = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
    y = design @ rng.normal(size=p) + rng.normal(0, 0.1, n)
    groups = np.repeat(np.arange(10), 4).astype(str)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    u, _, _ = np.linalg.svd(design, full_matrices=False)
    held, leverage = kerr.held_out_residuals(u, y - design @ coef, groups)
    for g in np.unique(groups):
        out = groups == g
        refit, *_ = np.linalg.lstsq(design[~out], y[~out], rcond=None)
        np.testing.assert_allclose(held[out], y[out] - design[out] @ refit, rtol=1e-9, atol=1e-12)
    # one row per group is the classic e_i / (1 - h_ii)
    single, _ = kerr.held_out_residuals(u, y - design @ coef, None)
    np.testing.assert_allclose(single, (y - design @ coef) / (1 - leverage))
    np.testing.assert_allclose(kerr.held_out_residuals(u, y - design @ coef, np.arange(n).astype(str))[0], single)


def test_repeated_launches_are_left_out_together(gpu: GpuProfile) -> None:
    """Five launches of each kernel: a launch must not be predicted from its own kernel's
    other launches. Leaving a whole kernel out must reproduce the refit without it."""
    base = additive_kernels(n=20, seed=4)
    kernels = pd.concat([base.assign(kernel=[f"k{i}" for i in range(20)])] * 5, ignore_index=True)
    kernels["kernel_id"] = [str(i) for i in range(len(kernels))]
    result = MODEL.evaluate(kernels, gpu, {})
    assert (result["error"] == "").all()
    # identical launches of one kernel get one held-out prediction
    per_kernel = result.groupby(kernels["kernel"])["predicted_ns"].nunique()
    assert (per_kernel == 1).all()
    # and it is not the kernel's own measured time (it was left out of the fit)
    own = kernels.groupby("kernel")["duration_ns"].first()
    predicted = result.groupby(kernels["kernel"])["predicted_ns"].first()
    assert ((predicted - own).abs() / own > 1e-6).all()


def test_a_model_fitted_on_one_gpu_refuses_another_gpu_and_training_across_gpus() -> None:
    """Kerr's regression maps one machine's counters to its times: on another GPU every kernel gets a
    reason naming both GPUs and no number, and training rows from two GPUs are refused."""
    from nvperf_bridge.builtin_plugins.kerr import MODEL
    from nvperf_bridge.errors import ModelError
    from nvperf_bridge.gpu import resolve_profile

    kernels = additive_kernels(40)
    pascal, volta = resolve_profile("gtx-1080-ti"), resolve_profile("v100-sxm2")
    data = MODEL.fit(kernels, pascal, {})
    same = MODEL.evaluate(kernels, pascal, {"model_data": data})
    other = MODEL.evaluate(kernels, volta, {"model_data": data})
    assert (same["error"] == "").all() and same["predicted_ns"].notna().all()
    assert other["predicted_ns"].isna().all()
    assert other["error"].str.contains("fitted on GPU gtx-1080-ti, these kernels ran on v100-sxm2").all()
    mixed = kernels.assign(device=["NVIDIA GeForce GTX 1080 Ti", "Tesla V100-SXM2-16GB"] * (len(kernels) // 2))
    with pytest.raises(ModelError, match="come from 2 GPUs"):
        MODEL.fit(mixed, pascal, {})
