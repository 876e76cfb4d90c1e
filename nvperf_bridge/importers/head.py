"""The head of a profiler file: its first bytes read and checked (what the file is, before any parsing),
the header line of a table streamed from the file, and nvprof's units row.

Light on purpose (the standard library only): ``early_read`` uses it to find a table and start pyarrow's
reader before the command has imported pandas; ``text`` re-exports these names for the importers.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from nvperf_bridge.errors import InputError


_PNG = b"\x89PNG\r\n\x1a\n"
_SQLITE = b"SQLite format 3\x00"
_GZIP = b"\x1f\x8b"
_ZIP = b"PK\x03\x04"

# bytes no profiler text holds (C0 controls other than tab, newline, carriage return, form feed)
_CONTROL_BYTES = bytes(c for c in range(32) if c not in (9, 10, 12, 13))

RAW_EXPORT_HINT = "export it with `ncu -i FILE --csv --page raw --print-units base > FILE.csv`"


def _require_file(path: Path) -> None:
    """A directory or a missing path gets its own message before anything is read."""
    if path.is_dir():
        raise InputError("is a directory, not a profiler output file", path=path,
                         hint="pass the CSV files inside it, e.g. DIR/*.csv")
    if not path.exists():
        raise InputError("no such file", path=path)


def _reject_binary(path: Path, data: bytes) -> None:
    head = data[:4096]
    name = path.name.lower()
    if head.startswith(_PNG) or head[:3] == b"\xff\xd8\xff" or head[:4] == b"GIF8":
        raise InputError("this is an image, not profiler output; expected the CSV that ncu or nvprof wrote", path=path,
                         hint="collect it with `ncu --csv --page raw --print-units base ./app > profile.csv`")
    if head.startswith(_GZIP) or name.endswith((".gz", ".tgz")):
        raise InputError("this file is gzip-compressed; expected plain profiler CSV", path=path,
                         hint=f"decompress it first: `gunzip -c {path.name} > profile.csv`, then pass profile.csv")
    if head.startswith(_ZIP) and (b"xl/" in data[:65536] or name.endswith((".xlsx", ".xlsm"))):
        raise InputError("this is an Excel workbook (perhaps a report nvperf-bridge wrote), not profiler CSV",
                         path=path, hint="pass the ncu/nvprof CSV the report was made from")
    if head.startswith(_ZIP) or name.endswith((".zip", ".tar", ".7z")):
        raise InputError("this is an archive (zip/tar), not profiler CSV", path=path,
                         hint="unpack it and pass the profiler CSV files inside")
    if head.startswith(_SQLITE) or name.endswith((".nvvp", ".sqlite", ".nsys-rep", ".qdrep")):
        raise InputError("this is a profiler database (nvprof .nvvp / Nsight Systems), not CSV", path=path,
                         hint="export it with `nvprof -i FILE --csv --print-gpu-trace` "
                              "or collect with `ncu --csv --page raw --print-units base`")
    # a few NUL bytes in text are damage (reported with their line by read_text); many are a binary file
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    binary = b"\x00" in head and controls > len(head) // 100
    if name.endswith(".ncu-rep") or (binary and b"ncu" in head.lower()):
        raise InputError("this is an Nsight Compute report, not CSV", path=path, hint=RAW_EXPORT_HINT)
    if binary:
        raise InputError("this is a binary file, not profiler CSV (expected the text that ncu --csv or "
                         "nvprof --csv writes)", path=path,
                         hint=f"if it is an Nsight Compute report, {RAW_EXPORT_HINT}")


@dataclass(frozen=True)
class Head:
    """The first bytes of a file, decoded, for sniffing before the table is streamed."""

    data: bytes
    text: str  # decoded up to the last complete line
    bom: int  # bytes of a UTF-8 byte-order mark before ``text``


STREAM_HEAD_BYTES = 1 << 22


def read_head(path: Path, size: int = STREAM_HEAD_BYTES) -> Head | None:
    """The first ``size`` bytes of a file, with the same checks as ``read_text``.

    Returns None when the file must be read whole instead (its head is blank but
    the file goes on, it is not UTF-8, it has carriage returns): ``read_text``
    then gives the same answer or error as always.
    """
    _require_file(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(size)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", path=path) from None
    if not data.strip() or b"\r" in data or b"\x00" in data or data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None  # carriage returns, NUL bytes and UTF-16 are the whole-text path's to handle
    _reject_binary(path, data)
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    last = data.rfind(b"\n")
    if last < 0:
        return None
    try:
        text = data[bom:last + 1].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return Head(data=data, text=text, bom=bom)


@dataclass(frozen=True)
class StreamedHeader:
    """The header (and units) line of a table a ``read_stream`` reads straight from the file."""

    header: list[str]  # the header's fields as written
    names: list[str]  # the same, stripped
    units: list[str] | None  # the units row's fields, where the table has one
    start: int  # the byte offset of the header line in the file
    line: int  # how many lines come before the header line


def streamed_header(head: Head, start: int, has_units: Callable[[str, int, int], bool], *,
                    next_line: bool = False) -> StreamedHeader | None:
    """The header at character ``start`` of ``head.text`` (and its units row where ``has_units(text,
    start, header_end)``), or None where the streamed path cannot take the table: the header (or the
    units row, or with ``next_line`` whatever line follows the header) not complete within the head,
    no names, or a name twice."""
    import csv

    text = head.text
    header_end = text.find("\n", start)
    if header_end < 0:
        return None
    next_end = text.find("\n", header_end + 1)
    if next_line and next_end < 0:
        return None
    header = next(csv.reader(io.StringIO(text[start:header_end])), [])
    names = [h.strip() for h in header]
    if not names or len(set(names)) != len(names):
        return None
    units: list[str] | None = None
    if has_units(text, start, header_end):
        if next_end < 0:
            return None
        units = next(csv.reader(io.StringIO(text[header_end + 1:next_end])), [])
    return StreamedHeader(header, names, units, head.bom + len(text[:start].encode("utf-8")),
                          text.count("\n", 0, start))


def has_units_row(text: str, start: int) -> bool:
    """nvprof's units row is unquoted (``ms,us,,,`` or ``,%,ms,,us``); a data row starts with a number or a quote."""
    header_end = text.find("\n", start)
    if header_end < 0:
        return False
    line_end = text.find("\n", header_end + 1)
    line = text[header_end + 1: line_end if line_end >= 0 else len(text)]
    if not line or line.startswith('"'):
        return False
    first = line.split(",", 1)[0].strip()
    return first == "" or not re.match(r"^[-+]?\d", first)


def ends_with_newline(path: Path) -> bool:
    """Whether the file's last byte is a newline (a file that ends inside a row is read whole: its cut row is
    dropped)."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return False
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"
