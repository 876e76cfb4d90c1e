"""The stderr progress bar: drawn only on a terminal, after a delay, and erased at the end."""

from __future__ import annotations

import io

from nvperf_bridge.reports.progress import Progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_steps_and_erases_on_a_terminal() -> None:
    stream = FakeTerminal()
    progress = Progress(3, stream=stream, delay=0.0)
    progress.step("reading 2 files")
    progress.step("running 6 models")
    assert "1/3 reading 2 files" in stream.getvalue()
    assert "[########----------------] 2/3 running 6 models" in stream.getvalue()
    progress.done()
    assert stream.getvalue().endswith("\r" + " " * 119 + "\r")
    assert "\n" not in stream.getvalue(), "never scrolls the terminal"


def test_silent_when_not_a_terminal_quiet_or_quick() -> None:
    pipe = io.StringIO()
    Progress(2, stream=pipe, delay=0.0).step("x")
    assert pipe.getvalue() == ""
    terminal = FakeTerminal()
    Progress(2, stream=terminal, delay=0.0, enabled=False).step("x")
    quick = Progress(2, stream=terminal, delay=60.0)
    quick.step("x")
    quick.done()
    assert terminal.getvalue() == ""
