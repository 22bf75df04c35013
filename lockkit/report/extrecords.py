"""The extensions step's part of the dossier: the declared compiled modules, each with
its import and smoke call on the device, and the locked packages that ship native code.

Frozen dataclasses with ``to_dict`` / ``from_dict``, like the rest of :mod:`records`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from lockkit.report import shapes
from lockkit.report.shapes import ExtensionStatus

__all__ = ["ExtensionCheck", "ExtensionsResult", "NativePackage"]


@dataclass(frozen=True, kw_only=True)
class ExtensionCheck:
    """One ``[verify.extensions]`` module: imported, then its smoke call on *device*."""

    module: str
    status: ExtensionStatus  # not-run: the probe ended before reaching it
    device: str | None = None
    stage: str | None = None  # where it failed: import | smoke
    error: str | None = None
    file: str | None = None
    compiled: bool | None = None  # the module itself is a .so / .pyd / .dylib
    value: str | None = None  # repr of the smoke expression's value
    seconds: float | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> shapes.ExtensionCheckDoc:
        return {"module": self.module, "status": self.status, "device": self.device,
                "stage": self.stage, "error": self.error, "file": self.file,
                "compiled": self.compiled, "value": self.value, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExtensionCheck:
        status = cast(ExtensionStatus, str(d.get("status", "failed")))  # as the probe wrote it
        return cls(module=str(d.get("module")), status=status,
                   device=d.get("device"), stage=d.get("stage"), error=d.get("error"),
                   file=d.get("file"), compiled=d.get("compiled"), value=d.get("value"),
                   seconds=d.get("seconds"))


@dataclass(frozen=True, kw_only=True)
class NativePackage:
    """A locked package whose wheel carries native code: platform-specific tags, or
    shared libraries in its file list (a ``py3-none-any`` wheel can bundle a ``.so``)."""

    name: str
    version: str
    wheel: str
    tags: str  # the wheel's compressed tag set: cp311-cp311-manylinux_2_28_x86_64
    libraries: int  # .so / .pyd / .dylib files inside
    examples: tuple[str, ...] = ()  # the first few of them

    def to_dict(self) -> shapes.NativePackageDoc:
        return {"name": self.name, "version": self.version, "wheel": self.wheel,
                "tags": self.tags, "libraries": self.libraries, "examples": list(self.examples)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NativePackage:
        return cls(name=str(d["name"]), version=str(d.get("version", "")),
                   wheel=str(d.get("wheel", "")), tags=str(d.get("tags", "")),
                   libraries=int(d.get("libraries") or 0),
                   examples=tuple(map(str, d.get("examples") or ())))


@dataclass(frozen=True, kw_only=True)
class ExtensionsResult:
    """What the extensions step found; ``config`` is the table as declared (None: none)."""

    checks: tuple[ExtensionCheck, ...] = ()
    native: tuple[NativePackage, ...] = ()
    device: str | None = None
    config: Mapping[str, Any] | None = None  # foreign: the table as the project wrote it
    hang: shapes.HangDoc | None = None  # lockkit.probes.hang: where the probe stalled

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def first_error(self) -> str | None:
        failed = next((c for c in self.checks if not c.passed), None)
        return (failed.error or f"{failed.module}: {failed.status}") if failed else None

    def to_dict(self) -> shapes.ExtensionsDoc:
        return {"passed": self.passed, "first_error": self.first_error, "device": self.device,
                "config": dict(self.config) if self.config is not None else None,
                "checks": [c.to_dict() for c in self.checks],
                "native_packages": [n.to_dict() for n in self.native],
                "hang": shapes.HangDoc(**self.hang) if self.hang is not None else None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExtensionsResult:
        return cls(checks=tuple(ExtensionCheck.from_dict(c) for c in d.get("checks") or ()),
                   native=tuple(NativePackage.from_dict(n)
                                for n in d.get("native_packages") or ()),
                   device=d.get("device"), config=d.get("config"), hang=d.get("hang"))
