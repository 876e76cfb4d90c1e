"""ncu details pivots only the metrics in use (issue 17) and keeps every launch and every canonical
value: compared with the full pivot (``--keep-raw``) on the real details files in ../shared/realdata."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.columns import CANONICAL_COLUMNS
from nvperf_bridge.discovery import read_inputs
from nvperf_bridge.registry import load_registry
from nvperf_bridge.review.advice import REVIEW_COLUMNS

DETAILS = (
    "optimal_unified_memory/optimal_unified_memory__cfd__nsight_cfd_097K.log",
    "llm-perf-opt/llm-perf-opt__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu.details.csv",
    "deeplearningprofiling/deeplearningprofiling__TF-fp16-batch2-fw-amp__out.fp16.lag1.train.dram__bytes.sum",
)


def _in_use() -> frozenset[str]:
    """What ``analyze`` passes without --keep-raw: every counter a model names, and the review's."""
    registry = load_registry([])
    return frozenset(name for entry in registry.models.values()
                     for name in (*entry.model.requires.required, *entry.model.requires.optional)) | REVIEW_COLUMNS


@pytest.mark.parametrize("name", DETAILS, ids=lambda n: n.split("/")[0])
def test_used_metrics_only_keeps_every_launch_and_canonical_value(realdata_dir, name: str) -> None:
    path = realdata_dir / name
    full = read_inputs([path]).kernels
    used = read_inputs([path], raw_columns=_in_use()).kernels
    assert len(used) == len(full) and list(used["kernel_id"]) == list(full["kernel_id"])
    canonical = [c for c in full.columns if c in CANONICAL_COLUMNS]
    assert [c for c in used.columns if c in CANONICAL_COLUMNS] == canonical
    for column in canonical:
        pd.testing.assert_series_equal(used[column], full[column], check_names=False, obj=column)
    assert set(used.columns) <= set(full.columns)
    if "deeplearningprofiling" not in name:  # default sections: metrics no model reads were not pivoted
        assert len(used.columns) < len(full.columns)


def test_a_launch_with_only_unused_metrics_is_kept(tmp_path) -> None:
    text = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
            '"Section Name","Metric Name","Metric Unit","Metric Value"\n')
    for launch, metrics in ((0, ("gpu__time_duration.sum", "DRAM Frequency")), (1, ("DRAM Frequency",))):
        for metric in metrics:
            text += f'"{launch}","7","app","h","k{launch}","2025-Jan-01","1","7","S","{metric}","nsecond","1,000"\n'
    path = tmp_path / "details.csv"
    path.write_text(text)
    kernels = read_inputs([path], raw_columns=_in_use()).kernels
    assert list(kernels["kernel_name"]) == ["k0", "k1"]
    assert kernels["duration_ns"].iloc[0] == 1000.0 and np.isnan(kernels["duration_ns"].iloc[1])
    assert "DRAM Frequency" not in kernels.columns
    assert "DRAM Frequency" in read_inputs([path]).kernels.columns  # --keep-raw keeps it
