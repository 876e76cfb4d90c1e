"""kerr's speed-only shortcuts give exactly the numbers of the plain computation.

Each shortcut (issue 17) skips recomputing something the fit already has: the leave-one-out
path reuses the fit's scores, labels and fitted values; ``form: auto`` clusters only the form it
keeps; dense group labels skip ``np.unique``; the feature table is filled column by column.
These tests compare each shortcut with the plain computation, bit for bit, on the real magus
corpus (skipped without it) and on kernels with a known structure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.builtin_plugins import kerr, kmeans
from nvperf_bridge.gpu import resolve_profile
from nvperf_bridge.importers import read_profiles


@pytest.fixture
def corpus(realdata_dir) -> pd.DataFrame:
    kernels = read_profiles(sorted((realdata_dir / "magus-corpus").glob("*.csv"))).kernels
    assert len(kernels) >= 100
    return kernels


def _plain_feature_table(kernels: pd.DataFrame, coalesced: float) -> pd.DataFrame:
    """The feature table as whole-frame pandas operations (the code before the shortcut)."""
    table = {name: kerr.column_or_nan(kernels, name) for name, _, _, src in kerr.FEATURES if src == (name,)}
    requests = kerr.column_or_nan(kernels, "inst_global_ld") + kerr.column_or_nan(kernels, "inst_global_st")
    sectors = kerr.column_or_nan(kernels, "global_ld_sectors") + kerr.column_or_nan(kernels, "global_st_sectors")
    executed = kerr.column_or_nan(kernels, "inst_executed")
    with np.errstate(divide="ignore", invalid="ignore"):
        table["memory_intensity"] = (requests / executed).where(executed > 0)
        table["memory_efficiency"] = (requests * coalesced / sectors).where(sectors > 0)
    frame = pd.DataFrame(table, index=kernels.index)[[name for name, *_ in kerr.FEATURES]]
    return frame.where(~(frame.abs() > kerr.FEATURE_LIMIT))


def test_feature_table_matches_the_whole_frame_computation(corpus: pd.DataFrame) -> None:
    kernels = corpus.copy()
    kernels.loc[kernels.index[0], "inst_executed"] = 1e31  # beyond FEATURE_LIMIT: NaN in both
    pd.testing.assert_frame_equal(kerr.feature_table(kernels, 4.0), _plain_feature_table(kernels, 4.0))


@pytest.mark.parametrize("form", ["additive", "power"])
def test_loo_reuse_of_the_fit_arrays_is_bit_identical(corpus: pd.DataFrame, form: str) -> None:
    gpu = resolve_profile("gtx-1080-ti")
    timed = kerr._timed(corpus)
    table = kerr.feature_table(corpus[timed], 4.0)
    t_ns = corpus.loc[timed, "duration_ns"].to_numpy(dtype=float)
    data, arrays = kerr._fit_arrays(table, t_ns, gpu.id, 4.0, kerr._options({"form": form}))
    reused = kerr._predict_core(data, table, arrays)
    plain = kerr._predict_core(data, table)
    for key in ("scores", "labels", "y", "elasticity", "raw"):
        np.testing.assert_array_equal(reused[key], plain[key], err_msg=key)


def test_auto_form_clusters_equal_the_chosen_forms_own_fit(corpus: pd.DataFrame) -> None:
    gpu = resolve_profile("gtx-1080-ti")
    auto = kerr.fit(corpus, gpu, {})
    fixed = kerr.fit(corpus, gpu, {"form": auto["form"]})
    assert auto["clusters"] == fixed["clusters"]
    assert auto["clusters"]["k"] >= 1 and sum(auto["clusters"]["sizes"]) == auto["n_train"]
    assert [k for k in auto if k != "form_selection"] == list(fixed)  # key order of the written JSON kept


def test_dense_group_labels_skip_the_sort_with_the_same_codes() -> None:
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 50, 2000)
    dense[:50] = np.arange(50)  # every code present
    np.testing.assert_array_equal(kerr._group_index(dense), np.unique(dense, return_inverse=True)[1])
    sparse = dense * 3  # not dense: falls back to np.unique
    np.testing.assert_array_equal(kerr._group_index(sparse), np.unique(sparse, return_inverse=True)[1])
    names = np.array([f"k{i}" for i in dense])
    np.testing.assert_array_equal(kerr._group_index(names), np.unique(names, return_inverse=True)[1])


def test_silhouette_distances_equal_the_componentwise_sum() -> None:
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 9, 17, 26):
        points = rng.normal(size=(300, m)) * rng.uniform(0.01, 1000.0, m)
        labels = rng.integers(0, 4, len(points))
        d2 = np.zeros((len(points), len(points)))
        for j in range(m):  # the plain (n, n) accumulation
            diff = points[:, None, j] - points[None, :, j]
            d2 += diff * diff
        np.testing.assert_array_equal(kmeans.distances(points), np.sqrt(d2))  # and cdist's: test_model_kerr_kmeans
        assert -1.0 <= kerr._silhouette(points, labels) <= 1.0
        # the distances computed once for every k give each k's score exactly
        for k in (2, 3, 5):
            some = rng.integers(0, k, len(points))
            assert kerr._silhouette(points, some, kmeans.distances(points)) == kerr._silhouette(points, some)


def _fit_rows_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make kerr fit every kernel as its own row (the computation before deduplication)."""
    monkeypatch.setattr(kerr, "distinct_rows", lambda columns: kerr.Distinct.each(len(columns[0])))


