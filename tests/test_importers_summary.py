"""nvprof summary mode (``nvprof --csv`` without --print-gpu-trace): durations read whether the units sit in a
units row or inside each cell, and never lost without a word.

The cell spellings (``8.43532s``, ``843.53us``, ``588ns``, ``43.91%``) are the ones nvprof prints in its
summary; each value carries its own unit, so one row mixes us and ms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.importers import read_profiles
from nvperf_bridge.units import parse_cells

FIX = Path(__file__).parent / "fixtures" / "import"


def test_units_inside_the_cells_are_converted_per_value() -> None:
    result = read_profiles([FIX / "nvprof_summary_units_in_cells.csv"])
    k = result.kernels.set_index("kernel")
    assert list(k.index) == ["update_agents<bool=1>", "reduce_state"]  # memcpy and API rows are not kernels
    row = k.loc["update_agents<bool=1>"]
    assert row["duration_ns"] == pytest.approx(843_530.0)  # Avg 843.53us
    assert row["min_duration_ns"] == pytest.approx(841_040.0)  # Min 841.04us
    assert row["max_duration_ns"] == pytest.approx(1_249_600.0)  # Max 1.2496ms: another unit in the same row
    assert row["total_time_ns"] == pytest.approx(8.43532e9)  # Time 8.43532s
    assert row["invocations"] == 10000
    info = result.inputs[0]
    assert any("units inside the cells" in n and "Avg" in n for n in info.notes)
    assert any("2 rows: API call" in s for s in info.skipped)
    assert not result.warnings


def test_same_summary_with_a_units_row_gives_the_same_durations() -> None:
    cells = read_profiles([FIX / "nvprof_summary_units_in_cells.csv"]).kernels.set_index("kernel")
    row = read_profiles([FIX / "nvprof_summary_api_table.csv"]).kernels.set_index("kernel")
    assert row.loc["update_agents<bool=1>", "max_duration_ns"] == pytest.approx(
        cells.loc["update_agents<bool=1>", "max_duration_ns"])


def test_an_unreadable_duration_is_said_not_silently_lost(tmp_path: Path) -> None:
    text = (FIX / "nvprof_summary_units_in_cells.csv").read_text().replace("843.53us", "843.53 furlongs")
    path = tmp_path / "summary.csv"
    path.write_text(text)
    result = read_profiles([path])
    info = result.inputs[0]
    assert any("Avg (first at line 5: '843.53 furlongs')" in n for n in info.notes)
    assert any("Avg column could not be read" in w and "summary.csv" in w for w in result.warnings)


def test_parse_cells_reads_each_value_by_its_own_unit() -> None:
    import pandas as pd

    values, bases, unknown, bad = parse_cells(pd.Series(["1.5829ms", "12.052us", "3.2GB/s", "43.91%", "588ns",
                                                         None, "n/a", "fast"]))
    assert list(values[:5]) == pytest.approx([1_582_900.0, 12_052.0, 3.2e9, 0.4391, 588.0])
    assert list(bases[:5]) == ["ns", "ns", "bytes/s", "fraction", "ns"]
    assert values[5:].isna().all() and not unknown
    assert list(bad) == [False] * 7 + [True]  # missing and n/a are missing; only "fast" is not a number
