"""``nvperf-bridge inspect``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def inspect_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'inspect' is not built yet")
