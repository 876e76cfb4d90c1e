"""Shared text helpers: reading a file safely, finding the CSV table inside
surrounding text, and turning profiler number strings into floats.

Profiler CSV rarely stands alone: nvprof writes ``==PID==`` lines before the
table, ncu ``==PROF==`` lines, and when stdout went to the same file the
application's own output comes first. After the table there may be a second
table or free text. Everything here works on the whole text with C-speed
regular expressions and pandas string methods, never a Python loop per value.
"""

from __future__ import annotations

import io
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from nvperf_bridge.errors import InputError
from nvperf_bridge.labels import factorize_text

# ---- reading -------------------------------------------------------------------

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


def read_text(path: Path) -> str:
    """The file's text, or an InputError that says what the file is instead (see ``read_text_as``)."""
    return read_text_as(path)[0]


def read_text_as(path: Path) -> tuple[str, str]:
    """The file's text and the encoding it was read in, or an InputError that says what the file is instead.

    Directories, missing files, empty files and binary files (an Nsight
    Compute ``.ncu-rep`` report, an nvprof/nsys database, an image) each get
    their own message with the command that turns them into CSV. Text is
    UTF-8 (with or without a byte-order mark), UTF-16 LE/BE with a BOM (what
    a PowerShell ``>`` redirect writes), or else Latin-1. A NUL byte inside
    text is an error naming its line (a damaged file), never read silently.
    """
    _require_file(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", path=path) from None
    if _blank(data):
        raise InputError("the file is empty", path=path,
                         hint="profile again with `ncu --csv --page raw --print-units base ... > out.csv`")
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
    if not utf16:
        _reject_binary(path, data)
    text, encoding = decode(data)
    del data  # the bytes and the text of a large file are not held together any longer than decoding needs
    if _blank(text):
        raise InputError("the file is empty", path=path)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        raise InputError(f"line {line_of(text, text.index(chr(0)))} holds a NUL byte: the file is damaged "
                         "(a crash or a bad copy while it was written)", path=path,
                         hint=f"remove the NUL bytes (`tr -d '\\000' < {path.name} > fixed.csv`), check that line, "
                              "and pass the fixed file")
    return text, encoding


def _blank(data: bytes | str) -> bool:
    """Empty or only whitespace, without the copy ``strip()`` makes of a large file."""
    return not data or data.isspace()


def decode(data: bytes) -> tuple[str, str]:
    """Bytes -> (text, encoding name as ``inspect`` shows it); never fails (Latin-1 keeps every byte)."""
    if data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff"):
        name = "utf-16-le" if data[0] == 0xFF else "utf-16-be"
        body = data[2:len(data) - (len(data) % 2)]  # a file cut after an odd byte loses half a character
        return body.decode(name, errors="replace"), f"{name.upper()} with BOM"
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data[3:].decode("utf-8"), "UTF-8 with BOM"
        except UnicodeDecodeError:
            return data[3:].decode("latin-1"), "Latin-1 (after a UTF-8 BOM, not valid UTF-8)"
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError:
        # ncu/nvprof write ASCII; Latin-1 never fails and keeps every byte visible
        return data.decode("latin-1"), "Latin-1 (not valid UTF-8)"


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


class NeedsWholeText(Exception):
    """The streamed path met something only the whole-text path handles (a carriage return)."""


_TABLE_END_BYTES = re.compile(rb"\n(?=[ \t]*\n|[ \t]*$|==|[^,\n]*(?:\n|$))")


class TableStream(io.RawIOBase):
    """The bytes of the table whose header line starts at byte ``start``, read lazily.

    The table ends where ``table_at`` says it ends (a blank line, a ``==``
    line, a line without a comma, or the end of the file); that end is found
    block by block while pandas reads, so the file is read once and never held
    whole in memory.
    """

    BLOCK = 1 << 22

    def __init__(self, path: Path, start: int) -> None:
        super().__init__()
        self._fh = open(path, "rb")
        self._fh.seek(start)
        self._out = bytearray()
        self._tail = b""
        self._done = False
        self.ended_early = False  # the table ended before the end of the file
        self._end = -1  # the file offset where it ended (when it ended early)

    def readable(self) -> bool:
        return True

    def tell_bytes(self) -> int:
        """Bytes of the file read so far (an estimate of the parser's progress)."""
        return self._fh.tell()

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()

    def _fill(self) -> None:
        block = self._fh.read(self.BLOCK)
        if b"\r" in block or b"\x00" in block:
            raise NeedsWholeText()
        buf = self._tail + block
        if not block:
            match = _TABLE_END_BYTES.search(buf)
            end = len(buf) if match is None else match.start() + 1
            self.ended_early = match is not None
            self._end = self._fh.tell() - len(buf) + end
            self._out += buf[:end]
            self._tail, self._done = b"", True
            return
        last = buf.rfind(b"\n")
        if last < 0:
            self._tail = buf
            return
        # a match before the last newline sees the whole next line: it is final
        match = _TABLE_END_BYTES.search(buf)
        if match is not None and match.start() < last:
            self._end = self._fh.tell() - len(buf) + match.start() + 1
            self._out += buf[:match.start() + 1]
            self._tail, self._done, self.ended_early = b"", True, True
            return
        self._out += buf[:last]
        self._tail = buf[last:]

    def rest_text(self, limit: int) -> str | None:
        """The text after the table once it is read ('' when the table ran to the end of the file), or
        None when more than ``limit`` bytes follow it or they are not UTF-8."""
        if not self.ended_early:
            return ""
        with open(self._fh.name, "rb") as fh:
            fh.seek(self._end)
            rest = fh.read(limit + 1)
        if len(rest) > limit:
            return None
        try:
            return rest.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def readinto(self, b) -> int:  # type: ignore[override]
        want = len(b)
        while len(self._out) < want and not self._done:
            self._fill()
        n = min(want, len(self._out))
        b[:n] = self._out[:n]
        del self._out[:n]
        return n


def read_streamed_table(path: Path, head: Head, start: int, *, rest_limit: int = 1 << 20,
                        **read_csv: Any) -> tuple[pd.DataFrame, list[str], str | None] | None:
    """The table whose header line starts at character ``start`` of ``head.text``, read by pandas' C
    parser straight from the file (``TableStream``; ``read_csv``: the parser's dtype, skiprows and memory
    options): the frame (column names stripped), the header's fields as written, and the text after the
    table (``TableStream.rest_text``, None when longer than ``rest_limit``). None where the stream cannot
    read it as the whole-text path would: no header line in the head, duplicate column names, carriage
    returns, bytes that are not UTF-8, a row longer than the header, or a parser error."""
    import csv
    import warnings

    table = streamed_header(head, start, lambda *_: False)  # the caller reads a units row, if any
    if table is None:
        return None
    header, names = table.header, table.names
    stream = TableStream(path, table.start)
    try:
        with warnings.catch_warnings():
            # a row longer than the header would silently lose fields: the whole-text path repairs it
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(stream, keep_default_na=False, na_values=[""], index_col=False,
                                skipinitialspace=False, engine="c", encoding="utf-8", **read_csv)
        rest = stream.rest_text(rest_limit)
    except (NeedsWholeText, UnicodeDecodeError, ValueError, csv.Error, pd.errors.ParserError,
            pd.errors.ParserWarning, pd.errors.EmptyDataError):
        return None
    finally:
        stream.close()
    frame.columns = [str(c).strip() for c in frame.columns]
    if list(frame.columns) != names:
        return None
    return frame, header, rest


# ---- a file cut off while it was written ----------------------------------------

_NUMBER_SHAPE = re.compile(r"^[-+]?\d*(?:\.(\d*))?([^\d]*)$")


def drop_cut_last_line(text: str) -> tuple[str, int | None]:
    """The text without its last line when that line was cut off mid-row, and that line's number.

    A profiler that was killed leaves a file that ends without a newline,
    inside a row. Such a last line is recognised by an open quote, by fewer
    fields than the line before it, or (nvprof metrics, whose Min/Max/Avg
    share one format) by an Avg printed differently from the Max beside it
    (``687`` after ``687648.000000``). A complete last line without a final
    newline is kept. Never a cut value: 687 ns is not 687648 ns.
    """
    if not text or text.endswith("\n"):
        return text, None
    start = text.rfind("\n") + 1
    last = text[start:]
    if not last.strip() or start == 0:
        return text, None
    previous = text[text.rfind("\n", 0, start - 1) + 1:start - 1]
    if "," not in last or "," not in previous:
        return text, None
    cut = last.count('"') % 2 == 1
    if not cut:
        import csv

        try:
            fields, before = _csv_rows(last), _csv_rows(previous)
        except csv.Error:  # a field over the csv module's 128 KiB limit: completeness cannot be
            fields, before, cut = [], [], True  # checked, so the unterminated last row is dropped (warned)
        if fields and before:
            row, prev = fields[0], before[0]
            cut = len(row) < len(prev) and not (prev and prev[-1] == "" and len(row) == len(prev) - 1)
            if not cut and len(row) >= 3 and not last.rstrip().endswith('"'):
                a, b = _shape(row[-1]), _shape(row[-2])
                # nvprof picks a unit per value (KB/s beside B/s) but always prints the same decimals
                cut = a is not None and b is not None and (a[0] != b[0] or (a[1] == "") != (b[1] == ""))
                cut = cut or _avg_outside(row[-3:])
    if not cut:
        return text, None
    return text[:start], text.count("\n", 0, start) + 1


def _avg_outside(values: list[str]) -> bool:
    """nvprof's Min, Max, Avg in one unit with Avg far below Min: the Avg lost digits (130000 -> 13).

    nvprof's Avg of a rate can sit a little outside Min..Max (it is total over
    total time); a cut integer part makes it at least ten times smaller.
    """
    shapes = [_shape(v) for v in values]
    if any(sh is None for sh in shapes) or len({sh[1] for sh in shapes}) != 1:  # type: ignore[index]
        return False
    if "/s" in shapes[0][1]:  # type: ignore[index]  # a rate's Avg may be 0 beside a non-zero Max
        return False
    try:
        low, high, avg = (float(v.strip().rstrip("%").rstrip(shapes[0][1]) or "nan") for v in values)  # type: ignore[index]
    except ValueError:
        return False
    return low > 0 and avg < low / 5


def _shape(value: str) -> tuple[int, str] | None:
    """(digits after the point, unit suffix) of a number as a profiler printed it; None for other text."""
    m = _NUMBER_SHAPE.match(value.strip())
    if m is None or not any(ch.isdigit() for ch in value):
        return None
    return len(m.group(1) or ""), m.group(2)


# ---- locating the table --------------------------------------------------------

@dataclass(frozen=True)
class Table:
    """Where the CSV table sits in the text: header line and the end of the table."""

    header_line: int  # 0-based line number of the header
    start: int  # character offset of the header line
    end: int  # character offset just past the last table line

    def region(self, text: str) -> str:
        return text[self.start:self.end]


# A table ends at a blank line, a "==" profiler line, or a line with no comma
# ("Total CPU Page faults: 49"); nvprof's second table follows a blank line.
_TABLE_END = re.compile(r"\n(?=[ \t]*\n|[ \t]*$|==|[^,\n]*(?:\n|$))")


def table_at(text: str, start: int) -> Table:
    """The table whose header line starts at character ``start``.

    It ends at a blank line, a ``==`` line, a line without a comma, or where
    its own header line comes again: runs appended to one file after their
    banners were filtered out (``grep -v ==``) put the next run's header right
    under the last row, and that header starts the next table, not a row.
    """
    match = _TABLE_END.search(text, start)
    end = len(text) if match is None else match.start() + 1
    header_end = text.find("\n", start, end)
    if header_end > start:
        again = text.find(text[start:header_end + 1], header_end + 1, end)
        if again > 0 and text[again - 1] == "\n":
            end = again
    return Table(header_line=text.count("\n", 0, start), start=start, end=end)


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


def line_of(text: str, offset: int) -> int:
    """1-based line number of a character offset."""
    return text.count("\n", 0, offset) + 1


def preamble(text: str, start: int) -> str:
    """The text before the table (app stdout, ==PROF== lines)."""
    return text[:start]


def read_table(
    text: str, table: Table, path: Path, *, skip_units_row: bool = False, text_columns: list[str] | None = None
) -> tuple[pd.DataFrame, list[str] | None]:
    """Read the located table as strings (no type guessing), header from its first line.

    Rows shorter than the header (ncu's trailing-comma metric rows) are padded
    with missing values. Rows longer than the header, which happen when a
    hand-converted file leaves a kernel name with commas unquoted, are
    repaired by joining the surplus fields back into the name column. With
    ``skip_units_row`` the line after the header is returned separately.
    All columns are read as text unless ``text_columns`` names the only text
    columns; then pandas infers the others (the fast path for wide tables).
    """
    import csv

    try:
        return _read_table(text, table, path, skip_units_row=skip_units_row, text_columns=text_columns)
    except csv.Error as exc:  # the slow path's csv module refuses fields over 128 KiB
        raise InputError(f"the table cannot be read as CSV: {exc}", path=path, line=table.header_line + 1,
                         hint="a field this long is not profiler output; the file may be damaged") from None


def _read_table(
    text: str, table: Table, path: Path, *, skip_units_row: bool, text_columns: list[str] | None
) -> tuple[pd.DataFrame, list[str] | None]:
    units: list[str] | None = None
    skip: list[int] | None = None
    if skip_units_row:
        first_nl = text.find("\n", table.start, table.end)
        second_nl = text.find("\n", first_nl + 1, table.end) if first_nl >= 0 else -1
        if first_nl >= 0:
            units_line = text[first_nl + 1: second_nl if second_nl >= 0 else table.end]
            units = next(iter(_csv_rows(units_line)), [])
            skip = [1]
    import warnings

    try:
        with warnings.catch_warnings():
            # a first row longer than the header would silently lose fields: treat it as ragged
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                EncodedText(text, table.start, table.end),
                dtype=str if text_columns is None else {c: str for c in text_columns},
                keep_default_na=False, na_values=[""], index_col=False, skiprows=skip,
                skipinitialspace=False, engine="c", encoding="utf-8",
                # all text: read in row chunks (the tokens of the whole table are never held at once);
                # with inferred columns, in one piece so a column gets one dtype
                low_memory=text_columns is None,
            )
    except (pd.errors.ParserError, pd.errors.ParserWarning):
        frame = _read_ragged(table.region(text), skip_units=skip is not None)
    except pd.errors.EmptyDataError:
        raise InputError("the table has a header but no rows", path=path, line=table.header_line + 1) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame, units


