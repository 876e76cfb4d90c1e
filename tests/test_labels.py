"""nvperf_bridge.labels: text columns built from codes read exactly as numpy's string select/where."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge import labels


def test_select_and_where_give_numpys_values_as_shared_objects() -> None:
    rng = np.random.default_rng(7)
    a, b, c = (rng.random(1000) < p for p in (0.2, 0.5, 0.7))
    choices = ["first", "second", "third"]
    got = labels.select([a, b, c], choices, default="none")
    assert got.dtype == object
    assert got.tolist() == np.select([a, b, c], choices, default="none").tolist()
    # one string object per label, not one per row
    assert len({id(value) for value in got}) == 4
    mixed = labels.where(a, "yes", got)
    assert mixed.tolist() == np.where(a, "yes", got.astype(str)).tolist()


def test_scalars_and_empty_inputs() -> None:
    assert labels.select([np.bool_(False), np.bool_(True)], ["x", "y"], "z") == "y"
    assert labels.select([], [], "z").tolist() == []
    assert labels.choice_codes([], n=3).tolist() == [0, 0, 0]
    assert labels.render(np.array([], dtype=int), str).tolist() == []
    with pytest.raises(ValueError):
        labels.select([np.array([True])], ["x", "y"])


def test_render_makes_each_distinct_text_once() -> None:
    calls: list[int] = []

    def text(code: int) -> str:
        calls.append(code)
        return f"code {code}"

    got = labels.render(np.array([3, 0, 3, 7, 0]), text)
    assert got.tolist() == ["code 3", "code 0", "code 3", "code 7", "code 0"]
    assert sorted(calls) == [0, 3, 7]


def test_full_and_text_array_read_as_astype_str() -> None:
    values = labels.full(4, "unknown")
    assert values.tolist() == ["unknown"] * 4
    as_text = pd.Series(labels.text_array(values))
    expected = pd.Series(np.array(["unknown"] * 4, dtype=object)).astype(str)
    pd.testing.assert_series_equal(as_text, expected)
    values[0] = "changed"  # text_array copies: the column never follows the array
    assert as_text.iloc[0] == "unknown"
