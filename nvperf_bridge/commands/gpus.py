"""``nvperf-bridge gpus``: placeholder while the command is being built (replaced by its owner)."""

from __future__ import annotations


def gpus_command() -> None:
    """Not built yet."""
    from nvperf_bridge.errors import UsageError

    raise UsageError("'gpus' is not built yet")
