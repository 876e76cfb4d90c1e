"""Ctrl-C (SIGINT) and SIGTERM at any moment: clean up and exit at once.

Python turns SIGINT into a ``KeyboardInterrupt`` raised at whatever bytecode
runs next: inside a library's ``finally``, a generator being closed or a
``__del__`` (openpyxl's write-only sheets print "Exception ignored in ..."
tracebacks then), and SIGTERM kills without running any cleanup at all. While
the command line runs, ``handle_signals`` replaces both with a handler that
kills the worker processes this run started (isolated model plugins), removes
the temporary files of unfinished atomic writes and those of openpyxl's
write-only sheets (which openpyxl removes only at a normal exit), prints one
line and ends the process with ``os._exit(128 + signal)`` (130 for SIGINT, 143 for SIGTERM):
nothing half-written is left, and no third-party code runs after the signal.

A signal that was ignored when the process started (``nohup``, a background
job of a non-interactive shell) stays ignored: that is what the caller asked
for. Library users who never enter ``handle_signals`` keep Python's default
behaviour; ``reports.write`` also removes its temporary file on
``KeyboardInterrupt``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any, Iterator

HANDLED = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)

_temp_files: set[str] = set()  # temporary files of writes in progress (removed on a signal)
_children: dict[int, Any] = {}  # pid -> process object with .kill() (killed on a signal)


def track_temp_file(path: str) -> None:
    """Remember ``path`` (before it is created) so a signal removes it."""
    _temp_files.add(path)


def forget_temp_file(path: str) -> None:
    _temp_files.discard(path)


def track_child(pid: int, process: Any) -> None:
    """Remember a worker process (anything with ``kill()``) so a signal stops it too."""
    _children[pid] = process


def forget_child(pid: int) -> None:
    _children.pop(pid, None)


def reset_in_child() -> None:
    """In a forked worker: default signal actions, and nothing of the parent's to clean up."""
    _temp_files.clear()
    _children.clear()
    for signum in HANDLED:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)


def _third_party_temp_files() -> list[str]:
    """openpyxl's sheet files (``/tmp/openpyxl.*``): it removes them in an ``atexit`` hook,
    which ``os._exit`` skips. Looked up, not imported: a run that wrote no workbook has none."""
    writer = sys.modules.get("openpyxl.worksheet._writer")
    return list(getattr(writer, "ALL_TEMP_FILES", ()))


def _on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001 (signal handler signature)
    for process in list(_children.values()):
        with contextlib.suppress(Exception):
            process.kill()
    for path in [*_temp_files, *_third_party_temp_files()]:
        with contextlib.suppress(OSError):
            os.unlink(path)
    name = "interrupted" if signum == getattr(signal, "SIGINT", None) else f"stopped by {signal.Signals(signum).name}"
    with contextlib.suppress(OSError):
        os.write(2, f"nvperf-bridge: {name}\n".encode())
    os._exit(128 + signum)


@contextlib.contextmanager
def handle_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM clean up and exit (see the module docstring).

    Outside the main thread (where Python cannot set handlers) this does nothing.
    """
    previous: dict[int, Any] = {}
    for signum in HANDLED:
        try:
            current = signal.getsignal(signum)
            if current is signal.SIG_IGN:
                continue  # ignored by whoever started us: keep it so
            previous[signum] = signal.signal(signum, _on_signal)
        except ValueError:  # not the main thread
            break
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


__all__ = ["handle_signals", "track_temp_file", "forget_temp_file", "track_child", "forget_child", "reset_in_child"]
