"""``nvperf-bridge analyze``: import profiles, run the models, write the report.

Only the report goes to stdout; progress (on a terminal, for runs longer than
half a second) and warnings (one line each, ``nvperf-bridge: warning: ...``)
go to stderr. Exit code 1 when a model named with ``--model`` failed as a
whole (the report is still written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer


def analyze_command(
    files: List[Path] = typer.Argument(..., help="Profiler outputs (ncu or nvprof CSV, any extension), or folders "
                                            "to search (files that are not profiler output are skipped and listed).",
                                       show_default=False),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU profile id or YAML file (default: from the device name)."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m",
                                              help="Run only this model (repeatable; default: all installed)."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f",
                                      help="md, json, csv, xlsx or parquet (default: from the -o suffix, else md)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the report here (default or '-': stdout; xlsx needs a "
                                               "file). A device or FIFO is written to directly, never replaced."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file; for a symbolic link, "
                                                      "the file it points to (the link is kept)."),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", help="Also load models from this .py file."),
    model_data: Optional[List[str]] = typer.Option(None, "--model-data", metavar="MODEL=FILE.json",
                                                   help="JSON a model needs, e.g. kerr=kerr.json (from 'fit'), or kerr=gtx-1080-ti "
                                                        "(the fit that ships for that GPU)."),
    option: Optional[List[str]] = typer.Option(None, "--option", metavar="MODEL.KEY=VALUE",
                                               help="A model option, e.g. transit.precision=dp (JSON values)."),
    constant: Optional[List[str]] = typer.Option(None, "--constant", metavar="MODEL.NAME=VALUE",
                                                 help="Override a machine constant for this run, e.g. "
                                                      "hong-kim.Mem_LD=420 (reports show it as overridden)."),
    profile_dir: Optional[List[Path]] = typer.Option(None, "--profile-dir",
                                                     help="Also look for GPU profiles (YAML) in this folder."),
    model_timeout: Optional[float] = typer.Option(None, "--model-timeout", metavar="SECONDS", min=0.001,
                                                  help="Give up on a model that takes longer than this (it is "
                                                       "reported in the warnings; the others still run). An isolated "
                                                       "plugin past it is killed."),
    no_isolation: bool = typer.Option(False, "--no-isolation",
                                      help="Run plugins that are not built in inside this process (faster; only for "
                                           "trusted plugins): by default each runs in a worker process, so a crash, "
                                           "exit or hang costs only its results."),
    keep_raw: bool = typer.Option(False, "--keep-raw",
                                  help="Keep every column of an ncu raw page (default: parse only the columns "
                                       "the models and reports use)."),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="No progress bar and no warnings on stderr (warnings stay in the report)."),
) -> None:
    """Run the analytical models on every kernel and write a Markdown, JSON, CSV or Excel report."""
    from nvperf_bridge import collector
    from nvperf_bridge.blas_threads import one_thread_from_load
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.reports.progress import Progress
    from nvperf_bridge.reports.render import format_for, report_outputs
    from nvperf_bridge.reports.write import check_writable, write_outputs
    from nvperf_bridge.text_storage import python_text

    collector.imports_begin()  # numpy, pandas and the plugins come next (build_analysis ends the pause)
    one_thread_from_load()  # before numpy loads: the models' products are too narrow to split (blas_threads)
    if output is not None and str(output) == "-":
        output = None  # '-' is stdout
    report_format = format_for(fmt, output)
    if report_format == "xlsx" and output is None:
        raise UsageError("an Excel report needs a file", hint="pass -o review.xlsx")
    if report_format == "parquet":
        from nvperf_bridge.reports.parquet_report import check_available

        check_available()  # pyarrow is optional: say so before any work
        if output is None:
            raise UsageError("a Parquet report needs a file", hint="pass -o kernels.parquet")
    if output is not None:
        check_writable(output, force=force)  # fail before the work, not after it
    progress = Progress(5, enabled=not quiet)
    # a report's figures are drawn by a second process: a small report's by one that imports matplotlib
    # meanwhile and draws beside the rest, a large report's by one started once they are needed (below)
    figures = report_format == "xlsx" or (report_format == "md" and output is not None)
    worker = start_figure_worker(files) if figures else None  # first: its imports run beside pandas'
    try:
        with python_text():  # Python-backed pandas text, as without pyarrow (text_storage: cli leaves it
            # to this command, so that the figure worker above starts before pandas is imported)
            analysis = build_analysis(files, gpu=gpu, model_ids=list(model or []), plugin_files=list(plugin or []),
                                      model_data=list(model_data or []), option=list(option or []),
                                      profile_dirs=list(profile_dir or []), progress=progress,
                                      timeout_s=model_timeout, isolate=not no_isolation, keep_raw=keep_raw,
                                      constant=list(constant or []))
            outputs = report_outputs(analysis, report_format, output, progress.step, figure_worker=worker,
                                     figures_apart=figures and worker is None)
            progress.step("writing")
            if output is None:
                data = outputs[None]
                for chunk in [data] if isinstance(data, bytes) else data:  # JSON comes in chunks
                    typer.echo(chunk.decode("utf-8"), nl=False)
            else:
                write_outputs({path: data for path, data in outputs.items() if path is not None}, force=force)
    finally:
        if worker is not None:
            worker.close()
        progress.done()
    if not quiet:
        print_warnings(analysis.warnings)
    fail_on_named_models(analysis, list(model or []))


def start_figure_worker(files: list[Path]) -> Any:
    """A started ``figure_worker.FigureWorker`` when the inputs are small files (together at most
    ``discovery.IN_PROCESS_BYTES``), else None.

    On a small report the worker's matplotlib import and drawing run beside this process's import of
    pandas, its reading and models (about 0.35 s of a 1.5 s Markdown report on an idle 2-core machine,
    benchmarks/run.py --only small). On a large input (or a folder) the worker's own memory (matplotlib
    and numpy again, about 70 MB) would come on top of the models' peak: its figures are drawn by a
    worker started after the models and ended before the report is written (``report_outputs``'s
    ``figures_apart``)."""
    from nvperf_bridge.discovery import IN_PROCESS_BYTES
    from nvperf_bridge.reports.figure_worker import FigureWorker

    total = 0
    for path in files:
        try:
            if not path.is_file():
                return None  # a folder (or something not yet there): its size is not known up front
            total += path.stat().st_size
        except OSError:
            return None
    return FigureWorker.start() if total <= IN_PROCESS_BYTES else None


def build_analysis(
    files: list[Path],
    *,
    gpu: str | None,
    model_ids: list[str],
    plugin_files: list[Path],
    model_data: list[str],
    option: list[str],
    profile_dirs: list[Path],
    progress: Any = None,
    timeout_s: float | None = None,
    isolate: bool = True,
    keep_raw: bool = True,
    constant: list[str] | None = None,
) -> Any:
    """Import ``files`` and run the models: the part ``analyze`` and ``plot`` share (``timeout_s``: per model;
    ``keep_raw`` False parses only the ncu raw columns in use: the alias table's, those the models name and
    those the review reads; ``constant``: MODEL.NAME=VALUE overrides for this run)."""
    from nvperf_bridge import collector
    from nvperf_bridge.analysis import analyze
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.registry import load_registry
    from nvperf_bridge.review.advice import REVIEW_COLUMNS
    from nvperf_bridge.run_options import parse_constants

    step = progress.step if progress is not None else (lambda _label: None)
    options = parse_options(option)
    constants = parse_constants(list(constant or []))
    for model_id, data in read_model_data(model_data).items():
        options.setdefault(model_id, {})["model_data"] = data
    step(f"reading {len(files)} input{'s' if len(files) != 1 else ''}")
    # folders are searched; several files are parsed in parallel (discovery.py)
    note = getattr(progress, "note", None)
    registry = load_registry(plugin_files)
    collector.imports_done()  # pandas, numpy and the plugins are in: the cycle collector need not walk them
    raw_columns = None if keep_raw else frozenset(
        name for entry in registry.models.values()
        for name in (*entry.model.requires.required, *entry.model.requires.optional)) | REVIEW_COLUMNS
    imported = read_inputs(list(files), on_file=None if note is None else
                           (lambda done, total, path: note(f"read {done}/{total} files ({path.name})")),
                           raw_columns=raw_columns)
    check_named_models_loaded(registry, model_ids)
    check_model_ids(registry, model_ids)
    check_option_models(options, registry, model_ids)
    count = len(model_ids) if model_ids else len(registry.models)
    step(f"running {count} model{'s' if count != 1 else ''} on {len(imported.kernels):,} kernels")
    return analyze(imported, gpu=gpu, model_ids=model_ids or None, options=options, registry=registry,
                   profile_dirs=profile_dirs, timeout_s=timeout_s, isolate=isolate, constants=constants)


def parse_options(items: list[str]) -> dict[str, dict[str, Any]]:
    """``MODEL.KEY=VALUE`` pairs into {model: {key: value}}; values are JSON when they parse, else text."""
    import json

    from nvperf_bridge.run_options import split_assignment

    options: dict[str, dict[str, Any]] = {}
    for item in items:
        model_id, key, text = split_assignment(item, "--option", "MODEL.KEY=VALUE", "transit.precision=dp")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        options.setdefault(model_id, {})[key] = value
    return options


def read_model_data(items: list[str]) -> dict[str, Any]:
    """``MODEL=FILE.json`` pairs: read each JSON file (the CLI reads files; models never do). Where no such
    file exists, ``MODEL=GPU`` names the model's shipped fit for GPU profile ``GPU`` (``shipped_model_data``)."""
    import json

    from nvperf_bridge.errors import InputError, UsageError
    from nvperf_bridge.shipped_model_data import shipped_model_data

    data: dict[str, Any] = {}
    for item in items:
        model_id, sep, path_text = item.partition("=")
        if not sep or not model_id.strip() or not path_text.strip():
            raise UsageError(f"--model-data {item!r} is not MODEL=FILE.json", hint="e.g. --model-data kerr=kerr.json")
        path = Path(path_text.strip())
        if not path.exists():  # a shipped fit named by its GPU profile's id (kerr=gtx-1080-ti)
            path = shipped_model_data(model_id.strip(), path_text.strip()) or path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise InputError(f"cannot read model data: {reason}", path=path,
                             hint=f"give the JSON 'nvperf-bridge fit {model_id.strip()}' wrote, or a GPU profile id "
                                  "whose fit ships (kerr=gtx-1080-ti)") from None
        try:
            data[model_id.strip()] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno,
                             hint=f"--model-data {model_id.strip()}=FILE expects the JSON that "
                                  f"'nvperf-bridge fit {model_id.strip()}' writes") from None
    return data


