"""From an Analysis to the bytes of every output file of one report.

``report_outputs`` is the one place that knows which renderer a format uses
and which companion files it has (the Markdown report's PNG figures, named
after the report and linked relatively). The CLI writes the result with
``write.write_outputs`` (atomically) or prints it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from nvperf_bridge.free_memory import release_free_memory

if TYPE_CHECKING:  # pragma: no cover
    from nvperf_bridge.analysis import Analysis
    from nvperf_bridge.reports.figure_worker import FigureWorker

FORMATS: tuple[str, ...] = ("md", "json", "csv", "xlsx", "parquet")
SUFFIXES: dict[str, str] = {".md": "md", ".markdown": "md", ".json": "json", ".csv": "csv", ".xlsx": "xlsx",
                             ".parquet": "parquet"}
# binary formats: written to a file only (-o), never to stdout
FILE_ONLY: tuple[str, ...] = ("xlsx", "parquet")


def format_for(fmt: str | None, output: Path | None) -> str:
    """The report format: ``--format`` if given, else from the ``-o`` suffix, else Markdown."""
    from nvperf_bridge.errors import UsageError

    if fmt:
        wanted = fmt.lower().lstrip(".")
        wanted = {"markdown": "md", "excel": "xlsx"}.get(wanted, wanted)
        if wanted not in FORMATS:
            raise UsageError(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
        implied = SUFFIXES.get(output.suffix.lower()) if output is not None else None
        if implied is not None and implied != wanted:
            # '-o r.json --format csv' would write CSV into a .json file: say so instead
            raise UsageError(f"--format {fmt} contradicts the output name {output.name!r} ({implied})",
                             hint=f"name the file .{wanted} or drop --format")
        return wanted
    if output is None:
        return "md"
    suffix = output.suffix.lower()
    if suffix not in SUFFIXES:
        raise UsageError(f"cannot tell the report format from {output.name!r}",
                         hint=f"name it .md, .json, .csv, .xlsx or .parquet, or pass --format {'|'.join(FORMATS)}")
    return SUFFIXES[suffix]


def figure_path(output: Path, key: str) -> Path:
    """Where a Markdown report's figure goes: beside it, named after it (review-transit.png)."""
    return output.with_name(f"{output.stem}-{key}.png")


def report_outputs(analysis: Analysis, fmt: str, output: Path | None,
                   progress: Callable[[str], None] | None = None,
                   figure_worker: "FigureWorker | None" = None,
                   figures_apart: bool = False) -> dict[Path | None, bytes | Iterable[bytes]]:
    """Every file of the report as bytes, or an iterator of byte chunks for a report written as it is made
    (JSON); the key None means stdout (Markdown, JSON, CSV only).

    Where a Markdown file's or a workbook's figures are drawn (the same PNGs each way):
    ``figure_worker``, a ``figure_worker.FigureWorker`` started with the command, draws them while this
    process writes the rest (a small report: the worker imported matplotlib meanwhile); else with
    ``figures_apart`` a worker started now draws them and ends before the rest of the report is made (a
    large report: matplotlib never loads here, and the worker's memory is gone before the report's own
    peak); else they are drawn here."""
    step = progress or (lambda _label: None)
    release_free_memory()  # the models' temporaries: the report's own memory then starts from what is held
    if fmt == "json":
        from nvperf_bridge.reports.json_report import iter_json

        return {output: iter_json(analysis)}  # chunks, written as they are made (never the whole text)
    if fmt == "parquet":
        from nvperf_bridge.reports.parquet_report import iter_parquet

        return {output: iter_parquet(analysis)}  # a row group at a time
    if fmt == "csv":
        from nvperf_bridge.reports.csv_report import iter_csv

        return {output: iter_csv(analysis)}  # chunks of kernels, written as they are made
    from nvperf_bridge.reports.figures import start_figures

    if fmt == "xlsx":
        from nvperf_bridge.reports.excel import iter_workbook

        if figure_worker is None:
            step("drawing figures")
            drawn = _figures_here_or_apart(analysis, figures_apart)
            release_free_memory()
            step("writing the workbook")
            return {output: iter_workbook(analysis, drawn)}  # chunks of the zip, filled in a temporary file
        step("writing the workbook (the figures drawn beside it)")
        # the worker draws while the sheets are made; the workbook takes the PNGs just before it is saved
        return {output: iter_workbook(analysis, start_figures(analysis, figure_worker))}
    from nvperf_bridge.reports.markdown import join_markdown, markdown_parts, render_markdown

    if output is None:  # stdout: no files to link figures from
        return {None: render_markdown(analysis).encode("utf-8")}
    if figures_apart and figure_worker is None:
        step("drawing figures")
        figures = _figures_here_or_apart(analysis, True)  # the worker ends before the text's temporaries come
        release_free_memory()
        parts = markdown_parts(analysis)
    else:
        pending = start_figures(analysis, figure_worker) if figure_worker is not None else None
        parts = markdown_parts(analysis)  # the text first: its temporaries are freed before the figures are drawn
        release_free_memory()
        step("drawing figures")
        figures = (pending or start_figures(analysis)).result()
    files: dict[Path | None, bytes] = {}
    links = {}
    for figure in figures:
        path = figure_path(output, figure.key)
        files[path] = figure.png
        links[figure.caption] = path.name
    files = {output: join_markdown(parts, links).encode("utf-8"), **files}
    return files


def _figures_here_or_apart(analysis: Analysis, apart: bool) -> list[Any]:
    """The report's figures drawn in this process, or (``apart``) by a figure worker started now and
    ended once they are back (drawn here when it cannot start or draw)."""
    from nvperf_bridge.reports.figures import PendingFigures, figure_orders, start_figures

    if not apart:
        return start_figures(analysis).result()
    from nvperf_bridge.reports.figure_worker import FigureWorker

    orders = figure_orders(analysis)
    release_free_memory()  # the figures' data is made: its temporaries go before the worker's memory comes
    worker = FigureWorker.start()
    try:
        return PendingFigures(orders, worker).result()
    finally:
        if worker is not None:
            worker.close()


__all__ = ["FILE_ONLY", "FORMATS", "figure_path", "format_for", "release_free_memory", "report_outputs"]
