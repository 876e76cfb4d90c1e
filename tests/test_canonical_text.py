"""``labels.factorize_text`` and ``map_text``: what ``pd.factorize`` and ``Series.map`` give, for columns
long enough to take the object-identity pass (a trace's million kernel names) and for short ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.importers.canonical import map_text, short_names
from nvperf_bridge.labels import FACTORIZE_BY_IDENTITY_FROM, factorize_text
from nvperf_bridge.text_storage import python_text

N = FACTORIZE_BY_IDENTITY_FROM + 5


def _columns() -> dict[str, pd.Series]:
    rng = np.random.default_rng(0)
    names = np.array([f"void kernel_{i}<float>(float*, int) " + "x" * 50 for i in range(7)], dtype=object)
    shared = names[rng.integers(0, 7, N)]
    # equal texts held by different objects: they are one value, not two
    copies = np.array(["".join(list(str(v))) for v in shared], dtype=object)
    with_missing = shared.copy()
    with_missing[::97] = None
    with_missing[5::89] = np.nan
    return {
        "shared": pd.Series(shared, dtype=object),
        "copies": pd.Series(copies, dtype=object),
        "mixed": pd.Series(np.concatenate([shared[: N // 2], copies[N // 2:]]), dtype=object),
        "missing": pd.Series(with_missing, dtype=object),
        "short": pd.Series(shared[:50], dtype=object),
        "empty": pd.Series([], dtype=object),
        "all missing": pd.Series([None] * N, dtype=object),
        "text dtype": pd.Series(shared).astype(str),
    }


@pytest.mark.parametrize("name", list(_columns()))
def test_factorize_text_is_pandas_factorize(name: str) -> None:
    with python_text():
        values = _columns()[name]
        codes, distinct = factorize_text(values)
        want_codes, want_distinct = pd.factorize(values.to_numpy(dtype=object))
    assert codes.tolist() == want_codes.tolist()
    assert list(distinct) == list(want_distinct)


@pytest.mark.parametrize("name", list(_columns()))
def test_map_text_and_short_names_are_series_map(name: str) -> None:
    with python_text():
        values = _columns()[name]
        mapping = {v: v[:20] + "!" for v in values.dropna().unique()}
        pd.testing.assert_series_equal(map_text(values, lambda v: v[:20] + "!"), values.map(mapping))
        short = pd.Series(values.dropna().unique())
        pd.testing.assert_series_equal(short_names(values), values.map(dict(zip(short, short.map(_short)))))


def _short(name: str) -> str:
    from nvperf_bridge.importers.canonical import _short_one

    return _short_one(name)


def test_finish_makes_text_of_identity_values_that_are_not_text() -> None:
    from nvperf_bridge.importers.canonical import finish

    with python_text():
        frame = pd.DataFrame({"kernel_id": pd.Series([7, "8", None, np.str_("9")], dtype=object),
                              "kernel_name": pd.Series(["k(float*) ", "k(float*) ", "j", "j"], dtype=object)})
        out = finish(frame)
    assert out["kernel_id"].tolist() == ["7", "8", None, "9"]
    assert out["kernel"].tolist() == ["k", "k", "j", "j"]


@pytest.mark.parametrize("name", [*_columns(), "numbers and text"])
def test_as_text_is_each_value_made_text_with_none_where_missing(name: str) -> None:
    # kernel ids and device names as every report reads them: a str per present value, None where missing,
    # also where a long column's few objects are looked at once instead of row by row
    from nvperf_bridge.importers.canonical import as_text

    with python_text():
        values = _columns()[name] if name != "numbers and text" else \
            pd.Series(np.array([7, "k [3]", None, 2.5, np.nan, pd.NA] * (N // 6 + 1), dtype=object))
        got = as_text(values)
    want = [None if pd.api.types.is_scalar(v) and pd.isna(v) else v if isinstance(v, str) else str(v)
            for v in values.to_numpy(dtype=object)]
    assert got.dtype == object and got.tolist() == want
