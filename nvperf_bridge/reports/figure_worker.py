"""The figure worker: a second process that draws a report's figures while the first writes the rest.

A small report's figures cost more than its analysis: matplotlib's import (about 0.3 s on top of numpy)
and drawing three figures (0.3-0.4 s) against ``import pandas`` (0.3 s) and the models (0.2 s). On a
machine with a second core that is idle meanwhile, ``analyze`` starts this worker with the command
(``FigureWorker.start``): it imports numpy and matplotlib while the command imports pandas, reads the
input and runs the models, then receives the figures' data (``figures.figure_orders``: numbers and
finished texts, pickled through its stdin) and draws them with the same functions as the command
would (``figure_draw.draw_order``), while the command writes the Markdown text or the workbook's other
sheets. The PNGs come back through its stdout; they are the ones the command would have drawn itself.

Whatever goes wrong with the worker (it cannot start, imports another copy of the package, dies, takes
longer than ``RESULT_TIMEOUT_S``) the command draws the figures itself, as without a worker: a
drawing error then surfaces there as it always did. What the worker printed on stderr (matplotlib's
warnings) is passed on once its figures are used.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, Sequence

# The worker's command: '' (the current folder) leaves sys.path first, so the worker finds the package
# where the command's interpreter does (PYTHONPATH, site-packages) and not a checkout in the folder;
# it then checks that it runs the same files as the command (argv[1]) before drawing.
_BOOT = "import sys; del sys.path[0]; from nvperf_bridge.reports.figure_worker import serve; serve(sys.argv[1])"

RESULT_TIMEOUT_S = 300.0  # beyond this the worker is given up and the command draws the figures itself


def _draw_module_file() -> str:
    """The file ``figure_draw`` is loaded from, found without importing it (its numpy): the command
    starts the worker before numpy loads, and the worker checks that it imported this same file."""
    from importlib.util import find_spec

    spec = find_spec("nvperf_bridge.reports.figure_draw")
    assert spec is not None and spec.origin is not None  # this package's own module
    return str(Path(spec.origin).resolve())


def _worker_environment() -> dict[str, str]:
    """The command's environment with OpenBLAS on one thread: the worker draws, it multiplies nothing,
    and a thread pool's start spins on the core the command is using (``blas_threads``)."""
    import os

    from nvperf_bridge.blas_threads import THREADS_VARIABLE

    return {**os.environ, THREADS_VARIABLE: "1"}


class FigureWorker:
    """A started worker process, waiting for one batch of figures (``submit``); ``close`` ends it."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self._process = process
        self._stderr = stderr
        self._submitted = False

    @classmethod
    def start(cls) -> "FigureWorker | None":
        """Start the worker (it begins importing at once); None when no process can be started."""
        import tempfile

        if not sys.executable:
            return None
        stderr = tempfile.TemporaryFile()  # a file, not a pipe: nothing has to read it while the worker runs
        try:
            process = subprocess.Popen([sys.executable, "-c", _BOOT, _draw_module_file()], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=stderr, env=_worker_environment())
        except OSError:
            stderr.close()
            return None
        return cls(process, stderr)

    def submit(self, orders: Sequence[Any]) -> "FigureTicket":
        """Hand the worker the figures to draw (``figure_draw.FigureOrder``); once per worker."""
        if self._submitted:
            raise RuntimeError("a figure worker draws one batch of figures")
        self._submitted = True
        return FigureTicket(self, pickle.dumps(list(orders), protocol=pickle.HIGHEST_PROTOCOL))

    def close(self) -> None:
        """End the worker if it still runs (a command that failed, or needed no figures) and free its files."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> "FigureWorker":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class FigureTicket:
    """One batch of figures on its way back: written to the worker and read from it by a thread (the
    data of a large report's figures can be more than a pipe holds), so the command goes on meanwhile.

    What the pipe takes at once is written here, before the thread starts (``_write_ahead``): a small
    report's figure data (20-30 kB) then reaches the worker at once, where the thread, writing it in
    4 kB pieces while the command's main thread holds the GIL, took 0.03-0.05 s to hand it over."""

    def __init__(self, worker: FigureWorker, payload: bytes) -> None:
        self._worker = worker
        self._reply: bytes | None = None
        try:
            rest: bytes | None = _write_ahead(worker._process, payload)
        except (OSError, ValueError):  # the worker is gone (a closed pipe): the command draws instead
            rest = None
        self._thread = threading.Thread(target=self._exchange, args=(rest,), name="figure-worker", daemon=True)
        self._thread.start()

    def _exchange(self, rest: bytes | None) -> None:
        if rest is None:
            return
        process = self._worker._process
        try:
            if rest:
                self._reply, _ = process.communicate(rest)
            else:  # all written and stdin closed (communicate would flush the closed pipe)
                assert process.stdout is not None
                self._reply = process.stdout.read()
                process.wait()
        except (OSError, ValueError):  # the worker is gone (a closed pipe): the command draws instead
            self._reply = None

    def result(self) -> list[Any] | None:
        """The drawn figures (``figure_draw.ReportFigure``), or None when the worker could not draw them."""
        self._thread.join(RESULT_TIMEOUT_S)
        process = self._worker._process
        if self._thread.is_alive():
            process.kill()
            self._thread.join()
            return None
        if process.returncode != 0 or not self._reply:
            return None
        try:
            status, figures = pickle.loads(self._reply)
        except Exception:  # noqa: BLE001 - a garbled reply is a worker that could not draw
            return None
        if status != "ok":
            return None
        self._pass_on_stderr()
        return list(figures)

    def _pass_on_stderr(self) -> None:
        stream = self._worker._stderr
        stream.seek(0)
        text = stream.read()
        if text:
            sys.stderr.write(text.decode("utf-8", "replace"))
            sys.stderr.flush()


