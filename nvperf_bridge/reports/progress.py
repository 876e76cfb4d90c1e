"""A small progress bar on stderr for long runs.

It draws only when enabled (not ``--quiet``), when stderr is a terminal, and
once the run has taken longer than ``delay`` seconds, so quick runs and
redirected output stay clean. Stdout is never touched.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Steps of a known count: ``step(label)`` advances, ``done()`` clears the line."""

    def __init__(self, total: int, *, enabled: bool = True, stream: TextIO | None = None, delay: float = 0.5,
                 width: int = 24) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(enabled and callable(isatty) and isatty())
        self.total = max(1, total)
        self.count = 0
        self.delay = delay
        self.width = width
        self.started = time.monotonic()
        self._drawn = False

    def step(self, label: str) -> None:
        """Start the next step (shown as 'label' with the bar of steps done so far)."""
        self.count = min(self.count + 1, self.total)
        self._draw(label)

    def note(self, label: str) -> None:
        """Change the label of the current step without advancing."""
        self._draw(label)

    def _draw(self, label: str) -> None:
        if not self.enabled or time.monotonic() - self.started < self.delay:
            return
        done = int(self.width * (self.count - 1) / self.total)
        bar = "#" * done + "-" * (self.width - done)
        text = f"\rnvperf-bridge [{bar}] {self.count}/{self.total} {label}"
        self.stream.write(text[:119].ljust(80))
        self.stream.flush()
        self._drawn = True

    def done(self) -> None:
        """Erase the bar (if it was drawn) so the next stderr line starts clean."""
        if self._drawn:
            self.stream.write("\r" + " " * 119 + "\r")
            self.stream.flush()
            self._drawn = False


__all__ = ["Progress"]
