"""The system probe's report as the dossier keeps it: foreign JSON that
``lockkit/probes/scripts/system_probe.py`` shapes, read through accessors that tolerate a
missing or odd section (a probe of another lockkit, a crash halfway).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["SystemFacts", "TorchFacts"]


@dataclass(frozen=True, kw_only=True)
class TorchFacts:
    """What ``import torch`` said inside the target interpreter."""

    version: str | None = None
    cuda: str | None = None
    hip: str | None = None
    build: str | None = None
    cudnn: Any = None
    miopen: Any = None
    device_count: int | None = None
    devices: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None

    @classmethod
    def from_probe(cls, d: Any) -> TorchFacts:
        if not isinstance(d, Mapping):
            return cls(error="no torch facts")
        return cls(**{f.name: d.get(f.name) for f in fields(cls) if f.name != "devices"},
                   devices=tuple(x for x in d.get("devices") or () if isinstance(x, Mapping)))


@dataclass(frozen=True, kw_only=True)
class SystemFacts:
    """The system probe's report (``lockkit/probes/scripts/system_probe.py`` owns its shape)."""

    raw: Mapping[str, Any]

    @property
    def torch(self) -> TorchFacts:
        return TorchFacts.from_probe(self.raw.get("torch"))

    def section(self, key: str) -> Mapping[str, Any]:
        value = self.raw.get(key)
        return value if isinstance(value, Mapping) else {}
