"""Reading YAML safely and fast: the one place the package parses YAML text.

Safe constructors only (a profile or kernel file cannot run code), through libyaml's
CSafeLoader when PyYAML was built with it: the same documents, about 7x faster to
parse (every command that picks a GPU reads all shipped profiles).

The YAML files that ship with the package (the GPU profiles and ``data/architectures.yaml``)
are read by every command that picks a GPU: parsing them and importing PyYAML was about 30 ms
of a 0.9 s small-file ``analyze``. ``data/shipped_yaml.jsonl`` holds each of those documents as
JSON, keyed by the SHA-256 of its YAML text, written by ``python -m nvperf_bridge.yaml_io
--write``. ``safe_load`` answers a text whose digest is there from that JSON (a new copy on every
call, as a parse gives), and parses any other text: a profile edited in place, a user's own file.
Only documents that JSON gives back exactly (the same types, keys in the same order) are kept
(``same_document``); ``tests/test_profiles.py`` checks that the table is current.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

SHIPPED_TABLE = "shipped_yaml.jsonl"  # in nvperf_bridge/data: one "DIGEST<TAB>JSON" line per document


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` through libyaml when available (safe constructors only either way); a
    shipped document (``_shipped_documents``) comes from its stored JSON without parsing YAML."""
    stored = _shipped_documents().get(_digest(text))
    if stored is not None:
        return json.loads(stored)
    return _parse(text)


def yaml_error() -> type[Exception]:
    """PyYAML's error class (``except yaml_io.yaml_error()``: PyYAML is imported only when an error
    is being handled or a text is parsed)."""
    import yaml

    return yaml.YAMLError


def _parse(text: str) -> Any:
    import yaml  # here: a run that reads only shipped documents never imports PyYAML (about 12 ms)

    c_safe_loader = getattr(yaml, "CSafeLoader", None)
    if c_safe_loader is None:
        return yaml.safe_load(text)
    loader = c_safe_loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def _shipped_documents() -> dict[str, str]:
    """Digest of a shipped YAML text -> its document as JSON text (empty when the table is missing)."""
    try:
        lines = (resources.files("nvperf_bridge") / "data" / SHIPPED_TABLE).read_text(encoding="utf-8")
    except OSError:
        return {}
    return dict(line.split("\t", 1) for line in lines.splitlines() if "\t" in line)


def shipped_yaml_files() -> list[Path]:
    """The YAML files the package ships and every GPU-picking command reads: the profiles and data/*.yaml."""
    package = Path(str(resources.files("nvperf_bridge")))
    profiles = Path(str(resources.files("nvperf_bridge.profiles")))
    return sorted(profiles.glob("*.yaml")) + sorted((package / "data").glob("*.yaml"))


def same_document(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same document: equal, with the same types throughout (1, 1.0 and True
    differ), mappings' keys in the same order, and NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_document(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_document(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    return a == b


def shipped_table_lines(files: list[Path] | None = None) -> list[str]:
    """The lines of ``data/shipped_yaml.jsonl`` for ``files`` (default: ``shipped_yaml_files``): each
    document parsed from its YAML and kept where its JSON gives it back exactly."""
    lines = []
    for path in files if files is not None else shipped_yaml_files():
        text = path.read_text(encoding="utf-8")
        document = _parse(text)
        encoded = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        if same_document(json.loads(encoded), document):
            lines.append(f"{_digest(text)}\t{encoded}")
    return sorted(set(lines))


def main(argv: list[str] | None = None) -> int:
    """``python -m nvperf_bridge.yaml_io --write``: rewrite the table after a shipped YAML file changed."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if args != ["--write"]:
        print("usage: python -m nvperf_bridge.yaml_io --write", file=sys.stderr)
        return 2
    target = Path(str(resources.files("nvperf_bridge"))) / "data" / SHIPPED_TABLE
    target.write_text("".join(line + "\n" for line in shipped_table_lines()), encoding="utf-8")
    print(f"wrote {target}")
    return 0


__all__ = ["SHIPPED_TABLE", "safe_load", "same_document", "shipped_table_lines", "shipped_yaml_files", "yaml_error"]


if __name__ == "__main__":
    raise SystemExit(main())
