"""Reading YAML safely and fast: the one place the package parses YAML text.

Safe constructors only (a profile or kernel file cannot run code), through libyaml's
CSafeLoader when PyYAML was built with it: the same documents, about 7x faster to
parse (every command that picks a GPU reads all shipped profiles).
"""

from __future__ import annotations

from typing import Any

import yaml

_C_SAFE_LOADER = getattr(yaml, "CSafeLoader", None)


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` through libyaml when available (safe constructors only either way)."""
    if _C_SAFE_LOADER is None:
        return yaml.safe_load(text)
    loader = _C_SAFE_LOADER(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


__all__ = ["safe_load"]
