"""What the importers that read with pyarrow's CSV reader share: whether they can, its memory pool, and
the byte checks that send a file to the whole-text path instead.

pyarrow is a runtime dependency, but each importer keeps pandas' parser as its fallback: ``csv_reader``
is None where pyarrow cannot be imported, and the caller then takes that path. pyarrow's reader takes
bytes as they are, where the whole-text path first normalises carriage returns and strips NUL bytes: a
table holding either goes that way, found as the reader's blocks are read (``FileRegion``, which raises
``NotPlain``).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType


def csv_reader() -> tuple[ModuleType, ModuleType] | None:
    """``pyarrow`` and ``pyarrow.csv``, or None where pyarrow cannot be imported (pandas' parser then)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pa_csv
    except ImportError:
        return None
    return pa, pa_csv


def memory_pool():
    """jemalloc where pyarrow has it: it returns freed blocks to the system (measured at 100k launches of
    an ncu raw page: peak 398 MB against 550 MB with mimalloc and 779 MB with the system allocator)."""
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowNotImplementedError):
        return pa.default_memory_pool()


class NotPlain(Exception):
    """The bytes hold a carriage return or a NUL byte."""


class FileRegion:
    """File bytes ``start`` to ``end`` as a binary stream for pyarrow's reader; a carriage return or NUL byte
    in them raises ``NotPlain`` (the whole-text path normalises those) as the block that holds it is read.

    ``ahead``: the most reads (blocks) the stream gives out beyond the batches its consumer has taken
    (``taken``, once per batch). pyarrow's streaming reader otherwise reads up to 32 blocks ahead of its
    parse on an I/O thread, each held in memory (at 4 MiB blocks 136 MB of a 1M-launch trace's peak RSS).
    A read that waits longer than ``PACE_WAIT_S`` goes ahead anyway: pyarrow's pipeline at times takes
    more blocks than it has handed back batches (at ``ahead`` 4, 7 waits of 99 reads on the 1M-launch trace
    timed out with nothing left for the consumer; at 8, 0 to 1), so a wait never stalls it for long.
    ``unpace`` lets every read through (a consumer that stops early)."""

    PACE_WAIT_S = 0.05

    def __init__(self, path: Path, start: int, end: int, ahead: int | None = None) -> None:
        import threading

        self._fh = open(path, "rb")
        self._fh.seek(start)
        self._left = end - start
        self.closed = False
        self._ahead = ahead
        self._lead = 0  # reads given out less batches taken
        self._turn = threading.Condition()

    def __enter__(self) -> "FileRegion":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def tell(self) -> int:
        """The file offset read up to."""
        return self._fh.tell()

    def read(self, size: int = -1) -> bytes:
        if self._ahead is not None:
            with self._turn:
                self._turn.wait_for(lambda: self._ahead is None or self._lead < self._ahead, self.PACE_WAIT_S)
                self._lead += 1
        if size < 0 or size > self._left:
            size = self._left
        block = self._fh.read(size)
        self._left -= len(block)
        if block.find(b"\r") >= 0 or block.find(b"\x00") >= 0:
            raise NotPlain()
        return block

    def taken(self) -> None:
        """The consumer took a batch: one more read may go ahead."""
        with self._turn:
            self._lead -= 1
            self._turn.notify()

    def unpace(self) -> None:
        """Every read from now on goes ahead at once."""
        with self._turn:
            self._ahead = None
            self._turn.notify_all()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.unpace()
        self._fh.close()
        self.closed = True


def rows_expected(path: Path, start: int, head: str) -> int:
    """About how many rows the table starting at byte ``start`` holds (a little more), to size a storage
    block before pyarrow reads it: the file's bytes from there over the bytes per line of ``head`` (the
    text from the table's header on)."""
    lines = max(1, head.count("\n"))
    per_line = max(1.0, len(head.encode("utf-8")) / lines)
    return int((path.stat().st_size - start) / per_line * 1.05) + 1024
