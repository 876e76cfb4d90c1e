"""JSON (versioned machine interface) and CSV (kernel x model rows) reports."""

from __future__ import annotations

import csv
import io
import json
import math
import sys

import pytest
from reports_fakes import LONG_NAME, make_analysis

from nvperf_bridge.reports.csv_report import CSV_COLUMNS, render_csv
from nvperf_bridge.reports.json_read import column_values, kernel_records, section_columns
from nvperf_bridge.reports.json_report import SCHEMA_VERSION, render_json


def _strict_load(text: str) -> dict:
    def refuse(name: str) -> float:
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def document() -> dict:
    return _strict_load(render_json(make_analysis()))


def test_json_top_level_schema(document: dict) -> None:
    assert document["schema_version"] == SCHEMA_VERSION == 3
    assert document["tool"] == {"name": "nvperf-bridge", "version": "9.9.9"}
    assert set(document) >= {"schema_version", "tool", "inputs", "gpu", "kernel_count", "kernels", "predictions",
                             "details", "accuracy", "warnings", "models"}
    assert document["inputs"] == [{"path": "profile.csv", "format": "ncu-raw", "kernels": 7,
                                   "device": "NVIDIA GeForce GTX 280", "skipped": ["2 memcpy rows (not kernels)"]}]
    assert document["gpu"] == {"id": "gtx280", "name": "NVIDIA GeForce GTX 280", "choice": "--gpu gtx280"}
    assert "model gamma produced no results: needs sm_cycles in every row" in document["warnings"]


def test_json_kernels_and_predictions_are_columnar(document: dict) -> None:
    """Schema 3: kernels and each model's predictions are columns in kernel order; kernel_records gives back
    schema 2's per-kernel records."""
    assert document["kernel_count"] == 7
    assert list(document["kernels"]) == ["kernel_id", "kernel", "kernel_name", "measured_ns"]
    assert document["kernels"]["kernel_id"] == [str(i) for i in range(7)]
    assert set(document["predictions"]) == {"alpha", "beta"}, "a model that failed as a whole has no predictions"
    alpha = document["predictions"]["alpha"]
    assert list(alpha) == ["predicted_ns", "predicted_cycles", "bottleneck", "state", "error"]
    assert alpha["error"] == {"constant": ""}, "one value for all kernels is written once"
    assert alpha["state"] == {"values": ["=cmd|' /C calc'!A0", "MWP < CWP"], "codes": [0, 1, 0, 1, 0, 1, 0]}
    kernels = kernel_records(document, details=False)
    assert [k["kernel_id"] for k in kernels] == [str(i) for i in range(7)]
    vec = kernels[0]
    assert vec["kernel"] == "vecAdd" and vec["measured_ns"] == 12_000.0
    assert set(vec["models"]) == {"alpha", "beta"}
    entry = vec["models"]["alpha"]
    assert entry["predicted_ns"] == pytest.approx(14_400.0)
    assert entry["predicted_cycles"] == pytest.approx(18_720.0)
    assert entry["bottleneck"] == "memory-bandwidth" and entry["error"] == ""
    assert set(entry) == {"predicted_ns", "predicted_cycles", "bottleneck", "state", "error"}
    assert kernels[3]["kernel_name"] == LONG_NAME


def test_json_details_are_columnar_in_kernel_order(document: dict) -> None:
    """Every intermediate quantity is one column, one value per kernel; a constant one is written once."""
    assert document["models"]["alpha"]["details"] == ["MWP", "CWP", "Mem_L"]
    alpha = document["details"]["alpha"]
    assert list(alpha) == ["MWP", "CWP", "Mem_L"]
    assert len(alpha["MWP"]) == document["kernel_count"] and alpha["Mem_L"] == {"constant": 420.0}
    columns = section_columns(document, alpha)
    assert all(len(values) == document["kernel_count"] for values in columns.values())
    assert {name: values[0] for name, values in columns.items()} == {"MWP": 1.0, "CWP": 2.0, "Mem_L": 420.0}
    assert kernel_records(document)[0]["models"]["alpha"]["details"] == {"MWP": 1.0, "CWP": 2.0, "Mem_L": 420.0}
    assert "gamma" not in document["details"] and document["models"]["gamma"]["details"] == []


