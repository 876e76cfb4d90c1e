"""``nvperf-bridge analyze``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def analyze_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'analyze' is not built yet")
