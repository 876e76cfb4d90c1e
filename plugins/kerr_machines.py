"""Machine characteristics for the cross-GPU form of the Kerr model (``kerr`` option ``cross_gpu``).

Paper: A. Kerr, G. Diamos, S. Yalamanchili, "Modeling GPU-CPU workloads and systems", GPGPU-3,
2010 (shared/seeds/002). Section 5.1 "Machine Parameters": processors "are characterized by clock
rate, number of concurrent threads, number of cores, off-chip bandwidth, number of memory
controllers, instruction issue width, L2 cache capacity, whether they are capable of executing
out-of-order, and the maximum number of threads within a warp" (Table 2). Section 6.1: "we
perform two separate PCAs: one which only includes application statistics and another which
only includes machine statistics" (normalised, >= 85% of the variance, varimax). Section 6.5
regresses execution time on the principal components and predicts "the same application on
different processors" ("GPU Modeling": the times on three GPUs predict a fourth); POCS keeps
"all predictions for a given application on a given architecture ... within two standard
deviations of the mean of all execution times of the same application on other architectures".

What this module holds:

- ``MACHINE_FEATURES``: Table 2's parameters, each read from the GPU profile (the sourced
  datasheet table, ``nvperf_bridge/data/gpu_datasheet.csv``): never from a kernel's run.
- ``machine_table``: one row of those values per GPU.
- ``fit_machines`` / ``machine_scores``: the machine PCA over the training GPUs (each GPU one
  observation, as the paper's PCA over its seven processors) and the scores of any GPU.
- ``workload_keys`` and the POCS bounds per workload on the other GPUs (leave-one-GPU-out in the
  fit; the stored statistics when predicting a GPU).

Readings of the paper (named in the model's details): "cores" is the SM count (the paper lists
16 cores for the 16-SM 8800 GTX); "issue width" is the FP32 warp instructions an SM can start per
cycle, cores per SM / warp size (the paper's GPUs, 8 lanes per SM, give 1 with its 4-cycle warp
issue; a Kepler SMX 6, a Maxwell SMM 4); "memory controllers" is the memory bus width / 64 bits
(one 64-bit GDDR controller each; the paper's 8800 GTX has 6 on its 384-bit bus); "out-of-order"
is not modelled (every CUDA GPU issues in order: a constant). Parameters that are constant over
the training GPUs (warp size, threads per SM on one generation) drop out of the PCA, as constant
counters do from the application PCA.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from nvperf_bridge.gpu import GpuProfile

GDDR_CONTROLLER_BITS = 64  # one GDDR5/GDDR6 memory controller drives a 64-bit channel pair


def _controllers(profile: GpuProfile) -> float:
    bits = profile.raw.get("memory_bus_width_bits")
    return float(bits) / GDDR_CONTROLLER_BITS if bits else float("nan")


def _l2_kb(profile: GpuProfile) -> float:
    size = profile.raw.get("l2_cache_bytes")
    return float(size) / 1024.0 if size else float("nan")


# (feature, the paper's Table 2 row, value from the GPU profile)
MACHINE_FEATURES: tuple[tuple[str, str, Callable[[GpuProfile], float]], ...] = (
    ("sm_clock_ghz", "Clock Frequency (GHz)", lambda p: p.sm_clock_hz / 1e9),
    ("issue_width", "Issue Width (FP32 warp instructions per SM per cycle: cores per SM / warp size)",
     lambda p: p.cores_per_sm / p.warp_size),
    ("threads_per_sm", "Hardware Threads per Core", lambda p: float(p.max_threads_per_sm)),
    ("sm_count", "Cores (SMs)", lambda p: float(p.sm_count)),
    ("warp_size", "Warp Size", lambda p: float(p.warp_size)),
    ("memory_controllers", "Memory Controllers (bus width / 64 bits)", _controllers),
    ("bandwidth_per_controller_gb_s", "Bandwidth per Controller (GB/s)",
     lambda p: p.memory_bandwidth_gb_per_s / _controllers(p)),
    ("l2_cache_kb", "L2 Cache (kB)", _l2_kb),
)
NOT_MODELLED: dict[str, str] = {"out_of_order": "every CUDA GPU issues in order (Table 2's 'Type'): a constant"}


def machine_values(profile: GpuProfile) -> dict[str, float]:
    """Table 2's parameters of one GPU from its profile (NaN where the datasheet lacks one)."""
    values: dict[str, float] = {}
    for name, _, read in MACHINE_FEATURES:
        try:
            value = float(read(profile))
        except (TypeError, ValueError, ZeroDivisionError):
            value = float("nan")
        values[name] = value if np.isfinite(value) and value > 0 else float("nan")
    return values


