"""Project configuration: one cascade into one frozen dataclass.

Defaults (the field defaults of :class:`Project`, the only place they are written) ->
``lockkit.toml`` or ``[tool.lockkit]`` in pyproject.toml -> command-line flags. Every key
of the file is type-checked when it loads, the ``[verify.*]`` and ``[ci.*]`` tables too,
and every problem of the file is reported at once, by key path: a mistake ends the
command before any work starts, not at the step that would have used the key.

The project's inputs (requirement files, pyproject.toml dependencies) are read by
``lockkit.config.inputs``; import its functions from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from lockkit._internal.keys import KeyReader
from lockkit._internal.redact import NO_SECRETS, Secrets
from lockkit.config.checks import VerifyConfig, table_checks, verify_keys
from lockkit.config.inputfile import is_pyproject, load_toml
from lockkit.config.keys import (
    REFRESH_SCHEDULES,
    CiConfig,
    Runner,
    lockkit_requirement,
    runner_labels,
)
from lockkit.config.platformreqs import KEY as PLATFORM_REQUIREMENTS
from lockkit.config.platformreqs import PlatformLines, read_table
from lockkit.errors import ConfigError, UsageError
from lockkit.index.urls import is_index_url, secrets_of

__all__ = ["Project", "find_project", "load_project", "project_root", "python_allowed"]

# the lists of strings, each with its Project field
_LISTS: dict[str, Literal["requirements", "platforms", "allow_sdist", "extras", "groups"]] = {
    "requirements": "requirements", "platforms": "platforms", "allow-sdist": "allow_sdist",
    "extras": "extras", "groups": "groups"}
# the lists that also take one string, and may not be empty: what each names
_ONE_OR_MORE = {"requirements": "requirement file or pyproject.toml", "platforms": "platform"}
_INDEX_URL_EXPECTED = "expected an http(s):// URL or a ${VAR} holding one"
# each table's keys ([verify]'s: the checks' registry, read at each load)
_TABLES = {"verify": ("[verify]", verify_keys),
           "ci": ("[ci]", lambda: frozenset({"runners", "lockkit", "refresh"}))}
_KEYS = {*_LISTS, *_TABLES, "python", "mirrors", "index-url", "exclude-newer", "max-page-size",
         PLATFORM_REQUIREMENTS}
_PYTHON = re.compile(r"3\.\d+")  # a Python minor version, as uv's --python-version takes it
_RFC3339_HINT = "e.g. 2024-10-01 or 2024-10-01T00:00:00Z"
_PAGE_SIZE = "a whole number of MiB, at least 1 (the largest index page read)"


class _Options(TypedDict, total=False):
    """The :class:`Project` fields the file and the flags set (the rest keep their
    defaults)."""

    requirements: tuple[str, ...]
    platforms: tuple[str, ...]
    allow_sdist: tuple[str, ...]
    extras: tuple[str, ...]
    groups: tuple[str, ...]
    python: str | None
    index_url: str | None
    mirrors: dict[str, str]
    exclude_newer: str | None
    max_page_size: int
    verify: VerifyConfig
    ci: CiConfig
    platform_requirements: tuple[PlatformLines, ...]


@dataclass(frozen=True, kw_only=True)
class Project:
    """The project's options: each default here is what a project without the key gets."""

    root: Path
    config_file: Path | None
    requirements: tuple[str, ...] = ("requirements.in",)
    platforms: tuple[str, ...] = ("linux-cpu",)
    python: str | None = None  # "3.11": always a string, never a TOML number
    # pyproject.toml's [project] requires-python: what lock_python must satisfy
    requires_python: SpecifierSet | None = None
    mirrors: dict[str, str] = field(default_factory=dict)
    index_url: str | None = None
    allow_sdist: tuple[str, ...] = ()
    exclude_newer: str | None = None  # resolve as of this RFC 3339 date/timestamp
    extras: tuple[str, ...] = ()  # from the pyproject.toml inputs' optional-dependencies
    groups: tuple[str, ...] = ()  # from their [dependency-groups] (PEP 735)
    verify: VerifyConfig = field(default_factory=VerifyConfig)  # [verify], validated at load
    ci: CiConfig = field(default_factory=CiConfig)  # [ci], validated at load
    # [platform-requirements]: a platform's own lines (lockkit.config.platformreqs)
    platform_requirements: tuple[PlatformLines, ...] = ()
    max_page_size: int = 64  # MiB: the largest index page read (lockkit.index.http.read_page)
    # the ${VAR} values of index-url and the mirrors (file and flags), filled in at load:
    # what this project's output conceals (lockkit._internal.redact)
    secrets: Secrets = field(default=NO_SECRETS, repr=False, compare=False)

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    def lock_path(self, platform: str) -> Path:
        return self.locks_dir / f"pylock.{platform}.toml"


def _read_table(root: Path) -> tuple[Path | None, object]:
    for name, sub in (("lockkit.toml", None), ("pyproject.toml", ("tool", "lockkit"))):
        path = root / name
        if not path.is_file():
            continue
        data = load_toml(path)
        if sub is None:
            return path, data
        tool = data.get("tool")
        table = tool.get("lockkit") if isinstance(tool, dict) else None
        if table is not None:
            return path, table
    return None, {}


