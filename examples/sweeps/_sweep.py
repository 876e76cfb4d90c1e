"""What the sweep scripts share: the command line (write the CSV and the PNG), panels, axis labels."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "sweeps"


def panels(groups: Sequence[Any], width: float, height: float) -> tuple[Any, list[Any]]:
    """A figure with one axes per group, side by side (the Agg canvas, no pyplot state)."""
    from nvperf_bridge.reports.figures import _new_figure

    fig = _new_figure(width, height)
    return fig, list(fig.subplots(1, len(groups), squeeze=False)[0])


def plain_log_y(ax: Any) -> None:
    """A log y axis labelled 0.2, 0.5, 1, 2, 5 ... rather than powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def log2_x(ax: Any, ticks: Sequence[float], labels: Sequence[str] | None = None) -> None:
    """A base-2 log x axis with a tick at each swept value."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks))
    ax.set_xticklabels(list(labels) if labels is not None else [f"{t:g}" for t in ticks])


def run(doc: str, stem: str, sweep: Callable[[], pd.DataFrame], figure: Callable[[pd.DataFrame], bytes],
        argv: list[str] | None) -> int:
    """The scripts' main: sweep, write ``<stem>.csv`` and ``<stem>.png`` to --out, print the table."""
    from nvperf_bridge.reports.figures import figure_bytes  # noqa: F401  (fails early without matplotlib)

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DOCS, help=f"folder for {stem}.csv and {stem}.png")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    table = sweep()
    table.to_csv(args.out / f"{stem}.csv", index=False, float_format="%.6g")
    (args.out / f"{stem}.png").write_bytes(figure(table))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False))
    return 0