def test_json_nan_is_null(document: dict) -> None:
    kernels = kernel_records(document)
    assert kernels[4]["measured_ns"] is None
    missing = kernels[1]["models"]["beta"]
    assert missing["predicted_ns"] is None and missing["error"].startswith("missing inst_executed")


def test_json_column_forms_read_back() -> None:
    """The three column forms, and a malformed column named in the message."""
    assert column_values([1.0, None], 2) == [1.0, None]
    assert column_values({"constant": "x"}, 3) == ["x", "x", "x"]
    assert column_values({"values": ["a", None], "codes": [1, 0, 0]}, 3) == [None, "a", "a"]
    with pytest.raises(ValueError, match="a column of 2 values in a report of 3 kernels"):
        column_values([1.0, 2.0], 3)
    with pytest.raises(ValueError, match="not a report column"):
        column_values({"bogus": 1}, 3)
    with pytest.raises(ValueError, match="schema_version 2"):
        section_columns({"schema_version": 2, "kernel_count": 1}, {})


def test_json_one_kernel_is_written_as_lists() -> None:
    """With one kernel every column is a one-value list (no constant form to decode)."""
    document = _strict_load(render_json(make_analysis(1)))
    assert document["kernel_count"] == 1
    assert all(isinstance(column, list) and len(column) == 1
               for section in (document["kernels"], *document["predictions"].values(), *document["details"].values())
               for column in section.values())


def test_json_accuracy_and_failed_model(document: dict) -> None:
    alpha = document["accuracy"]["alpha"]
    assert alpha["n"] == 6
    assert alpha["mape"] == pytest.approx(0.2)
    assert alpha["mean_accuracy"] == pytest.approx(1 / 1.2)
    assert document["accuracy"]["beta"]["n"] == 4
    assert "gamma" not in document["accuracy"]
    gamma = document["models"]["gamma"]
    assert gamma["failed"] is True and "sm_cycles" in gamma["failure"]
    assert document["models"]["alpha"]["constants"]["Mem_LD"] == {
        "value": 420.0, "source": "Hong & Kim Table 5", "status": "paper"}


def test_json_without_measured_times_has_null_accuracy() -> None:
    analysis = make_analysis()
    analysis.kernels["duration_ns"] = math.nan
    document = _strict_load(render_json(analysis))
    assert document["accuracy"]["alpha"]["n"] == 0
    assert document["accuracy"]["alpha"]["mape"] is None


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_columns_and_one_row_per_kernel_and_model() -> None:
    text = render_csv(make_analysis())
    header = text.splitlines()[0].split(",")
    assert tuple(header) == CSV_COLUMNS == (
        "kernel_id", "kernel", "kernel_name", "measured_ns", "model", "predicted_ns",
        "predicted_cycles", "error_pct", "bottleneck", "state", "error")
    rows = _rows(text)
    assert len(rows) == 7 * 3
    assert [r["model"] for r in rows[:3]] == ["alpha", "beta", "gamma"]
    assert [r["kernel_id"] for r in rows[::3]] == [str(i) for i in range(7)]


def test_csv_values_errors_and_quoting() -> None:
    rows = _rows(render_csv(make_analysis()))
    alpha_vec = rows[0]
    assert float(alpha_vec["predicted_ns"]) == pytest.approx(14_400.0)
    assert float(alpha_vec["error_pct"]) == pytest.approx(20.0)
    beta_vec = rows[1]
    assert float(beta_vec["error_pct"]) == pytest.approx(-50.0)
    gamma = rows[2]
    assert gamma["predicted_ns"] == "" and gamma["error"].startswith("model failed as a whole:")
    beta_missing = rows[4]
    assert beta_missing["kernel"].startswith("'=HYPERLINK") and beta_missing["predicted_ns"] == ""  # neutralised
    assert beta_missing["error"].startswith("missing inst_executed")
    no_time = [r for r in rows if r["kernel_id"] == "4"]
    assert all(r["measured_ns"] == "" and r["error_pct"] == "" for r in no_time)
    assert rows[0]["kernel_name"] == "vecAdd(float const*, float const*, float*, int)", "commas survive"
    assert rows[3]["kernel_name"] == "'=HYPERLINK(\"http://x\",\"click\")", "quotes survive, the formula is neutralised"
    assert rows[6]["kernel_name"] == "a|b`c<d>*e_f(int)"


