"""Many profiles at once: find them in folders, read them in parallel, list them in the report.

``nvperf-bridge analyze DIR`` (or several files, or both) goes through
``read_inputs``:

1. **Discover.** Folders are walked recursively (sorted, hidden entries
   skipped). Every file found in a folder is sniffed by content, like any
   input; files that hold no profiler table (READMEs, scripts, images,
   ``.ncu-rep`` reports, error-only ncu logs) are *not* errors there: they
   are skipped and listed, with the reason, in the report's Profiles table
   and in the warnings. A file named explicitly on the command line must be
   readable: it still fails with its own error, as before.
2. **Read in parallel.** Each profiler file is parsed by its importer on its
   own (``importers.read_parts``: every table of it), in a pool of worker processes when there
   is more than one file and more than one CPU; the parsed tables come back
   to the parent process.
3. **Combine as one run.** The parsed files are combined exactly as
   ``read_profiles`` combines them (``importers.merge.combine``): nvprof
   metrics join their trace on the kernel name wherever the two files sit
   (magus keeps ``metrics/`` and ``traces/`` side by side), one-metric-per-
   file ncu outputs join on launch ID and kernel name, and everything else
   is concatenated, with clashing launch IDs prefixed by the file name.
   Parsing is the expensive, independent part; combining needs every file,
   so only parsing runs in parallel, and the parallel result is the serial
   one by construction.

The report then has one row per file found (``profile_rows``): path,
format, kernels, device and status.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

# folders that never hold profiler output (checked against the folder name)
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".ipynb_checkpoints"})
SNIFF_BYTES = 1 << 20  # enough to find the header after the application's own output
NOT_PROFILER = "not profiler output"


@dataclass(frozen=True)
class Candidate:
    """One file to consider: where it is, and whether it was named explicitly (then it must import)."""

    path: Path
    explicit: bool


@dataclass(frozen=True)
class Rejected:
    """A file found in a folder that is not profiler output, and why."""

    path: Path
    reason: str


def expand(paths: Iterable[str | Path]) -> list[Candidate]:
    """Files named on the command line, and every file below the folders named, in a stable order."""
    out: list[Candidate] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    found = Path(root) / name
                    if found.resolve() not in seen:
                        seen.add(found.resolve())
                        out.append(Candidate(found, explicit=False))
        else:
            key = path.resolve() if path.exists() else path
            if key not in seen:
                seen.add(key)
                out.append(Candidate(path, explicit=True))
    return out


def classify(candidate: Candidate) -> str | None:
    """Why a file found in a folder is not profiler output, or None when it holds a table we read.

    Only the first MiB is sniffed (the header sits near the top, after at
    most the application's own output). Explicitly named files are never
    rejected here: their importer reports what is wrong with them.
    """
    if candidate.explicit:
        return None
    from nvperf_bridge.errors import InputError
    from nvperf_bridge.importers.sniff import HeaderTooWide, sniff_text
    from nvperf_bridge.importers.text import _reject_binary, decode

    try:
        with open(candidate.path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if not head.strip():
        return "empty file"
    if not head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 text (PowerShell) is full of NUL bytes
        try:
            _reject_binary(candidate.path, head)
        except InputError as exc:
            return exc.message
    text = decode(head)[0].replace("\r\n", "\n")
    try:
        found = sniff_text(text)
    except HeaderTooWide:
        return None  # read it: the importer's error says what is wrong with the header
    if found is None:
        if "==ERROR==" in text or "==PROF==" in text:
            return "profiler messages but no table (the profiled run failed?)"
        return "no profiler table (not ncu or nvprof CSV)"
    return None


def _read_one(path: str, raw_columns: frozenset[str] | None = None, text_storage: str | None = None) -> Any:
    """Worker: parse every table of one file with its importer (runs in a child process); a list of Parsed.
    ``text_storage``: the parent's pandas text storage (``text_storage.current``), so the frame is the
    one the parent would read itself."""
    from nvperf_bridge import text_storage as storage
    from nvperf_bridge.importers import read_parts

    storage.follow(text_storage)
    return read_parts(Path(path), raw_columns=raw_columns)


# Below this total input size files are read in this process: starting a worker (a fresh interpreter that
# imports pandas, ~0.3 s on a 2-core machine) costs more than parsing a few MB (measured: the magus rodinia
# lud metrics + trace pair, analyze --format json 0.83 s with two workers, see benchmarks/run.py --only small).
IN_PROCESS_BYTES = 16 * 1024 * 1024
# Above it, files are parsed in parallel only where no one file holds more than this share of the bytes: each
# worker imports pandas and hands its frames back pickled, which only pays where the parsing is shared out.
# Measured on the 1M-launch nvprof pair of benchmarks/run.py (a 410 MB trace beside 1.3 MB of metrics),
# analyze --format json, the whole process tree, load 8: two workers 14.4 CPU s and 1828 MiB peak, this
# process alone 11.2 CPU s and 1724 MiB, the same report.
PARALLEL_LARGEST_SHARE = 0.5


def _sizes(paths: list[Path]) -> list[int]:
    sizes = []
    for path in paths:
        try:
            sizes.append(path.stat().st_size)
        except OSError:  # the importer names the file and the reason when it reads it
            sizes.append(0)
    return sizes


def parallel_pays(paths: list[Path]) -> bool:
    """Whether ``paths`` are worth a pool of worker processes: at least ``IN_PROCESS_BYTES`` in all, and no
    one file more than ``PARALLEL_LARGEST_SHARE`` of them (else the pool's work is one file's anyway)."""
    sizes = _sizes(paths)
    total = sum(sizes)
    return total >= IN_PROCESS_BYTES and max(sizes, default=0) <= PARALLEL_LARGEST_SHARE * total


def workers_for(count: int, jobs: int | None = None) -> int:
    """Processes to use: ``jobs`` if given, else one per CPU, never more than the files."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(count, jobs if jobs else cpus))


def read_inputs(
    paths: Iterable[str | Path],
    *,
    jobs: int | None = None,
    on_file: Callable[[int, int, Path], None] | None = None,
    raw_columns: frozenset[str] | None = None,
) -> Any:
    """Discover, read (in parallel when there are several files) and combine; an ``ImportResult``.

    ``jobs`` limits the worker processes (1 = read in this process).
    ``on_file(done, total, path)`` is called as each file finishes (for a
    progress bar). Files found in folders that are not profiler output are
    added to the result's ``inputs`` with format ``"not profiler output"``
    and their reason in ``notes``, and to its ``warnings``. ``raw_columns``:
    see ``importers.read_file`` (None: every column of an ncu raw page).
    """
    from nvperf_bridge.errors import InputError
    from nvperf_bridge.free_memory import release_free_memory
    from nvperf_bridge.importers.merge import combine
    from nvperf_bridge.kernelframe import InputFile

    given = list(paths)
    if not given:
        raise InputError("no input files given", hint="pass profiler CSV files or a folder that holds them")
    candidates = expand(given)
    readable: list[Path] = []
    rejected: list[Rejected] = []
    for candidate in candidates:
        reason = classify(candidate)
        if reason is None:
            readable.append(candidate.path)
        else:
            rejected.append(Rejected(candidate.path, reason))
    if not readable:
        folders = ", ".join(str(p) for p in given)
        raise InputError(f"no profiler output found in {folders}" + (f" ({len(rejected)} other files skipped)"
                                                                      if rejected else ""),
                         hint="ncu --csv --page raw ... > out.csv, or nvprof --csv --print-gpu-trace ...")
    workers = workers_for(len(readable), jobs)
    if jobs is None and not parallel_pays(readable):
        workers = 1  # small files, or one file most of the bytes: a worker costs more than it shares out
    parsed = _parse_all(readable, workers, on_file, raw_columns)
    result = combine(parsed)
    del parsed
    release_free_memory()  # the parsers' freed blocks: the models' memory then starts from what is held
    for item in rejected:
        result.inputs.append(InputFile(path=str(item.path), format=NOT_PROFILER, kernels=0, notes=[item.reason]))
        result.warnings.append(f"{item.path}: skipped, {item.reason}")
    return result


def _parse_all(paths: list[Path], workers: int, on_file: Callable[[int, int, Path], None] | None,
               raw_columns: frozenset[str] | None = None) -> list[Any]:
    """Parsed tables of the files in the order given (a file may hold several); a pool of processes when
    ``workers`` > 1."""
    total = len(paths)
    if workers <= 1:
        from nvperf_bridge.importers import read_parts

        out = []
        for done, path in enumerate(paths, 1):
            out.extend(read_parts(path, raw_columns=raw_columns))
            if on_file is not None:
                on_file(done, total, path)
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from nvperf_bridge.text_storage import current

    # fork would copy a parent that may hold threads (model timeouts); spawn/forkserver start clean
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    results: list[Any] = [[] for _ in range(total)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method)) as pool:
        futures = {pool.submit(_read_one, str(path), raw_columns, current()): i for i, path in enumerate(paths)}
        try:
            for done, future in enumerate(as_completed(futures), 1):
                i = futures[future]
                results[i] = future.result()  # re-raises the worker's InputError, naming the file
                if on_file is not None:
                    on_file(done, total, paths[i])
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return [parsed for parts in results for parsed in parts]


