"""``nvperf-bridge models``: the installed models, their versions, papers, inputs and origin."""

from __future__ import annotations

from typing import List, Optional

import typer


def models_command(
    plugin: Optional[List[str]] = typer.Option(None, "--plugin", help="Also load a plugin from this .py file."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List the installed model plugins: id, version, paper, canonical columns needed, where loaded from."""
    import json

    from nvperf_bridge.registry import load_registry

    registry = load_registry(plugin or [])
    rows = []
    for mid, loaded in sorted(registry.models.items()):
        model = loaded.model
        req = model.requires
        rows.append({
            "id": mid,
            "version": str(model.version),
            "paper": str(model.paper),
            "description": str(model.description),
            "requires": list(req.required),
            "optional": list(req.optional),
            "origin": loaded.origin,
        })
    if as_json:
        typer.echo(json.dumps({"models": rows, "problems": registry.problems}, indent=2))
    else:
        for row in rows:
            typer.echo(f"{row['id']}  {row['version']}  {row['paper']}")
            typer.echo(f"    needs: {', '.join(row['requires']) or '-'}")
            if row["optional"]:
                typer.echo(f"    uses when present: {', '.join(row['optional'])}")
            typer.echo(f"    from: {row['origin']}")
    for problem in registry.problems:
        typer.echo(f"nvperf-bridge: warning: {problem}", err=True)
