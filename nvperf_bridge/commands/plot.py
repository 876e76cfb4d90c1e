"""``nvperf-bridge plot``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def plot_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'plot' is not built yet")
