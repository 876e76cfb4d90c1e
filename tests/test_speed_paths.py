"""The fast paths give what the slow ones give: only-used ncu raw columns, per-distinct-pattern messages."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.columns import describe_missing
from nvperf_bridge.model import missing_inputs

RAW = "roofline-analysis/roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv"


def _model_names() -> frozenset[str]:
    from nvperf_bridge.registry import load_registry

    registry = load_registry([])
    return frozenset(name for entry in registry.models.values()
                     for name in (*entry.model.requires.required, *entry.model.requires.optional))


def test_used_raw_columns_keep_every_canonical_column_and_value(realdata_dir: Path) -> None:
    from nvperf_bridge.columns import CANONICAL_COLUMNS
    from nvperf_bridge.importers import read_file

    path = realdata_dir / RAW
    full = read_file(path).frame
    used = read_file(path, raw_columns=_model_names()).frame
    assert len(used.columns) < len(full.columns) / 3, "most raw columns are not parsed"
    assert [c for c in full.columns if c in CANONICAL_COLUMNS] == [c for c in used.columns if c in CANONICAL_COLUMNS]
    pd.testing.assert_frame_equal(full[list(used.columns)], used)
    assert "launch__waves_per_multiprocessor" in used.columns  # read by roofline although not canonical


def test_analyze_predicts_the_same_with_and_without_keep_raw(realdata_dir: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from nvperf_bridge.cli import main

    documents = []
    for extra in ([], ["--keep-raw"]):
        out = tmp_path / f"r{len(extra)}.json"
        assert main(["analyze", str(realdata_dir / RAW), "--gpu", "h100-sxm", "--format", "json", "-o", str(out),
                     "-q", *extra]) == 0
        documents.append(json.loads(out.read_text()))
    lean, kept = documents
    assert lean["kernels"] == kept["kernels"] and lean["predictions"] == kept["predictions"]
    assert lean["details"] == kept["details"]
    assert lean["warnings"] == kept["warnings"] and lean["accuracy"] == kept["accuracy"]


def test_missing_counters_message_is_the_per_kernel_one() -> None:
    rng = np.random.default_rng(3)
    names = ["inst_executed", "dram_read_bytes", "grid_blocks", "flop_sp"]
    kernels = pd.DataFrame({c: np.where(rng.random(50) < 0.4, np.nan, 1.0) for c in names[:3]},
                           index=[f"k{i}" for i in range(50)])
    got = missing_inputs(kernels, names)
    for label, row in kernels.iterrows():
        absent = [n for n in names if n not in kernels.columns or pd.isna(row.get(n))]
        expected = describe_missing(absent) if absent else ""
        assert got[label] == expected, label
    assert got.str.contains("flop_sp").all(), "a column the frame lacks is missing for every kernel"
    assert (missing_inputs(kernels, []) == "").all()


def test_requested_sectors_without_efficiencies_are_the_general_forms_bits() -> None:
    # no gld/gst_efficiency column (every ncu file): one array made, the bits of the general form, which an
    # all-NaN efficiency column takes (+-0, NaN and inf sectors included)
    from nvperf_bridge.counters import requested_sectors

    values = [0.0, -0.0, np.nan, np.inf, 3.0, 1e300]
    ld, st = (pd.Series(np.array([[a, b] for a in values for b in values])[:, i]) for i in (0, 1))
    without = requested_sectors(pd.DataFrame(index=ld.index), ld, st)
    general = requested_sectors(pd.DataFrame({"gld_efficiency": np.nan, "gst_efficiency": np.nan}, index=ld.index),
                                ld, st)
    assert without.dtype == general.dtype == np.float64
    assert without.to_numpy().view(np.uint64).tolist() == general.to_numpy().view(np.uint64).tolist()


def test_either_column_is_the_where_column_held_once_when_every_row_agrees() -> None:
    from nvperf_bridge.labels import where
    from nvperf_bridge.model import either_column

    index = pd.RangeIndex(50)
    for condition in (np.ones(50, dtype=bool), np.zeros(50, dtype=bool), np.arange(50) % 3 == 0):
        got = either_column(pd.Series(condition), "yes", "no", index)
        expected = pd.Series(where(condition, "yes", "no"), index=index, dtype="object")
        assert got.dtype == expected.dtype == object
        pd.testing.assert_series_equal(got, expected)