def machine_table(profiles: Mapping[str, GpuProfile]) -> pd.DataFrame:
    """One row per GPU label (device name as the profiler printed it), Table 2's parameters as columns."""
    return pd.DataFrame([machine_values(p) for p in profiles.values()], index=list(profiles),
                        columns=[name for name, *_ in MACHINE_FEATURES], dtype="float64")


def device_labels(kernels: pd.DataFrame) -> np.ndarray:
    """Each row's device name as text ('' where the file names none): ``analysis.device_labels``."""
    from nvperf_bridge.analysis import device_labels as labels_of  # the run's own rule, one place

    return labels_of(kernels).to_numpy(dtype=object)


def workload_keys(kernels: pd.DataFrame) -> np.ndarray:
    """The 'same application' of the paper's POCS constraint: kernel name (``kernel_name`` when the
    file gives it, which for a sweep names the input size) and launch shape, as text."""
    name_column = next((c for c in ("kernel_name", "kernel", "kernel_id") if c in kernels.columns), None)
    names = kernels[name_column].astype(str) if name_column else pd.Series("", index=kernels.index)
    key = names.to_numpy(dtype=object)
    for column in ("grid_blocks", "block_threads"):
        if column in kernels.columns:
            key = key + "|" + pd.to_numeric(kernels[column], errors="coerce").astype(str).to_numpy(dtype=object)
    return key


# ---- the machine PCA ----------------------------------------------------------------

