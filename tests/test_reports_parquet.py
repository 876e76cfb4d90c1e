"""The Parquet report: kernels x models in one table (needs the optional pyarrow; skipped without it)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from reports_fakes import LONG_NAME, make_analysis

from nvperf_bridge.errors import UsageError

DEMO = Path(__file__).resolve().parent / "fixtures" / "reports" / "demo_gtx280.yaml"


def test_without_pyarrow_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvperf_bridge.reports.parquet_report import check_available

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(UsageError) as caught:
        check_available()
    assert "pyarrow" in str(caught.value.message) and "nvperf-bridge[parquet]" in str(caught.value.hint)


def test_parquet_holds_every_kernel_model_and_detail(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from nvperf_bridge.reports.json_read import kernel_records, section_columns
    from nvperf_bridge.reports.json_report import build_document
    from nvperf_bridge.reports.parquet_report import iter_parquet

    analysis = make_analysis()
    path = tmp_path / "r.parquet"
    path.write_bytes(b"".join(iter_parquet(analysis, row_group=3)))
    file = pq.ParquetFile(path)
    assert file.metadata.num_row_groups == 3, "written a row group at a time"
    table = file.read().to_pandas()
    document = build_document(analysis)
    records = kernel_records(document)
    assert list(table["kernel_id"]) == [k["kernel_id"] for k in records]
    assert table["kernel_name"][3] == LONG_NAME
    for position, record in enumerate(records):
        for mid, entry in record["models"].items():
            for name, value in entry.items():
                if name == "details":
                    continue
                got = table[f"{mid}/{name}"][position]
                if value is None:
                    assert got is None or (isinstance(got, float) and math.isnan(got)), (mid, name)
                elif isinstance(value, float):
                    assert got == pytest.approx(value), (mid, name)
                else:
                    assert got == value, (mid, name)
        for mid, columns in document["details"].items():
            for name, values in section_columns(document, columns).items():
                if isinstance(values[position], (int, float)) and not isinstance(values[position], bool):
                    assert table[f"{mid}/{name}"][position] == pytest.approx(values[position]), (mid, name)
    assert not any(column.startswith("gamma/") for column in table.columns), "a failed model has no columns"
    context = json.loads(file.schema_arrow.metadata[b"nvperf_bridge"])
    assert context["schema_version"] == document["schema_version"] and context["warnings"] == document["warnings"]


def test_analyze_writes_parquet_and_refuses_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from nvperf_bridge.cli import main

    out = tmp_path / "kernels.parquet"
    assert main(["analyze", str(DEMO), "-m", "roofline", "-o", str(out), "-q"]) == 0
    table = pq.read_table(out).to_pandas()
    assert len(table) == 12 and "roofline/predicted_ns" in table.columns
    assert main(["analyze", str(DEMO), "-m", "roofline", "--format", "parquet", "-q"]) != 0
    assert "needs a file" in capsys.readouterr().err
