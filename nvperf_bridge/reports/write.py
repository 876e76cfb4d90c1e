"""Write report outputs atomically: all or nothing, never half a file.

Every output goes to a temporary file in the destination folder (so the final
``os.replace`` is a rename on one file system) and is renamed into place only
once it is complete. An existing file is replaced only with ``force=True``.
A report with companion files (Markdown and its figures) is written with
``write_outputs``: every target is checked before anything is written, so a
refusal leaves the folder untouched.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Mapping

from nvperf_bridge.errors import OutputError


def check_writable(path: str | Path, *, force: bool = False) -> Path:
    """Refuse an existing ``path`` without ``force``, a folder in its place, or a missing folder."""
    target = Path(path)
    if target.is_dir():
        raise OutputError("is a folder, not a file", path=target)
    if target.exists() and not force:
        raise OutputError("already exists", path=target, hint="pass --force to replace it")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"folder {str(folder)!r} does not exist", path=target)
    return target


def write_bytes(path: str | Path, data: bytes, *, force: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    target = check_writable(path, force=force)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot write here: {exc.strerror or exc}", path=target) from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp creates the file 0600; give the report the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, target)
    except OSError as exc:
        _remove_quietly(temp)
        raise OutputError(f"cannot write: {exc.strerror or exc}", path=target) from None
    except BaseException:
        _remove_quietly(temp)
        raise
    return target


def write_text(path: str | Path, text: str, *, force: bool = False) -> Path:
    """Write ``text`` (UTF-8, newlines as given) atomically."""
    return write_bytes(path, text.encode("utf-8"), force=force)


def write_outputs(outputs: Mapping[str | Path, bytes], *, force: bool = False) -> list[Path]:
    """Write several files (a report and its figures): all targets are checked first."""
    for path in outputs:
        check_writable(path, force=force)
    return [write_bytes(path, data, force=force) for path, data in outputs.items()]


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


__all__ = ["check_writable", "write_bytes", "write_text", "write_outputs"]