class EncodedText(io.RawIOBase):
    """``text[start:end]`` as a binary stream of its UTF-8 bytes, encoded ``BLOCK`` characters at a time.

    What the C parser reads a located table from: an ``io.StringIO`` holds 4
    bytes per character while pandas reads it (a 150 MB ncu details table:
    600 MB), and the table encoded whole would be one more copy of it.
    """

    BLOCK = 1 << 20

    def __init__(self, text: str, start: int, end: int) -> None:
        super().__init__()
        self._text, self._position, self._end = text, start, end
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        while not len(self._pending) and self._position < self._end:
            stop = min(self._position + self.BLOCK, self._end)
            self._pending = memoryview(self._text[self._position:stop].encode("utf-8"))
            self._position = stop
        n = min(len(b), len(self._pending))
        b[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _csv_rows(text: str) -> list[list[str]]:
    import csv

    return list(csv.reader(io.StringIO(text)))


def _read_ragged(region: str, *, skip_units: bool = False) -> pd.DataFrame:
    """Slow path for malformed tables: repair rows with unquoted names that contain commas."""
    rows = _csv_rows(region)
    if skip_units and len(rows) > 1:
        del rows[1]
    header = [h.strip() for h in rows[0]]
    width = len(header)
    name_col = next((i for i, h in enumerate(header) if h in ("Name", "Kernel Name", "Kernel")), width - 1)
    fixed = []
    for row in rows[1:]:
        extra = len(row) - width
        if extra > 0:
            # the name is the field that was split: glue it back with the commas it lost
            row = row[:name_col] + [",".join(row[name_col:name_col + extra + 1])] + row[name_col + extra + 1:]
        elif extra < 0:
            row = row + [""] * (-extra)
        fixed.append(row)
    frame = pd.DataFrame(fixed, columns=header, dtype=object)
    return frame.replace({"": np.nan})


# ---- numbers -------------------------------------------------------------------

MISSING_TOKENS = ("n/a", "na", "nan", "-", "--", "none", "null", "")

_COMMA_GROUPED = r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_DOT_GROUPED = r"[-+]?\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?|[-+]?\d{1,3}(?:\.\d{3})+,\d+"
_SPACE_GROUPED = r"[-+]?\d{1,3}(?:[ \u00a0\u202f']\d{3})+(?:[.,]\d+)?"
_COMMA_DECIMAL = r"[-+]?\d+,\d+"


def parse_numbers(values: pd.Series) -> pd.Series:
    """Profiler number strings -> float64; missing and n/a -> NaN (never 0).

    Accepts thousands separators as ncu prints them in different locales:
    ``"12,532,580,352"`` and ``"795,373,665.48"`` (comma grouping),
    ``"1.234.567"`` and ``"1.234,5"`` (dot grouping; a single dot as in
    ``"1.234"`` stays a decimal point), ``"1 234"`` and a lone decimal comma
    ``"12,5"``. Plain numbers take the fast path; only the rest see a regex.
    """
    if values.dtype.kind in "fiub":
        return values.astype("float64")
    text = values.astype(object)
    grouped = _comma_grouped(text)
    if grouped is not None and grouped.any():
        # ncu's "1,869,633": the first rule below takes them (what it gives: the number without its commas);
        # told apart in C up front, they skip the plain parse, which fails on each of them one by one
        out = pd.Series(np.nan, index=text.index)
        out[~grouped] = pd.to_numeric(text[~grouped], errors="coerce").astype("float64")
        out[grouped] = pd.to_numeric(_without_commas(text[grouped]), errors="coerce").astype("float64")
    else:
        out = pd.to_numeric(text, errors="coerce").astype("float64")
    pending = out.isna() & text.notna()
    if not pending.any():
        return out
    # parse each distinct string once: profiler columns repeat the same few texts a lot
    codes, distinct = pd.factorize(text[pending].astype(str).str.strip())
    rest = pd.Series(distinct, dtype=object)
    fixed = pd.Series(np.nan, index=rest.index, dtype="float64")
    maybe = rest.str.match(r"[-+]?\d")  # only these can be numbers: words and tuples skip the rules
    rules = (
        (_COMMA_GROUPED, lambda s: s.str.replace(",", "", regex=False)),
        (_DOT_GROUPED, lambda s: s.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)),
        (_SPACE_GROUPED, lambda s: s.str.replace(r"[ \u00a0\u202f']", "", regex=True).str.replace(",", ".", regex=False)),
        (_COMMA_DECIMAL, lambda s: s.str.replace(",", ".", regex=False)),
    )
    for pattern, clean in rules:
        todo = maybe & fixed.isna()
        if not todo.any():
            break
        hit = todo & rest.str.fullmatch(pattern).fillna(False)
        if hit.any():
            fixed[hit] = pd.to_numeric(clean(rest[hit]), errors="coerce")
    out[pending] = fixed.to_numpy()[codes]
    return out


