"""Run a model's ``evaluate`` where it cannot take the run down with it.

Third-party plugins run in a worker process (``evaluate_in_worker``): a
``sys.exit``, an ``os._exit``, a segfault in C code, a hang or a CPU spin
past ``--model-timeout`` costs only that model's results. The worker is
forked, so it starts in milliseconds and gets the plugin, the kernel table
and the GPU profile without pickling them; only the result comes back. What
the plugin prints (stdout and stderr, also from C code) is captured through a
pipe and returned, so it never mixes into a report written to stdout. A
worker past its timeout is killed, not left running. Built-in models and
``--no-isolation`` run in-process (``evaluate_in_process``): faster, with
Python-level output captured and exceptions (``SystemExit`` included) turned
into that model's failure by the caller.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import multiprocessing as mp
import os
import signal
import sys
import threading
from typing import Any

from nvperf_bridge.errors import ModelError, NvperfError
from nvperf_bridge.signals import forget_child, reset_in_child, track_child

OUTPUT_KEPT = 2000  # characters of a plugin's output kept for the warning (the rest is counted)
_EXIT_GRACE_S = 5.0  # a worker that sent its result but does not end within this is killed


def isolation_available() -> bool:
    """Worker processes need ``fork`` (Linux, macOS); elsewhere plugins run in-process."""
    return "fork" in mp.get_all_start_methods()


class _Drain(threading.Thread):
    """Reads a worker's output pipe to the end, keeping the first ``OUTPUT_KEPT`` characters."""

    def __init__(self, fd: int) -> None:
        super().__init__(name="model-output", daemon=True)
        self.fd = fd
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 65536):
                self.total += len(chunk)
                if len(self.kept) < OUTPUT_KEPT * 4:  # bytes: room for multi-byte characters
                    self.kept += chunk[: OUTPUT_KEPT * 4 - len(self.kept)]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def text(self) -> str:
        return describe_output(self.kept.decode("utf-8", "replace"), self.total)


def describe_output(text: str, total_bytes: int | None = None) -> str:
    """A plugin's output as one short line ('' when it printed nothing but blanks)."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    total = len(text.encode("utf-8")) if total_bytes is None else total_bytes
    if len(flat) > OUTPUT_KEPT:
        flat = flat[:OUTPUT_KEPT] + " ..."
    return f"{flat} ({total:,} bytes in all)" if total > OUTPUT_KEPT else flat


class RaisedInWorker(Exception):
    """An exception a model raised in its worker process, passed back by name and message
    (the exception object itself may not pickle)."""

    def __init__(self, type_name: str, message: str) -> None:
        self.type_name = type_name
        super().__init__(message)


def exception_name(exc: BaseException) -> str:
    """The exception's type name as the user should read it (the original one for a worker's)."""
    return exc.type_name if isinstance(exc, RaisedInWorker) else type(exc).__name__


def _worker(send: Any, out_fd: int, model: Any, kernels: Any, gpu: Any, options: dict[str, Any]) -> None:
    """In the forked child: evaluate, send ('ok', frame), ('nvperf', message) or ('raised', (type
    name, message)), and end at once."""
    reset_in_child()  # default SIGINT/SIGTERM; the parent's temporary files are not ours
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(out_fd)
    sys.stdout = sys.stderr = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    faulthandler.enable(file=sys.stderr, all_threads=False)  # a crash in C code says where, into the warnings
    try:
        message: tuple[str, Any] = ("ok", model.evaluate(kernels.copy(deep=False), gpu, options))
    except NvperfError as exc:
        message = ("nvperf", str(exc))
    except BaseException as exc:  # noqa: BLE001 (SystemExit, KeyboardInterrupt: all are the plugin's failure)
        message = ("raised", (type(exc).__name__, str(exc)))
    try:
        send.send(message)
    except BaseException as exc:  # noqa: BLE001 (the result would not pickle)
        send.send(("nvperf", f"returned a result that cannot be passed back ({type(exc).__name__}: {exc})"))
    os._exit(0)  # no atexit handlers, no flushing the parent's inherited buffers


def _died(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"crashed (its worker process was killed by {name}); its results are left out"
    return (f"ended its worker process (exit code {exitcode}) without returning a result "
            "(os._exit or a crash in C code?); its results are left out")


def evaluate_in_worker(model: Any, kernels: Any, gpu: Any, options: dict[str, Any],
                       timeout_s: float | None, printed: list[str]) -> Any:
    """``model.evaluate`` in a forked worker; returns its result or raises ``ModelError``.

    What the model printed is appended (as one line) to ``printed``.
    """
    model_id = str(getattr(model, "id", ""))
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    out_read, out_write = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice (by the child too)
        with contextlib.suppress(Exception):
            stream.flush()
    process = ctx.Process(target=_worker, args=(send, out_write, model, kernels, gpu, options),
                          name=f"model-{model_id}", daemon=True)
    process.start()
    track_child(process.pid, process)
    send.close()
    os.close(out_write)
    drain = _Drain(out_read)
    drain.start()
    try:
        message: tuple[str, Any] | None = None
        if receive.poll(timeout_s):
            with contextlib.suppress(EOFError, OSError):
                message = receive.recv()
            process.join(_EXIT_GRACE_S)
        else:
            process.kill()
            process.join()
            raise ModelError(f"took longer than the {timeout_s:g} s model timeout; its worker process was stopped "
                             "and its results are left out", model_id=model_id)
        if process.is_alive():
            process.kill()
            process.join()
    finally:
        forget_child(process.pid)
        receive.close()
        drain.join(2.0)  # a process the plugin started may hold the pipe open: do not wait for it
        if output := drain.text():
            printed.append(output)
    if message is None:
        raise ModelError(_died(process.exitcode), model_id=model_id)
    status, payload = message
    if status == "raised":
        raise RaisedInWorker(*payload)
    if status != "ok":
        raise ModelError(str(payload).removeprefix(f"model {model_id}: "), model_id=model_id)
    return payload


def evaluate_in_process(model: Any, kernels: Any, gpu: Any, options: dict[str, Any],
                        timeout_s: float | None, printed: list[str]) -> Any:
    """``model.evaluate`` in this process, its Python-level output captured into ``printed``.

    With ``timeout_s`` it runs in a thread that is abandoned, not killed, when it overruns
    (Python cannot stop a thread): it finishes in the background, its result ignored.
    """
    frame = kernels.copy(deep=False)  # a model that adds or replaces columns cannot disturb the next one
    buffer = io.StringIO()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = model.evaluate(frame, gpu, options)
        except BaseException as exc:  # noqa: BLE001 (re-raised in the caller's thread below)
            outcome["error"] = exc

    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            if timeout_s is None:
                target()
            else:
                worker = threading.Thread(target=target, name=f"model-{getattr(model, 'id', '?')}", daemon=True)
                worker.start()
                worker.join(timeout_s)
                if worker.is_alive():
                    raise ModelError(f"took longer than the {timeout_s:g} s model timeout; its results are left out",
                                     model_id=str(getattr(model, "id", "")))
    finally:
        if output := describe_output(buffer.getvalue()):
            printed.append(output)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


__all__ = ["OUTPUT_KEPT", "RaisedInWorker", "exception_name", "describe_output", "evaluate_in_process", "evaluate_in_worker", "isolation_available"]
