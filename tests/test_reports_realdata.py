"""Every report format renders for every real profiler output in ../shared/realdata (skips when absent).

Real names and real gaps (summary rows, missing counters, no device name)
are what break renderers; the files are read in place, never copied here.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import realdata_files
from openpyxl import load_workbook

from nvperf_bridge.errors import InputError
from nvperf_bridge.reports.csv_report import render_csv
from nvperf_bridge.reports.excel import render_workbook
from nvperf_bridge.reports.json_read import kernel_records
from nvperf_bridge.reports.json_report import render_json
from nvperf_bridge.reports.markdown import render_markdown

FALLBACK_GPU = "v100-sxm2"  # for files that print no device name
XLSX_MAX_KERNELS = 2_000  # keep the suite quick; big inputs are the benchmark's job


@pytest.mark.parametrize("path", realdata_files(), ids=lambda p: p.name[:60])
def test_every_format_renders(path: Path) -> None:
    from nvperf_bridge.analysis import analyze
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.importers import read_profiles

    try:
        imported = read_profiles([path])
    except InputError:
        pytest.skip("holds no kernel table (the importers report it)")
    try:
        analysis = analyze(imported)
    except UsageError:
        analysis = analyze(imported, gpu=FALLBACK_GPU)
    document = json.loads(render_json(analysis))
    assert len(kernel_records(document)) == document["kernel_count"] == len(analysis.kernels)
    assert render_csv(analysis).count("\n") >= len(analysis.kernels) * len(analysis.runs)
    text = render_markdown(analysis)
    assert text.startswith("# nvperf-bridge report")
    if len(analysis.kernels) <= XLSX_MAX_KERNELS:
        wb = load_workbook(io.BytesIO(render_workbook(analysis, [])))
        assert wb["Summary"].max_row == len(analysis.kernels) + 1
