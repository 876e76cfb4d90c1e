"""Columns repeated between one run's results are held once (nvperf_bridge.column_pool): every result
reads exactly as without the sharing, and a write to one result never reaches another."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge import column_pool
from nvperf_bridge.analysis import run_models
from nvperf_bridge.gpu import resolve_profile
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.model import constant_column, shared_evaluations
from nvperf_bridge.registry import load_registry


@pytest.fixture
def kernels(realdata_dir: Path) -> pd.DataFrame:
    corpus = realdata_dir / "magus-corpus"
    return read_profiles([corpus / "metrics_rodinia_backprop.csv", corpus / "traces_rodinia_backprop.csv"]).kernels


def _memory(series: pd.Series) -> int:
    values = getattr(series.array, "_ndarray", None)
    return (values if isinstance(values, np.ndarray) else series.to_numpy()).ctypes.data


def test_shared_results_read_exactly_as_unshared(kernels, monkeypatch) -> None:
    gpu = resolve_profile("gtx-1080-ti")
    registry = load_registry()
    shared, _ = run_models(kernels, gpu, registry)
    monkeypatch.setattr(column_pool.ColumnPool, "_share", lambda self, frame, given: frame)
    alone = {mid: run_models(kernels, gpu, registry, [mid])[0][mid] for mid in registry.models}
    for mid, run in shared.items():
        pd.testing.assert_frame_equal(run.result, alone[mid].result, check_exact=True)
    # the sharing happened: the models' NaN details and constants are one array between results
    columns = [(mid, name) for mid, run in shared.items() for name in run.result.columns]
    distinct = {_memory(shared[mid].result[name]) for mid, name in columns}
    assert len(distinct) < len(columns) - 10


def test_a_write_to_one_result_never_reaches_another(kernels) -> None:
    gpu = resolve_profile("gtx-1080-ti")
    runs, _ = run_models(kernels, gpu, load_registry())
    # error is "" on every predicted kernel of every model: the same column between results
    first, second = runs["hong-kim"].result, runs["luo-suda"].result
    pairs = [name for name in first.columns if name in second.columns
             and _memory(first[name]) == _memory(second[name])]
    floats = [name for name in pairs if first[name].dtype == np.float64]
    texts = [name for name in pairs if first[name].dtype == object or isinstance(first[name].dtype, pd.StringDtype)]
    assert floats and texts
    for name, value in ((floats[0], 12345.0), (texts[0], "changed")):
        before = second[name].copy()
        first.loc[first.index[0], name] = value
        assert first.loc[first.index[0], name] == value
        pd.testing.assert_series_equal(second[name], before)


def test_constant_column_stores_what_assigning_the_scalar_stores() -> None:
    index = pd.RangeIndex(5)
    for value in (0.0, -0.0, float("nan"), np.float64(2.5), np.float32(1.5), True, np.bool_(False), 3, "text"):
        expected = pd.DataFrame(index=index)
        expected["v"] = value
        with shared_evaluations():
            got = pd.DataFrame(index=index)
            got["v"] = constant_column(value, index)
            again = constant_column(value, index)
            assert _memory(again) == _memory(got["v"])  # one array per value within a run
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        if isinstance(value, str):  # text: equal strings (the array's bytes would be object addresses)
            assert list(got["v"]) == list(expected["v"])
        else:  # the same bits (-0.0 stays -0.0, NaN stays that NaN)
            assert np.asarray(got["v"]).tobytes() == np.asarray(expected["v"]).tobytes()
    with shared_evaluations():  # 0.0 and -0.0 are different bits: never the same column
        assert np.signbit(constant_column(-0.0, index)).all() and not np.signbit(constant_column(0.0, index)).any()
