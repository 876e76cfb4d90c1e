"""pyarrow's streaming reader over an nvprof GPU trace: what it reads (``TracePlan``, made from the file's
head) and the reader itself (``TraceBatches``).

Light on purpose (no pandas, no numpy; pyarrow is imported when a reader opens): ``early_read`` opens this
reader before the command has imported pandas, from the plan the importer (``nvprof_trace._arrow_table``)
makes again when it gets there. Equal plans open the same reader on the same bytes, so the batches are the
same whoever opened it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nvperf_bridge.importers.arrow_csv import FileRegion, ReadAhead, csv_reader, memory_pool
from nvperf_bridge.importers.head import Head, streamed_header

# the columns read as text (the others as numbers): what ``read_streamed_table`` is given as ``dtype=str``
TEXT_COLUMNS = ("Name", "Device", "Context", "Stream", "SrcMemType", "DstMemType", "Type", "Unified Memory",
                "Virtual Address", "Correlation_ID")
ARROW_BLOCK = 1 << 22  # bytes per block of pyarrow's streaming reader: one block's names are held at a time
# blocks pyarrow may parse ahead of the one being taken apart (``ReadAhead``): 4 MiB each
READ_AHEAD = 2
# blocks the file may be read ahead of the batches taken (``arrow_csv.FileRegion``): pyarrow's reader would
# hold up to 32 (1M-launch trace, pyarrow's read alone: peak RSS 205 -> 82 MB over the interpreter's)
READ_BLOCKS_AHEAD = 8
PARSE_THREAD = "nvprof-trace-parse"


@dataclass(frozen=True)
class TracePlan:
    """What the trace's reader reads: the file (as it was when planned), where the table's header line
    starts (bytes), the column names and whether a units row follows the header."""

    path: str
    size: int
    mtime_ns: int
    start: int
    names: tuple[str, ...]
    has_units: bool


def plan_for(path: Path, head: Head, start: int, has_units: bool) -> TracePlan | None:
    """The plan for the trace table whose header is at character ``start`` of ``head.text``, or None where
    the streamed read cannot take it (the header not within the head, a name twice, no Name column)."""
    table = streamed_header(head, start, lambda *_: has_units)
    if table is None or "Name" not in table.names:
        return None
    stat = path.stat()
    return TracePlan(str(path.resolve()), stat.st_size, stat.st_mtime_ns, table.start, tuple(table.names),
                     has_units)


class TraceBatches:
    """The plan's table as pyarrow record batches, parsed a block ahead of the consumer by ``ReadAhead``
    (at most ``depth`` batches; ``limit`` changes that), numbers as float64 and ``TEXT_COLUMNS`` as text,
    empty fields missing. The file's blocks are looked at for carriage returns and NUL bytes as they are read
    (``FileRegion``: ``NotPlain``). Raises what the reader raises on opening; a context manager that closes
    the reader and its thread."""

    def __init__(self, plan: TracePlan, depth: int) -> None:
        modules = csv_reader()
        if modules is None:
            raise ImportError("pyarrow cannot be imported")
        pa, pa_csv = modules
        names = list(plan.names)
        types = {name: pa.string() if name in TEXT_COLUMNS else pa.float64() for name in names}
        self._source = FileRegion(Path(plan.path), plan.start, plan.size, ahead=READ_BLOCKS_AHEAD)
        try:
            reader = pa_csv.open_csv(
                self._source,
                read_options=pa_csv.ReadOptions(skip_rows=2 if plan.has_units else 1, column_names=names,
                                                block_size=ARROW_BLOCK),
                parse_options=pa_csv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False),
                convert_options=pa_csv.ConvertOptions(column_types=types, null_values=[""],
                                                      strings_can_be_null=True, quoted_strings_can_be_null=True,
                                                      check_utf8=True),
                memory_pool=memory_pool(),
            )
        except BaseException:
            self._source.close()
            raise
        self._batches = ReadAhead(reader, depth, self._source, name=PARSE_THREAD)

    def __iter__(self) -> ReadAhead:
        return self._batches

    def limit(self, depth: int) -> None:
        """At most ``depth`` batches parsed ahead from now on."""
        self._batches.limit(depth)

    def close(self) -> None:
        self._batches.close()
        self._source.close()

    def __enter__(self) -> "TraceBatches":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
