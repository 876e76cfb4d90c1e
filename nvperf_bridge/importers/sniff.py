"""Content sniffing: which layout a file holds, and where its table starts.

Never by extension: real ncu CSV sits in ``.log`` files, files without an
extension and files named after a metric. A table is recognised by its
header line; each layout has a signature of header fields (below, as data).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

# format -> header fields that must all be present, fields that must be absent
SIGNATURES: tuple[tuple[str, frozenset[str], frozenset[str]], ...] = (
    ("ncu-details", frozenset({"ID", "Kernel Name", "Metric Name", "Metric Value"}), frozenset()),
    ("ncu-raw", frozenset({"ID", "Kernel Name"}), frozenset({"Metric Name"})),
    ("nvprof-metrics", frozenset({"Device", "Kernel", "Invocations", "Metric Name", "Avg"}), frozenset()),
    ("nvprof-metrics", frozenset({"Device", "Kernel", "Invocations", "Event Name", "Avg"}), frozenset()),
    ("nvprof-trace", frozenset({"Start", "Duration", "Name"}), frozenset()),
    # nvprof --print-gpu-trace with --metrics/--events: one row per launch, a column per counter
    ("nvprof-launch-counters", frozenset({"Device", "Context", "Stream", "Kernel"}),
     frozenset({"Invocations", "Metric Name", "Event Name", "Start", "Duration"})),
    ("nvprof-summary", frozenset({"Time(%)", "Time", "Calls", "Avg", "Name"}), frozenset()),
    # the Visual Profiler's "export details in CSV format" (GPU details): units in the column names
    ("nvvp-trace", frozenset({"Name", "Start Time(ns)", "Duration(ns)"}), frozenset()),
)

# candidate header lines: a first field (quoted, or not in hand-converted files) that a signature starts with
_HEADER_START = re.compile(r'^(?:"?(?:ID|Device|Start|Type|Time\(%\))"?,|(?=[^\n]*"?Duration\(ns\)"?(?:,|$)))', re.M)


# bounds on what a header may hold: ncu's raw page with every metric has a few thousand columns
MAX_COLUMNS = 20_000
MAX_HEADER_CHARS = 4 << 20


class HeaderTooWide(Exception):
    """A header line past MAX_COLUMNS / MAX_HEADER_CHARS: not profiler output, refused before any parsing."""

    def __init__(self, offset: int, columns: int, chars: int) -> None:
        super().__init__(f"{columns} columns, {chars} characters")
        self.offset, self.columns, self.chars = offset, columns, chars


@dataclass(frozen=True)
class Sniffed:
    format: str
    start: int  # character offset of the header line (0 for YAML)
    # further tables of the same layout that one importer reads together with this one
    # (nvprof's Event table and Metric table of one run), as header offsets
    more: tuple[int, ...] = ()


def sniff_text(text: str) -> Sniffed | None:
    """The layout of ``text`` and where its (first) table starts, or None when no known table is found."""
    found = _first_table(text, 0)
    if found is not None:
        return found
    from nvperf_bridge.importers import kernel_yaml

    if kernel_yaml.looks_like(text):
        return Sniffed(kernel_yaml.FORMAT, 0)
    return None


def sniff_tables(text: str) -> list[Sniffed]:
    """Every table the text holds, in order: one entry per known table header (kernel-yaml: one for the file).

    nvprof writes several tables into one file (an Event table then a Metric
    table; a GPU summary then API calls or Unified Memory). Each table ends
    where ``text.table_at`` says (a blank line, a ``==`` banner, a line
    without a comma); the search for the next header goes on from there, so
    no table after the first is lost.
    """
    from nvperf_bridge.importers.text import table_at

    out: list[Sniffed] = []
    pos = 0
    while True:
        found = _first_table(text, pos)
        if found is None:
            break
        out.append(found)
        pos = table_at(text, found.start).end
        if pos <= found.start:  # never loop on a table that ends where it starts
            pos = found.start + 1
    if not out:
        yaml = sniff_text(text)
        return [yaml] if yaml is not None else []
    return out


def _first_table(text: str, pos: int) -> Sniffed | None:
    """The first known table header at or after character ``pos``."""
    for match in _HEADER_START.finditer(text, pos):
        line_end = text.find("\n", match.start())
        line = text[match.start(): line_end if line_end >= 0 else len(text)]
        commas = line.count(",")
        if commas >= MAX_COLUMNS or len(line) > MAX_HEADER_CHARS:
            raise HeaderTooWide(match.start(), commas + 1, len(line))
        try:
            fields = {f.strip() for f in next(csv.reader(io.StringIO(line)), [])}
        except csv.Error:  # e.g. a field over the csv module's 128 KiB limit: not a header
            continue
        for name, required, forbidden in SIGNATURES:
            if required <= fields and not (forbidden & fields):
                return Sniffed(name, match.start())
    return None
