"""The one family of errors nvperf-bridge raises.

Every error carries where it happened, so the CLI can print one line that
names the file and line (input), the profile and key (GPU profiles) or the
model and kernel (models), followed by what to do about it.
"""

from __future__ import annotations

from pathlib import Path


class NvperfError(Exception):
    """Base class: ``str(err)`` is the one-line message the CLI prints."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.__str__())

    def location(self) -> str:
        return ""

    def __str__(self) -> str:
        where = self.location()
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text = f"{text} ({self.hint})"
        return text


class InputError(NvperfError):
    """A problem with an input file; ``line`` is 1-based, or None for the whole file."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        super().__init__(message, hint=hint)

    def location(self) -> str:
        if self.path is None:
            return ""
        return self.path if self.line is None else f"{self.path}:{self.line}"


class ProfileError(NvperfError):
    """A problem with a GPU profile (YAML): names the file and the key."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.key = key
        super().__init__(message, hint=hint)

    def location(self) -> str:
        parts = [p for p in (self.path, self.key) if p]
        return ": ".join(parts)


class ModelError(NvperfError):
    """A model failed as a whole (not one kernel: those get a per-kernel ``error``)."""

    def __init__(
        self,
        message: str,
        *,
        model_id: str | None = None,
        kernel_id: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.model_id = model_id
        self.kernel_id = kernel_id
        super().__init__(message, hint=hint)

    def location(self) -> str:
        parts = []
        if self.model_id:
            parts.append(f"model {self.model_id}")
        if self.kernel_id:
            parts.append(f"kernel {self.kernel_id}")
        return ", ".join(parts)


class PluginError(NvperfError):
    """A plugin could not be loaded or registered."""

    def __init__(self, message: str, *, plugin: str | None = None, hint: str | None = None) -> None:
        self.plugin = plugin
        super().__init__(message, hint=hint)

    def location(self) -> str:
        return f"plugin {self.plugin}" if self.plugin else ""


class OutputError(NvperfError):
    """An output could not be written (exists without --force, unwritable folder, ...)."""

    def __init__(self, message: str, *, path: str | Path | None = None, hint: str | None = None) -> None:
        self.path = None if path is None else str(path)
        super().__init__(message, hint=hint)

    def location(self) -> str:
        return self.path or ""


class UsageError(NvperfError):
    """The command line asks for something that cannot be done (exit code 2)."""

    exit_code = 2
