"""Messages for files that hold no readable table: say what the file is and what to run."""

from __future__ import annotations

import re
from pathlib import Path

from nvperf_bridge.errors import InputError

_PROFILER_ERROR = re.compile(r"^==(?:ERROR|WARNING)==.*$", re.M)
# nsys stats / nsys export CSV headers: "Time (%)","Total Time (ns)",... or "Start (ns)","Duration (ns)",...
_NSYS_HEADER = re.compile(r'^"?(?:Time \(%\)|Time\(%\)|Start \(ns\)|Start|Total Time \(ns\))"?,.*\(ns\)', re.M)
# nvprof rows whose header line was filtered away (grep for the device name): what each kind of row looks like
_HEADERLESS = (
    (re.compile(r'^"[^"\n]+ \(\d+\)","\d+","\d+","[^"\n]+",[-+\d.eE]', re.M),
     "nvprof per-launch counter rows (--print-gpu-trace with --metrics/--events) without their header line, so "
     "the counter names are lost",
     "keep nvprof's output whole: `nvprof --print-gpu-trace --metrics M1,M2 --csv --log-file out.csv ./app`"),
    (re.compile(r'^[-+\d.eE]+,[-+\d.eE]+,(?:[^,\n]*,){9,}"[^"\n]+ \(\d+\)","\d+","\d+","[^"\n]*"\s*$', re.M),
     "nvprof GPU-trace rows (--print-gpu-trace) without their header and units lines, so the columns and units "
     "are lost",
     "keep nvprof's output whole: `nvprof --print-gpu-trace --csv --log-file trace.csv ./app`"),
)
_COLLECT = "expected the output of `ncu --csv --page raw --print-units base ...`, `ncu --csv ...`, " \
           "`nvprof --csv --metrics ...` or `nvprof --csv --print-gpu-trace ...`"


def brief(value: object, limit: int = 40) -> str:
    """A value as an error message may quote it: at most ``limit`` characters, containers by type and size.

    A YAML alias bomb expands one field into billions of items: an error must
    never render the value whole (issue 18: 30 s and 3.9 GB for one message).
    """
    if isinstance(value, (list, tuple, set, dict)):
        return f"a {type(value).__name__} of {len(value)} item{'s' if len(value) != 1 else ''}"
    text = repr(value) if not isinstance(value, str) or len(value) <= limit else repr(value[:limit])
    return text if len(text) <= limit + 2 else text[:limit] + "…"


def no_table_error(path: Path, text: str) -> InputError:
    """The InputError for a file with no table, quoting the profiler's own ==ERROR== line if any."""
    found = _PROFILER_ERROR.search(text)
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        return InputError(
            f"the profiler wrote no results, only an error: {found.group(0).strip()!r}",
            path=path, line=line,
            hint="fix the profiled run (the application failed or ncu could not attach) and profile again",
        )
    stripped = text.lstrip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and all(line.startswith("==") for line in lines):
        return InputError(
            "the file holds only profiler messages (==PROF== / ==PID== lines) and no table: no kernel was profiled",
            path=path, line=len(text.splitlines()),
            hint="check that the application launches kernels and that --kernel-name / --launch-skip / "
                 "--launch-count match some, and that --csv was given; then profile again",
        )
    for rows, what, hint in _HEADERLESS:
        found = rows.search(text)
        if found is not None and _mostly(rows, text):
            return InputError(f"this is {what}", path=path, line=text.count("\n", 0, found.start()) + 1, hint=hint)
    nsys = _NSYS_HEADER.search(text)
    if nsys is not None:
        return InputError(
            "this looks like Nsight Systems output (nsys stats CSV): it has kernel times but no hardware counters",
            path=path, line=text.count("\n", 0, nsys.start()) + 1,
            hint="the models need per-kernel counters: profile with `ncu --csv --page raw --print-units base "
                 "./app > profile.csv` (or `nvprof --csv --metrics all` on older GPUs)",
        )
    if stripped.startswith("{") or stripped.startswith("["):
        return InputError("this looks like JSON, not profiler CSV", path=path, hint=_COLLECT)
    if "kernels" in text and ":" in text:
        return InputError("YAML without a top-level `kernels:` list", path=path,
                          hint="kernel-yaml files need `kernels:` at the top level")
    return InputError("no CSV table found", path=path, line=None, hint=_COLLECT)


def _mostly(rows: re.Pattern[str], text: str) -> bool:
    """Most non-blank lines of ``text`` are rows of this shape (not one stray line in a log)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    return bool(lines) and len(rows.findall(text)) >= 0.8 * len(lines)
