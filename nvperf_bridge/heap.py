"""Run a block with the C heap keeping the memory it frees (glibc) for the block's next allocations.

The models of one run each write a few hundred 8 MB arrays on a million kernels and free most of
them again. glibc hands the top of its heap back to the kernel as soon as more than its trim
threshold (dynamically 2x the largest freed mapping, at most 64 MiB) lies free there, and maps
larger blocks on their own, unmapped when freed; the next model's arrays then touch fresh pages
again. On a virtual machine whose host reclaims freed pages that first touch is the largest cost
(benchmarks/RESULTS.md run I: 9-10 us per 4 KiB page when idle, against 1.3 for a page the process
freed a moment before, and none for memory the heap kept). Measured on the 1M-kernel frame of
``benchmarks/run.py``: 409k page faults for the seven models, 357k with the heap keeping what it frees.

``keep_freed()`` sets glibc's ``M_MMAP_THRESHOLD`` to 32 MiB (the most its dynamic threshold
reaches: arrays up to that size come from the heap) and ``M_TRIM_THRESHOLD`` to its maximum for
the block; after it both stay at the values glibc's dynamic thresholds end at (32 and 64 MiB), so
the heap trims its top again as before (the next free above 64 MiB returns it; the report's arrays
reuse the rest). Only where memory comes from changes: every value is the same. Without glibc
(another C library, another platform) the block runs unchanged.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: the dynamic threshold's ceiling
TRIM_AFTER = 2 * MMAP_THRESHOLD  # where the dynamic trim threshold ends with that mmap threshold
KEEP_ALL = 2**31 - 1  # mallopt takes an int: the largest trim threshold it can be given

_LOCK = threading.Lock()
_DEPTH = 0


@functools.cache
def _glibc() -> Any | None:
    """This process's C library when it is glibc (it has ``mallopt``), else None."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return libc


@contextmanager
def keep_freed() -> Iterator[None]:
    """The C heap keeps what is freed within the block (see the module docstring); nested blocks share
    the outermost, whose end puts the trim threshold back."""
    global _DEPTH
    libc = _glibc()
    with _LOCK:
        _DEPTH += 1
        if _DEPTH == 1 and libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, KEEP_ALL)
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if not _DEPTH and libc is not None:
                libc.mallopt(M_TRIM_THRESHOLD, TRIM_AFTER)


__all__ = ["keep_freed"]
