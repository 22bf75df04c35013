"""Project configuration: lockkit.toml or [tool.lockkit] in pyproject.toml, plus flags."""

from __future__ import annotations

import difflib
from datetime import datetime
from lockkit._compat import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from lockkit.errors import ConfigError

__all__ = ["Project", "load_project", "read_requirements"]

_KEYS = {"requirements", "platforms", "python", "mirrors", "index-url", "allow-sdist", "verify", "ci",
         "exclude-newer"}


@dataclass(frozen=True, kw_only=True)
class Project:
    root: Path
    config_file: Path | None
    requirements: tuple[str, ...] = ("requirements.in",)
    platforms: tuple[str, ...] = ("linux-cpu",)
    python: str | None = None
    mirrors: dict[str, str] = field(default_factory=dict)
    index_url: str | None = None
    allow_sdist: tuple[str, ...] = ()
    exclude_newer: str | None = None  # resolve as of this RFC 3339 date/timestamp
    verify: dict[str, Any] = field(default_factory=dict)
    ci: dict[str, Any] = field(default_factory=dict)

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    def lock_path(self, platform: str) -> Path:
        return self.locks_dir / f"pylock.{platform}.toml"


def _read_table(root: Path) -> tuple[Path | None, dict[str, Any]]:
    for name, sub in (("lockkit.toml", None), ("pyproject.toml", ("tool", "lockkit"))):
        path = root / name
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
        if sub is None:
            return path, data
        table = data.get("tool", {}).get("lockkit")
        if table is not None:
            return path, table
    return None, {}


def _strings(path: Path | None, data: dict, key: str) -> tuple[str, ...] | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {key}: expected a list of strings, got {value!r}")
    return tuple(value)


def load_project(root: Path, *, mirrors: list[str] | None = None,
                 index_url: str | None = None, exclude_newer: str | None = None) -> Project:
    """Read the project's config; command-line values override the file's."""
    root = root.resolve()
    if not root.is_dir():
        raise ConfigError(f"--project {root}: not a folder")
    path, data = _read_table(root)
    for key in sorted(set(data) - _KEYS):
        close = difflib.get_close_matches(key, sorted(_KEYS), n=1)
        tip = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(f"{path}: unknown key '{key}'{tip}")
    table_mirrors = data.get("mirrors", {})
    if not isinstance(table_mirrors, dict) or not all(
        isinstance(v, str) for v in table_mirrors.values()
    ):
        raise ConfigError(f"{path}: mirrors: expected a table of 'official' = 'mirror' URLs")
    merged = {k.rstrip("/"): v.rstrip("/") for k, v in table_mirrors.items()}
    for item in mirrors or []:
        official, sep, mirror = item.partition("=")
        if not sep or not official or not mirror:
            raise ConfigError(f"--mirror {item!r}: expected OFFICIAL=MIRROR")
        merged[official.rstrip("/")] = mirror.rstrip("/")
    kwargs: dict[str, Any] = {}
    for key, attr in (("requirements", "requirements"), ("platforms", "platforms"),
                      ("allow-sdist", "allow_sdist")):
        value = _strings(path, data, key)
        if value is not None:
            kwargs[attr] = value
    url = index_url or data.get("index-url")
    if url is not None and not isinstance(url, str):
        raise ConfigError(f"{path}: index-url: expected a URL string")
    cutoff = exclude_newer or data.get("exclude-newer")
    where = "--exclude-newer" if exclude_newer else f"{path}: exclude-newer"
    kwargs["exclude_newer"] = _rfc3339(cutoff, where) if cutoff is not None else None
    return Project(root=root, config_file=path, mirrors=merged, index_url=url,
                   python=data.get("python"), verify=data.get("verify", {}),
                   ci=data.get("ci", {}), **kwargs)


def _rfc3339(value: Any, where: str) -> str:
    """An RFC 3339 date (``2024-10-01``) or timestamp (``2024-10-01T00:00:00Z``), as uv takes it."""
    text = value.isoformat() if hasattr(value, "isoformat") else value  # a TOML date/datetime
    if isinstance(text, str):
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None and (len(text) == 10 or parsed.tzinfo is not None):
            return text
    raise ConfigError(f"{where}: {value!r} is not an RFC 3339 date or UTC timestamp",
                      hint="e.g. 2024-10-01 or 2024-10-01T00:00:00Z")


def read_requirements(path: Path, *, _seen: set[Path] | None = None) -> list[tuple[Path, str]]:
    """Validate a constraint file and its ``-r``/``-c`` includes.

    Returns ``(file, content)`` for every file read, in order, for the inputs'
    fingerprint; a malformed line raises naming the file and line.
    """
    seen = _seen if _seen is not None else set()
    path = path.resolve()
    if path in seen:
        return []
    seen.add(path)
    if not path.is_file():
        raise ConfigError(f"{path}: constraint file not found")
    text = path.read_text(encoding="utf-8")
    found = [(path, text)]
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        for flag in ("-r", "-c", "--requirement", "--constraint"):
            if line.startswith(flag + " ") or line.startswith(flag + "="):
                target = line[len(flag):].lstrip(" =").strip()
                found += read_requirements(path.parent / target, _seen=seen)
                break
        else:
            if line.startswith("-"):
                raise ConfigError(
                    f"{path}:{number}: option {line.split()[0]!r} is not allowed here",
                    hint="put indexes in lockkit.toml (index-url, mirrors) or the platform file",
                )
            try:
                Requirement(line)
            except InvalidRequirement as exc:
                raise ConfigError(f"{path}:{number}: malformed requirement {line!r}: {exc}") from exc
    return found
