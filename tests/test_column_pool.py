"""Columns repeated between one run's results are held once (nvperf_bridge.column_pool): every result
reads exactly as without the sharing, and a write to one result never reaches another."""

from __future__ import annotations

import importlib.util
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
from nvperf_bridge.text_storage import python_text


@pytest.fixture(autouse=True)
def share_small_results(monkeypatch) -> None:
    """These files have a few dozen kernels: the pool shares results of any size here (by default it
    leaves results under ``SHARE_MIN_ROWS`` rows as they are, ``test_small_results_are_kept_as_made``)."""
    monkeypatch.setattr(column_pool, "SHARE_MIN_ROWS", 0)


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


def _held_bytes(series: pd.Series) -> int:
    values = getattr(series.array, "_ndarray", None)
    values = values if isinstance(values, np.ndarray) else series.to_numpy()
    return values.itemsize if len(values) > 1 and values.strides[0] == 0 else values.nbytes


def test_a_column_of_one_value_is_held_once_and_still_written_like_any(realdata_dir: Path) -> None:
    gpu = resolve_profile("gtx-1080-ti")
    registry = load_registry()
    # as the command line runs (text_storage): with Python-backed text a column of one note is one str's
    # address repeated; Arrow-backed text (pandas' default where pyarrow is installed) holds every value
    with python_text():
        corpus = realdata_dir / "magus-corpus"
        kernels = read_profiles([corpus / "metrics_rodinia_backprop.csv", corpus / "traces_rodinia_backprop.csv"]).kernels
        runs, _ = run_models(kernels, gpu, registry)
    hong_kim = runs["hong-kim"].result
    # Mem_L_Coal is a GPU constant and N_source one note for every kernel: one value each, 8 bytes
    repeated = [name for name in hong_kim.columns if _held_bytes(hong_kim[name]) < hong_kim[name].nbytes]
    assert "Mem_L_Coal" in repeated and "N_source" in repeated
    for name in repeated:
        assert hong_kim[name].nunique(dropna=False) == 1
    # the run is over, the pool is gone: a result that alone holds such a column is still written as
    # any frame (copy-on-write makes it a full array first), and no other result sees the change
    other = runs["luo-suda"].result
    before = other.copy()
    del runs
    import gc

    gc.collect()
    first = hong_kim.index[0]
    hong_kim.loc[first, "Mem_L_Coal"] = 12345.0
    hong_kim.loc[first, "N_source"] = "changed"
    assert hong_kim.loc[first, "Mem_L_Coal"] == 12345.0 and hong_kim.loc[first, "N_source"] == "changed"
    assert (hong_kim["Mem_L_Coal"].iloc[1:] != 12345.0).all() and (hong_kim["N_source"].iloc[1:] != "changed").all()
    pd.testing.assert_frame_equal(other, before)


def test_repeated_keeps_dtype_bits_and_name_and_refuses_what_it_cannot_hold() -> None:
    index = pd.RangeIndex(1000)
    # text as the command line keeps it (text_storage): Python-backed, one str's address repeated
    with python_text():
        for column in (pd.Series([-0.0], name="x"), pd.Series([np.nan]), pd.Series(["text"], dtype=object),
                       pd.Series(["text"]).astype(str)):
            got = column_pool.repeated(column, index)
            assert got is not None and got.dtype == column.dtype and got.name == column.name and len(got) == 1000
            assert _held_bytes(got) == 8  # one value's bytes (a float, or the address of one str)
            expected = pd.Series(np.repeat(column.to_numpy(dtype=object), 1000), index=index, dtype=column.dtype,
                                 name=column.name)
            pd.testing.assert_series_equal(got, expected, check_exact=True)
            if column.dtype == np.float64:
                assert got.to_numpy().view(np.uint64).tolist() == expected.to_numpy().view(np.uint64).tolist()
            alone = pd.DataFrame({"v": got}, copy=False)  # the only frame holding it: written all the same
            del got
            written = 1.0 if column.dtype == np.float64 else "written"
            alone.iloc[3, 0] = written
            assert alone["v"].iloc[3] == written
            pd.testing.assert_series_equal(alone["v"].drop(index=3), expected.drop(index=3), check_names=False)
    for column in (pd.Series([True]), pd.Series([3]), pd.Series([], dtype=float)):
        assert column_pool.repeated(column, index) is None  # integers, booleans, nothing: as they are
    if importlib.util.find_spec("pyarrow") is not None and pd.get_option("mode.string_storage") == "auto":
        with pd.option_context("mode.string_storage", "pyarrow"):  # Arrow-backed text holds every value
            assert column_pool.repeated(pd.Series(["text"]).astype(str), index) is None


def test_small_results_are_kept_as_made(kernels, monkeypatch) -> None:
    """Under ``SHARE_MIN_ROWS`` rows a result is left as the model made it (its first touch costs less than
    the comparisons), and reads the same as a shared one."""
    gpu = resolve_profile("gtx-1080-ti")
    registry = load_registry()
    shared, _ = run_models(kernels, gpu, registry)
    monkeypatch.setattr(column_pool, "SHARE_MIN_ROWS", len(kernels) + 1)
    pool = column_pool.ColumnPool()
    frame = shared["hong-kim"].result.copy()
    other = frame.copy()
    assert pool.share(frame, other) is frame and pool.shared[0] is other
    pool.offer({"x": frame.iloc[:, 0]})
    assert not pool._columns
    alone, _ = run_models(kernels, gpu, registry)
    for mid, run in shared.items():
        pd.testing.assert_frame_equal(alone[mid].result, run.result, check_exact=True)