def find_project(start: Path) -> Path | None:
    """The nearest folder from ``start`` upward whose lockkit.toml or [tool.lockkit] exists.

    Like uv's discovery, the search stops at the filesystem root or at the repository's
    root (a folder with ``.git``, checked itself first): a config above the repository
    belongs to something else.
    """
    start = start.resolve()
    for folder in (start, *start.parents):
        if _read_table(folder)[0] is not None:
            return folder
        if (folder / ".git").exists():
            return None
    return None


def project_root(root: Path | None = None) -> Path:
    """The project folder a command works on: *root* (``--project``) exactly, else the
    nearest one from the current folder upward (:func:`find_project`), as uv and
    pip-tools find theirs, else the current folder. A UsageError when *root* is no folder."""
    root = (root or find_project(Path.cwd()) or Path.cwd()).resolve()
    if not root.is_dir():
        raise UsageError(f"--project {root}: not a folder")
    return root


def load_project(root: Path | None = None, *, mirrors: list[str] | None = None,
                 index_url: str | None = None, exclude_newer: str | None = None,
                 max_page_size: int | None = None) -> Project:
    """Read the config of the project at *root* (:func:`project_root`); command-line
    values override the file's. Raises one ConfigError naming the file and every bad key,
    or a UsageError for a flag.
    """
    root = project_root(root)
    path, data = _read_table(root)
    secrets = _known_secrets(data, [index_url or "", *(mirrors or []), *_own_platforms(root)])
    options = _from_file(root, path, data)
    options["mirrors"] = {**options.get("mirrors", {}), **_mirror_flags(mirrors or [])}
    if index_url is not None:
        if not is_index_url(index_url):
            raise UsageError(f"--index-url {secrets.redact(index_url)!r}: {_INDEX_URL_EXPECTED}",
                             hint="e.g. --index-url https://pypi.internal/simple or "
                                  "--index-url '${INDEX_URL}'")
        options["index_url"] = index_url
    if exclude_newer is not None:
        flag = KeyReader()
        options["exclude_newer"] = _rfc3339(flag, "--exclude-newer", exclude_newer)
        if flag.errors:
            raise UsageError(flag.errors[0], hint=_RFC3339_HINT)
    if max_page_size is not None:
        if max_page_size < 1:
            raise UsageError(f"--max-page-size {max_page_size}: expected {_PAGE_SIZE}")
        options["max_page_size"] = max_page_size
    requires_python = _requires_python(root)
    _check_python(path, options.get("python"), requires_python)
    return Project(root=root, config_file=path, requires_python=requires_python,
                   secrets=secrets, **options)


def python_allowed(spec: SpecifierSet, minor: str) -> bool:
    """Whether a release of Python *minor* (its first or a late patch) is in *spec*: the
    one rule for a lock's Python against ``requires-python`` (``>=3.11.4`` keeps 3.11)."""
    return any(spec.contains(Version(f"{minor}.{patch}"), prereleases=True)
               for patch in (0, 99))


def _check_python(path: Path | None, python: str | None, spec: SpecifierSet | None) -> None:
    """The lock's Python has one source, the project: a ``python`` key that pyproject.toml's
    ``requires-python`` excludes is refused (uv refuses that pair too), naming both."""
    if python is None or spec is None or python_allowed(spec, python):
        return
    raise ConfigError(f"{path}: python {python!r} is outside pyproject.toml's "
                      f"project.requires-python {str(spec)!r}: the lock would be for a "
                      "Python the project excludes",
                      hint="make the two agree: change python, or widen requires-python")


