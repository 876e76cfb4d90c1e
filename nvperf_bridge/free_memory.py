"""Give freed memory back to the system between the stages of an analysis (import, models, report).

pandas and numpy free their temporaries into the C allocator, which keeps the pages, and pyarrow's
allocator (jemalloc) keeps the blocks its CSV reader used. Each stage's new memory then came on top of
the last stage's free pages: at 100k ncu raw launches about 110 MB were such pages after the import
(glibc's heap and jemalloc's), and after the models of a 100k-kernel analysis about 55 MB. Releasing them
costs well under a millisecond on a small run and changes no result.
"""

from __future__ import annotations

import sys


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing elsewhere), and
    pyarrow's unused blocks where pyarrow has been imported (it is not imported for this)."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        for pool in _arrow_pools(arrow):
            pool.release_unused()
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return
    trim(0)


def _arrow_pools(arrow) -> list:
    """pyarrow's default pool and its jemalloc pool (the importers read with it: ``importers.arrow_csv``), where
    they exist."""
    pools = []
    for name in ("default_memory_pool", "jemalloc_memory_pool"):
        try:
            pools.append(getattr(arrow, name)())
        except (AttributeError, NotImplementedError, getattr(arrow, "ArrowNotImplementedError", NotImplementedError)):
            continue
    return pools
