"""A number as a report writes it (``format_number``): numpy only, so the figure worker, which never
imports pandas, writes the same text as the reports."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def format_number(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant digits and no exponent for everyday sizes.

    Missing is ''; an unbounded intermediate quantity (e.g. Hong-Kim's CWP_full
    with no computation cycles) is shown as the symbol '∞', never as 'inf'."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return "" if math.isnan(value) else ("∞" if value > 0 else "-∞")
        if value == 0:
            return "0"
        magnitude = abs(value)
        if magnitude >= 1e15 or magnitude < 1e-4:
            return f"{value:.{digits - 1}e}"
        if magnitude >= 10 ** digits:
            return f"{value:,.0f}"
        decimals = max(0, digits - 1 - int(math.floor(math.log10(magnitude))))
        text = f"{value:.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    return str(value)


__all__ = ["format_number"]
