"""Unit conversion as data: every unit string the profilers print -> factor to a base unit.

Base units: ``ns`` (time), ``Hz`` (frequency), ``bytes`` (sizes), ``bytes/s``
(throughput), ``count`` (instructions, cycles, sectors, launches, ratios of
counts), ``fraction`` (percentages become 0..1).

Nsight Compute scales with SI prefixes (``Kbyte`` = 1000 bytes); nvprof prints
sizes in ``KB``/``MB``/``GB`` meaning 1024-based units (its trace "Static
SMem" of 8 KB is 8192 bytes) but throughputs (``GB/s``) in 1000-based units,
as its documentation and the DRAM-transaction cross-check in the magus files
show. Conversion is vectorised: one lookup of the factor per distinct unit
string, then one multiplication per column (``convert``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported lazily by the callers' hot paths
    import numpy as np
    import pandas as pd

_K, _M, _G, _T = 1e3, 1e6, 1e9, 1e12
_KI, _MI, _GI, _TI = 1024.0, 1024.0**2, 1024.0**3, 1024.0**4

# unit string as printed -> (factor to base unit, base unit)
UNITS: dict[str, tuple[float, str]] = {
    # no unit: the value is already a plain number
    "": (1.0, "count"),
    # time
    "ps": (1e-3, "ns"), "psecond": (1e-3, "ns"),
    "ns": (1.0, "ns"), "nsecond": (1.0, "ns"),
    "us": (1e3, "ns"), "usecond": (1e3, "ns"),
    "ms": (1e6, "ns"), "msecond": (1e6, "ns"), "msec": (1e6, "ns"), "usec": (1e3, "ns"), "nsec": (1.0, "ns"),
    "s": (1e9, "ns"), "second": (1e9, "ns"), "sec": (1e9, "ns"),
    # frequency
    "hz": (1.0, "Hz"), "Hz": (1.0, "Hz"), "cycle/second": (1.0, "Hz"), "cycle/s": (1.0, "Hz"),
    "Khz": (_K, "Hz"), "KHz": (_K, "Hz"), "kHz": (_K, "Hz"), "cycle/msecond": (_K, "Hz"),
    "Mhz": (_M, "Hz"), "MHz": (_M, "Hz"), "cycle/usecond": (_M, "Hz"),
    "Ghz": (_G, "Hz"), "GHz": (_G, "Hz"), "cycle/nsecond": (_G, "Hz"),
    # sizes, Nsight Compute (SI prefixes)
    "byte": (1.0, "bytes"), "bytes": (1.0, "bytes"),
    "Kbyte": (_K, "bytes"), "Mbyte": (_M, "bytes"), "Gbyte": (_G, "bytes"), "Tbyte": (_T, "bytes"),
    "KiB": (_KI, "bytes"), "MiB": (_MI, "bytes"), "GiB": (_GI, "bytes"), "TiB": (_TI, "bytes"),
    "byte/block": (1.0, "bytes"), "Kbyte/block": (_K, "bytes"), "Mbyte/block": (_M, "bytes"),
    # sizes, nvprof (1024-based)
    "B": (1.0, "bytes"), "KB": (_KI, "bytes"), "MB": (_MI, "bytes"), "GB": (_GI, "bytes"), "TB": (_TI, "bytes"),
    # throughput
    "byte/second": (1.0, "bytes/s"), "byte/s": (1.0, "bytes/s"),
    "Kbyte/second": (_K, "bytes/s"), "Kbyte/s": (_K, "bytes/s"),
    "Mbyte/second": (_M, "bytes/s"), "Mbyte/s": (_M, "bytes/s"),
    "Gbyte/second": (_G, "bytes/s"), "Gbyte/s": (_G, "bytes/s"),
    "Tbyte/second": (_T, "bytes/s"), "Tbyte/s": (_T, "bytes/s"),
    "B/s": (1.0, "bytes/s"), "KB/s": (_K, "bytes/s"), "MB/s": (_M, "bytes/s"),
    "GB/s": (_G, "bytes/s"), "TB/s": (_T, "bytes/s"),
    # percentages
    "%": (0.01, "fraction"), "pct": (0.01, "fraction"),
    # counts (any counted thing, possibly SI-scaled, and ratios of counts)
    "inst": (1.0, "count"), "Kinst": (_K, "count"), "Minst": (_M, "count"), "Ginst": (_G, "count"),
    "cycle": (1.0, "count"), "Kcycle": (_K, "count"), "Mcycle": (_M, "count"), "Gcycle": (_G, "count"),
    "sector": (1.0, "count"), "Ksector": (_K, "count"), "Msector": (_M, "count"), "Gsector": (_G, "count"),
    "request": (1.0, "count"), "Krequest": (_K, "count"), "Mrequest": (_M, "count"),
    "warp": (1.0, "count"), "block": (1.0, "count"), "thread": (1.0, "count"), "Kthread": (_K, "count"),
    "Mthread": (_M, "count"), "cluster": (1.0, "count"), "SM": (1.0, "count"), "pass": (1.0, "count"),
    "register/thread": (1.0, "count"), "inst/cycle": (1.0, "count"), "inst/warp": (1.0, "count"),
    "warp/cycle": (1.0, "count"), "sector/request": (1.0, "count"), "byte/request": (1.0, "count"),
    "byte/sector": (1.0, "count"), "cycle/inst": (1.0, "count"), "cycle/request": (1.0, "count"),
    "block/SM": (1.0, "count"), "warp/SM": (1.0, "count"), "request/cycle": (1.0, "count"),
    "sector/cycle": (1.0, "count"), "byte/cycle": (1.0, "count"), "inst/second": (1.0, "count"),
    "Kinst/second": (_K, "count"), "Minst/second": (_M, "count"), "Ginst/second": (_G, "count"),
    "Tinst/second": (_T, "count"),
}

# base unit -> canonical columns' unit names (columns.py writes "bytes", "cycles", ...)
BASE_UNITS: tuple[str, ...] = ("ns", "Hz", "bytes", "bytes/s", "count", "fraction")

_LOWER: dict[str, tuple[float, str]] = {}
_AMBIGUOUS: set[str] = set()
for _key, _value in UNITS.items():
    # case-insensitive fallback, only where the lower-cased spelling means one thing
    _low = _key.lower()
    if _low in _LOWER and _LOWER[_low] != _value:
        _AMBIGUOUS.add(_low)
    _LOWER.setdefault(_low, _value)


def lookup(unit: str) -> tuple[float, str] | None:
    """Factor and base unit of one unit string, or None when the unit is unknown."""
    text = unit.strip()
    if text in UNITS:
        return UNITS[text]
    low = text.lower()
    if low in _AMBIGUOUS:
        return None
    return _LOWER.get(low)


def convert(values: "pd.Series", units: "pd.Series") -> tuple["pd.Series", "pd.Series", set[str]]:
    """Convert numbers to base units, each by its own row's unit.

    Returns the converted values, the base unit of every row and the set of
    unit strings that are not in the table (those values are left as they were,
    with base unit "?"). One lookup per distinct unit string (the units are
    made categorical), then one vectorised multiplication: no loop per value.
    """
    import pandas as pd

    cats = units if isinstance(units.dtype, pd.CategoricalDtype) else units.astype("category")
    return convert_coded(values, [str(c) for c in cats.cat.categories], cats.cat.codes.to_numpy())


def convert_coded(values: "pd.Series", distinct: list[str], codes: "np.ndarray") -> tuple["pd.Series", "pd.Series", set[str]]:
    """``convert`` with the units given as codes: ``distinct`` unit strings and, per value, a position
    among them (-1: no unit). Only the units some value has are looked up (and can be unknown)."""
    import pandas as pd

    factors, bases, unknown = unit_factors(distinct, codes)
    converted = pd.Series(values.to_numpy(dtype="float64") * factors[codes], index=values.index)
    return converted, pd.Series(bases[codes], index=values.index), unknown


def unit_factors(distinct: list[str], codes: "np.ndarray") -> tuple["np.ndarray", "np.ndarray", set[str]]:
    """Per unit of ``distinct`` (and a last slot for no unit, code -1): the factor to its base unit and the
    base (object array of text; "?" with factor 1 for an unknown unit), and the unknown units. Only the
    units some code names are looked up."""
    import numpy as np

    factors = np.ones(len(distinct) + 1)
    bases = np.full(len(distinct) + 1, "count", dtype=object)  # the last slot: no unit
    unknown: set[str] = set()
    used = np.unique(codes)
    for i in used[used >= 0]:
        unit = distinct[i]
        found = lookup(unit)
        if found is None:
            unknown.add(unit)
            factors[i], bases[i] = 1.0, "?"
        else:
            factors[i], bases[i] = found
    return factors, bases, unknown


def parse_cells(values: "pd.Series", unit: str = "") -> tuple["pd.Series", "pd.Series", set[str], "pd.Series"]:
    """Cells that carry their unit in the text (nvprof: ``1.5829ms``, ``12.052us``, ``3.2GB/s``, ``68.7%``)
    -> (values in base units, base unit per cell, unknown unit strings, mask of cells that are not numbers).

    Each cell is converted by its own unit (nvprof picks one per value: ``731.55us`` beside
    ``57.452ms`` in one row). A plain number takes the column's ``unit`` (a units row's entry;
    default none: base "count"); a utilisation level ``"High (7)"`` is its number, with no unit.
    A missing cell or an n/a token is NaN and not in the mask; a cell that is neither a number
    nor number+unit is NaN and in the mask, so the caller can name it (never a silent zero).
    Vectorised: regexes over the column, one unit lookup per distinct unit string.
    """
    from nvperf_bridge.importers.text import parse_numbers, split_value_unit, unparsed

    number_text, cell_unit = split_value_unit(values)
    if unit:
        text = values.astype(object).fillna("").astype(str)
        level = text.str.contains(_LEVEL_CELL, regex=True)
        cell_unit = cell_unit.where((cell_unit != "") | level, unit)
    numbers = parse_numbers(number_text)
    converted, bases, unknown = convert(numbers, cell_unit)
    return converted, bases, unknown, unparsed(values, numbers)


_LEVEL_CELL = r"^\s*[A-Za-z][A-Za-z ]*\(\s*[-+]?\d+(?:\.\d+)?\s*\)\s*$"  # "High (7)": a level, not a bare number
