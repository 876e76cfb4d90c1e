"""Option values of the command line converted without pydantic (start-up speed only).

Recent typer releases convert every parameter value through a pydantic
``TypeAdapter`` built the first time the parameter is seen: each command with
options imported pydantic and built a dozen adapters before doing any work
(0.1-0.25 s, more than the whole of ``--help``). The CLI's parameters are all
plain (``str``, ``bool``, ``int``, ``float`` with bounds, ``Path``, and lists
of ``str`` and ``Path``), so ``install`` puts a converter in front of typer's
that handles those values the way typer's adapters do (the same types, the
same path checks) and hands anything else, and every value it does not
accept, to typer's own converter: a bad value gets typer's usual message,
word for word, because typer produces it.

With a typer that has no such hook (older releases convert through click
types, without pydantic) ``install`` changes nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, get_args, get_origin

_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")  # what int() and pydantic read alike
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DECLINED = object()  # a value left to typer's converter
_typer_build: Callable[[Any], Any] | None = None  # typer's own converter factory, once installed


def install() -> bool:
    """Route plain parameters through ``PlainParam``; True when typer has the hook (idempotent)."""
    global _typer_build
    if _typer_build is not None:
        return True
    try:
        from typer import core
        from typer._coercion import RuntimeParam
    except ImportError:
        return False
    typer_build = getattr(core, "build_runtime_param", None)
    if typer_build is None or not hasattr(RuntimeParam, "_coerce_value"):
        return False

    @dataclass(frozen=True)
    class PlainParam(RuntimeParam):  # type: ignore[misc, valid-type]
        """Converts a plain value here; anything else goes to typer's converter, built on first need."""

        leaf: type
        many: bool
        convert: Callable[[Any, Any, Any], Any]
        descriptor: Any
        fallback: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.many:
                items = value if isinstance(value, (list, tuple)) else [value]
                out = [self.convert(item, param, ctx) for item in items]
                if not any(item is _DECLINED for item in out):
                    return out
            else:
                out = self.convert(value, param, ctx)
                if out is not _DECLINED:
                    return out
            if self.fallback is None:  # typer's converter, built (pydantic imported) only when needed
                object.__setattr__(self, "fallback", typer_build(self.descriptor))
            return self.fallback._coerce_value(value, param=param, ctx=ctx)

    def build(descriptor: Any) -> Any:
        # typer's internals are private: a release that changes them gets typer's own converter, never a crash
        try:
            plain = _plain_converter(descriptor)
            if plain is not None:
                leaf, many, convert = plain
                return PlainParam(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation,
                                  leaf=leaf, many=many, convert=convert, descriptor=descriptor)
        except Exception:  # noqa: BLE001 (any change in typer's private API)
            pass
        return typer_build(descriptor)

    core.build_runtime_param = build
    _typer_build = typer_build
    return True


def typer_runtime_param(descriptor: Any) -> Any:
    """typer's own converter for a parameter (what ``install`` falls back to; tests compare with it)."""
    if _typer_build is None:
        raise RuntimeError("cli_params.install() has not replaced typer's converter")
    return _typer_build(descriptor)


def _plain_converter(descriptor: Any) -> tuple[type, bool, Callable[[Any, Any, Any], Any]] | None:
    """(leaf type, list?, converter) for a plain parameter, None for anything typer should convert."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
        return None
    annotation = descriptor.annotation
    many = get_origin(annotation) is list
    if many:
        args = get_args(annotation)
        if len(args) != 1:
            return None
        annotation = args[0]
    if annotation is str:
        return str, many, _str_value
    if annotation is bool:
        return bool, many, _bool_value
    if annotation in (int, float):
        if getattr(info, "clamp", False):
            return None
        return annotation, many, _number_converter(annotation, info.min, info.max)
    if annotation is Path and getattr(info, "path_type", None) is None:
        return Path, many, _path_converter(info)
    return None


def _str_value(value: Any, _param: Any, _ctx: Any) -> Any:
    return value if type(value) is str else _DECLINED


def _bool_value(value: Any, _param: Any, _ctx: Any) -> Any:
    return value if type(value) is bool else _DECLINED


def _number_converter(kind: type, low: Any, high: Any) -> Callable[[Any, Any, Any], Any]:
    pattern = _INT if kind is int else _FLOAT

    def convert(value: Any, _param: Any, _ctx: Any) -> Any:
        if type(value) is kind:
            number = value
        elif type(value) is str and pattern.fullmatch(value):
            number = kind(value)
        else:
            return _DECLINED
        if kind is float and not math.isfinite(number):
            return _DECLINED
        if (low is not None and number < low) or (high is not None and number > high):
            return _DECLINED  # out of bounds: typer says so in its own words
        return number

    return convert


def _path_converter(info: Any) -> Callable[[Any, Any, Any], Any]:
    from typer._param_types import coerce_cli_path

    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, Path):
            path = value
        elif type(value) is str and value:
            path = Path(value)  # what typer's Path adapter makes of a string
        else:
            return _DECLINED
        # typer's checks (exists, file or folder, readable...) and messages, on a value already a Path
        return coerce_cli_path(path, info, path_type=Path, param=param, ctx=ctx)

    return convert


__all__ = ["install", "typer_runtime_param"]
