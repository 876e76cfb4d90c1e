"""``nvperf-bridge gpus``: the GPU profiles this installation knows, one line each.

Reads the YAML profiles and the datasheet table (through ``nvperf_bridge.gpu``): no pandas,
so the listing is fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

# (JSON key, column header, format) for the text table: data, not code
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("id", "ID", "{}"),
    ("compute_capability", "CC", "{}"),
    ("sm_count", "SMs", "{}"),
    ("sm_clock_mhz", "CLOCK", "{:g} MHz"),
    ("memory_bandwidth_gb_per_s", "BANDWIDTH", "{:g} GB/s"),
    ("name", "NAME", "{}"),
)


def profile_rows(extra_dirs: list[Path]) -> list[dict[str, Any]]:
    """One dict per profile (datasheet rows, shipped YAML files, then those in ``extra_dirs``), sorted by id."""
    from nvperf_bridge.gpu import load_profiles

    rows = []
    for pid, profile in sorted(load_profiles(extra_dirs).items()):
        rows.append({
            "id": pid,
            "name": profile.name,
            "compute_capability": profile.compute_capability,
            "sm_count": profile.sm_count,
            "sm_clock_mhz": profile.sm_clock_mhz,
            "memory_bandwidth_gb_per_s": profile.memory_bandwidth_gb_per_s,
            "architecture": profile.get("architecture"),
            "calibrated": profile.is_calibrated,
            "models": sorted(profile.model_constants),
            "match": list(profile.match),
            "path": profile.path,
        })
    return rows


def format_table(rows: list[dict[str, Any]]) -> list[str]:
    """Aligned text lines: a header, then one line per profile, 'calibrated' marked at the end."""
    cells = [[header for _, header, _ in COLUMNS]]
    for row in rows:
        cells.append([fmt.format(row[key]) for key, _, fmt in COLUMNS])
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = []
    for index, line in enumerate(cells):
        text = "  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
        if index > 0 and rows[index - 1]["calibrated"]:
            text += "  [calibrated]"
        lines.append(text)
    return lines


def gpus_command(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    profile_dir: Optional[List[Path]] = typer.Option(
        None, "--profile-dir", metavar="DIR",
        help="Also read the *.yaml profiles in DIR (repeatable; a user profile with a shipped id replaces it).",
    ),
) -> None:
    """List the GPU profiles: id, compute capability, SMs, clock, memory bandwidth, name.

    Choose one with 'analyze --gpu ID' (or a path to your own YAML file); without
    --gpu the profile is picked from the device name in the profiler output.
    """
    import json

    from nvperf_bridge.errors import UsageError

    dirs = list(profile_dir or [])
    for folder in dirs:
        if not folder.is_dir():
            raise UsageError(f"--profile-dir {folder}: not a folder")
    rows = profile_rows(dirs)
    if as_json:
        typer.echo(json.dumps({"profiles": rows}, indent=2))
        return
    for line in format_table(rows):
        typer.echo(line)