_ASCII_COMMA_GROUPED = r"^[-+]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?$"


def _comma_grouped(texts: pd.Series) -> np.ndarray | None:
    """Which values are texts ``_COMMA_GROUPED`` matches, in ASCII digits without blanks around them
    ("1,869,633", as ncu prints counts), told by pyarrow's regex engine over the whole column (Python's
    ``re`` takes a call per text); None without pyarrow or when a value is not text. A text it does not
    match still meets every rule in ``parse_numbers`` (its digits may be another script's)."""
    if not len(texts) or sys.modules.get("pyarrow") is None:  # pandas imports pyarrow where it is installed
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    try:
        array = pa.array(texts.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError):
        return None  # numbers among the texts: the plain parse takes them
    return pc.match_substring_regex(array, _ASCII_COMMA_GROUPED).fill_null(False).to_numpy(zero_copy_only=False)


def _without_commas(texts: pd.Series) -> pd.Series:
    """The texts with their commas removed (what the first rule's cleaning gives)."""
    return pd.Series([text.replace(",", "") for text in texts.tolist()], index=texts.index, dtype=object)


def unparsed(values: pd.Series, numbers: pd.Series) -> pd.Series:
    """Mask of values that are present, not an n/a token, and still not a number."""
    mask = pd.Series(False, index=values.index)
    candidates = numbers.isna() & values.notna()
    if candidates.any():
        text = values[candidates].astype(str).str.strip().str.lower()
        mask[candidates] = ~text.isin(MISSING_TOKENS).to_numpy()
    return mask


