"""A lock's ``[tool.lockkit]`` table, typed: :class:`LockMeta` and its :class:`Backend`.

Every ``[tool.lockkit]`` key is spelled here and nowhere else: compile writes the table with
:meth:`LockMeta.to_table` (:func:`with_meta`), readers take :attr:`lockkit.lock.model.Lock.meta`
(the lock is read in :mod:`lockkit.lock.model`, which checks the table with
:meth:`LockMeta.of`). The few places that read a table lockkit did not check (a
wheelhouse's own ``pylock.toml``, an untrusted file) use :func:`named_platform` and
:func:`python_of`, which never raise on its shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockkit.errors import ConfigError
from lockkit.platforms.definitions import KINDS, Kind

__all__ = ["NOT_CONTENT", "TOOL", "Backend", "LockMeta", "named_platform", "own_table",
           "python_of", "with_meta"]

_AGAIN = "compile the lock again"


@dataclass(frozen=True, kw_only=True)
class Backend:
    """``[tool.lockkit.backend]``: the platform's backend when the lock was written."""

    kind: Kind
    version: str = ""


@dataclass(frozen=True, kw_only=True)
class LockMeta:
    """``[tool.lockkit]``, typed. Every field is optional: a PEP 751 lock another tool wrote
    has none (``LockMeta()``), and a wheelhouse's ``pylock.toml`` adds ``wheelhouse-of``.
    Keys a newer lockkit writes are kept, as read, in *extra*."""

    platform: str | None = None
    platform_fingerprint: str | None = None
    backend: Backend | None = None
    torch_index: str | None = None  # "" for a platform on the default index
    python: str | None = None
    lock_format: int | None = None
    inputs_fingerprint: str | None = None
    lockkit_version: str | None = None
    uv_version: str | None = None
    hashed_by_lockkit: tuple[str, ...] | None = None
    packages_digest: str | None = None
    inputs: Mapping[str, Any] | None = None  # lockkit.lock.freshness.inputs_record
    wheelhouse_of: Mapping[str, str] | None = None  # a wheelhouse's lock: {lock, sha256}
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_table(self) -> dict[str, Any]:
        """The table as compile writes it, in its order (the lock's bytes depend on it)."""
        table: dict[str, Any] = {}
        for key, (attr, _, _) in _KEYS.items():
            value = getattr(self, attr)
            if value is None:
                continue
            if isinstance(value, Backend):
                value = {"kind": value.kind, "version": value.version}
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            table[key] = value
        return {**table, **self.extra}

    def identity(self) -> dict[str, Any]:
        """What ``lockkit diff`` compares of the table (its code layer, as ``lock.<key>``):
        the platform, the inputs fingerprint and the PyTorch index, where recorded."""
        table = self.to_table()
        return {k: table[k] for k in ("platform", "inputs-fingerprint", "torch-index")
                if k in table}

    @classmethod
    def of(cls, data: Mapping[str, Any], where: object) -> LockMeta:
        """The ``[tool.lockkit]`` of a lock's tables *data* (:meth:`from_table`)."""
        return cls.from_table(_own(data), where)

    @classmethod
    def from_table(cls, table: Any, where: object) -> LockMeta:
        """A ``[tool.lockkit]`` table checked key by key; every bad key of it in one
        :class:`~lockkit.errors.ConfigError` line naming *where* and the key path."""
        if table is None:
            return cls()
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: tool.lockkit: not a table ({table!r})", hint=_AGAIN)
        values: dict[str, Any] = {}
        problems: list[str] = []
        for key, (attr, expected, check) in _KEYS.items():
            if key not in table:
                continue
            value = check(table[key])
            if value is None:
                problems.append(f"tool.lockkit.{key}: expected {expected}, got "
                                f"{table[key]!r}")
            values[attr] = value
        if problems:
            raise ConfigError(f"{where}: " + "; ".join(problems), hint=_AGAIN)
        extra = {k: v for k, v in table.items() if k not in _KEYS}
        return cls(**values, extra=extra)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _python(value: Any) -> str | None:
    return value if isinstance(value, str) and re.fullmatch(r"\d+\.\d+", value) else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _strings(value: Any) -> tuple[str, ...] | None:
    ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    return tuple(value) if ok else None


