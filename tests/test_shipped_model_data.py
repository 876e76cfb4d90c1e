"""The Kerr model fitted on magus-corpus ships with the package; a user on that GPU names it by the GPU
profile's id (``--model-data kerr=gtx-1080-ti``), and the reason Kerr gives without one says so."""

from __future__ import annotations

import json
from pathlib import Path

from nvperf_bridge.cli import main
from nvperf_bridge.reports.json_read import section_columns
from nvperf_bridge.shipped_model_data import shipped_model_data


def _analyze_json(tmp_path: Path, realdata_dir: Path, *extra: str) -> dict[str, list]:
    corpus = realdata_dir / "magus-corpus"
    out = tmp_path / f"report{len(extra)}.json"
    code = main(["analyze", str(corpus / "metrics_cudasdk_mergeSort.csv"), str(corpus / "traces_cudasdk_mergeSort.csv"),
                 "--format", "json", "-q", "-o", str(out), "--model", "kerr", *extra])
    assert code == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    return section_columns(document, document["predictions"]["kerr"])  # the JSON's compact columns, per kernel


def test_the_shipped_kerr_fit_is_named_by_its_gpu_and_offered_where_kerr_cannot_fit(tmp_path: Path,
                                                                                     realdata_dir: Path) -> None:
    shipped = shipped_model_data("kerr", "gtx-1080-ti")
    assert shipped is not None and json.loads(shipped.read_text(encoding="utf-8"))["gpu"] == "gtx-1080-ti"
    # 4 timed kernels on a GTX 1080 Ti: too few to fit on the input itself
    alone = _analyze_json(tmp_path, realdata_dir)
    assert all(value is None for value in alone["predicted_ns"])
    assert all("--model-data kerr=gtx-1080-ti" in reason for reason in alone["error"])
    named = _analyze_json(tmp_path, realdata_dir, "--model-data", "kerr=gtx-1080-ti")
    assert len(named["predicted_ns"]) == 4 and all(value > 0 for value in named["predicted_ns"])


def test_no_shipped_fit_for_another_gpu_or_a_path_like_name() -> None:
    assert shipped_model_data("kerr", "h100-sxm") is None
    assert shipped_model_data("kerr", "../data/kerr-gtx-1080-ti") is None
    assert shipped_model_data("recommended", "gtx-1080-ti") is None
