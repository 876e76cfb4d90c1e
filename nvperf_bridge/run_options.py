"""What a user sets for one run: model options checked against what each model reads, and
machine constants overridden with ``--constant MODEL.NAME=VALUE``.

Options: models declare no option list, so each model's ``evaluate`` gets its
options in a mapping that records the keys it asks for (``get``, ``in``,
``[]``). A key the user gave that the model never asked for is a typo and an
error, with the closest key the model did ask for as a did-you-mean. A model
that iterates its options (``**options``, ``keys()``) may read any key, so it
is not checked; a model that failed as a whole is not checked either.

Constants: an override replaces the GPU profile's value for this run only,
with status ``overridden`` and source ``--constant``, so every report's
constants table shows it as such; a name the model does not have, or a value
outside the constant's physical bounds, is an error.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any, Iterator, Mapping

from nvperf_bridge.errors import UsageError

INTERNAL_OPTIONS = frozenset({"model_data"})  # set by the CLI itself (--model-data), never typed as --option


def did_you_mean(word: str, choices: list[str] | tuple[str, ...] | set[str]) -> str:
    """' (did you mean X?)' for the closest choice, else ''."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


class TrackedOptions(dict):
    """A model's options that remember which keys the model asked for."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        super().__init__(options)
        self.asked: set[str] = set()
        self.iterated = False

    def get(self, key: Any, default: Any = None) -> Any:
        self.asked.add(str(key))
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.asked.add(str(key))
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        self.asked.add(str(key))
        return super().__contains__(key)

    def keys(self) -> Any:
        self.iterated = True
        return super().keys()

    def items(self) -> Any:
        self.iterated = True
        return super().items()

    def __iter__(self) -> Iterator[Any]:
        self.iterated = True
        return super().__iter__()


class OptionWatch:
    """A model with its evaluate's options tracked (everything else passes through)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.tracked: TrackedOptions | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def evaluate(self, kernels: Any, gpu: Any, options: Mapping[str, Any]) -> Any:
        self.tracked = TrackedOptions(options)
        return self._model.evaluate(kernels, gpu, self.tracked)


def watch_options(registry: Any, options: Mapping[str, Mapping[str, Any]]) -> tuple[Any, dict[str, OptionWatch]]:
    """A registry whose models that were given options are wrapped in an ``OptionWatch``."""
    watches: dict[str, OptionWatch] = {}
    models = {}
    for mid, loaded in registry.models.items():
        if set(options.get(mid, {})) - INTERNAL_OPTIONS:
            watches[mid] = OptionWatch(loaded.model)
            models[mid] = dataclasses.replace(loaded, model=watches[mid])
        else:
            models[mid] = loaded
    return dataclasses.replace(registry, models=models), watches