def _table(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _backend(value: Any) -> Backend | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("version", ""), str):
        return None
    kind = next((k for k in KINDS if k == value.get("kind")), None)  # typed as a Kind
    return None if kind is None else Backend(kind=kind, version=value.get("version", ""))


def _of(value: Any) -> Mapping[str, str] | None:
    ok = isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())
    return value if ok else None


# key -> (field, what a value must be, its check: the value as typed, None when it is not)
_KEYS: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    "platform": ("platform", "a platform name", _str),
    "platform-fingerprint": ("platform_fingerprint", "a string", _str),
    "backend": ("backend", f"a table with kind and version, kind one of {', '.join(KINDS)}",
                _backend),
    "torch-index": ("torch_index", "a URL or \"\"", _str),
    "python": ("python", "a version such as \"3.12\"", _python),
    "lock-format": ("lock_format", "an integer", _int),
    "inputs-fingerprint": ("inputs_fingerprint", "a string", _str),
    "lockkit-version": ("lockkit_version", "a string", _str),
    "uv-version": ("uv_version", "a string", _str),
    "hashed-by-lockkit": ("hashed_by_lockkit", "a list of file names", _strings),
    "packages-digest": ("packages_digest", "a string", _str),
    "inputs": ("inputs", "a table", _table),
    "wheelhouse-of": ("wheelhouse_of", "a table of strings", _of),
}


TOOL = "tool"  # PEP 751's table of tools' own tables; lockkit's is [tool.lockkit]
# what a lock records of the tools that wrote it, not of its content (compile --locked)
NOT_CONTENT = ("lockkit-version", "uv-version")


def _own(data: Mapping[str, Any]) -> Any:
    """The raw ``[tool.lockkit]`` of *data*; None where a level is missing or no table."""
    tool = data.get(TOOL)
    return tool.get("lockkit") if isinstance(tool, Mapping) else None


def own_table(data: Mapping[str, Any]) -> dict[str, Any]:
    """The raw ``[tool.lockkit]`` of tables nobody checked; {} where it is no table."""
    own = _own(data)
    return own if isinstance(own, dict) else {}


def with_meta(doc: dict[str, Any], meta: LockMeta) -> dict[str, Any]:
    """*doc* (a lock's tables) with *meta* as its ``[tool.lockkit]``."""
    return {**doc, TOOL: {"lockkit": meta.to_table()}}


def named_platform(data: Mapping[str, Any]) -> str | None:
    """``[tool.lockkit].platform`` of tables nobody checked, None where any level is not a
    table or it is no string (a hostile file's shape is an answer, never a traceback)."""
    own = _own(data)
    platform = own.get("platform") if isinstance(own, Mapping) else None
    return platform if isinstance(platform, str) else None


_REQUIRES_PYTHON = re.compile(r"==\s*(\d+\.\d+)\.\*")


def python_of(data: Mapping[str, Any], where: Path | str) -> str:
    """The Python version (``"3.12"``) the lock *data* was resolved for: the one every
    command that selects its files, builds a venv from it or resolves tools for it uses,
    never the platform's default (the project's ``python`` may differ from it).

    compile writes it twice: ``[tool.lockkit] python`` and ``requires-python =
    "==3.12.*"``. Either alone is enough; two that disagree (an edited lock) are refused,
    naming both, as is a lock that says neither."""
    own = _own(data)
    said = own.get("python") if isinstance(own, Mapping) else None
    requires = data.get("requires-python")
    found = _REQUIRES_PYTHON.fullmatch(requires.strip()) if isinstance(requires, str) else None
    if said is not None and _python(said) is None:
        raise ConfigError(f"{where}: tool.lockkit.python: expected a version such as "
                          f"\"3.12\", got {said!r}", hint=_AGAIN)
    if said and found and found[1] != said:
        raise ConfigError(f"{where}: tool.lockkit.python is {said!r} but requires-python is "
                          f"{requires!r}: the lock was edited", hint=_AGAIN)
    if said:
        return str(said)
    if found:
        return found[1]
    raise ConfigError(f"{where}: the lock names no Python version (no tool.lockkit.python, "
                      f"requires-python {requires!r})", hint=_AGAIN)