def _assert_same_fit(fast: dict, plain: dict, path: str = "") -> None:
    """Two fitted dicts equal to rounding (floats to 1e-9 relative), everything else exactly."""
    if isinstance(plain, dict):
        assert list(fast) == list(plain), path
        for key in plain:
            _assert_same_fit(fast[key], plain[key], f"{path}/{key}")
    elif isinstance(plain, list):
        assert len(fast) == len(plain), path
        for i, (a, b) in enumerate(zip(fast, plain)):
            _assert_same_fit(a, b, f"{path}[{i}]")
    elif isinstance(plain, float):
        assert fast == pytest.approx(plain, rel=1e-9, abs=1e-12), path
    else:
        assert fast == plain, path


def _repeated_corpus(corpus: pd.DataFrame) -> pd.DataFrame:
    """The corpus with each kernel launched 1 to 5 times (as a training-step profile repeats its
    kernels), shuffled, with unique launch ids: the shape of the 1M-launch benchmark frame."""
    rng = np.random.default_rng(7)
    repeated = corpus.loc[corpus.index.repeat(rng.integers(1, 6, len(corpus)))]
    repeated = repeated.sample(frac=1.0, random_state=3).reset_index(drop=True)
    repeated["kernel_id"] = [f"launch{i}" for i in range(len(repeated))]
    return repeated


