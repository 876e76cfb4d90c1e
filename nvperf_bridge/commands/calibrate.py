"""``nvperf-bridge calibrate``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def calibrate_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'calibrate' is not built yet")
