"""The plugin hook specification (pluggy project name ``nvperf_bridge``).

A plugin module provides::

    from nvperf_bridge.hookspecs import hookimpl

    @hookimpl
    def register_models(register):
        register(MyModel())

and is found through the ``nvperf_bridge.models`` entry-point group, or loaded
from a file with ``--plugin path/to/file.py``.
"""

from __future__ import annotations

from typing import Any, Callable

import pluggy

PROJECT = "nvperf_bridge"
ENTRY_POINT_GROUP = "nvperf_bridge.models"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_models(register: Callable[[Any], None]) -> None:
    """Call ``register(model)`` once for each model object this plugin provides."""
