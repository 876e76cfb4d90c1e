"""Run a block with OpenBLAS on one thread (the statistical model's tall-skinny products), or the whole
``analyze`` command (``one_thread_from_load``).

numpy and scipy ship OpenBLAS, which splits a product over every core it sees. For the shapes
Kerr's model computes on a million kernels (100k distinct rows x 18 counters times its
transpose, a tall triangular solve, 1e6 x 18 scores) the split costs far more than it gives:
on this project's 2-core benchmark machine a 100k x 18 weighted Gram took 0.065-0.115 CPU s on
two threads against 0.004 on one, and Kerr on 1M kernels 2.1-4.5 CPU s against 1.4-1.6
(paired runs, load ~10). ``one_thread()`` sets every OpenBLAS loaded in this process to one
thread for the block and restores each one's count after it. One thread also makes a product's
last bits the same on every machine: a sum OpenBLAS splits between threads depends on the split.

The libraries are found in ``/proc/self/maps`` (Linux) and driven through their own exported
``*_set_num_threads`` / ``*_get_num_threads`` (plain OpenBLAS and the ``scipy_openblas`` builds
numpy and scipy wheels carry, 64- and 32-bit integer interfaces). Elsewhere (another BLAS,
another platform) the block runs unchanged. Only libraries already loaded are found; each
entry, nested ones included, also sets a library loaded since (scipy's, imported inside).

OpenBLAS also costs CPU where nothing is multiplied: when it loads (``import numpy``) it starts its
thread pool, and each thread it starts spins, waiting for work, for a while before it sleeps.
``python -c "import numpy"`` took 0.12-0.16 CPU s on this 2-core machine against 0.05-0.07 with
``OPENBLAS_NUM_THREADS=1``, for the same 0.07-0.10 s wall, and a product split between threads leaves
them spinning again after it. A small report runs two processes (the command and its figure worker,
``reports/figure_worker.py``) that both import numpy at once, so each one's spinning thread took the
core the other one was using; a large input's reader and the statistical model's thread (beside the
other models) lost their core to it the same way. ``analyze`` therefore asks for one thread before
numpy loads (``one_thread_from_load``): its products are the tall-skinny ones above, and paired runs
of the small Markdown report and of a 10k-launch ncu details page took 0.84x and 0.92x the wall time.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# (get, set) symbol pairs, tried in order: scipy-openblas wheels (64-bit ints, then 32) and plain OpenBLAS
_SYMBOLS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)

# The environment variable OpenBLAS reads its thread count from when it loads (numpy's and scipy's builds too)
THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"

_LOCK = threading.Lock()
_DEPTH = 0
_SAVED: dict[str, tuple[object, int]] = {}  # library path -> (its set function, its thread count before)


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS shared libraries mapped into this process (Linux), else []."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {fields[5] for fields in (line.split(None, 5) for line in maps)
                     if len(fields) == 6 and "openblas" in fields[5].lower()}
    except OSError:
        return []
    return sorted(p.strip() for p in paths if "openblas" in os.path.basename(p).lower() and ".so" in p)


def _controls(path: str) -> tuple[object, object] | None:
    """(get, set) thread-count functions of the loaded OpenBLAS at ``path``."""
    try:
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0))
    except OSError:
        return None
    for get_name, set_name in _SYMBOLS:
        get, set_ = getattr(lib, get_name, None), getattr(lib, set_name, None)
        if get is not None and set_ is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            set_.restype, set_.argtypes = None, [ctypes.c_int]
            return get, set_
    return None


@contextmanager
def one_thread() -> Iterator[None]:
    """Every loaded OpenBLAS on one thread within the block. Nested blocks share the outermost, and
    each entry also sets a library loaded since (scipy's, imported inside the block); the outermost
    block's end restores every one."""
    global _DEPTH
    with _LOCK:
        _DEPTH += 1
        try:
            for path in _loaded_openblas():
                if path in _SAVED:
                    continue
                controls = _controls(path)
                if controls is not None:
                    get, set_ = controls
                    _SAVED[path] = (set_, int(get()))  # type: ignore[operator]
                    set_(1)  # type: ignore[operator]
        except Exception:  # noqa: BLE001 - a library that will not say how many threads: leave it as it is
            pass
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if not _DEPTH:
                for set_, count in _SAVED.values():
                    set_(count)  # type: ignore[operator]
                _SAVED.clear()


def one_thread_from_load() -> None:
    """Before numpy is imported: the OpenBLAS libraries this process (and the processes it starts) will
    load start with one thread, unless the environment already says how many. Nothing happens once
    numpy is loaded (its pool is started), so a caller that imported it (a test, a notebook) keeps its
    own."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(THREADS_VARIABLE, "1")


__all__ = ["THREADS_VARIABLE", "one_thread", "one_thread_from_load"]
