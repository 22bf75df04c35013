"""Project configuration: lockkit.toml or [tool.lockkit] in pyproject.toml, plus flags.

Also the project's inputs, read as users already keep them: requirement files (see
``lockkit.reqfile``) and pyproject.toml (``[project].dependencies``, the selected extras
and PEP 735 dependency groups), and their normalised form for ``compile --check``.
"""

from __future__ import annotations

import difflib
import os
import re
from datetime import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from packaging.utils import canonicalize_name

from lockkit._compat import tomllib
from lockkit.errors import ConfigError
from lockkit.reqfile import Include, flatten, normalize_requirement, read_tree

__all__ = ["Project", "find_project", "is_pyproject", "load_project", "normalized_inputs",
           "read_requirements", "resolver_inputs"]

_KEYS = {"requirements", "platforms", "python", "mirrors", "index-url", "allow-sdist", "verify",
         "ci", "extras", "groups", "exclude-newer"}
_TABLES = {"verify": {"embedding"}, "ci": {"runners"}}  # the known keys of each table
_PYTHON = re.compile(r"3\.\d+")  # a Python minor version, as uv's --python-version takes it


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
    extras: tuple[str, ...] = ()  # from the pyproject.toml inputs' optional-dependencies
    groups: tuple[str, ...] = ()  # from their [dependency-groups] (PEP 735)
    verify: dict[str, Any] = field(default_factory=dict)
    ci: dict[str, Any] = field(default_factory=dict)

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    def lock_path(self, platform: str) -> Path:
        return self.locks_dir / f"pylock.{platform}.toml"


def is_pyproject(entry: str) -> bool:
    """A ``requirements`` entry read as a pyproject.toml, not as a requirement file."""
    return entry.endswith("pyproject.toml")


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _read_table(root: Path) -> tuple[Path | None, dict[str, Any]]:
    for name, sub in (("lockkit.toml", None), ("pyproject.toml", ("tool", "lockkit"))):
        path = root / name
        if not path.is_file():
            continue
        data = _load_toml(path)
        if sub is None:
            return path, data
        table = data.get("tool", {}).get("lockkit")
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


def _strings(path: Path | None, data: dict, key: str, *,
             one: bool = False) -> tuple[str, ...] | None:
    """A list of strings (or, with ``one``, a single string taken as a list of one)."""
    if key not in data:
        return None
    value = data[key]
    if one and isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        kind = "a string or a list of strings" if one else "a list of strings"
        raise ConfigError(f"{path}: {key}: expected {kind}, got {value!r}")
    return tuple(value)


