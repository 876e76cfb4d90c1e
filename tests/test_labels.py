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


def test_distinct_objects_find_a_columns_few_strings_and_the_rows_holding_them() -> None:
    """A model's text column refers to a few string objects: they are found by address, and the rows
    holding one that a test accepts are the rows where the value passes it."""
    from nvperf_bridge.labels import all_text, distinct_objects, rows_holding, take

    values = take(["compute", "", "memory-bandwidth"], [0, 1, 2, 1, 1, 0])
    found = distinct_objects(values)
    assert found is not None and sorted(found[2]) == ["", "compute", "memory-bandwidth"]
    np.testing.assert_array_equal(rows_holding(found, lambda text: text == ""), values == "")
    np.testing.assert_array_equal(rows_holding(found, lambda text: text != "compute"), values != "compute")
    assert all_text(values)
    with_none = values.copy()
    with_none[3] = None
    assert not all_text(with_none)
    # equal strings at different addresses are told apart only by value, never merged wrongly
    copies = np.array(["a" * 20, "".join(["a"] * 20)], dtype=object)
    found = distinct_objects(copies)
    assert len(found[2]) == 2 and rows_holding(found, lambda text: text == "a" * 20).all()
    assert distinct_objects(np.arange(3)) is None
    assert distinct_objects(take(["x"], np.zeros(5, dtype=int)), limit=0) is None


def test_distinct_objects_sees_a_label_that_first_appears_deep_in_a_long_column() -> None:
    """A long column's few labels are looked for in its head first: a kernel whose error first appears
    after the head (a None among strings at row 9000 of 10000) is still found, in order of first appearance."""
    from nvperf_bridge.labels import all_text, distinct_objects, take

    codes = np.tile([0, 1], 5000)
    codes[9000] = 2
    values = take(["compute", "memory-latency", "no finite positive prediction"], codes)
    found = distinct_objects(values)
    assert found is not None and found[2] == ["compute", "memory-latency", "no finite positive prediction"]
    values[9001] = None
    assert not all_text(values)


def test_text_codes_gives_pandas_codes_by_address() -> None:
    """Codes in order of first appearance, equal strings one code wherever they sit, NaN its own code."""
    from nvperf_bridge.labels import text_codes

    names = ["kernel_b", "kernel_a", "".join(["kernel", "_b"]), np.nan, "kernel_a", "kernel_c", np.nan]
    series = pd.Series(np.array(names * 50, dtype=object), dtype="str")
    np.testing.assert_array_equal(text_codes(series), pd.factorize(series, use_na_sentinel=False)[0])
    as_object = pd.Series(np.array(names, dtype=object), dtype=object)
    np.testing.assert_array_equal(text_codes(as_object), pd.factorize(as_object, use_na_sentinel=False)[0])


def test_an_owned_text_column_is_wrapped_and_anything_else_copied() -> None:
    """labels.column(..., owned=True) keeps a new object array the caller hands over as the column's memory
    (no 8 MB copy per million kernels) with the dtype and values pandas gives; a view or a read-only array is
    copied even when said to be owned, and without owned=True every array is, so no column ever shares
    memory it does not own."""
    from nvperf_bridge.text_storage import python_text

    index = pd.RangeIndex(6)
    with python_text():
        fresh = labels.take(["", "compute", "memory-bandwidth"], [0, 1, 2, 1, 0, 2])
        owned = labels.column(fresh, index, owned=True)
        pd.testing.assert_series_equal(owned, pd.Series(fresh.tolist(), index=index).astype(str))
        backing = lambda column: getattr(column.array, "_ndarray", None)  # noqa: E731 - Python-backed strings
        if backing(owned) is None:
            pytest.skip("text is not stored in a numpy object array here")
        assert np.shares_memory(backing(owned), fresh)
        assert not np.shares_memory(backing(labels.column(fresh, index)), fresh)  # not handed over: copied
        view, read_only = fresh[1:], np.broadcast_to(fresh[:1], (6,))
        for given in (view, read_only):
            column = labels.column(given, pd.RangeIndex(len(given)), owned=True)
            assert column.tolist() == list(given)
            assert not np.shares_memory(backing(column), given)


def test_packed_conditions_give_the_codes_of_a_condition_by_condition_pass() -> None:
    # up to 8 conditions are packed into one byte per row and looked up; more are written one by one:
    # either way np.select's choice, with broadcasting of one-row and length-1 conditions
    rng = np.random.default_rng(11)
    for count in (1, 3, 8, 9, 11):
        conditions = [rng.random(500) < rng.random() for _ in range(count)]
        conditions[0] = np.array([True]) if count == 3 else conditions[0]
        names = [f"c{i}" for i in range(count)]
        expected = np.select([np.broadcast_to(c, (500,)) for c in conditions], list(range(count)), default=count)
        assert labels.choice_codes(conditions).tolist() == expected.tolist()
        assert labels.select(conditions, names, "none").tolist() == \
            np.select([np.broadcast_to(c, (500,)) for c in conditions], names, default="none").tolist()
    series = pd.Series([False, True, False])
    assert labels.choice_codes([series, np.array([True, True, False])]).tolist() == [1, 0, 2]


def test_by_conditions_names_each_pattern_of_conditions_once() -> None:
    rng = np.random.default_rng(5)
    failed, memory, synch = (rng.random(300) < p for p in (0.2, 0.5, 0.3))
    calls: list[int] = []

    def text(pattern: int) -> str:
        calls.append(pattern)
        if pattern & 1:
            return ""
        return ["memory", "compute"][labels.first_true(pattern >> 1, 1)] + (" (no synch)" if pattern & 4 else "")

    got = labels.by_conditions([failed, memory, synch], text)
    expected = np.where(failed, "", np.where(memory, "memory", "compute")
                        + np.where(synch, " (no synch)", "").astype(object))
    assert got.dtype == object and got.tolist() == expected.tolist()
    assert sorted(calls) == list(range(8))
    assert labels.first_true(0b10100, 5) == 2 and labels.first_true(0b100000, 5) == 5
    with pytest.raises(ValueError):
        labels.by_conditions([np.bool_(True)], text)


def test_a_column_of_one_repeated_text_stays_one_value() -> None:
    from nvperf_bridge.model import constant_column

    index = pd.RangeIndex(1000)
    repeated = constant_column("measured sm_clock_hz", index, dtype="object")
    got = labels.column(repeated, index)
    expected = labels.column(np.array(["measured sm_clock_hz"] * 1000, dtype=object), index)
    assert got.dtype == expected.dtype and got.tolist() == expected.tolist()
    backing = getattr(got.array, "_ndarray", None)  # pandas' Python-backed strings: one value, 8 bytes
    assert not isinstance(backing, np.ndarray) or backing.strides[0] == 0
    told = labels.column(labels.select([np.arange(1000) < 10], ["few"], "many"), index, owned=True, text=True)
    assert told.dtype == expected.dtype and told.iloc[0] == "few" and told.iloc[-1] == "many"
