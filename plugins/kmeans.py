"""Kerr's k-means and distances without ``scipy.cluster`` and ``scipy.spatial`` (speed only).

``kmeans`` is ``scipy.cluster.vq.kmeans2(points, k, iter=10, minit="++", rng=rng)`` computed here, value for
value: the same k-means++ start drawn from ``rng`` in the same order, the same nearest-center rule and the same
cluster means, each with scipy's own arithmetic (scipy 1.10-1.17, ``scipy/cluster/vq.py`` and ``_vq.pyx``):

- k-means++ (``vq._kpp``): the first center is ``rng.integers(n)``, each next one the point where the cumulative
  sum of D2 / sum(D2) first reaches ``rng.uniform()``, D2 being each point's least squared distance to the
  centers so far (``cdist(..., "sqeuclidean")``: the squared differences summed feature by feature from 0).
- nearest center (``_vq.vq``): below 5 features the squared differences summed feature by feature; from 5 on
  ``-2 points @ centers.T`` by scipy's own BLAS ``dgemm`` (the same call: ``"T", "N"``, alpha -2, beta 0)
  plus each point's and each center's sum of squares (summed feature by feature), the first least value
  winning.
- cluster means (``_vq.update_cluster_means``): each cluster's points summed in row order from 0, divided by
  their count; an empty cluster keeps its previous center.

One thing differs, and it changes no value: ``kmeans2`` always runs its 10 iterations; here an iteration that
assigns every point to the center it had stops the loop. The centers computed from the same labels are the
same numbers (and an empty cluster keeps the same previous center), so every later iteration would give these
labels and centers again. ``tests/test_model_kerr_kmeans.py`` compares both with ``kmeans2`` bit for bit.

Why (issue 17): ``scipy.cluster`` and ``scipy.spatial`` are not imported (nor ``scipy.linalg``'s package: the
dgemm comes from its compiled module alone, ``nvperf_bridge.scipy_lapack``): about 0.13-0.17 CPU s and 8 MiB of peak memory of ``analyze`` on the 10k-launch ncu details
page, measured on a loaded machine. The arithmetic itself is slower in numpy than in scipy's C loops (Kerr's
25 k-means runs there: 0.29-0.33 CPU s against 0.15-0.20), and the early stop saves little on real scores (2
of those 250 iterations), so the gain is the import.
"""

from __future__ import annotations

import numpy as np

ITERATIONS = 10  # kmeans2's default ``iter``
BLAS_FEATURES = 5  # scipy's _vq.vq: from this many features the distances come from dgemm (NFEATURES_CUTOFF)


