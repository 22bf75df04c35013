"""TOML and JSON text parsed with one answer for nesting too deep to read.

Python's parsers descend once per level of nesting: ``a = [[[[...`` a hundred thousand
levels deep (100 KB of text) is a ``RecursionError`` in ``tomllib`` (3.11+), in ``tomli``
(3.10; its compiled 2.x builds say "nested more than the allowed 400 levels", still a
RecursionError) and in ``json`` ("maximum recursion depth exceeded while decoding a JSON
array"). No file lockkit reads nests more than a few levels, so such a file is bad input:
one line naming it, never a traceback. A decode error stays the caller's to word, as
before: it is raised unchanged.

Every TOML and JSON text lockkit reads goes through here: its own config and platform
files, locks, wheelhouse manifests, ``diff`` inputs, and the JSON a probe prints from the
environment under test (untrusted too). The line is a ConfigError; a caller whose input
has an error of its own (a platform file, a ``diff`` input, a step's probe) raises that
from it, with the same line.
"""

from __future__ import annotations

import json
from typing import Any

from lockkit._internal.compat import tomllib
from lockkit.errors import ConfigError

__all__ = ["parse_json", "parse_toml", "too_deep"]


def too_deep(where: object, kind: str) -> str:
    """The one line: *where* (a file, or what printed the text) and what it is."""
    inside = "arrays or tables" if kind == "TOML" else "arrays or objects"
    return f"{where}: {kind} nested too deeply to read ({inside} within each other)"


def parse_toml(text: str, where: object) -> dict[str, Any]:
    """``tomllib.loads(text)``; nesting too deep is a :class:`~lockkit.errors.ConfigError`
    naming *where* (exit 2)."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ConfigError(too_deep(where, "TOML")) from None


def parse_json(text: str | bytes, where: object) -> Any:
    """``json.loads(text)``; nesting too deep is a :class:`~lockkit.errors.ConfigError`
    naming *where*."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ConfigError(too_deep(where, "JSON")) from None
