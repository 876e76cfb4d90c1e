"""Prediction-error statistics over the kernels that have a measured time.

- APE = |predicted - measured| / measured.
- MAPE = mean APE; median APE.
- GM absolute error = geometric mean of the APEs (the statistic Hong & Kim
  report: "the geometric mean of the absolute error is 13.3%"); an exact
  prediction counts as an APE of 1e-6 so the logarithm is defined.
- Luo-Suda mean accuracy = mean of min(predicted, measured) / max(...)
  (Luo & Suda, Section 4: "accuracy ... the ratio of the smaller to the larger").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ACCURACY_COLUMNS = ("n", "mape", "median_ape", "gm_abs_error", "mean_accuracy")


def absolute_percentage_error(predicted: pd.Series, measured: pd.Series) -> pd.Series:
    """APE per kernel as a fraction; NaN where either side is missing or measured <= 0."""
    measured = measured.where(measured > 0)
    return (predicted - measured).abs() / measured


def accuracy_stats(predicted: pd.Series, measured: pd.Series) -> dict[str, float]:
    """n, mape, median_ape, gm_abs_error, mean_accuracy over kernels with both values."""
    both = predicted.notna() & measured.notna() & (measured > 0) & (predicted > 0)
    p, m = predicted[both].astype(float), measured[both].astype(float)
    n = int(both.sum())
    if n == 0:
        return {"n": 0, "mape": np.nan, "median_ape": np.nan, "gm_abs_error": np.nan, "mean_accuracy": np.nan}
    ape = (p - m).abs() / m
    return {
        "n": n,
        "mape": float(ape.mean()),
        "median_ape": float(ape.median()),
        "gm_abs_error": float(np.exp(np.log(np.maximum(ape, 1e-6)).mean())),
        "mean_accuracy": float((np.minimum(p, m) / np.maximum(p, m)).mean()),
    }


def within_factor_share(predicted: pd.Series, measured: pd.Series, factor: float = 2.0) -> float:
    """Share of the kernels with both values whose prediction is within ``factor`` of the measured
    time (max(p/m, m/p) <= factor): the "within 2x" column of the calibration tables."""
    both = predicted.notna() & measured.notna() & (measured > 0) & (predicted > 0)
    if not both.any():
        return float("nan")
    ratio = predicted[both].astype(float) / measured[both].astype(float)
    return float(((ratio <= factor) & (ratio >= 1.0 / factor)).mean())


def worst_groups(predicted: pd.Series, measured: pd.Series, groups: pd.Series, count: int = 3) -> list[tuple[str, float]]:
    """The ``count`` groups (applications) with the largest median APE, as (group, median APE), worst first."""
    ape = absolute_percentage_error(predicted, measured)
    ape = ape[ape.notna() & predicted.notna() & (predicted > 0)]
    if ape.empty:
        return []
    by_group = ape.groupby(groups.loc[ape.index].astype(str)).median().sort_values(ascending=False)
    return [(str(name), float(value)) for name, value in by_group.head(count).items()]