@pytest.mark.parametrize("options", [{}, {"form": "power"}])
def test_fitting_distinct_rows_with_counts_equals_fitting_every_launch(
        corpus: pd.DataFrame, options: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weighted by their counts, the distinct kernels give the fit of every repeated launch:
    the same features, components, clusters, coefficients, POCS bounds and LOO MAPE."""
    gpu = resolve_profile("gtx-1080-ti")
    kernels = _repeated_corpus(corpus)
    fast = kerr.fit(kernels, gpu, options)
    fast_result = kerr.MODEL.evaluate(kernels, gpu, options)
    _fit_rows_one_by_one(monkeypatch)
    plain = kerr.fit(kernels, gpu, options)
    plain_result = kerr.MODEL.evaluate(kernels, gpu, options)
    assert fast["n_train"] == plain["n_train"] == int(kerr._timed(kernels).sum())
    _assert_same_fit(fast, plain)
    pd.testing.assert_frame_equal(fast_result, plain_result, check_exact=False, rtol=1e-9, atol=1e-12)
    assert (fast_result["error"] == "").mean() > 0.9  # the comparison covers predicted kernels


def test_kernels_without_a_time_among_repeated_launches_are_predicted_as_before(
        corpus: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = resolve_profile("gtx-1080-ti")
    kernels = _repeated_corpus(corpus)
    kernels.loc[kernels.index[::9], "duration_ns"] = np.nan  # untimed: predicted by the model on the timed ones
    fast = kerr.MODEL.evaluate(kernels, gpu, {})
    _fit_rows_one_by_one(monkeypatch)
    plain = kerr.MODEL.evaluate(kernels, gpu, {})
    pd.testing.assert_frame_equal(fast, plain, check_exact=False, rtol=1e-9, atol=1e-12)
    assert (fast.loc[kernels.index[::9], "mode"] == "fitted on the input's timed kernels").all()


def test_distinct_rows_merges_only_bit_identical_rows() -> None:
    rng = np.random.default_rng(1)
    base = rng.normal(size=(50, 3))
    pick = rng.integers(0, 50, 400)
    columns = [base[pick, j].copy() for j in range(3)]
    columns[1][5] = -0.0 if columns[1][5] == 0.0 else np.nextafter(columns[1][5], np.inf)  # one ulp apart: its own row
    columns[2][7] = np.nan  # NaN rows merge with the same NaN only
    rows = kerr.distinct_rows(columns)
    stacked = np.column_stack(columns)
    # every kernel equals its representative bit for bit, and representatives are pairwise different
    np.testing.assert_array_equal(stacked[rows.first][rows.inverse].view(np.uint64), stacked.view(np.uint64))
    assert len({row.tobytes() for row in stacked}) == len(rows.first)
    assert rows.counts.sum() == 400 and (rows.counts >= 1).all()
    assert list(rows.first) == sorted(rows.first)  # in order of first appearance


def test_distinct_rows_falls_back_to_every_row_on_a_hash_collision(monkeypatch: pytest.MonkeyPatch) -> None:
    import nvperf_bridge.distinct_rows as distinct

    monkeypatch.setattr(distinct, "_HASH_MULTIPLIER", np.uint64(0))  # every row hashes alike: a forced collision
    columns = [np.array([1.0, 2.0, 1.0, 3.0])]
    rows = kerr.distinct_rows(columns)
    assert rows.all_single and list(rows.inverse) == [0, 1, 2, 3]


def test_held_out_residuals_with_counts_equal_the_repeated_rows() -> None:
    """A row standing for c identical rows gives the held-out residuals of the c copies."""
    rng = np.random.default_rng(5)
    n, p = 30, 4
    design = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
    y = design @ rng.normal(size=p) + rng.normal(0, 0.1, n)
    groups = np.repeat(np.arange(10), 3)
    counts = rng.integers(1, 4, n).astype(float)
    full_design, full_y, full_groups = (np.repeat(a, counts.astype(int), axis=0) for a in (design, y, groups))
    coef, *_ = np.linalg.lstsq(full_design, full_y, rcond=None)
    u_full, _, _ = np.linalg.svd(full_design, full_matrices=False)
    held_full, lev_full = kerr.held_out_residuals(u_full, full_y - full_design @ coef, full_groups)
    u, _, _ = kerr.thin_svd(design * np.sqrt(counts)[:, None])
    held, lev = kerr.held_out_residuals(u / np.sqrt(counts)[:, None], y - design @ coef, groups, counts)
    first = np.concatenate(([0], np.cumsum(counts.astype(int))[:-1]))
    np.testing.assert_allclose(held, held_full[first], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lev, lev_full[first], rtol=1e-9, atol=1e-12)


def test_thin_svd_equals_lapack_and_falls_back_on_ill_conditioned_designs() -> None:
    rng = np.random.default_rng(2)
    a = rng.normal(size=(5000, 9)) * np.exp(rng.normal(0, 2, size=(5000, 1)))  # rows weighted over decades
    u, s, vt = kerr.thin_svd(a)
    u0, s0, vt0 = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(s, s0, rtol=1e-10)
    np.testing.assert_allclose(u @ np.diag(s) @ vt, a, atol=1e-10 * np.abs(a).max())
    np.testing.assert_allclose(u.T @ u, np.eye(9), atol=1e-12)
    np.testing.assert_allclose((u**2).sum(axis=1), (u0**2).sum(axis=1), atol=1e-12)  # leverages
    nearly = a.copy()
    nearly[:, 3] = nearly[:, 2] * (1 + 1e-12)  # rank-deficient to working precision
    u, s, vt = kerr.thin_svd(nearly)
    np.testing.assert_allclose(s, np.linalg.svd(nearly, compute_uv=False), rtol=1e-8, atol=1e-8 * s[0])


def test_a_trained_model_predicts_repeated_launches_once_with_the_same_numbers(
        corpus: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    """analyze --model-data on a profile that repeats its kernels: one prediction per distinct
    input row, copied to its repeats, equals predicting every launch; kernels missing a counter
    still get their reason."""
    gpu = resolve_profile("gtx-1080-ti")
    data = kerr.fit(corpus, gpu, {})
    kernels = _repeated_corpus(corpus)
    kernels.loc[kernels.index[::11], "inst_executed"] = np.nan
    fast = kerr.MODEL.evaluate(kernels, gpu, {"model_data": data})
    _fit_rows_one_by_one(monkeypatch)
    plain = kerr.MODEL.evaluate(kernels, gpu, {"model_data": data})
    # equal to rounding: the matrix products round a row differently in blocks of another size
    pd.testing.assert_frame_equal(fast, plain, check_exact=False, rtol=1e-12, atol=0.0)
    assert fast.loc[kernels.index[::11], "error"].str.contains("inst_executed").all()
    assert (fast["error"] == "").sum() > len(kernels) // 2