def test_json_columns_keep_every_value() -> None:
    """Whatever form a column is written in (list, constant, codes), reading it back gives each kernel's
    plain value (NaN and infinities null; '' for a false state), and the streamed text is build_document's."""
    import numpy as np
    import pandas as pd

    from nvperf_bridge.reports.json_report import build_document, plain_values

    analysis = make_analysis()
    result = analysis.runs["alpha"].result
    n = len(result)
    awkward = {
        "ratio %s 50%": np.array([0.1, -0.0, np.inf, -np.inf, np.nan, 1e16, 1e-7] * n)[:n],
        "zeros": np.array([0.0, -0.0] + [0.0] * (n - 2)),  # same value, not the same text: a list
        "all_nan": np.array([np.nan, np.inf] + [np.nan] * (n - 2)),  # every value null: a constant
        "f32": np.arange(n, dtype=np.float32) / 3,
        "count": np.arange(n, dtype=np.int64) - 3,
        "same_count": np.full(n, 7, dtype=np.int64),
        "flag": np.arange(n) % 2 == 0,
        "object_flags": pd.Series([True, False] * n, dtype=object).values[:n],
        "nullable": pd.array([1, None, 3, 4, None, 6, 7][:n] + [0] * max(0, n - 7), dtype="Int64")[:n],
        "mixed": pd.Series(([True, 1, 1.0, np.int64(2), None, np.nan, "é \"q\" \\ \n"] * n)[:n], dtype=object),
        "text": pd.Series((["a", "b\tc", "", "µs", "a"] * n)[:n], dtype="str"),
        "text_na": pd.Series((["a", None, "a", "a"] * n)[:n], dtype="str"),
        "same_text": pd.Series(["one text"] * n, dtype=object),
        "stamp": pd.Series(pd.to_datetime(["2025-01-01"] * n)),
    }
    for name, values in awkward.items():
        result[name] = values.values if isinstance(values, pd.Series) else values
    result["state"] = pd.Series(([None, "", "s", np.nan, 0] * n)[:n], dtype=object).values
    text = render_json(analysis)
    document = _strict_load(text)
    assert document == json.loads(json.dumps(build_document(analysis)))
    details = section_columns(document, document["details"]["alpha"])
    for name in awkward:
        assert details[name] == plain_values(result[name]), name
    assert details["mixed"][:7] == [True, 1, 1.0, 2, None, None, 'é "q" \\ \n']
    alpha = document["details"]["alpha"]
    assert alpha["all_nan"] == {"constant": None} and alpha["same_count"] == {"constant": 7}
    assert alpha["same_text"] == {"constant": "one text"} and isinstance(alpha["zeros"], list)
    assert alpha["text_na"] == {"values": ["a", None], "codes": [0, 1, 0, 0, 0, 1, 0]}
    state = section_columns(document, document["predictions"]["alpha"])["state"]
    assert state == ["", "", "s", "", "", "", ""]


def test_json_is_the_same_with_and_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson (a runtime dependency) writes the number columns; where it cannot be imported the standard
    library writes the same values."""
    from nvperf_bridge.reports import json_report

    pytest.importorskip("orjson")  # a runtime dependency; .ci/run also runs this file on an install without it
    analysis = make_analysis()
    json_report._orjson.cache_clear()
    try:
        assert json_report._orjson() is not None
        fast_text = render_json(analysis)
        monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson now raises ImportError
        json_report._orjson.cache_clear()
        assert json_report._orjson() is None
        plain_text = render_json(analysis)
    finally:
        json_report._orjson.cache_clear()  # the next report imports orjson again (monkeypatch puts it back)
    assert fast_text != plain_text  # each encoder really wrote it (orjson spells the lists without spaces)
    assert _strict_load(plain_text) == _strict_load(fast_text)


def test_json_is_written_in_chunks(tmp_path) -> None:
    """iter_json yields the document in pieces (a chunk of kernels at a time), never the whole text."""
    from nvperf_bridge.reports.json_report import iter_json

    analysis = make_analysis()
    chunks = list(iter_json(analysis, chunk=2))
    assert len(chunks) > len(analysis.kernels) // 2
    assert max(len(c) for c in chunks) < len(b"".join(chunks)) / 2
    assert _strict_load(b"".join(chunks).decode("utf-8")) == _strict_load(render_json(analysis))
