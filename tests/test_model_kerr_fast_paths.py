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

from nvperf_bridge.builtin_plugins import kerr
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
        for j in range(m):  # the accumulation cdist replaced
            diff = points[:, None, j] - points[None, :, j]
            d2 += diff * diff
        from scipy.spatial.distance import cdist

        np.testing.assert_array_equal(cdist(points, points), np.sqrt(d2))
        assert -1.0 <= kerr._silhouette(points, labels) <= 1.0
