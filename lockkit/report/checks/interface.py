"""One interface for a check's part of the dossier (pip-audit's ``_format/interface.py``):
:class:`CheckRecord`, what every check's record is, and :class:`Recorded`, the declaration
each ``report/checks/<key>.py`` makes of it, which the registry
(:data:`lockkit.report.checks.RECORDS`) lists."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["CheckRecord", "Recorded"]


class CheckRecord(Protocol):
    """What a check leaves for the dossier: a frozen dataclass with its JSON form."""

    @property
    def passed(self) -> bool: ...

    def to_dict(self) -> Any: ...


R = TypeVar("R", bound=CheckRecord)


@dataclass(frozen=True, kw_only=True)
class Recorded(Generic[R]):
    """One check's report side: its key under the dossier's ``checks``, the record type a
    step leaves there (read back with its ``from_dict``), and its ``dossier.md`` section."""

    key: str  # "resume": checks.resume in dossier.json, the step's name
    record: type[R]
    load: Callable[[Mapping[str, Any]], R]  # the record's from_dict
    markdown: Callable[[R], list[str]]  # its section of dossier.md, lines
    shape: type  # the TypedDict its to_dict writes (the shapes test holds it to it)

    def of(self, checks: Mapping[str, object]) -> R | None:
        """This check's record among a run's *checks* (None: it left none)."""
        found = checks.get(self.key)
        return found if isinstance(found, self.record) else None

    def read(self, doc: object) -> R | None:
        """The record from its JSON form (None: the document holds none)."""
        return self.load(doc) if isinstance(doc, Mapping) else None

    def render(self, checks: Mapping[str, object]) -> list[str]:
        found = self.of(checks)
        return self.markdown(found) if found is not None else []