def _mirrors(path: Path | None, data: dict, flags: list[str]) -> dict[str, str]:
    table = data.get("mirrors", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise ConfigError(f"{path}: mirrors: expected a table of 'official' = 'mirror' URLs")
    merged = {k.rstrip("/"): v.rstrip("/") for k, v in table.items()}
    for item in flags:
        official, sep, mirror = item.partition("=")
        if not sep or not official or not mirror:
            raise ConfigError(f"--mirror {item!r}: expected OFFICIAL=MIRROR")
        merged[official.rstrip("/")] = mirror.rstrip("/")
    return merged


def _lists(path: Path | None, data: dict) -> dict[str, tuple[str, ...]]:
    kwargs: dict[str, tuple[str, ...]] = {}
    for key in ("requirements", "platforms", "allow-sdist", "extras", "groups"):
        value = _strings(path, data, key, one=key == "requirements")
        if value is not None:
            kwargs[key.replace("-", "_")] = value
    selects = [k for k in ("extras", "groups") if kwargs.get(k)]
    if selects and not any(is_pyproject(r) for r in kwargs.get("requirements", ())):
        raise ConfigError(f"{path}: {selects[0]}: selects from a pyproject.toml, and "
                          "requirements names none", hint='add "pyproject.toml" to requirements')
    return kwargs


def load_project(root: Path | None = None, *, mirrors: list[str] | None = None,
                 index_url: str | None = None, exclude_newer: str | None = None) -> Project:
    """Read the project's config; command-line values override the file's.

    ``root`` is exactly the project folder; without it the config is looked for from
    the current folder upward (:func:`find_project`), as uv and pip-tools find theirs.
    """
    if root is None:
        root = find_project(Path.cwd()) or Path.cwd()
    root = root.resolve()
    if not root.is_dir():
        raise ConfigError(f"--project {root}: not a folder")
    path, data = _read_table(root)
    problems = _problems(data)
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    url = index_url or data.get("index-url")
    cutoff = exclude_newer or data.get("exclude-newer")
    where = "--exclude-newer" if exclude_newer else f"{path}: exclude-newer"
    return Project(root=root, config_file=path, mirrors=_mirrors(path, data, mirrors or []),
                   index_url=url, python=data.get("python"), verify=data.get("verify", {}),
                   ci=data.get("ci", {}),
                   exclude_newer=_rfc3339(cutoff, where) if cutoff is not None else None,
                   **_lists(path, data))


def _problems(data: dict[str, Any]) -> list[str]:
    """Every problem of the config's shape, found before uv or anything else runs."""
    problems = _unknown(data, _KEYS, "")
    for table, known in _TABLES.items():
        if isinstance(data.get(table, {}), dict):
            problems += _unknown(data.get(table, {}), known, f"{table}.")
        else:
            problems.append(f"{table}: expected a table ([{table}]), got {data[table]!r}")
    if "index-url" in data and not isinstance(data["index-url"], str):
        problems.append(f"index-url: expected a URL string, got {data['index-url']!r}")
    python = data.get("python")
    if python is not None and not (isinstance(python, str) and _PYTHON.fullmatch(python)):
        problems.append(f"python: expected a version string such as \"3.11\", got {python!r}")
    if data.get("requirements") in ([], ""):
        problems.append("requirements: empty; name at least one requirement file or "
                        "pyproject.toml")
    return problems


def _unknown(table: dict[str, Any], known: set[str], where: str) -> list[str]:
    """Each key not in *known*, with the closest known one suggested."""
    found = []
    for key in sorted(set(table) - known):
        close = difflib.get_close_matches(key, sorted(known), n=1)
        tip = f" (did you mean '{where}{close[0]}'?)" if close else ""
        found.append(f"unknown key '{where}{key}'{tip}")
    return found


def _rfc3339(value: Any, where: str) -> str:
    """An RFC 3339 date (``2024-10-01``) or UTC timestamp (``2024-10-01T00:00:00Z``)."""
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


def read_requirements(path: Path) -> list[tuple[Path, str]]:
    """Validate a requirement file and its ``-r``/``-c`` includes.

    Returns ``(file, content)`` for every file read, in order, for the inputs'
    fingerprint; every refused line of a file is reported at once, naming file and line.
    """
    return [(f.path, f.text) for f in read_tree(path)]


def _label(project: Project, path: Path) -> str:
    try:
        return Path(os.path.relpath(path, project.root)).as_posix()
    except ValueError:  # another drive, on Windows
        return path.as_posix()


def normalized_inputs(project: Project) -> dict[str, list[str]]:
    """What each input asks for, normalised: ``{label: sorted requirement strings}``.

    A label is a file's path relative to the project root (an included file under its
    own), or for a pyproject.toml ``<path>[project.dependencies]``,
    ``<path>[project.optional-dependencies.<extra>]`` and ``<path>[dependency-groups.<group>]``
    for the selected extras and groups. Names are canonical, comments, blank lines,
    continuations and spacing are gone; accepted options stay, normalised (``--hash=``,
    ``-r <label>``). So a comment changes nothing, and a changed requirement, include,
    extra or group changes its label's list. Raises ConfigError for any bad input.
    """
    found: dict[str, list[str]] = {}
    for entry in project.requirements:
        if is_pyproject(entry):
            found.update(_pyproject_inputs(project, (project.root / entry).resolve()))
            continue
        for f in read_tree(project.root / entry):
            found[_label(project, f.path)] = sorted(
                f"{e.kind} {_label(project, e.path)}" if isinstance(e, Include) else e
                for e in f.entries)
    return found


def resolver_inputs(project: Project, workdir: Path) -> tuple[list[Path], tuple[str, ...]]:
    """The files uv reads and the options that select from the pyproject.toml ones
    (``--extra``, ``--group <file>:<name>``).

    The requirement files are given as lockkit read them (:func:`lockkit.reqfile.flatten`),
    written into ``workdir``. A pyproject.toml without a [project] table gives its groups
    only (uv refuses it as a source file). ``--no-sources`` keeps [tool.uv.sources] out:
    lockkit, not the project, decides each package's index, per platform.
    """
    plain = [project.root / e for e in project.requirements if not is_pyproject(e)]
    files: list[Path] = [_write_flat(plain, workdir)] if plain else []
    options: list[str] = []
    for entry in filter(is_pyproject, project.requirements):
        path = (project.root / entry).resolve()
        if "project" in _load_toml(path):
            files.append(path)
        options += [f"--group={path}:{group}" for group in project.groups]
    if any(map(is_pyproject, project.requirements)):
        options += [*(f"--extra={extra}" for extra in project.extras), "--no-sources"]
    return files, tuple(options)


def _write_flat(paths: list[Path], workdir: Path) -> Path:
    requirements, constraints = flatten(paths)
    out = workdir / "requirements.txt"
    if constraints:
        (workdir / "constraints.txt").write_text("\n".join(constraints) + "\n", encoding="utf-8")
        requirements = [*requirements, "-c constraints.txt"]
    out.write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    return out


# --- pyproject.toml -------------------------------------------------------------------------

def _pyproject_inputs(project: Project, path: Path) -> dict[str, list[str]]:
    """The selected parts of one pyproject.toml, every problem in it reported at once."""
    data = _load_toml(path)
    table = data["project"] if isinstance(data.get("project"), dict) else None
    errors: list[str] = []
    label = _label(project, path)
    found: dict[str, list[str]] = {}
    if table is not None:
        found.update(_project_table(label, table, bool(project.extras), errors))
    elif not project.groups:
        errors.append("no [project] table, and no groups selected from it")
    extras = _by_name((table or {}).get("optional-dependencies"))
    section = "project.optional-dependencies"
    found.update(_selected(label, extras, project.extras, "extras", section, errors,
                           lambda n: _specs(extras[n], f"{section}.{n}", errors)))
    groups = _by_name(data.get("dependency-groups"))
    found.update(_selected(label, groups, project.groups, "groups", "dependency-groups", errors,
                           lambda n: _group(groups, n, errors, ())))
    if errors:
        raise ConfigError(f"{path}: " + "; ".join(errors))
    return found


def _project_table(label: str, table: dict[str, Any], extras: bool,
                   errors: list[str]) -> dict[str, list[str]]:
    """[project].dependencies, read statically; what uv would refuse or have to build the
    project for is an error here."""
    dynamic = table.get("dynamic", [])
    if not isinstance(table.get("name"), str):
        errors.append("project.name: missing (uv requires it in a [project] table)")
    if "version" not in table and "version" not in dynamic:
        errors.append("project.version: missing (set it, or list it in project.dynamic)")
    if "dependencies" in dynamic:
        errors.append("[project] lists dependencies as dynamic (the build backend computes "
                      "them), which lockkit cannot read; list them in project.dependencies "
                      "or in a requirements file")
    if extras and "optional-dependencies" in dynamic:
        errors.append("extras: [project] lists optional-dependencies as dynamic, which "
                      "lockkit cannot read; list them in project.optional-dependencies")
    return {f"{label}[project.dependencies]": _specs(
        table.get("dependencies", []), "project.dependencies", errors)}


def _spec(value: Any, key: str, errors: list[str]) -> list[str]:
    """One requirement normalised (a list of one), or its error recorded (an empty list)."""
    if not isinstance(value, str):
        errors.append(f"{key}: expected a requirement string, got {value!r}")
        return []
    try:
        return [normalize_requirement(value)]
    except ValueError as exc:
        errors.append(f"{key}: {exc}")
        return []


def _specs(values: Any, key: str, errors: list[str]) -> list[str]:
    if not isinstance(values, list):
        errors.append(f"{key}: expected a list of requirement strings")
        return []
    return sorted(s for i, v in enumerate(values) for s in _spec(v, f"{key}[{i}]", errors))


def _undeclared(key: str, name: str, table: str, declared: list[str]) -> str:
    close = difflib.get_close_matches(canonicalize_name(name), declared, n=3)
    tip = (f"did you mean {' or '.join(map(repr, close))}?" if close else
           f"declared: {', '.join(declared) or 'none'}")
    return f"{key}: {name!r} is not declared in [{table}] ({tip})"


def _by_name(table: Any) -> dict[str, Any]:
    """A table keyed by canonical names: extras and groups compare normalised."""
    return {canonicalize_name(k): v for k, v in table.items()} if isinstance(table, dict) else {}


def _selected(label: str, declared: dict[str, Any], wanted: tuple[str, ...], key: str,
              section: str, errors: list[str],
              read: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """The wanted extras or groups, each read by ``read``; an undeclared one is an error."""
    found = {}
    for want in wanted:
        name = canonicalize_name(want)
        if name in declared:
            found[f"{label}[{section}.{name}]"] = sorted(read(name))
        else:
            errors.append(_undeclared(key, want, section, sorted(declared)))
    return found


def _group(declared: dict[str, Any], name: str, errors: list[str],
           trail: tuple[str, ...]) -> list[str]:
    """A group's requirements with its ``{include-group = ...}`` entries expanded (PEP 735)."""
    if name in trail:
        errors.append(f"dependency-groups: include-group cycle {' -> '.join((*trail, name))}")
        return []
    key = f"dependency-groups.{name}"
    items = declared[name] if isinstance(declared[name], list) else None
    if items is None:
        errors.append(f"{key}: expected a list")
        return []
    out: list[str] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and set(item) == {"include-group"}:
            include = canonicalize_name(str(item["include-group"]))
            if include in declared:
                out += _group(declared, include, errors, (*trail, name))
            else:
                errors.append(f"{key}[{i}]: include-group {item['include-group']!r} "
                              "is not declared")
        else:
            out += _spec(item, f"{key}[{i}]", errors)
    return out
