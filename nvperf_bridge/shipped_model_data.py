"""Model data that ships with nvperf-bridge: what ``nvperf-bridge fit MODEL`` wrote on a public corpus,
kept as ``data/<model>-<gpu profile id>.json`` (today ``kerr-gtx-1080-ti.json``, fitted on magus-corpus,
its provenance and held-out figures inside). A user names it by the GPU profile's id
(``--model-data kerr=gtx-1080-ti``) instead of a path inside the installed package."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_model_data(model_id: str, gpu_id: str) -> Path | None:
    """The shipped data of model ``model_id`` fitted on GPU profile ``gpu_id``, or None where none ships."""
    if not model_id or not gpu_id or any(sep in model_id + gpu_id for sep in "/\\"):
        return None
    entry = resources.files("nvperf_bridge").joinpath(f"data/{model_id}-{gpu_id}.json")
    return Path(str(entry)) if entry.is_file() else None
