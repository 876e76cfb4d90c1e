"""Find, load and check model plugins.

Built-in models and third-party ones come through the same entry-point group
(``nvperf_bridge.models``); ``--plugin FILE.py`` adds one from a file. A
plugin that fails to import, raises while registering, or registers a model
that breaks the contract is reported in ``Registry.problems`` and skipped; the
others still load.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from nvperf_bridge import hookspecs

_ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_MODEL_ATTRIBUTES = ("id", "version", "description", "paper", "requires", "evaluate")


BUILTIN_PACKAGE = "nvperf_bridge.builtin_plugins."  # entry points into it are the built-in models


@dataclass
class LoadedModel:
    model: Any
    origin: str  # "entry point hong-kim (nvperf-bridge 0.1.0)" or "file path/to/plugin.py"
    plugin: str  # name of the plugin that registered it
    builtin: bool = False  # shipped with nvperf-bridge (run in-process); others run isolated by default


@dataclass
class Registry:
    models: dict[str, LoadedModel] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # one line per plugin or model skipped

    def get(self, model_id: str) -> Any:
        return self.models[model_id].model


def _contract_problem(model: Any) -> str | None:
    missing = [name for name in _MODEL_ATTRIBUTES if not hasattr(model, name)]
    if missing:
        return f"model object {model!r} lacks {', '.join(missing)}"
    if not isinstance(model.id, str) or not _ID_PATTERN.match(model.id):
        return f"model id {model.id!r} is not kebab-case"
    if not callable(model.evaluate):
        return f"model {model.id}: evaluate is not callable"
    return None


def _register_from(registry: Registry, module: Any, plugin_name: str, origin: str, builtin: bool = False) -> None:
    hook = getattr(module, "register_models", None)
    if hook is None or not callable(hook):
        registry.problems.append(f"plugin {plugin_name} ({origin}): defines no register_models hook; skipped")
        return
    offered: list[Any] = []
    try:
        hook(register=offered.append)
    except Exception as exc:  # a third-party plugin may raise anything
        registry.problems.append(f"plugin {plugin_name} ({origin}): register_models raised {type(exc).__name__}: {exc}; skipped")
        return
    for model in offered:
        problem = _contract_problem(model)
        if problem:
            registry.problems.append(f"plugin {plugin_name} ({origin}): {problem}; skipped")
            continue
        if model.id in registry.models:
            first = registry.models[model.id]
            registry.problems.append(
                f"plugin {plugin_name} ({origin}): model id {model.id!r} is already registered by {first.origin}; "
                "the first one is kept"
            )
            continue
        registry.models[model.id] = LoadedModel(model, origin, plugin_name, builtin)


def _load_file_module(path: Path) -> ModuleType:
    name = "nvperf_bridge_user_plugin_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_registry(plugin_files: list[str | Path] | tuple[str | Path, ...] = (), *, entry_points: bool = True) -> Registry:
    """All models from the entry-point group, then from ``plugin_files``."""
    registry = Registry()
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    if entry_points:
        # "name version" of each distribution, read once: each .name and .version parses its METADATA file
        # again (the seven built-in models' entry points made it 14 parses)
        dists: dict[int, str] = {}
        for ep in sorted(metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP), key=lambda e: e.name):
            found = getattr(ep, "dist", None)
            if found is None:
                dist = "unknown distribution"
            elif id(found) not in dists:
                meta = found.metadata
                dist = dists[id(found)] = f"{meta['Name']} {meta['Version']}"
            else:
                dist = dists[id(found)]
            origin = f"entry point {ep.name} = {ep.value} ({dist})"
            try:
                module = ep.load()
                manager.register(module, name=f"ep:{ep.name}")
            except Exception as exc:
                registry.problems.append(f"plugin {ep.name} ({origin}): failed to import: {type(exc).__name__}: {exc}; skipped")
                continue
            _register_from(registry, module, ep.name, origin, builtin=ep.value.startswith(BUILTIN_PACKAGE))
    for file in plugin_files:
        path = Path(file)
        origin = f"file {path}"
        if not path.is_file():
            registry.problems.append(f"plugin {path}: no such file; skipped")
            continue
        try:
            module = _load_file_module(path)
            manager.register(module, name=f"file:{path}")
        except Exception as exc:
            registry.problems.append(f"plugin {path.name} ({origin}): failed to import: {type(exc).__name__}: {exc}; skipped")
            continue
        _register_from(registry, module, path.stem, origin)
    return registry