def check_named_models_loaded(registry: Any, model_ids: list[str]) -> None:
    """A model named with --model that is missing because a plugin failed to load is that
    model's failure (exit 1, naming the plugin problem), not a typo (exit 2)."""
    from nvperf_bridge.errors import ModelError

    missing = [mid for mid in model_ids if mid not in registry.models]
    if missing and registry.problems:
        # A plugin that failed to load registered nothing, so we cannot tell whether the id
        # is that plugin's model or a typo: say both, with the ids that are installed.
        installed = ", ".join(sorted(registry.models)) or "none"
        raise ModelError(f"model {missing[0]!r} named with --model is not installed (installed: {installed}), "
                         f"and {len(registry.problems)} plugin(s) failed to load: "
                         f"{' '.join(' '.join(str(p).split()) for p in registry.problems)}",
                         hint="check the id, or fix or remove the failing plugin")


def check_model_ids(registry: Any, model_ids: list[str]) -> None:
    """A --model id that is not installed (no plugin failed) is a usage error with a did-you-mean."""
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.run_options import did_you_mean

    for model_id in model_ids:
        if model_id not in registry.models:
            raise UsageError(f"unknown model {model_id!r}{did_you_mean(model_id, set(registry.models))}",
                             hint=f"installed: {', '.join(sorted(registry.models))}")


