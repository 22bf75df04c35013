"""The lock as one typed value, read once per command: :class:`Lock` and its :class:`LockMeta`.

A lock is ``locks/pylock.<platform>.toml``: PEP 751 (read by ``packaging.pylock``) plus
lockkit's own ``[tool.lockkit]`` table (the platform, its fingerprint and backend, the
PyTorch index, the Python, the inputs and their fingerprint, the packages digest...).
:meth:`Lock.read` is the one place a lock file is read and parsed: its bytes once (the
sha256 a wheelhouse's manifest names and the tables come from the same bytes), its TOML
once, validated as PEP 751 and its ``[tool.lockkit]`` as :class:`LockMeta`. Every command
reads each lock once and hands the :class:`Lock` down; no stage parses a lock again.
``compile --check`` reads its half, :meth:`LockTables.read` (the same reading without the
PEP 751 validation, which its verdict does not rest on).

Every ``[tool.lockkit]`` key is spelled here and nowhere else: compile writes the table with
:meth:`LockMeta.to_table` (:func:`with_meta`), readers take :attr:`Lock.meta`. The few
places that read a table lockkit did not check (a wheelhouse's own ``pylock.toml``, an
untrusted file) use :func:`named_platform` and :func:`python_of`, which never raise on its
shape.

Writing is the mirror of reading: compile hands its packages and :class:`LockMeta` to
:meth:`Lock.built`, which lays out the document, serialises it (:func:`dumps`, the one place
lockkit turns a PEP 751 lock into text) and validates it with the same
``Pylock.from_dict`` every read goes through; compile writes that :class:`Lock`'s text. Why
the packages are tables (:data:`PackageTable`) and not ``packaging.pylock.Package``
objects serialised with ``Pylock.to_dict()``, see :meth:`Lock.built`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from lockkit._internal.compat import tomllib
from lockkit._internal.parse import parse_toml
from lockkit.errors import ConfigError

if TYPE_CHECKING:
    from packaging.pylock import Pylock

__all__ = ["NOT_CONTENT", "TOOL", "Backend", "FileTable", "Lock", "LockMeta", "LockTables",
           "PackageTable", "dumps", "named_platform", "own_table", "python_of", "with_meta"]

_AGAIN = "compile the lock again"


@dataclass(frozen=True, kw_only=True)
class Backend:
    """``[tool.lockkit.backend]``: the platform's backend when the lock was written."""

    kind: str
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
    if not isinstance(value, Mapping) or not isinstance(value.get("kind"), str) \
            or not isinstance(value.get("version", ""), str):
        return None
    return Backend(kind=value["kind"], version=value.get("version", ""))


def _of(value: Any) -> Mapping[str, str] | None:
    ok = isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())
    return value if ok else None


# key -> (field, what a value must be, its check: the value as typed, None when it is not)
_KEYS: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    "platform": ("platform", "a platform name", _str),
    "platform-fingerprint": ("platform_fingerprint", "a string", _str),
    "backend": ("backend", "a table with kind and version", _backend),
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


# A file entry (``wheels`` item or ``sdist``) and a ``[[packages]]`` table as compile writes
# them, in their order (the lock's bytes depend on it); PEP 751's keys.
FileTable = TypedDict("FileTable", {
    "name": str, "url": str, "hashes": dict[str, str], "size": int, "upload-time": datetime,
}, total=False)
PackageTable = TypedDict("PackageTable", {
    "name": str, "version": str, "index": str, "marker": str, "requires-python": str,
    "dependencies": list[dict[str, Any]],  # uv's, as it wrote them
    "sdist": FileTable, "wheels": list[FileTable],
}, total=False)

_HEADER = "# Generated by lockkit; edit the inputs and recompile, not this file.\n"


def dumps(tables: Mapping[str, Any]) -> str:
    """A PEP 751 lock's text: the one place lockkit serialises one (a lock compile writes,
    a wheelhouse's ``pylock.toml``, an export). tomli_w is imported here, on writing: a
    command that only reads locks (``compile --check``) never loads it."""
    import tomli_w

    return _HEADER + tomli_w.dumps(tables)


_Tables = TypeVar("_Tables", bound="LockTables")


