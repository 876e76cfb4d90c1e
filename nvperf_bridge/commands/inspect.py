"""``nvperf-bridge inspect``: what was read from each file, what is filled, what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def inspect_command(
    files: List[Path] = typer.Argument(..., help="Profiler outputs (ncu / nvprof CSV, kernel YAML)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU profile id or YAML file to use instead of matching."),
) -> None:
    """Show the detected format, kernels, device, GPU profile, and canonical columns filled or missing."""
    import json

    from nvperf_bridge.importers import read_profiles

    result = read_profiles(list(files))
    report = build_report(result, gpu)
    if as_json:
        typer.echo(json.dumps(report, indent=2, default=str))
        return
    for line in render_text(report):
        typer.echo(line)
    for warning in report["warnings"]:
        typer.echo(f"nvperf-bridge: warning: {warning}", err=True)


def build_report(result, gpu: str | None) -> dict:
    """The inspect report as plain data (also the --json output)."""
    from nvperf_bridge.columns import CANONICAL_COLUMNS, IDENTITY_COLUMNS, collecting_metric

    kernels = result.kernels
    filled: dict[str, int] = {}
    missing: list[dict[str, str]] = []
    for name in CANONICAL_COLUMNS:
        if name in IDENTITY_COLUMNS:
            continue
        count = int(kernels[name].notna().sum()) if name in kernels.columns else 0
        if count:
            filled[name] = count
        else:
            missing.append({"column": name, "ncu": collecting_metric(name, "ncu"),
                            "nvprof": collecting_metric(name, "nvprof")})
    raw = [c for c in kernels.columns if c not in CANONICAL_COLUMNS]
    devices = sorted({str(d) for d in kernels.get("device", []) if d is not None and str(d) != "nan"})
    return {
        "files": [
            {"path": f.path, "format": f.format, "kernels": f.kernels, "device": f.device,
             "encoding": getattr(f, "encoding", None), "skipped": f.skipped, "notes": f.notes,
             "coverage": _coverage(f, kernels)}
            for f in result.inputs
        ],
        "derived_from": result.derived_from,
        "kernels": int(len(kernels)),
        "launches": int(kernels["invocations"].sum()) if "invocations" in kernels.columns else int(len(kernels)),
        "devices": devices,
        "gpu_profile": _choose_profile(result, devices, gpu),
        "filled": filled,
        "missing": missing,
        "raw_columns": len(raw),
        "rules": _rule_summary(result),
        "warnings": list(result.warnings),
    }


def _coverage(f, kernels) -> dict:
    """What became of one file's counters: mapped (to what), unmapped (by name), derived, unparsed."""
    from nvperf_bridge.importers.derivations import derived_from

    rows = kernels[kernels["source"] == f.path] if "source" in kernels.columns else kernels.iloc[:0]
    return {
        "kernels": f.kernels,
        "counters": len(f.mapped) + len(f.unmapped),
        "mapped": dict(f.mapped),
        "unmapped": list(f.unmapped),
        "derived": derived_from(rows, f.notes),
        "unparsed": dict(f.unparsed),
    }


def _rule_summary(result) -> dict:
    """How many Nsight Compute rule results were kept, by rule name."""
    rules = getattr(result, "rules", None)
    if rules is None or rules.empty:
        return {"count": 0, "by_rule": {}}
    counts = rules["rule"].fillna("(unnamed)").value_counts()
    return {"count": int(len(rules)), "by_rule": {str(k): int(v) for k, v in counts.items()}}