def check_option_models(options: dict[str, dict[str, Any]], registry: Any, model_ids: list[str]) -> None:
    """An option or model data for a model that is not installed is a usage error, not a silent no-op."""
    from nvperf_bridge.errors import UsageError
    from nvperf_bridge.run_options import did_you_mean

    for model_id in options:
        if model_id not in registry.models:
            raise UsageError(f"--option / --model-data name model {model_id!r}, which is not installed"
                             f"{did_you_mean(model_id, set(registry.models))}",
                             hint="run 'nvperf-bridge models' to list the installed ones")


def print_warnings(warnings: list[str]) -> None:
    """Each warning as one line on stderr."""
    for warning in warnings:
        typer.echo(f"nvperf-bridge: warning: {' '.join(str(warning).split())}", err=True)


def fail_on_named_models(analysis: Any, named: list[str]) -> None:
    """Exit code 1 (after the report is written) when a model the user asked for by name failed as a whole."""
    from nvperf_bridge.errors import ModelError

    failed = [(mid, analysis.runs[mid].failure) for mid in dict.fromkeys(named)
              if mid in analysis.runs and analysis.runs[mid].result is None]
    if failed:
        # a ModelError's text already starts "model <id>: "; don't say the id twice
        listed = "; ".join(f"{mid}: {reason.removeprefix(f'model {mid}: ')}" for mid, reason in failed)
        raise ModelError(f"model{'s' if len(failed) > 1 else ''} named with --model failed: {listed}")
