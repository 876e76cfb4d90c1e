"""``nvperf-bridge metrics``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def metrics_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'metrics' is not built yet")