def _unread_option(watch: OptionWatch, run: Any, given: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """(the first key of ``given`` the model never asked for, the keys it did ask for), or None when
    every key was read or the model's reading cannot be judged (it iterated its options, or failed)."""
    tracked = watch.tracked
    if tracked is None or tracked.iterated or run is None or run.result is None or not tracked.asked:
        return None
    unknown = [key for key in given if key not in tracked.asked and key not in INTERNAL_OPTIONS]
    return (unknown[0], sorted(tracked.asked - INTERNAL_OPTIONS)) if unknown else None


def check_options_read(watches: dict[str, OptionWatch], runs: Mapping[str, Any],
                       options: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise on the first option a model that ran never asked for."""
    for mid, watch in watches.items():
        unread = _unread_option(watch, runs.get(mid), options.get(mid, {}))
        if unread:
            key, known = unread
            raise UsageError(f"model {mid} has no option {key!r}{did_you_mean(key, known)}",
                             hint=f"its options: {', '.join(known)}")


def check_profile_options_read(watches: dict[str, OptionWatch], runs: Mapping[str, Any], profile: Any) -> None:
    """Raise on the first option under the profile's ``model_options`` that its model never asked
    for: a misspelt name in a hand-edited profile would otherwise be ignored without a word."""
    from nvperf_bridge.errors import ProfileError

    for mid, given in (profile.raw.get("model_options") or {}).items():
        watch = watches.get(mid)
        unread = _unread_option(watch, runs.get(mid), given or {}) if watch is not None else None
        if unread:
            key, known = unread
            raise ProfileError(f"model {mid} has no option {key!r}{did_you_mean(key, known)}",
                               path=profile.path or profile.id, key=f"model_options.{mid}.{key}",
                               hint=f"its options: {', '.join(known)}; fix or remove the line")


def is_extension(value: Any, extension_values: tuple[Any, ...]) -> bool:
    """Whether an option value is one its model declares beyond the paper (``extension_options``);
    text compares without case, as ``choice_option`` reads it."""
    def norm(v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v
    return any(norm(value) == norm(each) for each in extension_values)


def describe_options(options: Mapping[str, Any], extension_options: Mapping[str, tuple[Any, ...]],
                     options_from: Mapping[str, str] | None = None) -> list[str]:
    """One text per option a model ran with (set by the user or a profile; the model's defaults
    are not listed): ``name=value``, where it came from, and EXTENSION where the model declares
    the value beyond its paper. What reports and ``calibrate`` print beside a model's numbers."""
    texts = []
    for name, value in options.items():
        if name in INTERNAL_OPTIONS:
            continue
        notes = [options_from[name]] if options_from and name in options_from else []
        if is_extension(value, tuple(extension_options.get(name, ()))):
            notes.append("EXTENSION, not the paper")
        shown = str(value).lower() if isinstance(value, bool) else value
        texts.append(f"{name}={shown}" + (f" ({'; '.join(notes)})" if notes else ""))
    return texts


def split_assignment(item: str, flag: str, shape: str, example: str) -> tuple[str, str, str]:
    """``MODEL.KEY=VALUE`` as (model, key, value text); a usage error naming ``flag`` otherwise."""
    name, sep, text = item.partition("=")
    model_id, dot, key = name.partition(".")
    if not sep or not dot or not model_id.strip() or not key.strip():
        raise UsageError(f"{flag} {item!r} is not {shape}", hint=f"e.g. {flag} {example}")
    return model_id.strip(), key.strip(), text


def parse_constants(items: list[str]) -> dict[str, dict[str, float]]:
    """``MODEL.NAME=VALUE`` pairs into {model: {name: value}} (the value must be a finite number)."""
    out: dict[str, dict[str, float]] = {}
    for item in items:
        model_id, constant, text = split_assignment(item, "--constant", "MODEL.NAME=VALUE", "hong-kim.Mem_LD=420")
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"--constant {item!r}: {text!r} is not a number") from None
        if not math.isfinite(value):
            raise UsageError(f"--constant {item!r}: the value must be finite")
        out.setdefault(model_id, {})[constant] = value
    return out


def override_constants(gpu: Any, registry: Any, constants: Mapping[str, Mapping[str, float]]) -> Any:
    """A copy of the GPU profile with the given model constants replaced (status 'overridden')."""
    from nvperf_bridge.gpu import ModelConstant

    if not constants:
        return gpu
    table = {mid: dict(values) for mid, values in gpu.model_constants.items()}
    for mid, values in constants.items():
        if mid not in registry.models:
            raise UsageError(f"--constant names model {mid!r}, which is not installed"
                             f"{did_you_mean(mid, set(registry.models))}",
                             hint="run 'nvperf-bridge models' to list the installed ones")
        specs = {spec.name: spec for spec in getattr(registry.models[mid].model, "constants", ())}
        for name, value in values.items():
            spec = specs.get(name)
            if spec is None:
                listed = ", ".join(sorted(specs)) or "none"
                raise UsageError(f"model {mid} has no constant {name!r}{did_you_mean(name, set(specs))}",
                                 hint=f"its constants: {listed}")
            low, high = spec.bounds
            if not low <= value <= high:
                raise UsageError(f"--constant {mid}.{name}={value:g} is outside its physical bounds "
                                 f"[{low:g}, {high:g}] {spec.unit}".rstrip())
            table.setdefault(mid, {})[name] = ModelConstant(value, "--constant (this run only)", "overridden")
    return dataclasses.replace(gpu, model_constants=table)


__all__ = ["OptionWatch", "TrackedOptions", "check_options_read", "check_profile_options_read", "describe_options",
           "did_you_mean", "is_extension", "override_constants",
           "parse_constants", "split_assignment", "watch_options"]
