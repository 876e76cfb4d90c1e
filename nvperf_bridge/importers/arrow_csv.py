"""What the importers that read with pyarrow's CSV reader share: whether they can, its memory pool, and
the byte checks that send a file to the whole-text path instead.

pyarrow is a runtime dependency, but each importer keeps pandas' parser as its fallback: ``csv_reader``
is None where pyarrow cannot be imported, and the caller then takes that path. pyarrow's reader takes
bytes as they are, where the whole-text path first normalises carriage returns and strips NUL bytes: a
table holding either goes that way, either found as the reader's blocks are read (``FileRegion``, which
raises ``NotPlain``) or by a scan first (``plain_bytes``).
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
    in them raises ``NotPlain`` (the whole-text path normalises those) as the block that holds it is read."""

    def __init__(self, path: Path, start: int, end: int) -> None:
        self._fh = open(path, "rb")
        self._fh.seek(start)
        self._left = end - start
        self.closed = False

    def __enter__(self) -> "FileRegion":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def tell(self) -> int:
        """The file offset read up to."""
        return self._fh.tell()

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > self._left:
            size = self._left
        block = self._fh.read(size)
        self._left -= len(block)
        if block.find(b"\r") >= 0 or block.find(b"\x00") >= 0:
            raise NotPlain()
        return block

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self._fh.close()
        self.closed = True


def rows_expected(path: Path, start: int, head: str) -> int:
    """About how many rows the table starting at byte ``start`` holds (a little more), to size a storage
    block before pyarrow reads it: the file's bytes from there over the bytes per line of ``head`` (the
    text from the table's header on)."""
    lines = max(1, head.count("\n"))
    per_line = max(1.0, len(head.encode("utf-8")) / lines)
    return int((path.stat().st_size - start) / per_line * 1.05) + 1024


def plain_bytes(path: Path, start: int) -> bool:
    """No carriage return and no NUL byte after ``start`` (those are the whole-text path's to handle): a scan
    of the file, before or while pyarrow reads it (``FileRegion`` checks block by block as pyarrow reads
    instead)."""
    buffer = bytearray(1 << 22)  # one block, refilled in place: the file is scanned, never held
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        while True:
            got = fh.readinto(buffer)
            if not got:
                return True
            block = buffer if got == len(buffer) else buffer[:got]  # a copy only for the last, short block
            if block.find(b"\r") >= 0 or block.find(b"\x00") >= 0:
                return False