def fit_machines(table: pd.DataFrame, transform: str, variance: float,
                 principal_components: Callable[..., dict[str, Any]]) -> tuple[dict[str, Any], np.ndarray]:
    """Sec. 6.1/6.2: normalised PCA of the training GPUs' parameters, varimax-rotated.

    ``table``: one row per training GPU. ``transform``: 'log' (the power form: time scales as a
    power of each resource) or 'none' (the paper's additive form). Parameters missing for a
    training GPU or constant over them are dropped. At most q components with G >= 2 (q + 1)
    (twice the paper's N x M minimum, as for the application components; at least one), so each
    machine component is fitted on spare GPUs. Returns (the JSON part, scores per training GPU)."""
    from nvperf_bridge.errors import ModelError

    dropped: dict[str, str] = {}
    kept: list[str] = []
    for name in table.columns:
        column = table[name].to_numpy(dtype="float64")
        if not np.isfinite(column).all():
            dropped[name] = "not in every training GPU's profile"
        elif np.ptp(column) <= 1e-9 * np.abs(column).max():
            dropped[name] = "constant over the training GPUs"
        else:
            kept.append(name)
    g = len(table)
    if g < 2 or not kept:
        raise ModelError(
            f"the cross-GPU form needs training kernels from at least 2 GPUs whose profiles differ; got {g} GPU(s) "
            f"({', '.join(map(str, table.index)) or 'none'}) and {len(kept)} varying machine parameter(s)",
            model_id="kerr",
            hint="fit on runs of the same kernels on several GPUs (each file's device name picks its profile; "
                 "do not pass --gpu, which gives every file the same profile)",
        )
    x = _transform(table[kept].to_numpy(dtype="float64"), transform)
    mean, scale = x.mean(axis=0), x.std(axis=0, ddof=1)  # g >= 2 here
    z = (x - mean) / scale
    max_q = max(1, min(len(kept), g // 2 - 1))  # at least 2 GPUs per component and one more
    pca = principal_components(z, g, None, variance, min(max_q, g - 1))
    scores = z @ pca["weights"]
    data = {
        "features": kept,
        "transform": transform,
        "dropped_features": dropped,
        "not_modelled": dict(NOT_MODELLED),
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "n_components": pca["m"],
        "eigenvalues": pca["eigenvalues"].tolist(),
        "explained_variance_ratio": pca["explained"].tolist(),
        "loadings": pca["loadings"].tolist(),
        "rotated_loadings": pca["rotated"].tolist(),
        "score_weights": pca["weights"].tolist(),
        "training_gpus": {str(label): {name: float(table.loc[label, name]) for name in table.columns
                                       if np.isfinite(table.loc[label, name])} for label in table.index},
        "feature_min": table[kept].min().tolist(),
        "feature_max": table[kept].max().tolist(),
    }
    return data, scores


def _transform(values: np.ndarray, transform: str) -> np.ndarray:
    return np.log(values) if transform == "log" else values.astype("float64", copy=True)


def machine_scores(machine: Mapping[str, Any], table: pd.DataFrame) -> tuple[np.ndarray, pd.Series, np.ndarray]:
    """Scores of the GPUs in ``table`` (rows) on the fitted machine components.

    A parameter the GPU's profile lacks (a datasheet gap, e.g. an L2 size no vendor document
    gives) takes the training GPUs' mean, a standardised 0 (an EXTENSION: the paper's processors
    all had every parameter); it is named per GPU so the prediction says so. Returns (scores, per
    GPU '' or the imputed parameters, per GPU the number of parameters outside the training range)."""
    features = list(machine["features"])
    values = table.reindex(columns=features).to_numpy(dtype="float64")
    missing = ~np.isfinite(values)
    imputed = pd.Series([", ".join(f for f, m in zip(features, row) if m) for row in missing], index=table.index,
                        dtype="object")
    mean = np.asarray(machine["mean"])
    with np.errstate(invalid="ignore", divide="ignore"):
        x = _transform(np.where(missing, 1.0, values), machine["transform"])
    z = np.where(missing, 0.0, (x - mean) / np.asarray(machine["scale"]))
    scores = z @ np.asarray(machine["score_weights"])
    with np.errstate(invalid="ignore"):
        outside = ((values < np.asarray(machine["feature_min"])) | (values > np.asarray(machine["feature_max"]))).sum(axis=1)
    return scores, imputed, outside


# ---- POCS per workload (Sec. 6.5) ----------------------------------------------------------

def other_machine_bounds(log_t: np.ndarray, counts: np.ndarray, workload: np.ndarray, machine: np.ndarray,
                         sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, the same workload's log times on the *other* GPUs: (low_ns, high_ns, how many),
    low/high = exp(mean -+ sigma sd) (sd with ddof 1); NaN where fewer than two such times."""
    codes = pd.factorize(workload.astype(np.int64) * (int(machine.max()) + 1) + machine)[0]  # (workload, GPU)
    w_totals = _sums(workload, log_t, counts)
    wm_totals = _sums(codes, log_t, counts)
    n_o = w_totals[0][workload] - wm_totals[0][codes]
    s_o = w_totals[1][workload] - wm_totals[1][codes]
    q_o = w_totals[2][workload] - wm_totals[2][codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s_o / n_o
        sd = np.sqrt(np.clip((q_o - n_o * mean**2) / (n_o - 1), 0.0, None))
    enough = n_o >= 2
    low = np.where(enough, np.exp(mean - sigma * sd), np.nan)
    high = np.where(enough, np.exp(mean + sigma * sd), np.nan)
    return low, high, n_o


def _sums(codes: np.ndarray, values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per code: sum of counts, of counts x values and of counts x values^2 (values centred by the caller)."""
    size = int(codes.max()) + 1 if len(codes) else 0
    return (np.bincount(codes, counts, minlength=size), np.bincount(codes, counts * values, minlength=size),
            np.bincount(codes, counts * values**2, minlength=size))


def workload_bounds(stats: Mapping[str, list[float]], keys: np.ndarray, sigma: float,
                    low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``low``/``high`` replaced, where a kernel's workload has ``workload_statistics``, by
    exp(mean -+ sigma sd) of its log times on the training GPUs."""
    if not stats:
        return low, high
    table = pd.DataFrame.from_dict(dict(stats), orient="index", columns=["mean", "sd"])
    at = table.index.get_indexer(pd.Index(keys, dtype="object"))
    hit = at >= 0
    mean, sd = table["mean"].to_numpy()[at[hit]], table["sd"].to_numpy()[at[hit]]
    low, high = low.copy(), high.copy()
    low[hit], high[hit] = np.exp(mean - sigma * sd), np.exp(mean + sigma * sd)
    return low, high


def workload_statistics(keys: np.ndarray, log_t: np.ndarray, counts: np.ndarray) -> dict[str, list[float]]:
    """For the fitted model: per workload seen on at least two training runs, [mean, sd] of log time."""
    codes, uniques = pd.factorize(pd.Series(keys, dtype="object"))
    n, s, q = _sums(codes, log_t, counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s / n
        sd = np.sqrt(np.clip((q - n * mean**2) / (n - 1), 0.0, None))
    return {str(key): [float(mean[i]), float(sd[i])] for i, key in enumerate(uniques) if n[i] >= 2}
