"""pyarrow's reader over a large input opened before the command imports pandas, so that its parse runs
on the second core while the main thread imports pandas, the importers and the models.

pyarrow parses in native code without the interpreter lock; the imports hold it. Started at the command's
first step (``start``), the reader of a 1M-launch nvprof trace has parsed about a quarter of the file by the
time the importer asks for it (after about 0.4 s of imports on 2 cores), instead of starting then.

The importer asks by what it would open (a plan, e.g. ``trace_reader.TracePlan``: the file, where the
table starts, its column names): ``take`` hands over the reader opened early for an equal plan, else None
and the importer opens its own. Both are opened from the plan by the same code, on the same bytes: the
batches are the same either way. Whatever is not taken (the importer went another way, the command failed)
is closed by ``close_all``.

Light on purpose: the standard library and this package's pandas-free modules (``head``, ``sniff``,
``trace_reader``, ``arrow_csv``); pyarrow is imported on the reader's own thread.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from nvperf_bridge.importers import trace_reader

# below this a file's parse is too short to be worth a thread (and a small report's start-up stays as it is)
EARLY_MIN_BYTES = 16 << 20
# batches (4 MiB of the file each) an early reader may parse before the importer takes it: on 2 cores, 26 to 29
# of the 1M-launch trace's 98 were ready by then (3 runs), held beside pandas' imports (peak RSS then about
# 250 MB, under the read's own peak of about 500 MB, when the block of numbers is full)
EARLY_DEPTH = 40
# the interpreter's switch interval while a reader runs beside the imports: its threads take the lock once
# or twice a block (the file's read, the batch handed over), and at the default 5 ms each of those may wait
# for the importing thread to let go (19 to 24 blocks ready at the take with the default, 26 to 29 with this)
SWITCH_INTERVAL_S = 0.0002

_lock = threading.Lock()
_started: dict[Any, "_Opening"] = {}
_switch_before: list[float] = []


class _Opening:
    """``open_reader()`` run on a thread of its own: ``result`` waits for it and gives the reader, or
    raises what opening raised."""

    def __init__(self, open_reader: Callable[[], Any]) -> None:
        self._reader: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._open, args=(open_reader,), name="early-read-open",
                                        daemon=True)
        self._thread.start()

    def _open(self, open_reader: Callable[[], Any]) -> None:
        try:
            self._reader = open_reader()
        except BaseException as exc:  # raised where the importer takes it, as if it had opened it there
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._reader


def start(paths: Iterable[Path]) -> None:
    """Open the reader of each of ``paths`` (files this process will read itself) that is large and that
    its importer reads with one (an nvprof GPU trace)."""
    for path in paths:
        plan = _trace_plan(path)
        if plan is None:
            continue
        with _lock:
            if plan in _started:
                continue
            if not _switch_before:
                _switch_before.append(sys.getswitchinterval())
                sys.setswitchinterval(SWITCH_INTERVAL_S)
            _started[plan] = _Opening(lambda plan=plan: trace_reader.TraceBatches(plan, EARLY_DEPTH))


def _trace_plan(path: Path) -> Any:
    """The ``TracePlan`` the nvprof trace importer will make for ``path``, or None where the file is small,
    not an nvprof trace, or one the streamed read does not take (``importers.read_parts``' own checks)."""
    from nvperf_bridge.errors import InputError
    from nvperf_bridge.importers.head import ends_with_newline, has_units_row, read_head
    from nvperf_bridge.importers.sniff import HeaderTooWide, first_table

    try:
        if path.stat().st_size < EARLY_MIN_BYTES:
            return None
        head = read_head(path)
        if head is None or not ends_with_newline(path):
            return None
        found = first_table(head.text, 0)
        if found is None or found.format != "nvprof-trace":
            return None
        return trace_reader.plan_for(path, head, found.start, has_units_row(head.text, found.start))
    except (InputError, HeaderTooWide, OSError, ValueError):
        return None  # the importer says what is wrong with the file


def take(plan: Any) -> Any:
    """The reader opened early for ``plan`` (from now on parsing at most its consumer's usual depth ahead),
    or None. Raises what opening it raised."""
    with _lock:
        opening = _started.pop(plan, None)
        if not _started:
            _restore_switch_interval()
    if opening is None:
        return None
    reader = opening.result()
    # from here on as deep as the importer's own (keeping the early depth: the 1M-launch pair 1.04x slower over
    # 6 paired rounds)
    reader.limit(trace_reader.READ_AHEAD)
    return reader


def close_all() -> None:
    """Close every reader opened early and not taken."""
    with _lock:
        left = list(_started.values())
        _started.clear()
        _restore_switch_interval()
    for opening in left:
        try:
            opening.result().close()
        except Exception:  # it failed to open: nothing to close
            pass


def _restore_switch_interval() -> None:
    if _switch_before:
        sys.setswitchinterval(_switch_before.pop())