_VALUE_UNIT = re.compile(
    r"^\s*(?P<num>[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>[A-Za-z%/]+(?:/[A-Za-z]+)?)?\s*$"
)
_LEVEL = re.compile(r"^\s*[A-Za-z][A-Za-z ]*\((?P<num>[-+]?\d+(?:\.\d+)?)\)\s*$")


def split_value_unit(values: pd.Series) -> tuple[pd.Series, pd.Series]:
    """nvprof metric values with their unit in the text -> (number string, unit string).

    ``"126.024706GB/s"`` -> ("126.024706", "GB/s"); ``"100.000000%"`` ->
    ("100.000000", "%"); utilisation levels ``"Low (2)"`` -> ("2", "").
    Anything else -> (original text, "") so the caller can report it.
    """
    text = values.astype(object).fillna("").astype(str)
    parts = text.str.extract(_VALUE_UNIT)
    level = text.str.extract(_LEVEL)["num"]
    number = parts["num"].fillna(level).where(parts["num"].notna() | level.notna(), text)
    unit = parts["unit"].fillna("")
    return number, unit


_TUPLE3 = re.compile(r"^\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)\s*$")


def tuple_product(values: pd.Series) -> pd.Series:
    """``"(16, 8, 1)"`` -> 128.0; plain numbers pass through; anything else NaN."""
    text = values.astype(object).fillna("").astype(str)
    dims = text.str.extract(_TUPLE3).astype("float64")
    product = dims[0] * dims[1] * dims[2]
    return product.fillna(parse_numbers(values.where(~text.str.contains("(", regex=False))))


