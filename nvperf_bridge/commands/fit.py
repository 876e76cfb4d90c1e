"""``nvperf-bridge fit``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def fit_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'fit' is not built yet")
