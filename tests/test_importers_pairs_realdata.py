"""Every nvprof metrics + trace pair in ../shared/realdata joins right, and stays right when all the files of
a folder are read together (no kernel takes the time of another application's kernel of the same name).

"Right" is checked independently of the join code: a metrics kernel's duration must equal the mean Duration
of the trace rows whose name (correlation suffix cut off by plain string splitting) is the same text, and its
invocations the number of those rows. Skips when the folder is absent."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.discovery import read_inputs
from nvperf_bridge.importers import read_profiles
from nvperf_bridge.importers.text import read_table, read_text, table_at
from nvperf_bridge.importers.sniff import sniff_text
from nvperf_bridge.units import lookup


def _pairs(realdata: Path) -> list[tuple[Path, Path]]:
    pairs = []
    for metrics in sorted((realdata / "magus-corpus").glob("metrics_*.csv")):
        trace = metrics.with_name(metrics.name.replace("metrics_", "traces_", 1))
        pairs.append((metrics, trace))
    magus = realdata / "magus"
    for metrics in sorted(magus.glob("magus__metrics_*.csv")):
        pairs.append((metrics, magus / metrics.name.replace("__metrics_", "__traces_")))
    pairs.append((magus / "magus__matrixMul_metrics.csv", magus / "magus__matrixMul_trace.csv"))
    return pairs


def _expected(trace: Path) -> pd.DataFrame:
    """Mean, shortest and longest Duration (ns) and launch count per kernel name, read without the importers'
    name logic."""
    text = read_text(trace)
    table = table_at(text, sniff_text(text).start)
    raw, units = read_table(text, table, trace, skip_units_row=True)
    factor = lookup(dict(zip(raw.columns, units))["Duration"])[0]
    names = raw["Name"].astype(str).map(lambda n: re.sub(r" \[\d+\]$", "", n))
    kernels = ~names.str.startswith("[")
    frame = pd.DataFrame({"name": names[kernels], "ns": raw.loc[kernels, "Duration"].astype(float) * factor})
    return frame.groupby("name")["ns"].agg(["mean", "min", "max", "size"])


def test_every_metrics_trace_pair_joins_each_kernel_to_its_own_launches(realdata_dir: Path) -> None:
    checked = 0
    for metrics, trace in _pairs(realdata_dir):
        assert trace.exists(), trace
        result = read_profiles([metrics, trace])
        expected = _expected(trace)
        rows = result.kernels[result.kernels["source"] == str(metrics)]
        for _, row in rows.iterrows():
            assert row["kernel_name"] in expected.index, (metrics.name, row["kernel_name"])
            mean, shortest, longest, size = expected.loc[row["kernel_name"]]
            assert row["duration_ns"] == pytest.approx(mean, rel=1e-9), (metrics.name, row["kernel_name"])
            # the spread of the launches, for the review's Min / Max per kernel group
            assert (row["min_duration_ns"], row["max_duration_ns"]) == pytest.approx((shortest, longest), rel=1e-12)
            assert row["invocations"] == size, (metrics.name, row["kernel_name"])
            checked += 1
    assert checked == 122 + 7  # magus-corpus 122 kernels, the five magus pairs 7


def test_a_whole_folder_joins_as_its_pairs_do(realdata_dir: Path) -> None:
    folder = realdata_dir / "magus-corpus"
    together = read_inputs([folder], jobs=1).kernels
    timed = together[together["source"].str.contains("/metrics_") & together["inst_executed"].notna()]
    assert len(timed) == 122 and timed["duration_ns"].notna().all()
    for metrics, trace in _pairs(realdata_dir)[:43]:
        alone = read_profiles([metrics, trace]).kernels
        alone = alone[alone["source"] == str(metrics)].set_index("kernel_name")["duration_ns"]
        mine = timed[timed["source"] == str(metrics)].set_index("kernel_name")["duration_ns"]
        pd.testing.assert_series_equal(mine.sort_index(), alone.sort_index(), check_names=False)