# ---- device names in surrounding text -----------------------------------------

_GPU_NAME = re.compile(
    r"^(?:[^\n:]*:\s*)?(?P<name>(?:NVIDIA\s+)?(?:Tesla|GeForce|Quadro|TITAN|Titan|RTX|NVIDIA)\s+[A-Za-z0-9][\w\-]*(?:[ \-][\w\-]+){0,3})\s*$",
    re.M,
)


def gpu_name_in(text: str) -> str | None:
    """A GPU name the application printed on a line of its own (e.g. "Name: Tesla V100-SXM2-16GB")."""
    for line in text.splitlines():
        if line.startswith("=="):
            continue
        match = _GPU_NAME.match(line.strip())
        if match:
            return match.group("name").strip()
    return None


# the look-behind starts a match only at the first blank of a run: without it a long run of
# blanks makes every position rescan the run to its end (quadratic time on a hostile field)
_DEVICE_INDEX = re.compile(r"(?<!\s)\s*\(\d+\)\s*$")


def same_text(n: int, text: str) -> np.ndarray:
    """An object array of ``n`` rows that all hold ``text``: one Python object, not one per row (``np.full``
    copies a string into every row: a 90-character path on 100k launches is 9 MB of copies)."""
    out = np.empty(n, dtype=object)
    out.fill(text)
    return out


def strip_device_index(values: pd.Series) -> pd.Series:
    """nvprof's ``"GeForce GTX 1080 Ti (0)"`` -> ``"GeForce GTX 1080 Ti"`` (a missing name: NaN)."""
    # a trace repeats one or two device names (a few objects): one regex each, rows told apart by object
    codes, distinct = factorize_text(values.astype(object))
    stripped = pd.Series(distinct, dtype=object).astype(str).str.replace(_DEVICE_INDEX, "", regex=True).to_numpy()
    return pd.Series(np.append(stripped, np.nan)[codes], index=values.index, dtype=object)  # code -1: missing
