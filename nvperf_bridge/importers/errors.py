"""Messages for files that hold no readable table: say what the file is and what to run."""

from __future__ import annotations

import re
from pathlib import Path

from nvperf_bridge.errors import InputError

_PROFILER_ERROR = re.compile(r"^==(?:ERROR|WARNING)==.*$", re.M)
_COLLECT = "expected the output of `ncu --csv --page raw --print-units base ...`, `ncu --csv ...`, " \
           "`nvprof --csv --metrics ...` or `nvprof --csv --print-gpu-trace ...`"


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
    if stripped.startswith("{") or stripped.startswith("["):
        return InputError("this looks like JSON, not profiler CSV", path=path, hint=_COLLECT)
    if "kernels" in text and ":" in text:
        return InputError("YAML without a top-level `kernels:` list", path=path,
                          hint="kernel-yaml files need `kernels:` at the top level")
    return InputError("no CSV table found", path=path, line=None, hint=_COLLECT)
