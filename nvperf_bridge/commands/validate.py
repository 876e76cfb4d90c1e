"""``nvperf-bridge validate``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def validate_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'validate' is not built yet")
