"""The project checks' tables, one module each, read when the project loads so a mistake
ends the command before any install: ``[verify.application]`` and the ``[verify]``
waiver (:mod:`~lockkit.config.checks.application`), ``[verify.embedding]``
(:mod:`~lockkit.config.checks.embedding`), ``[verify.extensions]``
(:mod:`~lockkit.config.checks.extensions`) and ``[verify.resume]``
(:mod:`~lockkit.config.checks.resume`), with the rules their tables share
(:mod:`~lockkit.config.checks.rules`). Each module holds its table's frozen dataclass,
its validation, its hint, and its :class:`~lockkit.config.checks.rules.Check`
(``CHECK``: the key, the reader, the hint), named in :data:`CHECKS`; ``load_project``
runs every check's reader into one :class:`VerifyConfig`. The step that runs each check
and its verdict live in ``lockkit.verify.checks.<check>``, which imports the dataclass
from here (config sits below verify, never the other way round) and lists the steps
under the same keys.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # each check's module is imported when a [verify] table is read
    from lockkit.config.checks.application import ApplicationConfig
    from lockkit.config.checks.embedding import EmbeddingConfig
    from lockkit.config.checks.extensions import ExtensionsConfig
    from lockkit.config.checks.resume import ResumeConfig
    from lockkit.config.checks.rules import Check, Fields

__all__ = ["CHECKS", "VERIFY_KEYS", "VerifyConfig", "table_checks"]

_T = TypeVar("_T")

# each check's module (lockkit.config.checks.<key>, whose CHECK reads it), in the order the
# problems of its table are reported
CHECKS = ("extensions", "resume", "application", "embedding")
VERIFY_KEYS = frozenset({*CHECKS, "reason"})  # [verify]'s keys; reason: application = "none"'s
def table_checks() -> list[Check]:
    """Every check's reader, its module imported now: a ``[verify]`` table is being read
    (compile, which never reads one, imports none of them)."""
    return [import_module(f"{__name__}.{key}").CHECK for key in CHECKS]


@dataclass(frozen=True, kw_only=True)
class VerifyConfig:
    """The ``[verify]`` table, every check's table validated when the project loads; None:
    the project declares no such check."""

    application: ApplicationConfig | None = None  # [verify.application]
    application_waiver: str | None = None  # [verify] application = "none": its reason
    embedding: EmbeddingConfig | None = None  # [verify.embedding]
    extensions: ExtensionsConfig | None = None  # [verify.extensions]
    resume: ResumeConfig | None = None  # [verify.resume]

    @classmethod
    def of(cls, fields: Fields) -> VerifyConfig:
        """The fields the checks' readers filled, each checked to be its field's type (a
        reader names its fields as text: a wrong one is lockkit's bug, said here)."""
        from lockkit.config.checks.application import ApplicationConfig
        from lockkit.config.checks.embedding import EmbeddingConfig
        from lockkit.config.checks.extensions import ExtensionsConfig
        from lockkit.config.checks.resume import ResumeConfig

        unknown = set(fields) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"VerifyConfig has no field {sorted(unknown)[0]!r}")
        return cls(application=_field(fields, "application", ApplicationConfig),
                   application_waiver=_field(fields, "application_waiver", str),
                   embedding=_field(fields, "embedding", EmbeddingConfig),
                   extensions=_field(fields, "extensions", ExtensionsConfig),
                   resume=_field(fields, "resume", ResumeConfig))


def _field(fields: Fields, name: str, kind: type[_T]) -> _T | None:
    value = fields.get(name)
    if value is None or isinstance(value, kind):
        return value
    raise TypeError(f"VerifyConfig.{name}: expected {kind.__name__}, got {type(value).__name__}")
