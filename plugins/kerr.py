"""Kerr, Diamos & Yalamanchili (GPGPU-3 2010): PCA + cluster analysis + regression + POCS.

Paper: A. Kerr, G. Diamos, S. Yalamanchili, "Modeling GPU-CPU workloads and
systems", GPGPU-3, 2010 (shared/seeds/002). The model is statistical: it
learns execution time from program metrics of kernels whose time was measured.

The method, step by step (paper section in brackets)
----------------------------------------------------
1. Metrics [5.1, Table 3] -> here the canonical counters available for every
   training kernel (``FEATURES`` below), plus two of the paper's derived
   metrics recomputed from counters: Memory Intensity (off-chip memory
   instructions / all instructions) and Memory Efficiency (minimum
   transactions / actual transactions, with the minimum = requests x the GPU
   profile's ``coalesced_sectors_per_request``, default 4). Columns that are
   not collected, missing for some training kernel, or constant over the
   training kernels are dropped (listed with the reason in ``dropped_features``).
   Counts are used raw in the paper's ``additive`` form and as log1p in the
   ``power`` form (see 5.); fractions always stay linear.
2. Normalised PCA [6.1]: zero mean, unit variance per metric, eigen-decomposition
   of the correlation matrix, keep the fewest components explaining >= 85% of
   the variance (option ``variance``).
3. Varimax rotation [6.1, ref 15 Manly]: of the retained loadings (Kaiser
   normalised), so each metric loads on one component. Scores are the
   standardised component scores rotated the same way (uncorrelated, unit
   variance). Each rotated component is signed so its largest loading is positive.
4. Cluster analysis [6.4]: the paper projects kernels onto the components and
   reads clusters off the plots (no algorithm named). Here: k-means on the
   rotated scores (k-means++ start, fixed seed, best of 5 starts, at most 10
   iterations each), k in 2..``max_clusters`` chosen by the mean silhouette;
   one cluster below 10 kernels. Sampling (so the fit scales linearly): with
   more than ``CLUSTER_SAMPLE`` (10,000) kernels the k-means runs on a seeded
   random sample of that many kernels and every kernel is then assigned to
   its nearest center; the silhouette is always computed on a seeded sample
   of at most ``SILHOUETTE_SAMPLE`` (2,000) of the clustered points (it is
   O(n^2)). Smaller inputs are clustered whole, as before. The cluster is reported per kernel; the paper uses clusters for
   characterisation and only proposes per-cluster regression as future work
   ("akin to regression trees", 6.5), so one regression is fitted, as in 6.5.
5. Polynomial regression [6.5]: time on the rotated scores, each component
   with its own polynomial of order N (no cross terms):
   ``y = b0 + sum_j sum_{d=1..N} b_jd RC_j^d``. The paper notes M variables of
   order N need at least N x M samples; here N is the largest order <=
   ``max_degree`` (default 2) with n >= 2 (N M + 1), twice that minimum, and M
   is capped at n/2 - 1 so a first-order fit always has that margin.
   Form (option ``form``, default ``auto``): ``additive`` is the paper's form,
   raw metrics and raw time, fitted by *relative* least squares (rows scaled
   by 1/t, an extension: plain least squares on times spread over decades
   ignores the short kernels; ``weighting: none`` gives the paper's); ``power``
   regresses log time on log1p counts (an extension for power-law data, where
   kernel counts span decades: the paper's own Table 4 runs from 1e4 to 5e10).
   ``auto`` fits both and keeps the lower exact leave-one-out MAPE on the
   training kernels; the two candidates' MAPEs are kept in ``form_selection``
   (so the reported ``loo_mape`` of the winner is slightly optimistic).
6. POCS [6.5, ref 2 Boyle & Dykstra]: alternating projections of each
   prediction onto the constraint sets C1 = {t >= floor > 0} (the paper's
   "execution times must be greater than 0"; floor = ``pocs_floor_fraction`` x
   the shortest training time, default 1%) and C2 = {|log t - mean| <= 2 sd}
   of the training kernels' log times, widened to the measured training range
   (the paper's "within two standard deviations of the mean"; its mean was over
   the same application on other processors, ours is over the training kernels
   on this GPU; log because times spread over decades, and a linear 2 sd band
   around a skewed sample excludes its own longest kernels; widened because a
   measured time is plausible by definition). Both sets are intervals of t, so
   the projections reach their intersection in at most two sweeps.

Training data: ``fit(kernels, gpu, options)`` returns a JSON-serialisable dict
(features, transforms, means/scales, eigenvalues, loadings, rotation, score
weights, cluster centers, regression coefficients, POCS bounds, training
ranges, n, version); ``evaluate`` predicts from it when ``options["model_data"]``
holds it. Without it, ``evaluate`` runs leave-one-out over the input's own
kernels that have a measured ``duration_ns`` when there are at least
``MIN_KERNELS`` (8) of them and at least ``MIN_FEATURES`` (3) usable counters.
What is left out is a kernel *group*: every launch with the same ``kernel``
name and launch shape (grid and block), so that a launch is never predicted
from repeated launches of the same workload (a profile of 100 launches of 3
kernels would otherwise score a few percent for free); launches of a kernel at
other grid sizes are other workloads. The regression is exact leave-one-group-out: residuals
(I - H_GG)^-1 e_G, by Woodbury e_G + U_G (I - U_G'U_G)^-1 U_G'e_G with U the
rank-r left singular vectors of the weighted design, which is e_i / (1 - h_ii)
when a group is one launch; the POCS bounds are leave-one-out (mean and sd
without launch i).

Speed (issue 17; results equal to rounding, tested in test_model_kerr_fast_paths): the fit
runs on the *distinct* timed kernels (same name, time and counters, bit for bit), each
weighted by its count: means, the correlation matrix, least squares, the leave-one-group-out
sums and the POCS statistics are sums over kernels, so this is the fit on every launch; the
k-means sample is drawn over launches as before. The regression and its leave-one-out share
one thin SVD per form (CholeskyQR2, LAPACK when ill-conditioned). A trained model predicts
each distinct input row once and copies the result to its repeats. The PCA,
rotation and clusters use all kernels' counters (unsupervised, no times:
transductive, not a leak of the target). Kernels without a measured time are
predicted by the model fitted on all timed kernels.

Cross-GPU form (option ``cross_gpu``, ``nvperf-bridge fit kerr FILES... --cross-gpu``; Sec.
5.1 "Machine Parameters", Table 2, 6.1, 6.2, 6.5 "GPU Modeling"): one model over runs from
several GPUs. Each GPU is described by Table 2's parameters read from its profile (the sourced
datasheet: clock, SMs as cores, issue width, threads per SM, warp size, memory controllers,
bandwidth per controller, L2; ``kerr_machines``), never from a run. A second normalised PCA
runs over the training GPUs (each GPU one observation, as the paper's over its processors;
log of the parameters in the power form), varimax-rotated, at most q components with
G >= 2 (q + 1) GPUs; their scores enter the regression as linear terms MC1..MCq beside the
application components (the paper gives no order for them; with a handful of GPUs a line is
all they support). ``form: auto`` keeps the form with the lower leave-one-GPU-out MAPE and
``loo_mape`` is leave-one-GPU-out. POCS C2 per kernel: within 2 sd of the mean log time of the
same workload (kernel name and launch shape, ``kerr_machines.workload_keys``) on the other GPUs,
as Sec. 6.5 states, where it ran on at least two; else the single-GPU form's range. The fitted
model predicts any GPU with a profile; a parameter missing from that profile takes the training
GPUs' mean (EXTENSION, said in the kernel's state). The single-GPU form stays the default and
refuses training rows from several GPUs, naming this option.

Bottleneck: the paper gives no bottleneck rule. Here it is read through the
loadings: per kernel, the elasticity of predicted time to each counter group,
d log t / d log x summed over the group's counters (chain rule through the
regression, the score weights, the standardisation and the log transform).
``memory`` (global requests, sectors, DRAM bytes) -> ``memory-bandwidth``,
``shared`` (shared-memory requests and wavefronts) -> ``memory-bandwidth``,
``instructions`` (instructions executed/issued, FLOPs) -> ``compute``,
``barriers`` -> ``synchronization``, when that group's elasticity is >= 0.25
and at least twice every other group's; otherwise ``unknown`` (typical when
all counters grow together with problem size, the paper's PC1). This is a
statistical attribution ("time grows with these counters"), not a mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge import blas_threads
from nvperf_bridge.labels import text_codes
from nvperf_bridge.errors import ModelError
from nvperf_bridge.gpu import GpuProfile
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.builtin_plugins import kerr_machines, kmeans
from nvperf_bridge.distinct_rows import Distinct, distinct_rows
from nvperf_bridge.shipped_model_data import shipped_model_data
from nvperf_bridge.model import (
    Requirements,
    bool_option,
    choice_option,
    column_or_nan,
    constant_column,
    empty_result,
    missing_inputs,
    number_option,
)

MODEL_ID = "kerr"
MODEL_VERSION = "1.0.0"
FORMAT_VERSION = 1

MIN_KERNELS = 8  # timed kernels needed to fit (LOO or trained model)
MIN_FEATURES = 3  # non-constant counters needed for a PCA worth the name
DEFAULT_VARIANCE = 0.85  # Section 6.1: "at least 85% of the variance"
DEFAULT_MAX_DEGREE = 2
DEFAULT_SIGMA = 2.0  # Section 6.5: "within two standard deviations of the mean"
DEFAULT_FLOOR_FRACTION = 0.01
DEFAULT_MAX_CLUSTERS = 6
DEFAULT_SEED = 0
MIN_KERNELS_FOR_CLUSTERS = 10
CLUSTER_SAMPLE = 10_000  # k-means runs on a seeded sample of this many kernels (all of them when fewer)
SILHOUETTE_SAMPLE = 2_000  # the silhouette (O(n^2)) is computed on a seeded sample of this many
ELASTICITY_MIN = 0.25  # a group must move time at least this much (d log t / d log x)...
ELASTICITY_RATIO = 2.0  # ...and at least this many times more than any other group
DEFAULT_COALESCED_SECTORS = 4.0  # 32 threads x 4 bytes / 32-byte sectors on sector GPUs
# A feature value beyond this is treated as not finite (an input guard, not part of the paper): no
# counter of a real run gets near it (1e18 instructions is ~30 years of one GPU), but a ratio over a
# near-zero denominator does (1e12 / 1e-200), and its square overflows float64 in the standardisation.
FEATURE_LIMIT = 1e30

# (feature, transform, group, canonical columns it is computed from); the paper's
# analogue (Table 3) in the comment. Groups feed the bottleneck attribution.
FEATURES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("grid_blocks", "count", "launch", ("grid_blocks",)),  # MIMD parallelism
    ("block_threads", "count", "launch", ("block_threads",)),  # SIMD parallelism
    ("registers_per_thread", "count", "launch", ("registers_per_thread",)),  # Registers_Per_Thread
    ("shared_mem_per_block_bytes", "count", "launch", ("shared_mem_per_block_bytes",)),  # on-chip extent
    ("achieved_occupancy", "fraction", "launch", ("achieved_occupancy",)),  # instrumented, like Activity_Factor
    ("theoretical_occupancy", "fraction", "launch", ("theoretical_occupancy",)),
    ("inst_executed", "count", "instructions", ("inst_executed",)),  # Dynamic_* instruction counts
    ("inst_issued", "count", "instructions", ("inst_issued",)),
    ("flop_sp", "count", "instructions", ("flop_sp",)),  # Dynamic_Float_single
    ("flop_dp", "count", "instructions", ("flop_dp",)),  # Dynamic_Float_double
    ("flop_hp", "count", "instructions", ("flop_hp",)),
    ("inst_global_ld", "count", "memory", ("inst_global_ld",)),  # Dynamic_Memory_offchip
    ("inst_global_st", "count", "memory", ("inst_global_st",)),
    ("global_ld_sectors", "count", "memory", ("global_ld_sectors",)),
    ("global_st_sectors", "count", "memory", ("global_st_sectors",)),
    ("dram_read_bytes", "count", "memory", ("dram_read_bytes",)),
    ("dram_write_bytes", "count", "memory", ("dram_write_bytes",)),
    ("dram_bytes", "count", "memory", ("dram_bytes",)),
    ("inst_shared_ld", "count", "shared", ("inst_shared_ld",)),  # Dynamic_Memory_onchip
    ("inst_shared_st", "count", "shared", ("inst_shared_st",)),
    ("shared_ld_wavefronts", "count", "shared", ("shared_ld_wavefronts",)),
    ("shared_st_wavefronts", "count", "shared", ("shared_st_wavefronts",)),
    ("inst_barrier", "count", "barriers", ("inst_barrier",)),  # Dynamic_Parallelism / context switches
    ("l2_hit_rate", "fraction", "ratio", ("l2_hit_rate",)),
    ("memory_intensity", "fraction", "ratio", ("inst_global_ld", "inst_global_st", "inst_executed")),  # Memory_Intensity
    ("memory_efficiency", "fraction", "ratio", ("inst_global_ld", "inst_global_st", "global_ld_sectors", "global_st_sectors")),  # Memory_Efficiency
)
FEATURE_INFO: dict[str, tuple[str, str, tuple[str, ...]]] = {name: (t, g, src) for name, t, g, src in FEATURES}
SOURCE_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(c for _, _, _, src in FEATURES for c in src))  # what features read

# Not features, and why: the target itself, the target in cycles, rates that
# divide work by the measured time (would leak it), and machine state.
EXCLUDED: dict[str, str] = {
    "duration_ns": "the regression target",
    "sm_cycles": "elapsed cycles are the target in another unit",
    "sol_sm_fraction": "a throughput: work / measured time",
    "sol_memory_fraction": "a throughput: work / measured time",
    "sol_dram_fraction": "a throughput: work / measured time",
    "sm_clock_hz": "machine state, not a program metric",
}

# counter group -> shared bottleneck label (groups not listed are never named a bottleneck)
GROUP_BOTTLENECK: dict[str, str] = {
    "memory": "memory-bandwidth",
    "shared": "memory-bandwidth",
    "instructions": "compute",
    "barriers": "synchronization",
}


# ---- the cross-GPU form's machines ------------------------------------------------------

@dataclass(frozen=True)
class Machines:
    """The cross-GPU form's training GPUs: ``table`` (one row of Table 2's parameters per GPU,
    ``kerr_machines.machine_table``), ``codes`` (each training row's GPU: a row of ``table``) and
    ``keys`` (each training row's workload, ``kerr_machines.workload_keys``)."""

    table: pd.DataFrame
    codes: np.ndarray
    keys: np.ndarray


# ---- features -----------------------------------------------------------------

def feature_table(kernels: pd.DataFrame, coalesced_sectors: float) -> pd.DataFrame:
    """Every candidate feature as raw values (NaN where its counters are missing)."""
    table = {name: column_or_nan(kernels, name) for name, _, _, src in FEATURES if src == (name,)}
    requests = column_or_nan(kernels, "inst_global_ld") + column_or_nan(kernels, "inst_global_st")
    sectors = column_or_nan(kernels, "global_ld_sectors") + column_or_nan(kernels, "global_st_sectors")
    executed = column_or_nan(kernels, "inst_executed")
    with np.errstate(divide="ignore", invalid="ignore"):
        table["memory_intensity"] = (requests / executed).where(executed > 0)  # Sec. 5.1 Memory Intensity
        table["memory_efficiency"] = (requests * coalesced_sectors / sectors).where(sectors > 0)  # Sec. 5.1 Memory Efficiency
    # one (feature, kernel) float block filled column by column: no frame-wide temporaries (speed only)
    block = np.empty((len(FEATURES), len(kernels)))
    for j, (name, *_) in enumerate(FEATURES):
        block[j] = table[name].to_numpy(dtype="float64")
        with np.errstate(invalid="ignore"):
            block[j][np.abs(block[j]) > FEATURE_LIMIT] = np.nan  # NaN beyond FEATURE_LIMIT (NaN stays NaN)
    return pd.DataFrame(block.T, index=kernels.index, columns=[name for name, *_ in FEATURES], copy=False)


def _transform(values: np.ndarray, transforms: list[str]) -> np.ndarray:
    out = values.astype("float64", copy=True)
    with np.errstate(invalid="ignore"):
        for j, transform in enumerate(transforms):  # column by column: no fancy-indexed copies
            if transform == "log1p":
                column = out[:, j]
                column[~(column >= 0)] = np.nan
                np.log1p(column, out=column)
    return out


def _feature_transform(name: str, count_transform: str) -> str:
    """'log1p' for counts when asked for (option feature_transform), else 'none'; fractions stay linear."""
    return count_transform if FEATURE_INFO[name][0] == "count" else "none"


def _mean_std(x: np.ndarray, counts: np.ndarray | None, ddof: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations of ``x`` (n, p) or (n,) whose row i stands for
    ``counts[i]`` identical kernels (``None``: one each, numpy's own mean/std). With counts this
    is the same statistic over the repeated rows, equal to rounding (speed only)."""
    if counts is None:
        return x.mean(axis=0), x.std(axis=0, ddof=ddof)
    total = float(counts.sum())
    c = counts if x.ndim == 1 else counts[:, None]
    mean = (c * x).sum(axis=0) / total
    return mean, np.sqrt((c * (x - mean) ** 2).sum(axis=0) / (total - ddof))


def _select_features(table: pd.DataFrame, count_transform: str,
                     counts: np.ndarray | None = None) -> tuple[list[str], dict[str, str]]:
    """Features with a finite value for every training kernel and some variance (after transform);
    ``counts``: how many kernels each row stands for (see ``distinct_rows``)."""
    kept: list[str] = []
    dropped: dict[str, str] = {}
    for name in table.columns:
        column = table[name].to_numpy(dtype="float64")
        transform = _feature_transform(name, count_transform)
        if not np.isfinite(column).any():
            dropped[name] = "not collected"
            continue
        if not np.isfinite(column).all():
            dropped[name] = "not available for every training kernel"
            continue
        if transform == "log1p" and (column < 0).any():
            dropped[name] = "negative values"
            continue
        values = _transform(column[:, None], [transform])[:, 0]
        mean, std = _mean_std(values, counts)
        if std <= 1e-9 * (1.0 + abs(float(mean))):
            dropped[name] = "constant over the training kernels"
            continue
        kept.append(name)
    return kept, dropped


# ---- PCA, varimax, clusters ------------------------------------------------------

def varimax(loadings: np.ndarray, max_iter: int = 500, tol: float = 1e-10) -> np.ndarray:
    """Kaiser's varimax (with Kaiser row normalisation): the orthogonal rotation R
    maximising the variance of the squared loadings (Section 6.1, Manly 1986)."""
    p, k = loadings.shape
    if k < 2:
        return np.eye(k)
    communality = np.sqrt((loadings**2).sum(axis=1))
    a = loadings / np.where(communality > 0, communality, 1.0)[:, None]
    rotation = np.eye(k)
    criterion = 0.0
    for _ in range(max_iter):
        lr = a @ rotation
        u, s, vt = np.linalg.svd(a.T @ (lr**3 - lr * (lr**2).sum(axis=0) / p))
        rotation = u @ vt
        if s.sum() < criterion * (1.0 + tol):
            break
        criterion = s.sum()
    return rotation


def principal_components(z: np.ndarray, n: int, counts: np.ndarray | None, variance: float,
                         max_components: int) -> dict[str, Any]:
    """Sec. 6.1 on standardised rows ``z``: eigen-decomposition of the correlation matrix, the fewest
    components explaining >= ``variance`` (at most ``max_components``), varimax-rotated, each
    rotated component signed so its largest loading is positive and ordered by its sum of squared
    loadings. ``n``: the number of observations (``counts`` per row when rows stand for several).
    Returns eigenvalues, explained ratios, m, loadings, rotation, rotated loadings and the score
    weights (z @ weights: rotated standardised scores, uncorrelated, unit variance)."""
    # on the one BLAS thread the model runs on (blas_threads): a sum split between threads has last bits
    # that depend on the machine's core count, and under load two threads took 10-20x as long
    corr = ((z if counts is None else z * counts[:, None]).T @ z) / (n - 1)
    eigenvalues, eigenvectors = np.linalg.eigh(corr)
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues = np.clip(eigenvalues[order], 0.0, None)
    eigenvectors = eigenvectors[:, order]
    explained = eigenvalues / eigenvalues.sum()
    m = int(np.searchsorted(np.cumsum(explained), variance - 1e-12) + 1)
    m = max(1, min(m, z.shape[1], max_components))
    vectors = eigenvectors[:, :m]
    loadings = vectors * np.sqrt(eigenvalues[:m])  # factor loadings (the paper's Figures 3 and 5)

    # Sec. 6.1: varimax rotation; sign and order the rotated components for readability
    rotation = varimax(loadings)
    rotated = loadings @ rotation
    signs = np.sign(rotated[np.abs(rotated).argmax(axis=0), np.arange(m)])
    signs[signs == 0] = 1.0
    rotation = rotation * signs
    rotated = rotated * signs
    order_rc = np.argsort((rotated**2).sum(axis=0))[::-1]
    rotation = rotation[:, order_rc]
    rotated = rotated[:, order_rc]
    weights = vectors / np.sqrt(np.where(eigenvalues[:m] > 0, eigenvalues[:m], 1.0)) @ rotation
    return {"eigenvalues": eigenvalues, "explained": explained, "m": m, "loadings": loadings,
            "rotation": rotation, "rotated": rotated, "weights": weights}


def _silhouette(points: np.ndarray, labels: np.ndarray, distances: np.ndarray | None = None) -> float:
    """Mean silhouette coefficient (Rousseeuw 1987), vectorised. ``distances``: ``kmeans.distances(points)``, when
    the caller holds them already (the same points scored for every k)."""
    d = kmeans.distances(points) if distances is None else distances
    clusters = np.unique(labels)
    if len(clusters) < 2:
        return -1.0
    member = labels[None, :] == clusters[:, None]  # (K, n)
    sizes = member.sum(axis=1)
    sums = d @ member.T  # (n, K): distance sums to each cluster
    own = np.searchsorted(clusters, labels)
    own_size = sizes[own]
    a = np.where(own_size > 1, sums[np.arange(len(labels)), own] / np.maximum(own_size - 1, 1), 0.0)
    mean_other = sums / sizes[None, :]
    mean_other[np.arange(len(labels)), own] = np.inf
    b = mean_other.min(axis=1)
    s = np.where(own_size > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(s.mean())


def _kmeans(points: kmeans.Points, k: int, seedings: list[kmeans.Seeding]) -> tuple[np.ndarray, np.ndarray, float]:
    """Best of 5 seeded k-means++ runs: (centers, labels, inertia). Each run is scipy's
    ``kmeans2(points, k, minit="++", seed=np.random.default_rng(seed + start))``, value for value (``kmeans``):
    ``seedings[start]`` holds that generator's k-means++ centers, shared by every k (speed only)."""
    best: tuple[np.ndarray, np.ndarray, float] | None = None
    offsets = np.empty_like(points.points)  # each point minus its center, one buffer for the 5 runs (speed only)
    for seeding in seedings:
        centers, labels = points.kmeans(seeding, k)
        if np.count_nonzero(np.bincount(labels, minlength=k)) < k:  # an empty cluster (labels are 0..k-1)
            continue
        np.subtract(points.points, centers[labels], out=offsets)
        inertia = float(np.multiply(offsets, offsets, out=offsets).sum())  # ((points - centers[labels]) ** 2).sum()
        if best is None or inertia < best[2]:
            best = (centers, labels, inertia)
    if best is None:
        return points.points.mean(axis=0, keepdims=True), np.zeros(len(points.points), dtype=int), float("nan")
    return best


def _clusters(scores: np.ndarray, max_clusters: int, seed: int, inverse: np.ndarray | None = None) -> dict[str, Any]:
    """k-means on the kernels' scores. ``inverse``: when ``scores`` holds distinct rows, the row
    of each kernel (``distinct_rows``); the kernels clustered and sampled are the same as with
    every kernel's row given (speed only)."""
    n = len(scores) if inverse is None else len(inverse)

    def kernel_rows(rows: np.ndarray | None = None) -> np.ndarray:
        picked = (np.arange(n) if inverse is None else inverse) if rows is None else \
            (rows if inverse is None else inverse[rows])
        return scores[picked]

    if n < MIN_KERNELS_FOR_CLUSTERS or max_clusters < 2:
        return {"k": 1, "centers": kernel_rows().mean(axis=0, keepdims=True).tolist(), "silhouette": None, "seed": seed}
    rng = np.random.default_rng(seed)
    sample = rng.choice(n, size=min(n, SILHOUETTE_SAMPLE), replace=False)  # silhouette is O(n^2)
    if n > CLUSTER_SAMPLE:  # k-means on a seeded sample; every kernel is assigned to its nearest center after
        points = kernel_rows(np.random.default_rng(seed + 1).choice(n, size=CLUSTER_SAMPLE, replace=False))
        sample = np.arange(SILHOUETTE_SAMPLE)  # the clustered sample is in random order already
    else:
        points = scores if inverse is None else kernel_rows()
    best: tuple[float, int, np.ndarray] | None = None
    distances = None  # between the sampled points: the same for every k, computed once (speed only)
    prepared = None  # the points with what every k-means run on them needs, made once (speed only)
    seedings: list[kmeans.Seeding] = []  # one k-means++ start per seed, continued from k to k + 1 (speed only)
    for k in range(2, min(max_clusters, n // 5) + 1):
        if prepared is None:
            prepared = kmeans.Points(points)
            seedings = [kmeans.Seeding(np.random.default_rng(seed + start)) for start in range(5)]
        centers, labels, _ = _kmeans(prepared, k, seedings)
        if len(centers) < k:
            continue
        if distances is None:
            distances = kmeans.distances(points[sample])
        quality = _silhouette(points[sample], labels[sample], distances)
        if best is None or quality > best[0] + 1e-12:
            best = (quality, k, centers)
    if best is None:
        return {"k": 1, "centers": kernel_rows().mean(axis=0, keepdims=True).tolist(), "silhouette": None, "seed": seed}
    return {"k": best[1], "centers": best[2].tolist(), "silhouette": best[0], "seed": seed}


def _assign(scores: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Nearest center of each row (squared Euclidean), one center at a time: no (n, k, m) temporary."""
    best = np.full(len(scores), np.inf)
    labels = np.zeros(len(scores), dtype=np.intp)
    for c, center in enumerate(centers):
        distance = ((scores - center) ** 2).sum(axis=1)
        closer = distance < best  # strict: ties keep the first center, as argmin does
        best[closer] = distance[closer]
        labels[closer] = c
    return labels


# ---- regression and POCS ---------------------------------------------------------

def _design(scores: np.ndarray, degree: int) -> np.ndarray:
    """[1, RC_1..RC_M, RC_1^2..RC_M^2, ...]: each component its own polynomial (Sec. 6.5)."""
    columns = [np.ones((len(scores), 1))] + [scores**d for d in range(1, degree + 1)]
    return np.hstack(columns)


def _term_names(m: int, degree: int) -> list[str]:
    return ["1"] + [f"RC{j + 1}" if d == 1 else f"RC{j + 1}^{d}" for d in range(1, degree + 1) for j in range(m)]


def thin_svd(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.linalg.svd(a, full_matrices=False)`` for a tall, well-conditioned ``a`` through
    CholeskyQR2 (Fukaya et al. 2014: two passes of R = chol(A'A), Q = A R^-1, which give an
    orthonormal Q to working precision while cond(a) < ~1e6) and the SVD of the small R; a
    rank-deficient or ill-conditioned ``a`` goes to LAPACK's SVD (speed only: the tall SVD is
    the fit's largest cost on 1e5-1e6 rows; the two agree to rounding)."""
    n, p = a.shape
    if n < 4 * p or not np.isfinite(a).all():
        return np.linalg.svd(a, full_matrices=False)
    from nvperf_bridge import scipy_lapack  # noqa: F401 - loads scipy's OpenBLAS, which one_thread then sets too

    with blas_threads.one_thread():
        return _thin_svd_cholesky_qr2(a)


def _thin_svd_cholesky_qr2(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``thin_svd``'s CholeskyQR2 path (LAPACK's SVD when ``a`` is ill-conditioned)."""
    from nvperf_bridge.scipy_lapack import LinAlgError, cholesky, solve_triangular  # scipy's, bit for bit

    p = a.shape[1]
    q, r = a, np.eye(p)
    try:
        for _ in range(2):
            step = cholesky(q.T @ q)  # upper
            # R's condition bounds a's: beyond 1e6 the second pass no longer restores orthogonality
            diag = np.abs(np.diag(step))
            if not np.isfinite(step).all() or diag.min() <= 1e-6 * diag.max():
                return np.linalg.svd(a, full_matrices=False)
            q = solve_triangular(step, q.T, trans="T", lower=False).T  # q R^-1 (rows of q solved at once)
            r = step @ r
    except (LinAlgError, ValueError):
        return np.linalg.svd(a, full_matrices=False)
    if np.linalg.cond(r) > 1e6:
        return np.linalg.svd(a, full_matrices=False)
    u_r, s, vt = np.linalg.svd(r)
    return q @ u_r, s, vt


def _choose_degree(n: int, m: int, max_degree: int) -> int:
    """Largest N <= max_degree with n >= 2 (N M + 1): twice the paper's N x M minimum."""
    for degree in range(max(1, max_degree), 0, -1):
        if n >= 2 * (degree * m + 1):
            return degree
    return 1


def _to_target(t_ns: np.ndarray, target: str) -> np.ndarray:
    return np.log(t_ns) if target == "log" else t_ns


def _from_target(y: np.ndarray, target: str) -> np.ndarray:
    return np.exp(y) if target == "log" else y


def pocs(t_ns: np.ndarray, floor_ns: np.ndarray, low_ns: np.ndarray, high_ns: np.ndarray, max_iter: int = 20) -> np.ndarray:
    """Alternating projections onto C1 = {t >= floor > 0} and C2 = {low <= t <= high} (Sec. 6.5, ref 2).

    Both sets are intervals of t, so this reaches their intersection in at most two sweeps; NaN stays NaN.
    """
    current = t_ns.astype("float64").copy()
    for _ in range(max_iter):
        previous = current
        current = np.maximum(current, floor_ns)  # C1: execution times are positive
        current = np.clip(current, low_ns, high_ns)  # C2: within sigma sd of the training mean (log time)
        if np.array_equal(current, previous, equal_nan=True):
            break
    return current


def _pocs_bounds(t_ns: np.ndarray, sigma: float, floor_fraction: float,
                 counts: np.ndarray | None = None) -> dict[str, float]:
    """C1 floor and C2 interval from the training times: mean +- sigma sd of log time (geometric),
    widened to the measured range (a time that was measured is plausible by definition)."""
    mean_, sd_ = _mean_std(np.log(t_ns), counts, ddof=1)
    mean, sd = float(mean_), float(sd_)
    return {
        "sigma": sigma,
        "log_mean": mean,
        "log_std": sd,
        "floor_ns": floor_fraction * float(t_ns.min()),
        "low_ns": min(float(np.exp(mean - sigma * sd)), float(t_ns.min())),
        "high_ns": max(float(np.exp(mean + sigma * sd)), float(t_ns.max())),
    }


# ---- fitting ------------------------------------------------------------------

# The two regression forms ``form: auto`` chooses between (by exact leave-one-out MAPE on the
# training kernels): "additive" is the paper's form (raw metrics, time) with relative least
# squares, right when time ~ overhead + sum of cost x count; "power" regresses log time on log
# counts, right when time ~ product of powers of the counts.
FORMS: dict[str, dict[str, str]] = {
    "additive": {"feature_transform": "none", "target": "linear", "weighting": "relative"},
    "power": {"feature_transform": "log1p", "target": "log", "weighting": "none"},
}


def _options(options: Mapping[str, Any]) -> dict[str, Any]:
    form = choice_option(options, "form", ("auto", *FORMS), MODEL_ID)
    explicit = any(key in options for key in ("target", "feature_transform", "weighting"))
    defaults = FORMS["additive" if form == "auto" else form]
    target = choice_option({"target": defaults["target"], **options}, "target", ("linear", "log"), MODEL_ID)
    transform = choice_option({"feature_transform": defaults["feature_transform"], **options}, "feature_transform",
                              ("none", "log1p"), MODEL_ID)
    weighting = choice_option({"weighting": defaults["weighting"], **options}, "weighting", ("relative", "none"),
                              MODEL_ID)
    variance = number_option(options, "variance", DEFAULT_VARIANCE, MODEL_ID, positive=True)
    if variance > 1.0:
        raise ModelError(f"option variance must be in (0, 1], got {variance}", model_id=MODEL_ID)
    return {
        "form": "custom" if explicit else form,
        "target": target,
        "feature_transform": transform,
        "weighting": weighting,
        "variance": variance,
        "max_degree": int(number_option(options, "max_degree", DEFAULT_MAX_DEGREE, MODEL_ID, positive=True)),
        "sigma": number_option(options, "pocs_sigma", DEFAULT_SIGMA, MODEL_ID, positive=True),
        "floor_fraction": number_option(options, "pocs_floor_fraction", DEFAULT_FLOOR_FRACTION, MODEL_ID,
                                        positive=True),
        "max_clusters": int(number_option(options, "max_clusters", DEFAULT_MAX_CLUSTERS, MODEL_ID, positive=True)),
        "seed": int(number_option(options, "seed", DEFAULT_SEED, MODEL_ID)),
        "cross_gpu": bool_option(options, "cross_gpu", False, MODEL_ID),
    }


def _timed(kernels: pd.DataFrame) -> pd.Series:
    t = column_or_nan(kernels, "duration_ns")
    return np.isfinite(t) & (t > 0)


def _fit_arrays(table: pd.DataFrame, t_ns: np.ndarray, gpu_id: str, coalesced: float,
                opts: dict[str, Any], with_clusters: bool = True,
                rows: Distinct | None = None,
                machines: Machines | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fit itself on training rows; returns the JSON dict and arrays the LOO path reuses.

    ``with_clusters=False`` leaves ``data["clusters"]`` to ``_add_clusters`` (speed only: the
    clusters do not enter the regression, so ``form: auto`` clusters only the form it keeps).
    ``rows``: ``table`` and ``t_ns`` hold distinct kernels, row i standing for ``rows.counts[i]``
    identical ones (``distinct_rows``). Every statistic is then weighted by the counts, which is
    exactly the fit on the repeated rows (means, the correlation matrix and least squares are
    sums over kernels), equal to rounding (speed only).
    ``machines``: the cross-GPU form (``Machines``): a second PCA over the training GPUs'
    parameters (Sec. 6.1/6.2) whose components enter the regression as linear terms."""
    counts = None if rows is None or rows.all_single else rows.counts
    n = len(t_ns) if rows is None else rows.n
    features, dropped = _select_features(table, opts["feature_transform"], counts)
    if n < MIN_KERNELS or len(features) < MIN_FEATURES:
        raise ModelError(
            f"needs at least {MIN_KERNELS} kernels with a measured duration_ns and {MIN_FEATURES} non-constant "
            f"counters; got {n} kernels and {len(features)} usable counters ({', '.join(features) or 'none'})",
            model_id=MODEL_ID,
            hint="profile more kernels (or launches with different inputs) with gpu__time_duration.sum and the instruction/memory counters",
        )
    transforms = [_feature_transform(f, opts["feature_transform"]) for f in features]
    raw = table[features].to_numpy(dtype="float64")
    x = _transform(raw, transforms)
    mean, scale = _mean_std(x, counts, ddof=1)
    z = np.subtract(x, mean, out=x)  # Sec. 6.1: normalised (zero mean, unit variance); in place: x is not reused
    z /= scale

    pca = principal_components(z, n, counts, opts["variance"], n // 2 - 1)
    eigenvalues, explained, m = pca["eigenvalues"], pca["explained"], pca["m"]
    loadings, rotation, rotated, weights = pca["loadings"], pca["rotation"], pca["rotated"], pca["weights"]
    scores = z @ weights  # rotated standardised scores: uncorrelated, unit variance

    # Sec. 6.5: polynomial regression of time on the components
    degree = _choose_degree(n, m, opts["max_degree"])
    design = _design(scores, degree)
    machine_part: dict[str, Any] | None = None
    if machines is not None:  # Sec. 6.2 + 6.5: the machine components beside the application ones
        machine_part, per_gpu = kerr_machines.fit_machines(
            machines.table, "log" if opts["target"] == "log" else "none", opts["variance"], principal_components)
        design = np.hstack([design, per_gpu[machines.codes]])
    y = _to_target(t_ns, opts["target"])
    # relative least squares on a linear target (rows scaled by 1/t): every kernel's error counts
    # in proportion, not the longest kernels' nanoseconds; the log target is relative already
    row_weight = 1.0 / t_ns if (opts["target"] == "linear" and opts["weighting"] == "relative") else np.ones(len(t_ns))
    # least squares through one thin SVD of the weighted design, kept for the exact leave-one-out
    # (``_loo``): beta = V S^-1 U'(w y) on the singular values above lstsq's default cutoff (eps x
    # max(n, p)). A row standing for c kernels is weighted by sqrt(c): sum_i c_i (w_i r_i)^2.
    system_weight = row_weight if counts is None else row_weight * np.sqrt(counts)
    u, s, vt = thin_svd(design * system_weight[:, None])
    rank = int((s > s.max() * max(n, design.shape[1]) * np.finfo(float).eps).sum())
    coefficients = vt[:rank].T @ ((u[:, :rank].T @ (y * system_weight)) / s[:rank])
    fitted = design @ coefficients
    ss_res = float((((y - fitted) ** 2) * (1.0 if counts is None else counts)).sum())
    y_mean = _mean_std(y, counts)[0]
    ss_tot = float((((y - y_mean) ** 2) * (1.0 if counts is None else counts)).sum())
    data: dict[str, Any] = {
        "model": MODEL_ID,
        "format_version": FORMAT_VERSION,
        "model_version": MODEL_VERSION,
        "gpu": gpu_id,
        "n_train": n,
        "features": features,
        "transforms": transforms,
        "groups": [FEATURE_INFO[f][1] for f in features],
        "dropped_features": dropped,
        "coalesced_sectors_per_request": coalesced,
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "pca": {
            "variance_threshold": opts["variance"],
            "eigenvalues": eigenvalues.tolist(),
            "explained_variance_ratio": explained.tolist(),
            "n_components": m,
            "loadings": loadings.tolist(),
            "rotation": rotation.tolist(),
            "rotated_loadings": rotated.tolist(),
            "score_weights": weights.tolist(),
        },
        "clusters": None,  # Sec. 6.4, filled by _add_clusters (kept here for the key order)
        "regression": {
            "target": opts["target"],
            "weighting": opts["weighting"] if opts["target"] == "linear" else "none",
            "degree": degree,
            "terms": _term_names(m, degree) + [f"MC{j + 1}" for j in range(machine_part["n_components"] if machine_part
                                                                            else 0)],
            "coefficients": coefficients.tolist(),
            "r2": (1.0 - ss_res / ss_tot) if ss_tot > 0 else None,
        },
        "pocs": _pocs_bounds(t_ns, opts["sigma"], opts["floor_fraction"], counts),
        "training_ranges": {
            "feature_min": raw.min(axis=0).tolist(),
            "feature_max": raw.max(axis=0).tolist(),
            "duration_ns_min": float(t_ns.min()),
            "duration_ns_max": float(t_ns.max()),
        },
    }
    if machine_part is not None:
        data["machine"] = machine_part
        data["gpu"] = "several"
        data["pocs"]["per_workload"] = kerr_machines.workload_statistics(
            machines.keys, np.log(t_ns), np.ones(len(t_ns)) if counts is None else counts)
    # left singular vectors per kernel: a row standing for c kernels is sqrt(c) times each one's
    left = u[:, :rank] if counts is None else u[:, :rank] / np.sqrt(counts)[:, None]
    arrays = {"scores": scores, "design": design, "y": y, "fitted": fitted, "row_weight": row_weight, "raw": raw,
              "left": left}
    if with_clusters:
        _add_clusters(data, arrays, opts, rows)
    return data, arrays


def _add_clusters(data: dict[str, Any], arrays: dict[str, np.ndarray], opts: dict[str, Any],
                  rows: Distinct | None = None) -> None:
    """Sec. 6.4: clusters on the component scores (``data["clusters"]``, ``arrays["labels"]``)."""
    clusters = _clusters(arrays["scores"], opts["max_clusters"], opts["seed"], None if rows is None else rows.inverse)
    labels = _assign(arrays["scores"], np.asarray(clusters["centers"]))
    sizes = np.bincount(labels, None if rows is None else rows.counts, minlength=clusters["k"])
    clusters["sizes"] = sizes.astype(np.int64).tolist()
    data["clusters"] = clusters
    arrays["labels"] = labels


def _fit_selected(table: pd.DataFrame, t_ns: np.ndarray, gpu_id: str, coalesced: float,
                  opts: dict[str, Any], groups: np.ndarray | None = None,
                  rows: Distinct | None = None,
                  machines: Machines | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``_fit_arrays`` with the form fixed, or (form auto) both forms, keeping the lower
    leave-one-group-out MAPE (``groups``: one label per row, the kernel name; ``rows``: the rows
    are distinct kernels with counts, see ``_fit_arrays``; ``machines``: the cross-GPU form, whose
    groups are the GPUs: the form kept has the lower leave-one-GPU-out MAPE)."""
    if opts["form"] != "auto":
        data, arrays = _fit_arrays(table, t_ns, gpu_id, coalesced, opts, rows=rows, machines=machines)
        data["form"] = opts["form"]
        return data, arrays
    candidates: dict[str, tuple[float, dict[str, Any], dict[str, np.ndarray]]] = {}
    for form, settings in FORMS.items():
        data, arrays = _fit_arrays(table, t_ns, gpu_id, coalesced, {**opts, **settings}, with_clusters=False, rows=rows,
                                   machines=machines)
        arrays["loo"] = _loo(arrays, data, t_ns, groups, rows, machines)  # kept: the caller's leave-one-out reuses it
        loo_ns = arrays["loo"][1]
        mape = _mape(loo_ns, t_ns, rows)
        candidates[form] = (mape if mape is not None else float("inf"), data, arrays)
    best = min(candidates, key=lambda f: candidates[f][0])  # ties keep the paper's additive form
    _, data, arrays = candidates[best]
    selection = {f: (c[0] if np.isfinite(c[0]) else None) for f, c in candidates.items()}
    # the other form's arrays are let go before the clustering's distance matrix is made (memory only)
    del candidates, loo_ns
    _add_clusters(data, arrays, {**opts, **FORMS[best]}, rows)
    data["form"] = best
    data["form_selection"] = selection
    return data, arrays


def _group_index(groups: np.ndarray) -> np.ndarray:
    """Dense codes 0..G-1 in sorted label order (``np.unique``'s inverse); labels that are such
    codes already (``_kernel_groups``) are returned as they are, without the O(n log n) sort."""
    groups = np.asarray(groups)
    if groups.dtype.kind in "iu" and len(groups) and groups.min() == 0 and \
            (np.bincount(groups) > 0).all():
        return groups.astype(np.intp, copy=False)
    return np.unique(groups, return_inverse=True)[1].reshape(-1)


def _mape(predicted_ns: np.ndarray, t_ns: np.ndarray, rows: Distinct | None = None) -> float | None:
    """Mean APE over the kernels with a prediction (rows weighted by the kernels they stand for);
    None when none has one."""
    ape = np.abs(predicted_ns - t_ns) / t_ns
    ok = np.isfinite(ape)
    if not ok.any():
        return None
    if rows is None or rows.all_single:
        return float(np.nanmean(ape))
    return float((ape[ok] * rows.counts[ok]).sum() / rows.counts[ok].sum())


def held_out_residuals(u: np.ndarray, e: np.ndarray, groups: np.ndarray | None,
                       counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Residual of each row when its whole group is left out of a least-squares fit.

    ``u``: the rank-r left singular vectors of the (weighted) design, n x r;
    ``e``: the full fit's residuals. For group G the held-out residuals are
    (I - H_GG)^-1 e_G with H_GG = U_G U_G'; by Woodbury that is
    e_G + U_G (I_r - U_G'U_G)^-1 U_G'e_G, so only an r x r system per group is
    solved (batched), whatever the group's size. Returns (held-out residuals,
    row leverage h_ii); NaN where the group alone determines a term
    (I - U_G'U_G singular). Without ``groups`` every row is its own group:
    e_i / (1 - h_ii). ``counts``: row i stands for ``counts[i]`` identical rows
    (same group, same u_i and e_i): the group sums count it that many times.
    """
    leverage = (u ** 2).sum(axis=1)
    index = None if groups is None else _group_index(groups)
    n_rows = len(e) if counts is None else int(counts.sum())
    n_groups = len(e) if index is None else int(index.max()) + 1 if len(index) else 0
    if n_groups == n_rows:  # every row its own group: the closed form, no r x r systems
        with np.errstate(divide="ignore", invalid="ignore"):
            held = e / (1.0 - leverage)
        held[leverage > 1.0 - 1e-9] = np.nan
        return held, leverage
    r = u.shape[1]
    gram = np.empty((n_groups, r, r))  # U_G'U_G per group, from r(r+1)/2 bincounts: O(n r^2) time, O(g r^2) memory
    columns = np.ascontiguousarray(u.T)  # contiguous columns and one product buffer (speed only)
    weighted = columns if counts is None else columns * counts  # each row counted as often as it stands
    product = np.empty(len(e))
    for a in range(r):
        for b in range(a, r):
            np.multiply(weighted[a], columns[b], out=product)
            gram[:, a, b] = gram[:, b, a] = np.bincount(index, product, minlength=n_groups)
    projected = np.empty((n_groups, r))
    for a in range(r):
        np.multiply(weighted[a], e, out=product)
        projected[:, a] = np.bincount(index, product, minlength=n_groups)
    singular = np.linalg.eigvalsh(gram)[:, -1] > 1.0 - 1e-9 if r else np.zeros(n_groups, dtype=bool)
    system = np.eye(r)[None, :, :] - gram
    system[singular] = np.eye(r)  # solved harmlessly, then marked NaN below
    z = np.linalg.solve(system, projected[:, :, None])[:, :, 0]
    held = e + (u * z[index]).sum(axis=1)
    held[singular[index]] = np.nan
    return held, leverage


def _loo(arrays: dict[str, np.ndarray], data: dict[str, Any], t_ns: np.ndarray,
         groups: np.ndarray | None = None, rows: Distinct | None = None,
         machines: Machines | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact leave-one-group-out for the (weighted) regression; leave-one-out POCS sets.

    Regression: ``held_out_residuals`` in the weighted problem (rows scaled by w_i;
    the fit without a row does not depend on its weight), divided back by w_i, from
    the left singular vectors the fit kept (``arrays["left"]``: one SVD per form).
    Returns (raw held-out prediction in ns, POCS'd held-out prediction in ns,
    leverage h_ii); NaN where the group alone determines a regression term.
    ``rows``: the rows are distinct kernels with counts (``_fit_arrays``).
    """
    if "loo" in arrays:
        return arrays["loo"]  # computed when the form was chosen (same arrays, same data, same groups)
    y, fitted, w = arrays["y"], arrays["fitted"], arrays["row_weight"]
    counts = None if rows is None or rows.all_single else rows.counts
    held, leverage = held_out_residuals(arrays["left"], (y - fitted) * w, groups, counts)
    y_loo = y - held / w
    raw_ns = _from_target(y_loo, data["regression"]["target"])
    floor_fraction = data["pocs"]["floor_ns"] / float(t_ns.min())
    bounds = _loo_bounds(t_ns, data["pocs"]["sigma"], floor_fraction, groups, counts)
    if machines is not None:  # groups are the GPUs: the same workload's times on the other GPUs (Sec. 6.5)
        bounds = _workload_bounds(bounds, t_ns, counts, machines, data["pocs"]["sigma"])
    projected = pocs(raw_ns, *bounds)
    return raw_ns, projected, leverage


def _workload_bounds(bounds: tuple[np.ndarray, np.ndarray, np.ndarray], t_ns: np.ndarray,
                     counts: np.ndarray | None, machines: Machines,
                     sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """POCS C2 of the cross-GPU form, leaving each row's GPU out: within ``sigma`` sd of the same
    workload's log times on the other GPUs where it ran on at least two others, else ``bounds``
    (the other GPUs' whole range, as the single-GPU form)."""
    workload = pd.factorize(pd.Series(machines.keys, dtype="object"))[0]
    logs = np.log(t_ns)
    centre = float(logs.mean())
    low, high, _ = kerr_machines.other_machine_bounds(logs - centre, np.ones(len(t_ns)) if counts is None else counts,
                                                      workload, machines.codes, sigma)
    found = np.isfinite(low)
    return bounds[0], np.where(found, low * np.exp(centre), bounds[1]), np.where(found, high * np.exp(centre), bounds[2])


def _loo_bounds(t_ns: np.ndarray, sigma: float, floor_fraction: float,
                groups: np.ndarray | None = None,
                counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """POCS sets without the row's group (every launch of its kernel; each row alone when
    ``groups`` is None): floor from the others' shortest time, C2 from the others' log times.
    ``counts``: row i stands for ``counts[i]`` kernels of its group."""
    index = np.arange(len(t_ns)) if groups is None else _group_index(groups)
    n_groups = int(index.max()) + 1
    logs = np.log(t_ns)
    n = len(t_ns) if counts is None else float(counts.sum())
    log_mean = _mean_std(logs, counts)[0]
    centred = logs - log_mean  # centred sums avoid cancellation in the variance
    squares = centred**2
    if counts is None:
        in_group = np.bincount(index, minlength=n_groups).astype(float)[index]
        sum_g = np.bincount(index, centred, minlength=n_groups)[index]
        sumsq_g = np.bincount(index, squares, minlength=n_groups)[index]
        total, total_sq = centred.sum(), squares.sum()
    else:
        in_group = np.bincount(index, counts, minlength=n_groups)[index]
        sum_g = np.bincount(index, centred * counts, minlength=n_groups)[index]
        sumsq_g = np.bincount(index, squares * counts, minlength=n_groups)[index]
        total, total_sq = (centred * counts).sum(), (squares * counts).sum()
    n_wo = n - in_group
    with np.errstate(divide="ignore", invalid="ignore"):  # one group only: nothing is left to bound by (NaN)
        centred_mean_wo = (total - sum_g) / n_wo
        var_wo = (total_sq - sumsq_g - n_wo * centred_mean_wo**2) / (n_wo - 1)
    mean_wo = log_mean + centred_mean_wo
    sd_wo = np.sqrt(np.clip(var_wo, 0.0, None))
    group_min = np.full(n_groups, np.inf)
    np.minimum.at(group_min, index, t_ns)
    group_max = np.full(n_groups, -np.inf)
    np.maximum.at(group_max, index, t_ns)
    by_min, by_max = np.argsort(group_min), np.argsort(group_max)
    second_min = group_min[by_min[1]] if n_groups > 1 else np.nan
    second_max = group_max[by_max[-2]] if n_groups > 1 else np.nan
    min_wo = np.where(index == by_min[0], second_min, group_min[by_min[0]])
    max_wo = np.where(index == by_max[-1], second_max, group_max[by_max[-1]])
    low = np.fmin(np.exp(mean_wo - sigma * sd_wo), min_wo)
    high = np.fmax(np.exp(mean_wo + sigma * sd_wo), max_wo)
    return floor_fraction * min_wo, low, high


def _kernel_groups(kernels: pd.DataFrame) -> np.ndarray:
    """One integer label per row: the kernel's name and launch shape. Repeated launches of
    one workload share a label and are left out together; launches of one kernel at other
    problem sizes (another grid) are other workloads and may train each other."""
    keys = _group_keys(kernels)
    if not keys:
        return np.arange(len(kernels))
    return kernels.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()


def _group_keys(kernels: pd.DataFrame) -> list[str]:
    """The columns ``_kernel_groups`` groups by: the first name column present, grid and block."""
    keys = [c for c in ("kernel", "kernel_name", "kernel_id") if c in kernels.columns][:1]
    return keys + [c for c in ("grid_blocks", "block_threads") if c in kernels.columns] if keys else []


def fit(kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> dict[str, Any]:
    """Fit on the kernels with a measured duration_ns; a JSON-serialisable dict."""
    opts = _options(options)
    coalesced = float(gpu.get("coalesced_sectors_per_request", DEFAULT_COALESCED_SECTORS))
    timed = _timed(kernels)
    train = kernels[timed]
    t_all = column_or_nan(train, "duration_ns").to_numpy()
    machines: Machines | None = None
    if not opts["cross_gpu"]:
        _one_gpu(train)
        rows, table, t_ns, groups = _training_rows(train, coalesced, t_all)
    else:  # Sec. 6.5 "GPU Modeling": one model over several GPUs, their parameters as a second PCA
        codes, labels = pd.factorize(pd.Series(kerr_machines.device_labels(train), dtype="object"))
        profiles = _row_profiles(list(labels), gpu, options)
        rows, table, t_ns, _ = _training_rows(train, coalesced, t_all, extra=[codes.astype(np.float64)])
        machines = Machines(kerr_machines.machine_table(profiles), codes[rows.first],
                            kerr_machines.workload_keys(train)[rows.first])
        groups = machines.codes  # leave one GPU out: the form is chosen on GPUs it did not see
    data, arrays = _fit_selected(table, t_ns, gpu.id, coalesced, opts, groups, rows, machines)
    if machines is not None:
        data["machine"]["profiles"] = {label: profile.id for label, profile in profiles.items()}
    if rows.n >= 3:
        _, loo_ns, _ = _loo(arrays, data, t_ns, groups, rows, machines)
        data["loo_mape"] = _mape(loo_ns, t_ns, rows)  # cross-GPU: leave-one-GPU-out
    return data


def _row_profiles(labels: list[str], gpu: GpuProfile, options: Mapping[str, Any]) -> dict[str, GpuProfile]:
    """Each device label's GPU profile: ``options["gpus"]`` (device -> profile, as the fit and
    analyze commands choose them per device) where it names the device, else ``gpu``."""
    chosen = options.get("gpus") or {}
    return {label: chosen.get(label, gpu) for label in labels}


def _training_rows(train: pd.DataFrame, coalesced: float, t_ns: np.ndarray,
                   extra: list[np.ndarray] | tuple[()] = ()) -> tuple[Distinct, pd.DataFrame, np.ndarray, np.ndarray]:
    """The timed kernels as distinct rows: (rows, their feature table, times, leave-out group labels).

    Kernels merge when their name, time and every counter a feature reads are equal, so each
    distinct row has one feature vector and lies in one leave-out group (name and launch shape,
    ``_kernel_groups``); the feature table is then built for the distinct rows only (speed only).
    ``extra``: more per-row values that must be equal too (the GPU of the cross-GPU form)."""
    keys = _group_keys(train)
    if not keys or len(train) < 2:  # every launch its own group: nothing to merge
        return Distinct.each(len(train)), feature_table(train, coalesced), t_ns, _kernel_groups(train)
    sources = [c for c in SOURCE_COLUMNS if c in train.columns]
    names = text_codes(train[keys[0]]).astype(np.float64)  # pd.factorize's codes, by address (speed only)
    # every column as the feature table and the groups read it (numeric conversion, as column_or_nan)
    numeric = [train[c].to_numpy() if train[c].dtype == np.float64 else column_or_nan(train, c).to_numpy()
               for c in dict.fromkeys(sources + keys[1:])]
    rows = distinct_rows([names, t_ns, *extra, *numeric])
    if rows.all_single:
        return rows, feature_table(train, coalesced), t_ns, _kernel_groups(train)
    # column by column: selecting the columns of a frame first copies them whole (speed only)
    sub = pd.DataFrame({c: train[c].iloc[rows.first] for c in dict.fromkeys(keys + sources)}, copy=False)
    return rows, feature_table(sub, coalesced), t_ns[rows.first], _kernel_groups(sub)


def _one_gpu(train: pd.DataFrame) -> None:
    """Refuse training rows from several GPUs in the single-GPU form: its regression maps one
    machine's counters to its times, so mixing GPUs gives ratios no GPU has. The cross-GPU form
    (option ``cross_gpu``, ``fit kerr --cross-gpu``) models the machines (Sec. 6.2, 6.5)."""
    if "device" not in train.columns:
        return
    devices = sorted({str(d) for d in train["device"].dropna()})
    if len(devices) > 1:
        shown = ", ".join(devices[:4]) + (f" and {len(devices) - 4} more" if len(devices) > 4 else "")
        raise ModelError(
            f"the training kernels come from {len(devices)} GPUs ({shown}); a Kerr model maps one GPU's "
            "counters to its times",
            hint="fit one cross-GPU model with GPU parameters as a second PCA (Kerr et al. Sec. 6.5): "
                 "'nvperf-bridge fit kerr FILES... --cross-gpu'; or one model per GPU: pass only that GPU's files",
        )


# ---- prediction ----------------------------------------------------------------

def _check_model_data(data: Any) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ModelError(
            f"model_data must be the dict that 'nvperf-bridge fit kerr' wrote, got {type(data).__name__}",
            model_id=MODEL_ID,
        )
    if data.get("model") != MODEL_ID:
        raise ModelError(f"model_data was fitted for model {data.get('model')!r}, not {MODEL_ID!r}", model_id=MODEL_ID)
    if data.get("format_version") != FORMAT_VERSION:
        raise ModelError(
            f"model_data has format_version {data.get('format_version')!r}; this kerr reads {FORMAT_VERSION}",
            model_id=MODEL_ID, hint="refit with this version: nvperf-bridge fit kerr TRAIN... -o kerr.json",
        )
    return dict(data)


def _predict_core(data: dict[str, Any], table: pd.DataFrame,
                  fitted: dict[str, np.ndarray] | None = None,
                  machine_scores: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Scores, clusters, raw regression (target space) and elasticities for the given feature rows
    (``machine_scores``: the cross-GPU form's machine component scores of each row's GPU).

    ``fitted``: the fit's own arrays when ``table`` holds exactly its training rows (the
    leave-one-out path): their raw features, scores, cluster labels and fitted values are the
    same numbers this would compute again (speed only)."""
    features = data["features"]
    scale = np.asarray(data["scale"])
    weights = np.asarray(data["pca"]["score_weights"])
    degree = int(data["regression"]["degree"])
    coefficients = np.asarray(data["regression"]["coefficients"])
    if fitted is not None:
        raw, scores, labels, y = fitted["raw"], fitted["scores"], fitted["labels"], fitted["fitted"]
    else:
        raw = table[features].to_numpy(dtype="float64")
        x = _transform(raw, data["transforms"])
        z = (x - np.asarray(data["mean"])) / scale
        scores = z @ weights
        labels = _assign(scores, np.asarray(data["clusters"]["centers"]))
        design = _design(scores, degree)
        y = design @ coefficients[:design.shape[1]]
        if machine_scores is not None:  # the machine terms follow the application terms (MC1..)
            y = y + machine_scores @ coefficients[design.shape[1]:]
    # d y / d RC_j = sum_d d b_jd RC_j^(d-1)
    m = scores.shape[1]
    slope = np.zeros_like(scores)
    for d in range(1, degree + 1):
        slope += d * coefficients[1 + (d - 1) * m: 1 + d * m] * scores ** (d - 1)
    # chain rule to d log t / d log x_f: through the score weights, the z-score and the transform
    dy_du = slope @ (weights / scale[:, None]).T  # (n, p)
    # times d x / d log x (x, or x / (1 + x) through log1p), column by column in place (speed only)
    elasticity = dy_du
    for j, transform in enumerate(data["transforms"]):
        elasticity[:, j] *= raw[:, j] / (1.0 + raw[:, j]) if transform == "log1p" else raw[:, j]
    if data["regression"]["target"] == "linear":
        with np.errstate(divide="ignore", invalid="ignore"):
            elasticity /= np.where(y > 0, y, np.nan)[:, None]
    return {"scores": scores, "labels": labels, "y": y, "elasticity": elasticity, "raw": raw}


def _bottleneck(data: dict[str, Any], elasticity: np.ndarray, index: pd.Index) -> tuple[pd.Series, pd.DataFrame, pd.Series]:
    """Group elasticities -> shared bottleneck label and a short reason."""
    groups = np.asarray(data["groups"])
    named = list(dict.fromkeys(g for g in GROUP_BOTTLENECK if (groups == g).any()))
    sums = pd.DataFrame({g: elasticity[:, groups == g].sum(axis=1) for g in named}, index=index)
    label = pd.Series("unknown", index=index, dtype="object")
    reason = pd.Series("no counter group dominates the predicted time", index=index, dtype="object")
    if sums.shape[1] == 0:
        return label, sums, reason
    values = sums.to_numpy()
    ranked = np.sort(values, axis=1)
    top = pd.Series(ranked[:, -1], index=index)
    runner_up = pd.Series(ranked[:, -2] if values.shape[1] > 1 else np.zeros(len(index)), index=index)
    best = pd.Series(np.asarray(sums.columns)[values.argmax(axis=1)], index=index, dtype="object")
    decisive = (top >= ELASTICITY_MIN) & (top >= ELASTICITY_RATIO * runner_up.clip(lower=0.0)) & np.isfinite(values).all(axis=1)
    label[decisive] = best[decisive].map(GROUP_BOTTLENECK)
    reason[decisive] = _per_distinct(
        pd.DataFrame({"group": best[decisive], "elasticity": top[decisive].round(2)}),
        lambda d: "time driven by " + d["group"] + " counters (elasticity " + d["elasticity"].astype(str) + ")")
    return label, sums, reason


def _per_distinct(keys: pd.DataFrame, build: Callable[[pd.DataFrame], pd.Series]) -> np.ndarray:
    """``build(keys)`` as an array, with the strings built once per distinct row of ``keys`` (speed only:
    a million kernels share a few thousand distinct texts)."""
    if keys.empty:
        return np.empty(0, dtype=object)
    codes = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()
    first = np.unique(codes, return_index=True)[1]  # one representative row per code, in code order
    texts = build(keys.iloc[first].reset_index(drop=True)).to_numpy(dtype=object)
    return texts[codes]


def predict(kernels: pd.DataFrame, data: Mapping[str, Any], mode: str = "trained model", *,
            fill: bool = True, table: pd.DataFrame | None = None, gpu: GpuProfile | None = None,
            gpus: Mapping[str, GpuProfile] | None = None) -> pd.DataFrame:
    """Predict every kernel from a fitted dict (errors for kernels missing a feature's counters).
    ``table``: ``feature_table(kernels, ...)`` when the caller has it already. A cross-GPU model
    reads each kernel's GPU parameters from ``gpus`` (device -> profile) or ``gpu``."""
    data = _check_model_data(data)
    result = empty_result(kernels)
    coalesced = float(data.get("coalesced_sectors_per_request", DEFAULT_COALESCED_SECTORS))
    if table is None:
        table = feature_table(kernels, coalesced)
    needed = list(dict.fromkeys(c for f in data["features"] for c in FEATURE_INFO[f][2]))
    reasons = missing_inputs(kernels, needed)
    values = table[data["features"]].to_numpy(dtype="float64")
    bad_values = ~np.isfinite(_transform(values, data["transforms"])).all(axis=1)
    reasons[(reasons == "") & bad_values] = f"a counter used as a Kerr feature is negative, not finite or beyond {FEATURE_LIMIT:g}"
    machine = _machine_inputs(kernels, data, gpu, gpus) if "machine" in data else None
    if machine is not None:
        reasons[(reasons == "") & (machine[1] != "")] = machine[1]
    ok = (reasons == "").to_numpy()
    if fill and ok.any():
        # one prediction per distinct input row, copied to its repeats (speed only: a kernel's prediction
        # depends on its feature values alone, and in the cross-GPU form on its GPU and workload too)
        keys = [values[ok, j] for j in range(values.shape[1])]
        if machine is not None:
            keys += [machine[0][ok, j] for j in range(machine[0].shape[1])] + [b[ok] for b in machine[2]] + \
                [machine[3][0][ok].astype(np.float64), pd.factorize(machine[3][1][ok])[0].astype(np.float64)]
        rows = distinct_rows(keys)
        pick = np.flatnonzero(ok)[rows.first]
        inverse = None if rows.all_single else rows.inverse
        if machine is None:
            _fill(result, kernels.index[ok], data, table.iloc[pick], mode, inverse=inverse)
        else:
            _fill(result, kernels.index[ok], data, table.iloc[pick], mode, bounds=tuple(b[pick] for b in machine[2]),
                  machine=(machine[0][pick], machine[3][0][pick], machine[3][1][pick]), inverse=inverse)
    result.loc[~ok, "error"] = reasons[~ok]
    return result


def _machine_inputs(kernels: pd.DataFrame, data: Mapping[str, Any], gpu: GpuProfile | None,
                    gpus: Mapping[str, GpuProfile] | None) -> tuple[np.ndarray, pd.Series, tuple, np.ndarray]:
    """The cross-GPU form's per-kernel inputs: (machine scores, '' or why the GPU cannot be scored,
    POCS bounds (floor, low, high): the kernel's workload on the training GPUs where it ran on at
    least two runs (Sec. 6.5), else the training range; (GPU parameters outside the training
    GPUs' range, parameters the GPU's profile lacks))."""
    codes, labels = pd.factorize(pd.Series(kerr_machines.device_labels(kernels), dtype="object"))
    profiles: dict[str, GpuProfile | None] = {label: (gpus or {}).get(label, gpu) for label in labels}
    known = {label: p for label, p in profiles.items() if p is not None}
    table = kerr_machines.machine_table(known).reindex(list(labels))
    scores, imputed, outside = kerr_machines.machine_scores(data["machine"], table)
    why = pd.Series("", index=table.index, dtype="object")
    for label, profile in profiles.items():
        if profile is None:
            why[label] = "no GPU profile for this device: pass --gpu or a profile for it"
    reasons = pd.Series(why.to_numpy(dtype=object)[codes], index=kernels.index, dtype="object")
    p = data["pocs"]
    n = len(kernels)
    low, high = kerr_machines.workload_bounds(p.get("per_workload") or {}, kerr_machines.workload_keys(kernels),
                                              p["sigma"], np.full(n, p["low_ns"]), np.full(n, p["high_ns"]))
    return scores[codes], reasons, (np.full(n, p["floor_ns"]), low, high), \
        (outside[codes], imputed.to_numpy(dtype=object)[codes])


def _fill(result: pd.DataFrame, rows: pd.Index, data: dict[str, Any], table: pd.DataFrame, mode: str,
          override_ns: np.ndarray | None = None, bounds: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
          fitted: dict[str, np.ndarray] | None = None, inverse: np.ndarray | None = None,
          machine: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
    """Write predictions and details for ``rows`` (``override_ns``/``bounds``: the LOO values;
    ``machine``: the cross-GPU form's machine scores, GPU parameters outside the training range and
    the parameters its profile lacks;
    ``fitted``: the fit's arrays when ``rows`` are its training rows, see ``_predict_core``;
    ``inverse``: ``table`` and the LOO values hold distinct rows, ``rows[i]`` is row
    ``inverse[i]``: everything is computed once per distinct row (speed only))."""
    if len(rows) == 0:
        return
    # the rows as a boolean mask (in index order, as ``rows`` is): one lookup instead of one per column
    at = np.zeros(len(result), dtype=bool)
    at[result.index.get_indexer(rows)] = True
    core = _predict_core(data, table, fitted, None if machine is None else machine[0])
    raw_ns = _from_target(core["y"], data["regression"]["target"]) if override_ns is None else override_ns
    if bounds is None:
        p = data["pocs"]
        bounds = tuple(np.full(len(raw_ns), p[key]) for key in ("floor_ns", "low_ns", "high_ns"))
    predicted = pocs(raw_ns, *bounds)
    clipped = np.abs(predicted - raw_ns) > 1e-12 * np.abs(raw_ns)
    label, sums, reason = _bottleneck(data, core["elasticity"], pd.RangeIndex(len(raw_ns)))
    scores = core["scores"]
    k = int(data["clusters"]["k"])
    lo = np.asarray(data["training_ranges"]["feature_min"])
    hi = np.asarray(data["training_ranges"]["feature_max"])
    raw = core["raw"]
    outside = ((raw < lo) | (raw > hi)).sum(axis=1)

    def per_kernel(values: np.ndarray) -> np.ndarray:
        return values if inverse is None else values[inverse]

    columns: dict[str, Any] = {"predicted_ns": per_kernel(predicted), "bottleneck": per_kernel(label.to_numpy())}

    def describe(d: pd.DataFrame) -> pd.Series:
        state = "cluster " + d["cluster"].astype(str) + f"/{k}; " + d["reason"]
        state[d["clipped"]] = state[d["clipped"]] + "; POCS moved the regression into the training range"
        out = d["outside"] > 0
        state[out] = state[out] + "; " + d["outside"][out].astype(str) + " feature(s) outside the training range"
        return state

    columns["state"] = per_kernel(_per_distinct(pd.DataFrame({
        "cluster": core["labels"] + 1, "reason": reason.to_numpy(), "clipped": clipped, "outside": outside}), describe))
    columns["mode"] = mode
    columns["cluster"] = per_kernel(core["labels"] + 1)
    columns["regression_ns"] = per_kernel(raw_ns)
    columns["pocs_clipped"] = per_kernel(clipped)
    columns["features_outside_training_range"] = per_kernel(outside)
    for j in range(scores.shape[1]):
        columns[f"RC{j + 1}"] = per_kernel(scores[:, j])
    for group in sums.columns:
        columns[f"elasticity_{group}"] = per_kernel(sums[group].to_numpy())
    if machine is not None:
        for j in range(machine[0].shape[1]):
            columns[f"MC{j + 1}"] = per_kernel(machine[0][:, j])
        columns["gpu_parameters_outside_training_range"] = per_kernel(machine[1])
        lacking = per_kernel(machine[2]) != ""
        if lacking.any():
            state = np.asarray(columns["state"], dtype=object).copy()
            state[lacking] = state[lacking] + "; not in the GPU profile, the training GPUs' mean used: " + \
                per_kernel(machine[2])[lacking]
            columns["state"] = state
    _write_columns(result, at, columns, fresh=inverse is not None)


def _write_columns(result: pd.DataFrame, at: np.ndarray, columns: dict[str, Any], fresh: bool = False) -> None:
    """``result.loc[at, name] = values`` for each column; when ``at`` holds every row, the columns
    are set whole with the dtypes that masked assignment gives a new column (numbers float64,
    booleans object, text str), without its fill-then-overwrite copies (speed only).
    ``fresh``: the arrays are new ones nothing else holds (taken per kernel from the distinct rows'):
    a float array is then handed to the frame as it is, where assigning it would copy it (speed only)."""
    if not at.all():
        for name, values in columns.items():
            result.loc[at, name] = values
        return

    def whole(values: np.ndarray, new: bool) -> Any:
        # a float array no one else holds goes in as it is (a Series on the index: pandas copies an array)
        return pd.Series(values, index=result.index, copy=False) if new and values.dtype == np.float64 else values

    for name, values in columns.items():
        if isinstance(values, str):  # one text for every kernel: the run's shared column (speed only)
            result[name] = constant_column(values, result.index)
        elif name in result.columns:
            result[name] = whole(values, fresh)
        elif values.dtype.kind == "b":
            result[name] = values.astype(object)
        elif values.dtype.kind in "iuf":
            converted = values.astype(np.float64, copy=False)
            result[name] = whole(converted, fresh or converted is not values)
        else:
            result[name] = values


class KerrModel:
    """PCA + varimax + clusters + polynomial regression + POCS (Kerr et al., GPGPU-3 2010)."""

    id = MODEL_ID
    version = MODEL_VERSION
    description = (
        "Statistical model: normalised PCA (>= 85% variance) + varimax, k-means clusters, polynomial "
        "regression of time on the components, POCS onto positive / within-2-sd constraints"
    )
    paper = "A. Kerr, G. Diamos, S. Yalamanchili, Modeling GPU-CPU workloads and systems, GPGPU-3, 2010"
    requires = Requirements(
        required=(),
        optional=("duration_ns", *SOURCE_COLUMNS),
    )
    constants = ()
    fit_options = ("cross_gpu",)  # 'nvperf-bridge fit kerr --cross-gpu'
    # what evaluate imports (the regression's CholeskyQR2, k-means' dgemm): run_models loads it ahead, in a
    # background thread while the models before this one run (analysis._import_ahead; speed only)
    import_ahead = ("nvperf_bridge.scipy_lapack",)
    # on large frames run_models evaluates this model in a thread of its own beside the others: its work is
    # numpy, scipy and BLAS that release the interpreter lock, and it reads no other model's result (speed only)
    runs_beside_others = True

    def fit(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> dict[str, Any]:
        """Fit on the kernels with measured duration_ns; returns the JSON-serialisable model."""
        with blas_threads.one_thread():  # tall-skinny products: one BLAS thread is far cheaper (blas_threads; speed only)
            return fit(kernels, gpu, options)

    def evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        with blas_threads.one_thread():  # tall-skinny products: one BLAS thread is far cheaper (blas_threads; speed only)
            return self._evaluate(kernels, gpu, options)

    def _evaluate(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        data = options.get("model_data")
        if data is not None:
            if isinstance(data, Mapping) and "machine" in data:  # the cross-GPU form: any GPU with a profile
                return predict(kernels, data, gpu=gpu, gpus=options.get("gpus"))
            result = predict(kernels, data)
            fitted_on = data.get("gpu") if isinstance(data, Mapping) else None
            if fitted_on and fitted_on != gpu.id and not str(fitted_on).startswith(f"{gpu.id}-"):
                # the regression maps one GPU's counters to its times: another GPU's kernels get a reason, no number
                ok = result["error"] == ""
                result.loc[ok, "predicted_ns"] = np.nan
                for column in ("predicted_cycles",):
                    if column in result.columns:
                        result.loc[ok, column] = np.nan
                result.loc[ok, "error"] = (f"the Kerr model was fitted on GPU {fitted_on}, these kernels ran on "
                                           f"{gpu.id}: its counters-to-time map does not transfer between GPUs; fit "
                                           f"one on this GPU's runs (nvperf-bridge fit kerr FILES --gpu {gpu.id}), "
                                           "or a cross-GPU model on runs from several GPUs (fit kerr FILES... "
                                           "--cross-gpu)")
            return result
        return self._leave_one_out(kernels, gpu, options)

    def _leave_one_out(self, kernels: pd.DataFrame, gpu: GpuProfile, options: Mapping[str, Any]) -> pd.DataFrame:
        opts = _options(options)
        coalesced = float(gpu.get("coalesced_sectors_per_request", DEFAULT_COALESCED_SECTORS))
        timed = _timed(kernels)
        all_timed = bool(timed.all())
        t_all = column_or_nan(kernels, "duration_ns")[timed].to_numpy()
        try:
            # distinct timed kernels with counts (speed only: the same fit, see _fit_arrays)
            distinct, table_fit, t_ns, groups = _training_rows(kernels if all_timed else kernels[timed],
                                                               coalesced, t_all)
            data, arrays = _fit_selected(table_fit, t_ns, gpu.id, coalesced, opts, groups, distinct)
        except ModelError as exc:
            result = empty_result(kernels)
            shipped = (f"a model fitted for {gpu.id} ships with nvperf-bridge: analyze --model-data kerr={gpu.id}; "
                       if shipped_model_data("kerr", gpu.id) is not None else "")
            result["error"] = (
                f"needs a trained model: {shipped}nvperf-bridge fit kerr TRAIN... -o kerr.json, then analyze "
                f"--model-data kerr=kerr.json; or at least {MIN_KERNELS} kernels with measured durations (duration_ns, ncu --metrics "
                f"gpu__time_duration.sum) and {MIN_FEATURES} varying counters in the input ({exc.message})"
            )
            return result
        # kernels without a time: the model fitted on all timed kernels
        # (when every kernel is timed, leave-one-out below writes every row: nothing to predict first)
        # (nor to check: every training kernel has finite values of every selected feature, so
        # predict() would find no missing counter and no bad value among them)
        result = empty_result(kernels) if all_timed else \
            predict(kernels, data, mode="fitted on the input's timed kernels")
        counts = None if distinct.all_single else distinct.counts
        raw_loo, _, leverage = _loo(arrays, data, t_ns, groups, distinct)
        bounds = _loo_bounds(t_ns, opts["sigma"], opts["floor_fraction"], groups, counts)
        rows = kernels.index[timed.to_numpy()]
        inverse = None if distinct.all_single else distinct.inverse
        _fill(result, rows, data, table_fit, "leave-one-kernel-out", override_ns=raw_loo, bounds=bounds,
              fitted=arrays, inverse=inverse)
        if inverse is not None:  # back to one value per kernel
            raw_loo, leverage = raw_loo[inverse], leverage[inverse]
        undefined = pd.Series(np.isnan(raw_loo), index=rows)
        if undefined.any():
            where = undefined[undefined].index
            result.loc[where, "predicted_ns"] = np.nan
            result.loc[where, "error"] = (
                "leave-one-kernel-out undefined: this workload's launches (same kernel and launch shape) alone "
                "determine a regression term; profile more kernels, collect launch__grid_size and "
                "launch__block_size so launches at other sizes count apart, or use a trained model (nvperf-bridge fit)"
            )
        result.loc[rows, "leverage"] = leverage
        return result


MODEL = KerrModel()


@hookimpl
def register_models(register: Any) -> None:
    register(MODEL)