def kmeans(points: np.ndarray, k: int, rng: np.random.Generator,
           iterations: int = ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """(centers (k, m), labels (n,) int32) as ``kmeans2(points, k, iter=iterations, minit="++", rng=rng)``
    gives them for float64 ``points`` (n, m) of finite values."""
    return Points(points).kmeans(Seeding(rng), k, iterations)


class Points:
    """The points k-means runs on, with what every run on them needs computed once: their finite check,
    each point's sum of squares (from ``BLAS_FEATURES`` features) and each feature's values contiguous (for
    ``cluster_means``). Speed only: Kerr runs 25 k-means on the same points, the same numbers each time."""

    def __init__(self, points: np.ndarray) -> None:
        self.points = np.ascontiguousarray(points, dtype=np.float64)
        if not np.isfinite(self.points).all():
            raise ValueError("array must not contain infs or NaNs")  # as kmeans2's check_finite says it
        self.squares = _sum_of_squares(self.points) if self.points.shape[1] >= BLAS_FEATURES else None
        self.columns = np.ascontiguousarray(self.points.T)  # each feature's values in a row of their own
        self._repeated = np.empty((len(self.points), 0))  # squares_for's last answer

    def squares_for(self, k: int) -> np.ndarray | None:
        """Each point's sum of squares repeated for ``k`` centers, (n, k): ``nearest`` adds it to its (n, k)
        products element by element, where adding the (n,) sums broadcast is about twice as slow (speed only:
        the same additions of the same numbers)."""
        if self.squares is None:
            return None
        if self._repeated.shape[1] != k:  # Kerr's k go up one by one: only the last is kept
            self._repeated = np.repeat(self.squares, k).reshape(len(self.squares), k)
        return self._repeated

    def kmeans(self, seeding: Seeding, k: int, iterations: int = ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
        """``kmeans`` on these points from the first ``k`` of ``seeding``'s k-means++ centers."""
        centers = seeding.centers(self.points, k)
        labels = None
        for _ in range(iterations):
            new_labels = nearest(self.points, centers, self.squares_for(k))
            if labels is not None and np.array_equal(new_labels, labels):
                break  # the same labels give the same centers: every later iteration repeats this one
            labels = new_labels
            centers = cluster_means(self.points, labels, centers, self.columns)
        return centers, labels


class Seeding:
    """scipy's ``_kpp`` (k-means++, Arthur & Vassilvitskii 2007) drawn from ``rng``, kept so that a larger k
    goes on from a smaller one's centers. Center i comes from the generator's i-th draw and the points'
    distances to centers 0..i-1 alone, so the first k centers of a run for k' > k are those of a run for k
    from a generator in the same state, number for number (speed only: Kerr seeds k = 2..6 from each seed,
    where ``_kpp`` would draw each from a fresh generator and compute the same centers again)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.drawn: list[np.ndarray] = []  # the centers so far, in order
        self.least: np.ndarray | None = None  # each point's least squared distance to them (D2), from 2 on

    def centers(self, points: np.ndarray, k: int) -> np.ndarray:
        """The first ``k`` k-means++ centers among ``points`` (the same points on every call), (k, m)."""
        while len(self.drawn) < k:
            if not self.drawn:
                index = self.rng.integers(len(points), dtype="int64")
            else:
                to_last = squared_distances(points, self.drawn[-1])
                self.least = to_last if self.least is None else np.minimum(self.least, to_last)
                with np.errstate(divide="ignore", invalid="ignore"):  # every point on a center: NaN, as in kmeans2
                    cumulative = (self.least / self.least.sum()).cumsum()
                index = int(np.searchsorted(cumulative, self.rng.uniform()))
            self.drawn.append(points[index, :].copy())
        return np.array(self.drawn[:k], dtype=np.float64).reshape(k, points.shape[1])


def squared_distances(points: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Squared Euclidean distance of each row of ``points`` to ``center``: the squared differences summed
    feature by feature, from 0 (as scipy's cdist and _vq's small-feature loop sum them)."""
    total = np.zeros(len(points))
    for j in range(points.shape[1]):
        diff = points[:, j] - center[j]
        total += diff * diff
    return total


def nearest(points: np.ndarray, centers: np.ndarray, squares: np.ndarray | None = None) -> np.ndarray:
    """Each point's nearest center (int32; the first of equally near ones), as scipy's ``_vq.vq`` finds it.
    ``squares``: ``_sum_of_squares(points)`` when ``points`` has ``BLAS_FEATURES`` features or more, or
    those repeated once per center, (n, k) (``Points.squares_for``: the same sums, added without broadcasting)."""
    if points.shape[1] < BLAS_FEATURES:
        distance = [squared_distances(points, center) for center in centers]
    else:
        from nvperf_bridge.scipy_lapack import dgemm  # scipy.linalg.blas.dgemm

        # M = -2 points @ centers.T by the call _vq makes (column-major: centers' rows "T", points' rows "N"),
        # dgemm's column-major (k, n) result read as its transpose: one row per point, no copy
        products = dgemm(-2.0, np.ascontiguousarray(centers).T, points.T, trans_a=1).T
        squares = _sum_of_squares(points) if squares is None else squares
        products += squares[:, None] if squares.ndim == 1 else squares  # (M + |point|^2) + |center|^2, in _vq's order
        products += _sum_of_squares(centers)
        if not np.isnan(products).any():  # without NaN, argmin's first least is the loop's below (speed only)
            return products.argmin(axis=1).astype(np.int32)
        distance = products.T
    labels = np.zeros(len(points), dtype=np.int32)
    least = distance[0].copy()
    for c in range(1, len(centers)):
        closer = distance[c] < least  # strict: the first of equally near centers keeps the point
        np.copyto(least, distance[c], where=closer)
        labels[closer] = c
    return labels


def cluster_means(points: np.ndarray, labels: np.ndarray, previous: np.ndarray,
                  columns: np.ndarray | None = None) -> np.ndarray:
    """Each cluster's mean (its points summed in row order, then divided by their count); a cluster without
    points keeps its center from ``previous``. ``columns``: ``points.T`` made contiguous, when the caller
    holds it (the same points for every iteration)."""
    k, m = previous.shape
    labels = labels.astype(np.intp, copy=False)  # bincount's index type, converted once for its m + 1 calls
    counts = np.bincount(labels, minlength=k)
    columns = points.T if columns is None else columns
    sums = np.empty((k, m))
    for j in range(m):  # each cluster's values of feature j summed in row order, from 0
        sums[:, j] = np.bincount(labels, weights=columns[j], minlength=k)
    empty = counts == 0
    means = sums / np.where(empty, 1, counts)[:, None]
    means[empty] = previous[empty]
    return means


DISTANCE_ROWS = 64  # rows of the distance matrix made at a time: their temporaries stay in the CPU's cache


def distances(points: np.ndarray) -> np.ndarray:
    """Euclidean distances between every two of ``points`` (n, n): the squared differences summed component
    by component, then the square root (the numbers ``scipy.spatial.distance.cdist(points, points)`` gives),
    made a band of rows at a time (no n x n temporary beside the result)."""
    n, m = points.shape
    if m == 0:
        return np.zeros((n, n))
    columns = np.ascontiguousarray(points.T)
    out = np.empty((n, n))
    diff = np.empty((min(DISTANCE_ROWS, n), n))
    for start in range(0, n, DISTANCE_ROWS):
        stop = min(start + DISTANCE_ROWS, n)
        band, step = out[start:stop], diff[:stop - start]
        for j in range(m):
            np.subtract(columns[j, start:stop, None], columns[j][None, :], out=step)
            if j == 0:
                np.multiply(step, step, out=band)
            else:
                np.multiply(step, step, out=step)
                band += step
    return np.sqrt(out, out=out)


def _sum_of_squares(rows: np.ndarray) -> np.ndarray:
    """Each row's sum of squares, feature by feature from 0 (_vq's vec_sqr): its squared distance to the
    origin (x - 0 is x exactly)."""
    return squared_distances(rows, np.zeros(rows.shape[1]))
