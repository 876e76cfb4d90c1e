"""Issue 13: values printed with their unit inside the cell are parsed with that unit, column-wise."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvperf_bridge.units import UNITS, parse_cells


def test_the_column_unit_applies_to_bare_cells_only() -> None:
    # a units row says "us"; one cell carries its own "ms" (nvprof summary: Avg in us while Max is in ms)
    values, bases, unknown, bad = parse_cells(pd.Series(["12.5", "1.25ms", "1,024.5", None]), unit="us")
    assert values.tolist()[:3] == [12500, 1.25e6, 1024500] and pd.isna(values.iloc[3])
    assert bases.tolist()[:3] == ["ns", "ns", "ns"] and not unknown and not bad.any()


def test_levels_missing_tokens_and_what_stays_unparsed() -> None:
    raw = pd.Series(["High (7)", "Idle (0)", "n/a", "", "abc", "1.2.3.x", "2.1furlongs"])
    values, bases, unknown, bad = parse_cells(raw, unit="us")
    assert values.tolist()[:2] == [7, 0]  # a level has no unit, whatever the column's
    assert bad.tolist() == [False, False, False, False, True, True, False]
    assert unknown == {"furlongs"} and bases.iloc[6] == "?"


_SUFFIXES = sorted(u for u in UNITS if u and u.count("/") <= 1 and all(ch.isascii() and (ch.isalpha() or ch in "%/")
                                                                       for ch in u))


@given(st.floats(min_value=0, max_value=1e12, allow_nan=False).map(lambda x: round(x, 6)), st.sampled_from(_SUFFIXES))
def test_any_number_with_any_table_unit_round_trips(number: float, unit: str) -> None:
    values, bases, _, bad = parse_cells(pd.Series([f"{number:.6f}{unit}"]))
    factor, base = UNITS[unit]
    assert values.iloc[0] == pytest.approx(number * factor) and bases.iloc[0] == base and not bad.iloc[0]
