"""Run a block with numpy's huge-page advice off where the kernel would compact memory on a fault.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of
4 MiB or more. When the kernel's THP ``defrag`` setting is ``always``, ``madvise`` or
``defer+madvise`` (``/sys/kernel/mm/transparent_hugepage/defrag``), a page fault in such an
array waits while the kernel compacts memory into a 2 MiB page. The models write a few hundred
new columns of 8 MB each on a million kernels, and that first touch dominated their time:
measured on this project's 2-core benchmark machine (defrag ``madvise``, load ~10), keeping
100 new 8 MB arrays cost 7-9 ms CPU each with the advice and 3.3-3.7 ms without (4 paired
runs), and the six non-statistical models on 1M kernels took 4.4-4.7 CPU s against 2.4-2.5.

``small_pages()`` turns numpy's advice off for the block (numpy's own switch, the one its
``NUMPY_MADVISE_HUGEPAGE=0`` environment variable sets) and restores it after. Only memory
placement changes: every value is the same. Where the kernel never compacts on a fault
(``defer``, ``never``), on other platforms, or with a numpy without the switch, the block runs
unchanged.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

DEFRAG_SETTING = Path("/sys/kernel/mm/transparent_hugepage/defrag")
# defrag modes in which a fault in an madvise(MADV_HUGEPAGE) region compacts memory synchronously
COMPACTING_MODES = frozenset({"always", "madvise", "defer+madvise"})

_LOCK = threading.Lock()
_DEPTH = 0
_BEFORE: bool | None = None


@functools.cache
def compacts_on_fault() -> bool:
    """Does a fault in a huge-page-advised region wait for compaction here (the selected THP defrag mode)?"""
    try:
        text = DEFRAG_SETTING.read_text(encoding="ascii")
    except OSError:
        return False
    selected = text[text.find("[") + 1:text.find("]")] if "[" in text else text.strip()
    return selected in COMPACTING_MODES


def _switch() -> Callable[[bool], bool] | None:
    """numpy's ``_set_madvise_hugepage`` (returns the previous setting), or None."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # numpy >= 2
    except ImportError:
        try:
            from numpy.core.multiarray import _set_madvise_hugepage  # type: ignore[no-redef]  # numpy 1.x
        except ImportError:
            return None
    return _set_madvise_hugepage


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy's huge-page advice off within the block where a fault would compact memory (see the
    module docstring); nested blocks share the outermost, which restores the setting."""
    global _DEPTH, _BEFORE
    switch = _switch() if compacts_on_fault() else None
    with _LOCK:
        _DEPTH += 1
        if _DEPTH == 1 and switch is not None:
            _BEFORE = bool(switch(False))
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if not _DEPTH and switch is not None and _BEFORE is not None:
                switch(_BEFORE)
                _BEFORE = None


__all__ = ["compacts_on_fault", "small_pages"]
