"""Write report outputs: all or nothing, never half a file, never a replaced device.

What an output path names decides how it is written (``resolve_output``):

* a regular file or a new path: written to a temporary file in the same
  folder (so the final ``os.replace`` is a rename on one file system), which
  is renamed into place only once complete. An existing file is replaced
  only with ``force=True``.
* ``-``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, a character device
  (``/dev/null``, a terminal) or a FIFO: streamed to directly. Such a path is
  never replaced (``-o /dev/full --force`` run as root writes to the device
  and reports "No space left on device"; it does not swap the device node for
  a file).
* a symbolic link to a file (or to nothing yet): refused without
  ``force``; with it the link is kept and the file it points to is replaced
  atomically.
* a folder, a block device, a socket, a missing folder or one we cannot
  write in: a one-line ``OutputError`` before any work starts (callers run
  ``check_writable`` first).

Temporary files are named ``.NAME.nvperf-HOST-PID-XXXXXXXX.tmp``. SIGINT and
SIGTERM remove them (``nvperf_bridge.signals``); after a SIGKILL or a power
cut one may be left beside the output, and the next write to the same output
removes it when it was made on this host by a process that no longer runs.
A report with companion files (Markdown and its figures) is written with
``write_outputs``: every target is checked before anything is written, so a
refusal leaves the folder untouched.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from nvperf_bridge.errors import OutputError
from nvperf_bridge.signals import forget_temp_file, track_temp_file

# Paths that name one of this process's own streams: always written to as they are (never
# resolved and replaced, which would break the shell's redirection of stdout to a file).
_OWN_STREAMS = ("/dev/stdout", "/dev/stderr")
_OWN_STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/")
_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"
_TEMP_MARK = ".nvperf-"


@dataclass(frozen=True)
class Destination:
    """Where an output goes: ``named`` as given, ``target`` the file really written, ``stream`` when
    it is written to directly (stdout, a device, a FIFO) instead of through a temporary file."""

    named: Path
    target: Path
    stream: bool


def _is_stream(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _kind(mode: int) -> str:
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def resolve_output(path: str | Path, *, force: bool = False) -> Destination:
    """Decide how ``path`` is written (see the module docstring), or raise ``OutputError``."""
    named = Path(path)
    text = str(path)
    if text == "-" or text in _OWN_STREAMS or text.startswith(_OWN_STREAM_PREFIXES):
        return Destination(named, named, True)
    try:
        link = os.lstat(named)
    except FileNotFoundError:
        link = None
    except OSError as exc:
        raise OutputError(f"cannot check it: {exc.strerror or exc}", path=named) from None
    if link is not None and stat.S_ISLNK(link.st_mode):
        try:
            pointed: os.stat_result | None = os.stat(named)
        except FileNotFoundError:
            pointed = None  # a dangling link: the file it names would be created
        except OSError as exc:
            raise OutputError(f"cannot follow the symbolic link: {exc.strerror or exc}", path=named) from None
        if pointed is not None and _is_stream(pointed.st_mode):
            return Destination(named, named, True)
        if not force:
            raise OutputError(f"is a symbolic link to {os.readlink(named)!r}",
                              hint="pass --force to replace the file it points to; the link itself is kept")
        return _file_destination(named, Path(os.path.realpath(named)), pointed, force=True)
    if link is not None and _is_stream(link.st_mode):
        return Destination(named, named, True)
    return _file_destination(named, named, link, force=force)


def _file_destination(named: Path, target: Path, existing: os.stat_result | None, *, force: bool) -> Destination:
    if existing is not None:
        if stat.S_ISDIR(existing.st_mode):
            raise OutputError("is a folder, not a file", path=named)
        if not stat.S_ISREG(existing.st_mode):
            raise OutputError(f"is {_kind(existing.st_mode)}; refusing to write to it", path=named)
        if not force:
            raise OutputError("already exists", path=named, hint="pass --force to replace it")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"folder {str(folder)!r} does not exist", path=named)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write in folder {str(folder)!r} (permission denied)", path=named)
    return Destination(named, target, False)


def check_writable(path: str | Path, *, force: bool = False) -> Path:
    """Raise ``OutputError`` now if ``path`` cannot be written (run it before the work, not after)."""
    return resolve_output(path, force=force).named


def _temp_name(target: Path) -> str:
    stem = target.name[:160]  # leave room for the suffix within the 255-byte name limit
    return str(target.with_name(f".{stem}{_TEMP_MARK}{_HOST}-{os.getpid()}-{secrets.token_hex(4)}.tmp"))


def _stale_pattern(target: Path) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(target.name[:160])}{re.escape(_TEMP_MARK)}"
                      rf"(?P<host>[A-Za-z0-9]+)-(?P<pid>\d+)-[0-9a-f]{{8}}\.tmp")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def remove_stale_temp_files(target: str | Path) -> list[Path]:
    """Remove temporary files a killed earlier write to ``target`` left behind, where that is
    safe: made on this host by a process that no longer runs (another run may be writing the
    others). Returns what was removed."""
    target = Path(target)
    folder = target.parent if str(target.parent) else Path(".")
    pattern = _stale_pattern(target)
    removed = []
    try:
        names = [n for n in os.listdir(folder) if _TEMP_MARK in n and n.startswith(f".{target.name[:160]}")]
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if not match or match["host"] != _HOST or _running(int(match["pid"])):
            continue
        path = folder / name
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass
    return removed


def _chunks(data: bytes | Iterable[bytes]) -> Iterable[bytes]:
    """``data`` as chunks: a report written as it is made (JSON) comes as an iterator of bytes."""
    return (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data


def _stream(destination: Destination, data: bytes | Iterable[bytes]) -> None:
    try:
        if str(destination.named) == "-":
            sys.stdout.flush()
            for chunk in _chunks(data):
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            return
        with open(destination.target, "wb") as out:
            for chunk in _chunks(data):
                out.write(chunk)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", path=destination.named) from None


def write_bytes(path: str | Path, data: bytes | Iterable[bytes], *, force: bool = False) -> Path:
    """Write ``data`` (bytes, or byte chunks written as they come: only one chunk in memory at a time) to
    ``path``: through a temporary file and a rename, or streamed (see above)."""
    destination = resolve_output(path, force=force)
    if destination.stream:
        _stream(destination, data)
        return destination.named
    target = destination.target
    remove_stale_temp_files(target)
    temp = _temp_name(target)
    track_temp_file(temp)  # before it exists: a signal from here on removes it
    try:
        handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        with os.fdopen(handle, "wb") as out:
            for chunk in _chunks(data):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except OSError as exc:
        _remove_quietly(temp)
        raise OutputError(f"cannot write: {exc.strerror or exc}", path=destination.named) from None
    except BaseException:
        _remove_quietly(temp)
        raise
    finally:
        forget_temp_file(temp)
    return destination.named


def write_text(path: str | Path, text: str, *, force: bool = False) -> Path:
    """Write ``text`` (UTF-8, newlines as given) the same way."""
    return write_bytes(path, text.encode("utf-8"), force=force)


def write_outputs(outputs: Mapping[str | Path, bytes | Iterable[bytes]], *, force: bool = False) -> list[Path]:
    """Write several files (a report and its figures): all targets are checked first."""
    for path in outputs:
        check_writable(path, force=force)
    return [write_bytes(path, data, force=force) for path, data in outputs.items()]


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


__all__ = ["Destination", "check_writable", "remove_stale_temp_files", "resolve_output", "write_bytes", "write_text",
           "write_outputs"]
