"""Kerr's k-means (``plugins/kmeans.py``) gives scipy's ``kmeans2(..., minit="++")`` bit for bit.

kmeans.py computes scipy's algorithm in numpy (and scipy's own dgemm from 5 features on) so that Kerr needs
neither ``scipy.cluster`` nor ``scipy.spatial``, and stops once an iteration changes no label. These tests run
both on the same points and seeds and compare centers and labels exactly: spread-out and clustered points,
points with ties, 1 to 8 features (both of scipy's distance paths), runs that have not settled after 10
iterations, the update step with an empty cluster, and the rotated scores Kerr clusters on the real magus corpus.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from nvperf_bridge import blas_threads
from nvperf_bridge.builtin_plugins import kerr, kmeans

scipy_vq = pytest.importorskip("scipy.cluster.vq")


def _scipy(points: np.ndarray, k: int, seed: int, iterations: int = 10) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "One of the clusters is empty"
        return scipy_vq.kmeans2(points, k, iter=iterations, minit="++", seed=np.random.default_rng(seed))


def _assert_same(points: np.ndarray, k: int, seed: int, iterations: int = 10) -> tuple[np.ndarray, np.ndarray]:
    with blas_threads.one_thread():  # as Kerr runs it
        expected_centers, expected_labels = _scipy(points, k, seed, iterations)
        centers, labels = kmeans.kmeans(points, k, np.random.default_rng(seed), iterations)
    np.testing.assert_array_equal(centers, expected_centers)
    np.testing.assert_array_equal(labels, expected_labels)
    assert labels.dtype == expected_labels.dtype and centers.dtype == expected_centers.dtype
    return centers, labels


@pytest.mark.parametrize("features", [1, 2, 4, 5, 6, 8])
def test_kmeans_equals_scipy_kmeans2(features: int) -> None:
    rng = np.random.default_rng(features)
    for trial in range(12):
        n, k = int(rng.integers(30, 3000)), int(rng.integers(2, 9))
        if trial % 3 == 0:  # spread out, features of very different scales
            points = rng.normal(size=(n, features)) * rng.uniform(0.01, 100.0, features)
        elif trial % 3 == 1:  # clustered
            points = (rng.normal(size=(k, features)) * 5)[rng.integers(0, k, n)] + rng.normal(size=(n, features))
        else:  # coarse values: equal distances, points on top of each other
            points = np.round(rng.normal(size=(n, features)), 1)
        _assert_same(points, k, int(rng.integers(0, 1000)))


@pytest.mark.parametrize("features", [2, 5])
def test_kmeans_from_one_seeding_for_every_k_equals_scipy_kmeans2(features: int) -> None:
    # Kerr seeds k = 2..6 from one generator per seed (kmeans.Seeding goes on from k to k + 1, and
    # kmeans.Points keeps what every run on the same points needs): each k is kmeans2 from a fresh generator
    rng = np.random.default_rng(10 + features)
    for trial in range(4):
        n = int(rng.integers(30, 2000))
        points = np.round(rng.normal(size=(n, features)), 1) if trial % 2 else rng.normal(size=(n, features))
        seed = int(rng.integers(0, 1000))
        prepared, seeding = kmeans.Points(points), kmeans.Seeding(np.random.default_rng(seed))
        for k in range(2, 8):
            with blas_threads.one_thread():
                expected_centers, expected_labels = _scipy(points, k, seed)
                centers, labels = prepared.kmeans(seeding, k)
            np.testing.assert_array_equal(centers, expected_centers)
            np.testing.assert_array_equal(labels, expected_labels)


def test_cluster_means_equal_scipys_and_an_empty_cluster_keeps_its_center() -> None:
    # an empty cluster is rare after a k-means++ start (none in 9,000 random small runs): its rule is tested on
    # the update step itself, against scipy's (kmeans2 sets an empty cluster's center back to the previous one)
    from scipy.cluster import _vq

    rng = np.random.default_rng(7)
    for features in (1, 3, 5, 7):
        points = rng.normal(size=(500, features)) * 1e3
        labels = rng.integers(0, 6, len(points)).astype(np.int32)
        labels[labels == 4] = 5  # cluster 4 empty
        previous = rng.normal(size=(6, features))
        expected, has_members = _vq.update_cluster_means(points, labels, 6)
        expected[~has_members] = previous[~has_members]
        np.testing.assert_array_equal(kmeans.cluster_means(points, labels, previous), expected)
        assert not has_members[4]


def test_kmeans_equals_scipy_before_it_settles() -> None:
    # one iteration (far from settled) and two: the loop's end, not the early stop, decides
    rng = np.random.default_rng(11)
    points = rng.normal(size=(2000, 6))
    for iterations in (1, 2, 3):
        _assert_same(points, 7, 5, iterations)


def test_kmeans_stops_once_labels_repeat() -> None:
    # the early stop changes nothing: 10 iterations here give what 50 of scipy's give once settled
    rng = np.random.default_rng(3)
    points = (rng.normal(size=(4, 5)) * 10)[rng.integers(0, 4, 500)] + rng.normal(size=(500, 5))
    centers, labels = kmeans.kmeans(points, 4, np.random.default_rng(1))
    expected_centers, expected_labels = _scipy(points, 4, 1, iterations=50)
    np.testing.assert_array_equal(centers, expected_centers)
    np.testing.assert_array_equal(labels, expected_labels)


def test_kmeans_refuses_what_kmeans2_refuses() -> None:
    points = np.ones((20, 3))
    points[4, 1] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        kmeans.kmeans(points, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="infs or NaNs"):
        _scipy(points, 2, 0)


def test_distances_equal_cdist() -> None:
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(5)
    for m in (1, 2, 5, 9, 26):
        points = rng.normal(size=(300, m)) * rng.uniform(0.01, 1000.0, m)
        np.testing.assert_array_equal(kmeans.distances(points), cdist(points, points))


def test_kmeans_on_kerr_scores_of_the_magus_corpus(realdata_dir) -> None:
    from nvperf_bridge.gpu import resolve_profile
    from nvperf_bridge.importers import read_profiles

    kernels = read_profiles(sorted((realdata_dir / "magus-corpus").glob("*.csv"))).kernels
    timed = kerr._timed(kernels)
    table = kerr.feature_table(kernels[timed], 4.0)
    t_ns = kernels.loc[timed, "duration_ns"].to_numpy(dtype=float)
    for form in ("additive", "power"):
        _, arrays = kerr._fit_arrays(table, t_ns, resolve_profile("gtx-1080-ti").id, 4.0,
                                     kerr._options({"form": form}))
        scores = np.ascontiguousarray(arrays["scores"])
        assert isinstance(scores, np.ndarray) and len(scores) >= 100
        for k in range(2, 9):
            for start in range(5):
                _assert_same(scores, k, kerr.DEFAULT_SEED + start)  # the seeds Kerr's _kmeans draws


def test_kerr_clusters_without_scipy_cluster_or_spatial(tmp_path) -> None:
    import subprocess
    import sys

    # a fresh process: Kerr's clusters and silhouette on 600 points load neither module (run outside the
    # checkout, whose nvperf_bridge/ would shadow the installed package and its builtin_plugins)
    code = ("import sys, numpy as np; from nvperf_bridge.builtin_plugins import kerr; "
            "points = np.random.default_rng(0).normal(size=(600, 5)); "
            "found = kerr._clusters(points, 6, kerr.DEFAULT_SEED); "
            "print(kerr.KerrModel.import_ahead, found['k'] >= 2, "
            "sorted({m.split('.')[1] for m in sys.modules if m.startswith(('scipy.cluster', 'scipy.spatial'))}), "
            "'scipy.linalg' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout.strip()
    # nor scipy.linalg's package (its dgemm comes from the compiled module alone: nvperf_bridge.scipy_lapack)
    assert out == "('nvperf_bridge.scipy_lapack',) True [] False"
