"""Reading a table key by key, every problem collected and named by its key path.

The one reader of lockkit's own files: ``lockkit.toml`` (or ``[tool.lockkit]``) with its
``[verify.*]`` and ``[ci]`` tables, the pyproject.toml inputs (:mod:`lockkit.config`) and
the platform files (:mod:`lockkit.platforms.definitions`). A file's mistakes are reported
together, one ``key.path: what was expected, got what`` each, in one error naming the file
once, so a user fixes them in one go (packaging's ``PylockValidationError`` does the same).

Two wordings of one problem are older than this reader, and users and tests know both,
so a reader says each through a parameter: an unknown key (*unknown*: ``unknown key
'verify.embeding'`` in lockkit.toml and [verify.extensions], ``verify.embedding.bogus:
unknown key`` in the other [verify.*] tables, ``os: unknown field`` in a platform file),
and a value not among the allowed ones (:meth:`KeyReader.choice`).

The problems end as one :class:`~lockkit.errors.ConfigError` (:meth:`KeyReader.raise_if_any`);
a file with an error class of its own (a platform file's ``PlatformError``) is raised as
that by its reader, from :meth:`KeyReader.problems`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lockkit._internal.redact import masked
from lockkit.errors import ConfigError

__all__ = ["KeyReader", "Problems", "Unknown", "did_you_mean"]

Unknown = Literal["unknown key 'path'", "path: unknown key", "path: unknown field"]


@dataclass(frozen=True)
class Problems:
    """Every problem a reader collected, as one error says them."""

    message: str  # the file once, then each problem; credentials taken out
    hint: str | None  # the problems' own hints, else the reader's; None: the class's


def did_you_mean(name: str, known: Iterable[str], prefix: str = "") -> str:
    """`` (did you mean '<prefix><closest>'?)``, or nothing when no known name is close."""
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean '{prefix}{close[0]}'?)" if close else ""


class KeyReader:
    """Collects the problems of one file (or one flag, or one table) before raising them
    together. :meth:`at` gives the reader of a table under this one: same problems, its
    keys named under that table's path."""

    def __init__(self, source: Path | str | None = None, *, where: str = "",
                 unknown: Unknown = "unknown key 'path'") -> None:
        self.source = source
        self.where = where
        self.unknown_says = unknown
        self.errors: list[str] = []
        self.hints: list[str] = []

    def at(self, key: str) -> KeyReader:
        """The reader of the table at *key* (``backend``, ``modules[0]``): problems shared."""
        child = KeyReader(self.source, where=self.path(key), unknown=self.unknown_says)
        child.errors, child.hints = self.errors, self.hints
        return child

    def path(self, key: str) -> str:
        """*key*'s full path: ``verify.embedding`` + ``dim`` -> ``verify.embedding.dim``."""
        return f"{self.where}.{key}" if self.where and key else self.where or key

    def fail(self, key: str, message: str, hint: str | None = None) -> None:
        path = self.path(key)
        self.errors.append(f"{path}: {message}" if path else message)
        if hint and hint not in self.hints:
            self.hints.append(hint)

    def unknown(self, table: Mapping[str, object], known: Iterable[str]) -> None:
        """Each key of *table* not in *known*, with the closest known one suggested."""
        known = sorted(known)
        for key in sorted(set(table) - set(known)):
            if self.unknown_says == "unknown key 'path'":
                tip = did_you_mean(key, known, f"{self.where}." if self.where else "")
                self.errors.append(f"unknown key '{self.path(key)}'{tip}")
            else:
                self.fail(key, self.unknown_says.removeprefix("path: ")
                          + did_you_mean(key, known))

    def require(self, table: Mapping[str, object], keys: Iterable[str],
                why: str | None = "required") -> None:
        """Each of *keys* absent from *table*: ``key: missing (<why>)``."""
        for key in keys:
            if key not in table:
                self.fail(key, f"missing ({why})" if why else "missing")

    def typed(self, key: str, value: object, kind: type | tuple[type, ...],
              expected: str | None = None) -> Any:
        """*value* when it is a *kind* (None when absent); else ``expected <expected>, got
        <value>``, where *expected* defaults to the type's name (``expected str``)."""
        if value is None or isinstance(value, kind) and not isinstance(value, bool):
            return value
        name = expected or getattr(kind, "__name__", "")
        self.fail(key, f"expected {name}, got {value!r}")
        return None

    def table(self, data: Mapping[str, object], key: str, name: str = "") -> dict[str, Any]:
        """``data[key]`` as a table: empty when absent, or when not a table (recorded); the
        table as parsed, foreign until read through this reader."""
        found = self.typed(key, data.get(key), dict, f"a table ({name})" if name else "a table")
        return found if found is not None else {}

    def string(self, key: str, value: object, expected: str,
               pattern: re.Pattern[str] | None = None) -> str | None:
        """An optional string, matching *pattern* when given."""
        if value is None:
            return None
        if isinstance(value, str) and (pattern is None or pattern.fullmatch(value)):
            return value
        self.fail(key, f"expected {expected}, got {value!r}")
        return None

    def text(self, key: str, value: object, expected: str = "a non-empty string") -> str | None:
        """An optional string with something in it."""
        if value is not None and (not isinstance(value, str) or not value.strip()):
            self.fail(key, f"expected {expected}, got {value!r}")
            return None
        return value

    def strings(self, key: str, value: object, *, one: bool = False,
                empty: bool = True) -> tuple[str, ...] | None:
        """A list of strings (with *one*, a single string is a list of one; without
        *empty*, the list may not be empty)."""
        if value is None:
            return None
        if one and isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value) \
                and (value or empty):
            return tuple(value)
        kind = "a string or a list of strings" if one else \
            "a list of strings" if empty else "a non-empty list of strings"
        self.fail(key, f"expected {kind}, got {value!r}")
        return None

    def choice(self, key: str, value: object, allowed: tuple[str, ...], *,
               says: Literal["expected one of", "is not one of"] = "expected one of") -> Any:
        """An optional value among *allowed*; else ``expected one of a, b, got 'x'`` (the
        [verify.*] tables) or ``'x' is not one of a, b`` (the platform files)."""
        if value is None or value in allowed:
            return value
        listed = ", ".join(allowed)
        self.fail(key, f"expected one of {listed}, got {value!r}" if says == "expected one of"
                  else f"{value!r} is not one of {listed}")
        return None

    def number(self, key: str, value: object, low: float, high: float = math.inf, *,
               integer: bool = False, expected: str | None = None) -> Any:
        """An optional finite number (an int with *integer*; never a bool) in [low, high];
        the problem says ``expected an integer in [1, inf]`` unless *expected* words it."""
        if value is None:
            return None
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) \
                or not math.isfinite(value) or not low <= value <= high:
            kind = "an integer" if integer else "a number"
            self.fail(key, f"expected {expected or f'{kind} in [{low:g}, {high:g}]'}, "
                           f"got {value!r}")
            return None
        return value if integer else float(value)

    def problems(self, hint: str | None = None) -> Problems | None:
        """The problems as one message naming the file once, then every problem; values
        are echoed, so credentials are taken out. *hint* is said when no problem brought
        its own. None: no problem. A caller with its own error class raises it from this."""
        if not self.errors:
            return None
        prefix = f"{self.source}: " if self.source is not None else ""
        return Problems(message=masked(prefix + "; ".join(self.errors)),
                        hint="; ".join(self.hints) or hint)

    def raise_if_any(self, hint: str | None = None) -> None:
        """The :meth:`problems`, if any, as one :class:`~lockkit.errors.ConfigError`."""
        found = self.problems(hint)
        if found is not None:
            raise ConfigError(found.message, hint=found.hint)