def _choose_profile(result, devices: list[str], choice: str | None) -> dict:
    """The GPU profile ``analyze`` would use (``analysis.choose_gpus``) and why: ``--gpu``, the exact board
    name, an alias the profile matches (an index or clock after the name ignored), or the architecture
    fallback. One entry per device under ``per_device``; the first device's at the top."""
    from nvperf_bridge.analysis import choose_gpus
    from nvperf_bridge.errors import NvperfError, UsageError

    try:
        chosen = choose_gpus(result.kernels, choice)
    except UsageError as exc:
        if choice:
            raise  # a wrong --gpu is the user's error
        cc = sorted({str(c) for c in result.kernels.get("cc", []) if c is not None and str(c) != "nan"})
        what = f"device {', '.join(devices)}" if devices else "no device name in the input"
        return {"id": None, "per_device": [],
                "how": f"no GPU profile matches ({what}{'; CC ' + ', '.join(cc) if cc else ''}); "
                       f"pass --gpu ID (see `nvperf-bridge gpus`): {exc.message}"}
    except NvperfError as exc:
        return {"id": None, "per_device": [], "how": f"GPU profiles could not be loaded: {exc}"}
    per_device = [{"device": device, "id": profile.id, "name": profile.name, "how": how}
                  for device, profile, how in chosen]
    return {**{k: per_device[0][k] for k in ("id", "name", "how")}, "per_device": per_device}


def _coverage_lines(c: dict) -> list[str]:
    """The coverage line of one file, then the names behind its counts."""
    import textwrap

    derived, unparsed = c["derived"], c["unparsed"]
    timed = sum(1 for d in derived.values() if d["time_derived"])
    lines = [f"    coverage: {c['kernels']} kernels read; {c['counters']} counters: {len(c['mapped'])} mapped, "
             f"{len(c['unmapped'])} unmapped; {len(derived)} columns derived"
             + (f" ({timed} from the duration or a rate over it)" if timed else "")
             + f"; {sum(int(v.split()[0]) for v in unparsed.values())} values not parsed"]
    if c["unmapped"]:
        lines.extend(textwrap.wrap(", ".join(c["unmapped"]), width=110, initial_indent="      unmapped (kept raw): ",
                                   subsequent_indent="        ", break_on_hyphens=False))
    for column, d in derived.items():
        lines.append(f"      derived {column} for {d['kernels']} kernels: {' | '.join(d['formulas'])}"
                     + (f" [time-derived for {d['time_derived_kernels']}]" if d["time_derived"] else ""))
    for column, what in unparsed.items():
        lines.append(f"      not parsed in {column}: {what} (kept as missing)")
    return lines


def render_text(report: dict) -> list[str]:
    """Human-readable lines for the report."""
    lines = []
    for f in report["files"]:
        lines.append(f"{f['path']}: {f['format']}, {f['kernels']} kernel rows, device: {f['device'] or 'unknown'}"
                     + (f", encoding: {f['encoding']}" if f.get("encoding") else ""))
        for skipped in f["skipped"]:
            lines.append(f"    skipped {skipped}")
        formulas = {x for d in f["coverage"]["derived"].values() for x in d["formulas"]}
        for note in f["notes"]:
            if note not in formulas:  # a derivation's formula is on its coverage line
                lines.append(f"    note: {note}")
        lines.extend(_coverage_lines(f["coverage"]))
    lines.append(f"kernels: {report['kernels']} rows ({report['launches']} launches)")
    profile = report["gpu_profile"]
    if len(profile.get("per_device", [])) > 1:
        for entry in profile["per_device"]:
            lines.append(f"GPU profile for {entry['device'] or '(unnamed device)'}: {entry['id']} ({entry['how']})")
    else:
        lines.append(f"GPU profile: {profile['id'] or 'none'} ({profile['how']})")
    lines.append("filled: " + (", ".join(f"{k} ({v})" for k, v in report["filled"].items()) or "nothing"))
    if report["missing"]:
        lines.append("missing:")
        for m in report["missing"]:
            how = f"ncu --metrics {m['ncu']}" if m["ncu"] else "no ncu metric"
            lines.append(f"    {m['column']}: {how}" + (f"; nvprof {m['nvprof']}" if m["nvprof"] else ""))
    lines.append(f"raw counters kept: {report['raw_columns']}")
    if report["rules"]["count"]:
        names = ", ".join(f"{k} ({v})" for k, v in report["rules"]["by_rule"].items())
        lines.append(f"Nsight Compute rules kept: {report['rules']['count']} ({names})")
    return lines