def _write_ahead(process: subprocess.Popen[bytes], payload: bytes) -> bytes:
    """Write what the worker's stdin pipe takes of ``payload`` without waiting, and close the pipe when
    it took everything; the rest (empty: all written) is for ``communicate``."""
    import os

    stdin = process.stdin
    if stdin is None:
        return payload
    fd = stdin.fileno()
    os.set_blocking(fd, False)
    written = 0
    try:
        while written < len(payload):
            written += os.write(fd, payload[written:])
    except BlockingIOError:  # the pipe is full: the thread writes the rest as the worker reads
        pass
    finally:
        os.set_blocking(fd, True)
    if written == len(payload):
        stdin.close()
    return payload[written:]


def serve(expected_file: str) -> None:
    """The worker's life: import and warm up matplotlib, read the figures to draw from stdin, write the
    PNGs (pickled) to stdout. Its work is bounded whatever the report's size (the accuracy figure draws
    at most 5,000 kernels per model, the Transit figure four, the roofline 30 groups), so the cycle
    collector stays off. Once the PNGs are written it leaves at once (``os._exit``): the command's
    reading thread waits for the process to end, and an interpreter's shutdown with matplotlib and
    numpy loaded (every module torn down, the last collection) is time the command would wait for
    nothing; the forked lanes leave the same way."""
    import gc
    import os

    gc.disable()
    from nvperf_bridge.reports import figure_draw

    if str(Path(figure_draw.__file__).resolve()) != expected_file:  # another copy: its drawing may differ
        sys.exit(3)
    _warm_up()
    data = sys.stdin.buffer.read()
    if not data:  # the command needed no figures, or ended
        return
    orders = pickle.loads(data)
    try:
        reply: tuple[str, Any] = ("ok", _draw_in_lanes(orders))
    except Exception as exc:  # noqa: BLE001 - the command draws them itself and meets the error there
        reply = ("failed", f"{type(exc).__name__}: {exc}")
    sys.stdout.buffer.write(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    sys.stderr.flush()  # matplotlib's warnings, passed on by the command
    os._exit(0)


def _draw_in_lanes(orders: list[Any]) -> list[Any]:
    """Every figure drawn, in as many processes as there are CPUs (at most one per figure): lane 0 is
    this process, the others are forked from it, warmed up as it is, so they start drawing at once
    (the Transit figure alone is about half the drawing of a small report). Lane i draws orders i,
    i + lanes, ...; a lane that fails is drawn here instead, where its error then surfaces."""
    import os

    from nvperf_bridge.reports.figure_draw import draw_order

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    lanes = min(len(orders), cpus) if hasattr(os, "fork") else 1
    if lanes <= 1:
        return [draw_order(order) for order in orders]
    forked = []
    for lane in range(1, lanes):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the forked lane: draw, send the PNGs, leave without running the worker's exit code
            try:
                os.close(read_end)
                try:
                    payload = pickle.dumps(("ok", [draw_order(o) for o in orders[lane::lanes]]),
                                           protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:  # noqa: BLE001 - lane 0 draws these itself and meets the error there
                    payload = pickle.dumps(("failed", None))
                with os.fdopen(write_end, "wb") as out:
                    out.write(payload)
            finally:  # whatever happened (lane 0 gone: a broken pipe), this process ends here
                os._exit(0)
        os.close(write_end)
        forked.append((lane, pid, read_end))
    drawn: list[Any] = [None] * len(orders)
    drawn[0::lanes] = [draw_order(order) for order in orders[0::lanes]]
    for lane, pid, read_end in forked:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        status, figures = pickle.loads(data) if data else ("failed", None)
        drawn[lane::lanes] = figures if status == "ok" else [draw_order(o) for o in orders[lane::lanes]]
    return drawn


def _warm_up() -> None:
    """What every figure needs before its first line, done while the command still works: matplotlib's
    figure, Agg and tick modules, the default font found and loaded (the layout's text metrics), then
    one small throwaway drawing (``figure_draw.warm_up_drawing``) through the same artists the report
    figures use. The command is still reading and running its models then (about 0.2 s on the small
    report after the imports), so this costs nothing there, and every lane forked from here starts
    with matplotlib's first-draw set-up done: 0.01-0.02 CPU s less per figure."""
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import matplotlib.ticker  # noqa: F401

    from nvperf_bridge.reports.figure_draw import warm_up_drawing
    from nvperf_bridge.reports.figure_layout import text_inches

    text_inches("0.1", 10.0)
    warm_up_drawing()


__all__ = ["FigureTicket", "FigureWorker", "RESULT_TIMEOUT_S", "serve"]