@dataclass(frozen=True, kw_only=True, eq=False)
class LockTables:
    """One lock file, read and parsed once, not validated as PEP 751: its bytes' text and
    sha256, its tables as read (*data*) and its ``[tool.lockkit]`` (*meta*). What
    ``compile --check`` judges (:mod:`lockkit.lock.freshness`): its verdict rests on the
    digests the lock records and the hosts its URLs name, so the gate spares the PEP 751
    validation and ``packaging.pylock``'s imports (more than the rest of the check costs).
    A command that uses a lock's packages reads a :class:`Lock`, which adds it."""

    path: Path
    text: str
    sha256: str
    meta: LockMeta
    data: Mapping[str, Any]

    @classmethod
    def read(cls, path: Path) -> LockTables:
        """Read and parse the lock at *path*: the one place a lock's bytes are read and
        parsed. Every problem is one :class:`~lockkit.errors.ConfigError` line naming the
        file (and the key path ``tool.lockkit.<key>``); exit 2."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError as exc:
            raise ConfigError(f"{path}: lock not found",
                              hint="run 'lockkit compile' first") from exc
        except IsADirectoryError:
            raise ConfigError(f"{path}: is a folder, not a lock") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8")
            data = parse_toml(text, path)
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte "
                              f"{exc.start})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
        return LockTables(path=path, text=text, sha256=hashlib.sha256(raw).hexdigest(),
                          meta=LockMeta.of(data, path), data=data)

    def of_platform(self: _Tables, name: str) -> _Tables:
        """This lock, which must be platform *name*'s (when its ``[tool.lockkit]`` names one)."""
        if (self.meta.platform or name) != name:
            raise ConfigError(f"{self.path}: lock is for platform {self.meta.platform!r}, "
                              f"not {name!r}")
        return self

    @property
    def python(self) -> str:
        """The lock's Python (:func:`python_of`); a ConfigError where it names none."""
        return python_of(self.data, self.path)


@dataclass(frozen=True, kw_only=True, eq=False)
class Lock(LockTables):
    """One lock file, read once and validated: :class:`LockTables` and the PEP 751 lock
    (*data* is what a wheelhouse's ``pylock.toml`` and SBOM are derived from, byte for
    byte)."""

    pylock: Pylock

    @classmethod
    def read(cls, path: Path) -> Lock:
        """Read, parse and validate the lock at *path* (:meth:`LockTables.read`, then
        :meth:`validated`): every problem is one :class:`~lockkit.errors.ConfigError` line
        naming the file (and the key path: PEP 751's, or ``tool.lockkit.<key>``); exit 2."""
        return cls.validated(LockTables.read(path))

    @classmethod
    def validated(cls, tables: LockTables) -> Lock:
        """*tables* validated as a PEP 751 lock (``Pylock.from_dict``); one ConfigError
        line naming the file where it is none."""
        from packaging.pylock import Pylock, PylockValidationError  # ~20 ms: --check needs none

        try:
            pylock = Pylock.from_dict(tables.data)
        except PylockValidationError as exc:
            raise ConfigError(f"{tables.path}: invalid PEP 751 lock: {exc}") from exc
        return cls(path=tables.path, text=tables.text, sha256=tables.sha256, pylock=pylock,
                   meta=tables.meta, data=tables.data)

    @classmethod
    def built(cls, path: Path, *, environments: list[str], packages: list[PackageTable],
              meta: LockMeta) -> Lock:
        """The lock compile writes at *path*: *packages* (sorted, as written) for
        *environments*, *meta* as its ``[tool.lockkit]``, its text serialised once
        (:func:`dumps`) and validated as every lock read is (``Pylock.from_dict``: raises
        ``packaging.pylock.PylockValidationError``, which compile turns into its error).

        The bridge to ``packaging.pylock``: compile builds the tables and the ``Pylock`` is
        made from them, not the other way round, because a ``Pylock`` cannot give back the
        lock's bytes. It holds markers and specifiers parsed, and prints them its own way
        (``Marker`` with double quotes where uv and the platform files write single ones,
        ``SpecifierSet`` sorted), its ``to_dict()`` orders a package's keys by its fields
        (``marker`` before ``index``) and a file's (``upload-time`` before ``url``), and it
        has no place for lockkit's key order of ``[tool.lockkit]``. Locks must stay byte
        for byte what compile wrote before (committed locks, the memo, ``--check``'s
        comparison of ``environments`` with the platform's marker text), so the text comes
        from the tables; the tables are the lock's data exactly as read back from that text
        (strings, integers and uv's dates), which the packages digest relies on too."""
        tables = with_meta({
            "lock-version": "1.0",
            "environments": environments,
            "requires-python": f"=={meta.python}.*",
            "created-by": "lockkit",
            "packages": packages,
        }, meta)
        from packaging.pylock import Pylock

        pylock = Pylock.from_dict(tables)
        text = dumps(tables)
        return cls(path=path, text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                   pylock=pylock, meta=meta, data=tables)

    def package_tables(self) -> dict[str, dict[str, Any]]:
        """Each ``[[packages]]`` table as read, by canonical name."""
        from packaging.utils import canonicalize_name

        return {str(canonicalize_name(str(p.get("name")))): p
                for p in self.data.get("packages", []) if isinstance(p, dict)}

    def file_sha256s(self) -> set[str]:
        """The sha256 of every file the lock lists (wheels and sdists), lowercase."""
        found = {str((f.get("hashes") or {}).get("sha256", "")).lower()
                 for pkg in self.package_tables().values()
                 for f in [*pkg.get("wheels", []), *([pkg["sdist"]] if "sdist" in pkg else [])]}
        found.discard("")
        return found
