"""The project checks' tables, one module each, read when the project loads so a mistake
ends the command before any install: ``[verify.application]`` and the ``[verify]``
waiver (:mod:`~lockkit.config.checks.application`), ``[verify.embedding]``
(:mod:`~lockkit.config.checks.embedding`), ``[verify.extensions]``
(:mod:`~lockkit.config.checks.extensions`) and ``[verify.resume]``
(:mod:`~lockkit.config.checks.resume`), with the rules their tables share
(:mod:`~lockkit.config.checks.rules`). Each module holds its table's frozen dataclass,
its validation, its hint, and its :class:`~lockkit.config.checks.rules.Check`
(``CHECK``: the key, the reader, the hint, the fields it fills and their types), named in
:data:`CHECKS`, the config side of the checks' registry; ``load_project`` runs every
check's reader into one :class:`VerifyConfig`, which holds whatever they filled and knows
no check by name. The step that runs each check and its verdict live in
``lockkit.verify.checks.<check>``, which imports the dataclass from here (config sits
below verify, never the other way round) and lists the steps under the same keys (why the
registry is split by stage: :mod:`lockkit.report.checks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # each check's module is imported when a [verify] table is read
    from lockkit.config.checks.rules import Check, Fields

__all__ = ["CHECKS", "VerifyConfig", "table_checks", "verify_keys"]

_T = TypeVar("_T")

# each check's module (lockkit.config.checks.<key>, whose CHECK reads it), in the order the
# problems of its table are reported
CHECKS = ("extensions", "resume", "application", "embedding")


def verify_keys() -> frozenset[str]:
    """``[verify]``'s keys: each check's table, and ``reason`` (``application = "none"``'s)."""
    return frozenset({*CHECKS, "reason"})


def table_checks() -> list[Check]:
    """Every check's reader, its module imported now: a ``[verify]`` table is being read
    (compile, which never reads one, imports none of them)."""
    return [import_module(f"{__name__}.{key}").CHECK for key in CHECKS]


@dataclass(frozen=True, kw_only=True)
class VerifyConfig:
    """The ``[verify]`` table: every check's table validated when the project loads, by
    the field its reader filled (``"resume"``, ``"application_waiver"``); absent: the
    project declares no such check."""

    tables: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def of(cls, fields: Fields, checks: list[Check]) -> VerifyConfig:
        """The fields the *checks*' readers filled, each checked to be the type its check
        declares (a reader names its fields as text: a wrong one is lockkit's bug, said
        here)."""
        kinds = {name: kind for check in checks for name, kind in check.fields.items()}
        for name, value in fields.items():
            if name not in kinds:
                raise TypeError(f"VerifyConfig has no field {name!r}")
            _typed(name, value, kinds[name])
        return cls(tables={k: v for k, v in fields.items() if v is not None})

    def get(self, name: str, kind: type[_T]) -> _T | None:
        """The table its check's reader filled as *name*, of type *kind* (None: none)."""
        return _typed(name, self.tables.get(name), kind)


def _typed(name: str, value: object, kind: type[_T]) -> _T | None:
    if value is None or isinstance(value, kind):
        return value
    raise TypeError(f"VerifyConfig.{name}: expected {kind.__name__}, got {type(value).__name__}")
