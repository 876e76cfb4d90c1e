"""How a command uses Python's cycle collector: less often, and never over what is imported.

A command allocates a few million objects that reference counting frees, on top of the half a million
objects its imports create (pandas, numpy, matplotlib, openpyxl). The collector's passes over those
imported objects find nothing to free, yet they were most of its time: at Python's default thresholds it
ran about 200 young and 1-3 full passes, 0.08 CPU s of a small JSON run and 0.25 s of a small workbook;
and when the interpreter shuts down it makes one last full pass over every object still alive (about
0.1 CPU s after ``import pandas``, a quarter of that import's own time).

- ``fewer_collections``: young passes every 10,000 allocations instead of 700 (a full pass still comes
  every million, so cycles left by a long run are still freed).
- ``imports_begin`` / ``imports_done``: in a process of its own, the collector is off while a command
  imports numpy, pandas and its plugins. Imports make no garbage cycles (every pass there freed
  nothing), yet its passes over what they had made so far took 0.04 CPU s of the small report's
  import (ten young passes and one middle one of 0.02 s).
- When the command runs in a process of its own (the console script, ``python -m nvperf_bridge``), the
  objects alive once the heavy imports are done, and again when the command ends, are moved out of the
  collector's reach (``gc.freeze``): they are modules, classes and functions that live until exit anyway.
  Later passes, and the final one at shutdown, then look only at what the command itself made. Nothing
  changes in a process that goes on after the command (a test or a caller running ``cli.main`` with its
  own arguments): freezing there would keep that process's cycles for good.
"""

from __future__ import annotations

import gc

_OWN_PROCESS = False  # set by cli.main when the command is the process's whole life
_PAUSED = False  # the collector was turned off by imports_begin (imports_done or command_done turn it on)


def fewer_collections() -> tuple[int, ...]:
    """Young passes every 10,000 allocations; returns the thresholds before (``cli.main`` puts them back)."""
    before = gc.get_threshold()
    gc.set_threshold(10_000, 10, 10)
    return before


def own_process(value: bool) -> None:
    """Say whether the command runs in a process of its own that ends with it."""
    global _OWN_PROCESS
    _OWN_PROCESS = value


def imports_begin() -> None:
    """The heavy imports of a command come next: in a process of its own, the collector is off until
    ``imports_done``. Elsewhere nothing happens."""
    global _PAUSED
    if _OWN_PROCESS and gc.isenabled():
        gc.disable()
        _PAUSED = True


def imports_done() -> None:
    """The heavy imports of a command are done: in a process of its own, what they made is frozen (the
    collector never walks it again) and the collector is on again. Elsewhere nothing happens."""
    if _OWN_PROCESS:
        gc.freeze()
    _resume()


def _resume() -> None:
    global _PAUSED
    if _PAUSED:
        gc.enable()
        _PAUSED = False


def command_done() -> None:
    """The command is over and the process ends next: freeze what is alive, so the interpreter's last
    full collection at shutdown skips it (reference counting still frees the modules' objects as the
    interpreter clears them; files are closed and temporary files removed by the code that made them,
    before this). Elsewhere nothing happens."""
    _resume()  # a command that ended before its imports were done
    if _OWN_PROCESS:
        gc.freeze()


__all__ = ["command_done", "fewer_collections", "imports_begin", "imports_done", "own_process"]
