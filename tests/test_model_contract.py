"""The checks every model result goes through before a report sees it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.errors import ModelError
from nvperf_bridge.model import empty_result, missing_inputs, validate_result


@pytest.fixture
def kernels() -> pd.DataFrame:
    return pd.DataFrame({"kernel_id": ["a", "b", "c"], "inst_executed": [10.0, np.nan, 5.0]})


def test_missing_inputs_names_the_counter_and_the_ncu_metric(kernels: pd.DataFrame) -> None:
    reasons = missing_inputs(kernels, ("inst_executed", "dram_bytes"))
    assert reasons[0] == "missing dram_bytes (ncu --metrics dram__bytes.sum)"
    assert "inst_executed (ncu --metrics smsp__inst_executed.sum)" in reasons[1]
    assert "dram_bytes" in reasons[1]


def test_missing_inputs_empty_when_all_present(kernels: pd.DataFrame) -> None:
    assert list(missing_inputs(kernels.iloc[[0, 2]], ("inst_executed",))) == ["", ""]


def test_unexplained_nan_negative_or_infinite_predictions_become_errors(kernels: pd.DataFrame) -> None:
    result = empty_result(kernels)
    result["predicted_ns"] = [np.nan, -5.0, np.inf]
    checked, warnings = validate_result("m", kernels, result)
    assert checked["predicted_ns"].isna().all()
    assert (checked["error"] != "").all()
    assert len(warnings) == 1 and "3 kernel(s)" in warnings[0]


def test_explained_errors_pass_without_warning(kernels: pd.DataFrame) -> None:
    result = empty_result(kernels)
    result["predicted_ns"] = [100.0, np.nan, 50.0]
    result.loc[1, "error"] = "missing inst_executed"
    checked, warnings = validate_result("m", kernels, result)
    assert warnings == []
    assert checked.loc[0, "predicted_ns"] == 100.0
    assert checked.loc[1, "bottleneck"] == "unknown"


def test_off_vocabulary_bottleneck_is_replaced_and_reported(kernels: pd.DataFrame) -> None:
    result = empty_result(kernels)
    result["predicted_ns"] = 1.0
    result["bottleneck"] = ["compute", "dram", "memory-bandwidth"]
    checked, warnings = validate_result("m", kernels, result)
    assert list(checked["bottleneck"]) == ["compute", "unknown", "memory-bandwidth"]
    assert "dram" in warnings[0]


@pytest.mark.parametrize("bad", [None, pd.DataFrame({"predicted_ns": [1.0]}), pd.DataFrame({"x": [1, 2, 3]})])
def test_wrong_type_shape_or_columns_raise_model_error(kernels: pd.DataFrame, bad: object) -> None:
    with pytest.raises(ModelError) as err:
        validate_result("my-model", kernels, bad)
    assert "model my-model" in str(err.value)


def test_option_parsers_name_the_model_and_option() -> None:
    from nvperf_bridge.model import bool_option, choice_option, number_option

    assert number_option({"x": "2.5"}, "x", 1.0, "m") == 2.5
    assert number_option({}, "x", 1.0, "m") == 1.0
    assert choice_option({"form": "SUM"}, "form", ("max", "sum"), "m") == "sum"
    assert bool_option({"flag": "yes"}, "flag", False, "m") is True
    for call, expected in (
        (lambda: number_option({"x": "abc"}, "x", 1.0, "my-model"), "option x must be a number, got 'abc'"),
        (lambda: number_option({"x": 0}, "x", 1.0, "my-model", positive=True), "must be a positive number"),
        (lambda: number_option({"x": True}, "x", 1.0, "my-model"), "must be a number"),
        (lambda: choice_option({"f": "median"}, "f", ("max", "sum"), "my-model"), "must be one of max, sum"),
        (lambda: bool_option({"b": "maybe"}, "b", False, "my-model"), "must be true or false"),
    ):
        with pytest.raises(ModelError) as err:
            call()
        assert str(err.value).startswith("model my-model: ") and expected in str(err.value)