def _requires_python(root: Path) -> SpecifierSet | None:
    """The project's ``requires-python`` (pyproject.toml's ``[project]`` table), which the
    lock's Python must satisfy when no ``python`` key names one; None without the file or
    the key. A value that is not a version specifier is one ConfigError."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return None
    table = load_toml(path).get("project")
    text = table.get("requires-python") if isinstance(table, dict) else None
    if text is None:
        return None
    try:
        if not isinstance(text, str):
            raise InvalidSpecifier(repr(text))
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ConfigError(f"{path}: project.requires-python: {text!r} is not a version "
                          "specifier such as '>=3.11'") from None


def _own_platforms(root: Path) -> list[str]:
    """The texts of the project's own platform files: a private PyTorch index's URL there
    may hold a ``${VAR}`` too (read as text: the files are checked when they load)."""
    from lockkit.platforms.folders import own_folder

    texts = []
    for path in sorted(own_folder(root).glob("*.toml")):
        try:
            texts.append(path.read_text("utf-8", errors="replace"))
        except OSError:
            continue
    return texts


def _known_secrets(data: object, flags: list[str]) -> Secrets:
    """The values of every ``${VAR}`` of the index URLs, from the file and the flags,
    known before anything can be said: a message printed before the first request (a bad
    input line, a warning) never shows a value either."""
    table: Mapping[str, object] = data if isinstance(data, dict) else {}
    mirrors = table.get("mirrors")
    values = list(mirrors.values()) if isinstance(mirrors, dict) else []
    return secrets_of(t for t in [table.get("index-url"), *values, *flags]
                      if isinstance(t, str))


def _from_file(root: Path, path: Path | None, table: object) -> _Options:
    """The file's options as :class:`Project` keywords; every problem raised together."""
    c = KeyReader(path)
    if not isinstance(table, dict):  # [tool] lockkit = 3
        c.fail("tool.lockkit", f"expected a table, got {table!r}")
        c.raise_if_any()
    data: Mapping[str, object] = table if isinstance(table, dict) else {}
    c.unknown(data, _KEYS)
    options = _Options()
    for key, name in _LISTS.items():
        value = c.strings(key, data.get(key), one=key in _ONE_OR_MORE)
        if value is not None:
            options[name] = value
    for key, what in _ONE_OR_MORE.items():
        if data.get(key) in ([], ""):
            c.fail(key, f"empty; name at least one {what}")
    _check_selects(c, options)
    options["python"] = c.string("python", data.get("python"), 'a version string such as '
                                 '"3.11"', _PYTHON)
    index_url = options["index_url"] = c.string("index-url", data.get("index-url"),
                                                "a URL string")
    if index_url is not None and not is_index_url(index_url):
        c.fail("index-url", f"{_INDEX_URL_EXPECTED}, got {index_url!r}")
    options["mirrors"] = _mirror_table(c, data.get("mirrors", {}))
    if "exclude-newer" in data:
        options["exclude_newer"] = _rfc3339(c, "exclude-newer", data["exclude-newer"])
    if "max-page-size" in data:
        options["max_page_size"] = c.number("max-page-size", data["max-page-size"], 1,
                                            integer=True, expected=_PAGE_SIZE)
    options["verify"] = _verify(c, root, data)
    options["platform_requirements"] = read_table(
        c, root, data, options.get("platforms", Project.platforms))
    options["ci"] = _ci(c, data)
    c.raise_if_any()
    return options


def _check_selects(c: KeyReader, options: _Options) -> None:
    selects = [k for k in ("extras", "groups") if options.get(k)]
    if selects and not any(is_pyproject(r) for r in options.get("requirements", ())):
        c.fail(selects[0], "selects from a pyproject.toml, and requirements names none",
               hint='add "pyproject.toml" to requirements')


def _verify(c: KeyReader, root: Path, data: Mapping[str, object]) -> VerifyConfig:
    name, known = _TABLES["verify"]
    table = c.table(data, "verify", name)
    c.at("verify").unknown(table, known())
    found: dict[str, object] = {}
    if not table:  # compile and its gate never read one: its modules stay unimported
        return VerifyConfig()
    checks = table_checks()
    for check in checks:
        values, problems = check.read(root, table)
        found.update(values)
        for problem in problems:
            c.fail("", problem, hint=check.hint)
    return VerifyConfig.of(found, checks)


def _ci(c: KeyReader, data: Mapping[str, object]) -> CiConfig:
    name, known = _TABLES["ci"]
    table = c.table(data, "ci", name)
    c.at("ci").unknown(table, known())
    runners = c.at("ci").table(table, "runners", "[ci.runners]")
    found: dict[str, Runner] = {}
    for platform, value in runners.items():
        labels = runner_labels(value)
        if labels is None:
            c.fail(f"ci.runners.{platform}",
                   f"expected a label or a non-empty list of labels, got {value!r}")
        else:
            found[platform] = labels
    requirement, problems = lockkit_requirement(table["lockkit"]) if "lockkit" in table \
        else (None, [])
    for problem in problems:
        c.fail("", problem, hint="e.g. lockkit = \"lockkit==1.2.3\" or a wheel committed to "
                                 "the repository")
    refresh = c.at("ci").choice("refresh", table.get("refresh"), REFRESH_SCHEDULES)
    return CiConfig(runners=found, lockkit=requirement, refresh=refresh)


def _mirror_table(c: KeyReader, table: object) -> dict[str, str]:
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        c.fail("mirrors", "expected a table of 'official' = 'mirror' URLs")
        return {}
    return {k.rstrip("/"): v.rstrip("/") for k, v in table.items()}


def _mirror_flags(flags: list[str]) -> dict[str, str]:
    merged = {}
    for item in flags:
        official, sep, mirror = item.partition("=")
        if not sep or not official or not mirror:
            raise UsageError(f"--mirror {item!r}: expected OFFICIAL=MIRROR")
        merged[official.rstrip("/")] = mirror.rstrip("/")
    return merged


def _rfc3339(c: KeyReader, key: str, value: object) -> str | None:
    """An RFC 3339 date (``2024-10-01``) or UTC timestamp (``2024-10-01T00:00:00Z``)."""
    text = value.isoformat() if hasattr(value, "isoformat") else value  # a TOML date/datetime
    if isinstance(text, str):
        try:
            from datetime import datetime

            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None and (len(text) == 10 or parsed.tzinfo is not None):
            return text
    c.fail(key, f"{value!r} is not an RFC 3339 date or UTC timestamp", hint=_RFC3339_HINT)
    return None