# ---- the Profiles table of the report -------------------------------------------

PROFILE_COLUMNS: tuple[str, ...] = ("path", "format", "kernels", "device", "status")


def profile_rows(inputs: Iterable[Any]) -> list[dict[str, Any]]:
    """One row per input file: path, format, kernels, device, status ("ok", "ok, 3 rows skipped", "skipped: ...")."""
    rows = []
    for item in inputs:
        if item.format == NOT_PROFILER:
            status = "skipped: " + ("; ".join(item.notes) or NOT_PROFILER)
            fmt = "-"
        else:
            skipped = sum(_count(s) for s in item.skipped)
            status = "ok" if not skipped else f"ok, {skipped:,} non-kernel row{'s' if skipped != 1 else ''} skipped"
            fmt = item.format
        rows.append({"path": str(item.path), "format": fmt, "kernels": int(item.kernels), "device": item.device,
                     "status": status})
    return rows


def _count(skipped: str) -> int:
    """'12 rows: memcpy ...' -> 12 (skipped entries start with their count)."""
    head = skipped.split(" ", 1)[0].replace(",", "")
    return int(head) if head.isdigit() else 0


def show_profiles(inputs: list[Any]) -> bool:
    """Reports list the Profiles when more than one file was given or found."""
    return len(inputs) > 1


__all__ = ["Candidate", "NOT_PROFILER", "PROFILE_COLUMNS", "Rejected", "classify", "expand", "profile_rows",
           "read_inputs", "show_profiles", "workers_for"]

if __name__ == "__main__":  # pragma: no cover
    print(profile_rows(read_inputs(sys.argv[1:]).inputs))
