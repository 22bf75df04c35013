"""Reading a config table key by key, every problem collected and named by its key path.

The config-side twin of the platform loader's checker (``lockkit.platforms``): a file's
mistakes are reported together, one ``key.path: what was expected, got what`` each, in
one :class:`~lockkit.errors.ConfigError` naming the file, so a user fixes them in one go.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lockkit.errors import ConfigError
from lockkit.redact import redact

__all__ = ["Checker", "Runner", "runner_labels"]

Runner = str | list[str]  # one runner label, or labels a runner must all carry


class Checker:
    """Collects the problems of one file (or one flag) before raising them together."""

    def __init__(self, source: Path | str | None) -> None:
        self.source = source
        self.errors: list[str] = []
        self.hints: list[str] = []

    def fail(self, key: str, message: str, hint: str | None = None) -> None:
        self.errors.append(f"{key}: {message}" if key else message)
        if hint and hint not in self.hints:
            self.hints.append(hint)

    def unknown(self, table: dict[str, Any], known: Iterable[str], where: str = "") -> None:
        """Each key not in *known*, with the closest known one suggested."""
        known = sorted(known)
        for key in sorted(set(table) - set(known)):
            close = difflib.get_close_matches(key, known, n=1)
            tip = f" (did you mean '{where}{close[0]}'?)" if close else ""
            self.errors.append(f"unknown key '{where}{key}'{tip}")

    def table(self, data: dict[str, Any], key: str, kind: str) -> dict[str, Any]:
        """``data[key]`` as a table (empty when absent or not a table, which is recorded)."""
        value = data.get(key, {})
        if isinstance(value, dict):
            return value
        self.fail(key, f"expected a table ({kind}), got {value!r}")
        return {}

    def string(self, data: dict[str, Any], key: str, expected: str,
               pattern: re.Pattern[str] | None = None) -> str | None:
        """An optional string key, matching *pattern* when given."""
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, str) and (pattern is None or pattern.fullmatch(value)):
            return value
        self.fail(key, f"expected {expected}, got {value!r}")
        return None

    def strings(self, data: dict[str, Any], key: str, *,
                one: bool = False) -> tuple[str, ...] | None:
        """A list of strings (or, with *one*, a single string taken as a list of one)."""
        if key not in data:
            return None
        value = data[key]
        if one and isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        kind = "a string or a list of strings" if one else "a list of strings"
        self.fail(key, f"expected {kind}, got {value!r}")
        return None

    def raise_if_any(self) -> None:
        if self.errors:
            prefix = f"{self.source}: " if self.source is not None else ""
            raise ConfigError(redact(prefix + "; ".join(self.errors)),  # values are echoed
                              hint="; ".join(self.hints) or None)


def runner_labels(value: Any) -> Runner | None:
    """A ``[ci.runners]`` value with its labels stripped, or None when it is not one label
    or a non-empty list of labels."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(x, str) and x.strip() for x in value):
        return [x.strip() for x in value]
    return None
