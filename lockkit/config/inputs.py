"""The project's inputs, read as users already keep them, and their normalised form.

Requirement files (see ``lockkit.config.reqfile``) and pyproject.toml (``[project].dependencies``,
the selected extras and PEP 735 dependency groups): what uv is given (:func:`resolver_inputs`)
and what ``compile --check`` compares (:func:`normalized_inputs`), as each platform resolves
them, its ``[platform-requirements]`` lines applied (:func:`effective_inputs`). Every
problem of a file is reported at once, naming the file and the key or line. Only regular
files are read, and what is wrong in a file outside the project is said without quoting
it (:mod:`lockkit.config.inputfile`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from lockkit._internal.keys import KeyReader
from lockkit.config.inputfile import (
    NOT_FOUND,
    OUTSIDE_HINT,
    is_inside,
    is_pyproject,
    load_toml,
    not_regular,
)
from lockkit.errors import ConfigError

if TYPE_CHECKING:
    from lockkit.config.platformreqs import PlatformLines
    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform

__all__ = ["effective_inputs", "normalized_inputs", "platform_lines", "resolver_inputs"]


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
    from lockkit.config.reqfile import Include, read_tree

    _check_present(project)
    found: dict[str, list[str]] = {}
    for entry in project.requirements:
        if is_pyproject(entry):
            found.update(_pyproject_inputs(project, (project.root / entry).resolve()))
            continue
        for f in read_tree(project.root / entry, project.root):
            found[_label(project, f.path)] = sorted(
                f"{e.kind} {_label(project, e.path)}" if isinstance(e, Include) else e
                for e in f.entries)
    return found


def platform_lines(project: Project, platform: Platform) -> PlatformLines | None:
    """The table's key for *platform* (by its name, or the platform an alias stands for)."""
    target = platform.alias_of or platform.name
    return next((p for p in project.platform_requirements
                 if p.key == platform.name or p.target == target), None)


def effective_inputs(project: Project, platform: Platform,
                     requirements: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """*requirements* (:func:`lockkit.config.inputs.normalized_inputs`) as *platform*
    resolves them: each line whose name the platform's own lines name taken out (a
    constraint too), and those lines under their own label. Without such lines, the
    inputs as they are: the lock of a platform the table does not name is unchanged."""
    own = platform_lines(project, platform)
    if own is None:
        return dict(requirements)
    from lockkit.config.platformreqs import requirement_name

    names = own.names()
    label = own.label(project.config_file, project.root)
    found = {lb: [r for r in reqs if requirement_name(r) not in names]
             for lb, reqs in requirements.items() if lb != label}
    found[label] = sorted(own.lines)
    return found


START_HINT = ("to start a project here, write requirements.in (one requirement a line, e.g. "
              "torch) and lockkit.toml (platforms = [\"linux-cpu\"]), then run 'lockkit "
              "compile'")


def _check_present(project: Project) -> None:
    """Each input exists and is a regular file: in a folder with neither a config nor the
    default input, say how to start a project; else name the missing or refused input by
    the config key naming it. Nothing is opened here (opening a FIFO blocks)."""
    problems = [(e, not_regular(project.root / e)) for e in project.requirements]
    refused = [f"{_named_at(project, i)}: {e!r}: {p}" for i, (e, p) in enumerate(problems)
               if p is not None and p != NOT_FOUND]
    if refused:
        raise ConfigError("; ".join(refused))
    missing = [e for e, p in problems if p == NOT_FOUND]
    if not missing:
        return
    if project.config_file is None:
        raise ConfigError(f"{project.root}: no lockkit.toml and no {missing[0]}: nothing to "
                          "lock here", hint=START_HINT)
    raise ConfigError(f"{project.config_file}: requirements: "
                      + ", ".join(repr(e) for e in missing)
                      + f": not found in {project.root}",
                      hint="create it, or name the project's inputs in requirements")


def _named_at(project: Project, index: int) -> str:
    """Where an input is named: the config's key, or the default input's place."""
    if project.config_file is None:
        return f"{project.root} (the default input)"
    return f"{project.config_file}: requirements[{index}]"


def resolver_inputs(project: Project, workdir: Path, platform: Platform | None = None
                    ) -> tuple[list[Path], tuple[str, ...]]:
    """The files uv reads and the options that select from the pyproject.toml ones
    (``--extra``, ``--group <file>:<name>``).

    The requirement files are given as lockkit read them (:func:`lockkit.config.reqfile.flatten`),
    written into ``workdir``. A pyproject.toml without a [project] table gives its groups
    only (uv refuses it as a source file). ``--no-sources`` keeps [tool.uv.sources] out:
    lockkit, not the project, decides each package's index, per platform.

    *platform*'s own lines (``[platform-requirements]``) each replace the lines of their
    name, in the requirement files and in a pyproject.toml (then given to uv as a copy in
    ``workdir``), or are added.
    """
    lines = platform_lines(project, platform) if platform is not None else None
    own, names = (lines.lines, lines.names()) if lines is not None else ((), set())
    plain = [project.root / e for e in project.requirements if not is_pyproject(e)]
    files: list[Path] = [_write_flat(plain, workdir, project.root, own, names)] \
        if plain or own else []
    options: list[str] = []
    for i, entry in enumerate(filter(is_pyproject, project.requirements)):
        path = (project.root / entry).resolve()
        data = load_toml(path)
        if names:
            path = _without(data, names, workdir / f"pyproject-{i}" / "pyproject.toml")
        if "project" in data:
            files.append(path)
        options += [f"--group={path}:{group}" for group in project.groups]
    if any(map(is_pyproject, project.requirements)):
        options += [*(f"--extra={extra}" for extra in project.extras), "--no-sources"]
    return files, tuple(options)


def _write_flat(paths: list[Path], workdir: Path, root: Path, own: tuple[str, ...] = (),
                names: Container[str | None] = ()) -> Path:
    from lockkit.config.platformreqs import requirement_name
    from lockkit.config.reqfile import flatten

    requirements, constraints = flatten(paths, root) if paths else ([], [])
    requirements = [r for r in requirements if requirement_name(r) not in names] + list(own)
    constraints = [r for r in constraints if requirement_name(r) not in names]
    out = workdir / "requirements.txt"
    if constraints:
        (workdir / "constraints.txt").write_text("\n".join(constraints) + "\n", encoding="utf-8")
        requirements = [*requirements, "-c constraints.txt"]
    out.write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    return out


def _without(data: dict[str, object], names: Container[str | None], out: Path) -> Path:
    """A copy of a pyproject.toml at *out* without the requirements of *names* in its
    dependencies, optional dependencies and groups (the platform's own lines replace them
    in the flat requirements file); *data* is changed to the copy's."""
    import tomli_w

    from lockkit.config.platformreqs import requirement_name

    project = data.get("project")
    project = project if isinstance(project, dict) else {}
    extras = project.get("optional-dependencies")
    groups = data.get("dependency-groups")
    lists = [project.get("dependencies"), *(extras.values() if isinstance(extras, dict) else ()),
             *(groups.values() if isinstance(groups, dict) else ())]
    for items in lists:
        if isinstance(items, list):
            items[:] = [r for r in items
                        if not (isinstance(r, str) and requirement_name(r) in names)]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(tomli_w.dumps(data), encoding="utf-8")
    return out


# --- pyproject.toml -------------------------------------------------------------------------

def _pyproject_inputs(project: Project, path: Path) -> dict[str, list[str]]:
    """The selected parts of one pyproject.toml, every problem in it reported at once."""
    data = load_toml(path)
    table = data["project"] if isinstance(data.get("project"), dict) else None
    r = KeyReader(path)
    label = _label(project, path)
    found: dict[str, list[str]] = {}
    if table is not None:
        found.update(_project_table(r, label, table, bool(project.extras)))
    elif not project.groups:
        r.fail("", "no [project] table, and no groups selected from it")
    extras = _by_name((table or {}).get("optional-dependencies"))
    section = "project.optional-dependencies"
    found.update(_selected(r, label, extras, project.extras, "extras", section,
                           lambda n: _specs(r, extras[n], f"{section}.{n}")))
    groups = _by_name(data.get("dependency-groups"))
    found.update(_selected(r, label, groups, project.groups, "groups", "dependency-groups",
                           lambda n: _group(r, groups, n, ())))
    if r.errors and not is_inside(path, project.root):
        raise ConfigError(f"{path}: {len(r.errors)} problem(s) in what it declares (not shown: "
                          f"the file is outside the project {project.root})", hint=OUTSIDE_HINT)
    r.raise_if_any()
    return found


def _project_table(r: KeyReader, label: str, table: Mapping[str, object],
                   extras: bool) -> dict[str, list[str]]:
    """[project].dependencies, read statically; what uv would refuse or have to build the
    project for is an error here."""
    dynamic = table.get("dynamic", [])
    dynamic = dynamic if isinstance(dynamic, Container) else []
    if not isinstance(table.get("name"), str):
        r.fail("project.name", "missing (uv requires it in a [project] table)")
    if "version" not in table and "version" not in dynamic:
        r.fail("project.version", "missing (set it, or list it in project.dynamic)")
    if "dependencies" in dynamic:
        r.fail("", "[project] lists dependencies as dynamic (the build backend computes "
                   "them), which lockkit cannot read; list them in project.dependencies "
                   "or in a requirements file")
    if extras and "optional-dependencies" in dynamic:
        r.fail("extras", "[project] lists optional-dependencies as dynamic, which lockkit "
                         "cannot read; list them in project.optional-dependencies")
    return {f"{label}[project.dependencies]": _specs(
        r, table.get("dependencies", []), "project.dependencies")}


def _spec(r: KeyReader, value: object, key: str) -> list[str]:
    """One requirement normalised (a list of one), or its error recorded (an empty list)."""
    if not isinstance(value, str):
        r.typed(key, value, str, "a requirement string")  # records the problem
        return []
    from lockkit.config.reqfile import normalize_requirement

    try:
        return [normalize_requirement(value)]
    except ValueError as exc:
        r.fail(key, str(exc))
        return []


def _specs(r: KeyReader, values: object, key: str) -> list[str]:
    if not isinstance(values, list):
        r.fail(key, "expected a list of requirement strings")
        return []
    return sorted(s for i, v in enumerate(values) for s in _spec(r, v, f"{key}[{i}]"))


def _undeclared(name: str, table: str, declared: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(canonicalize_name(name), declared, n=3)
    tip = (f"did you mean {' or '.join(map(repr, close))}?" if close else
           f"declared: {', '.join(declared) or 'none'}")
    return f"{name!r} is not declared in [{table}] ({tip})"


def _by_name(table: object) -> dict[str, object]:
    """A table keyed by canonical names: extras and groups compare normalised."""
    return {canonicalize_name(k): v for k, v in table.items()} if isinstance(table, dict) \
        else {}


def _selected(r: KeyReader, label: str, declared: Mapping[str, object], wanted: tuple[str, ...],
              key: str, section: str,
              read: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """The wanted extras or groups, each read by ``read``; an undeclared one is an error."""
    found = {}
    for want in wanted:
        name = canonicalize_name(want)
        if name in declared:
            found[f"{label}[{section}.{name}]"] = sorted(read(name))
        else:
            r.fail(key, _undeclared(want, section, sorted(declared)))
    return found


def _group(r: KeyReader, declared: Mapping[str, object], name: str,
           trail: tuple[str, ...]) -> list[str]:
    """A group's requirements with its ``{include-group = ...}`` entries expanded (PEP 735)."""
    if name in trail:
        r.fail("dependency-groups", f"include-group cycle {' -> '.join((*trail, name))}")
        return []
    key = f"dependency-groups.{name}"
    items = declared[name]
    if not isinstance(items, list):
        r.fail(key, "expected a list")
        return []
    out: list[str] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and set(item) == {"include-group"}:
            include = canonicalize_name(str(item["include-group"]))
            if include in declared:
                out += _group(r, declared, include, (*trail, name))
            else:
                r.fail(f"{key}[{i}]", f"include-group {item['include-group']!r} is not "
                                      "declared")
        else:
            out += _spec(r, item, f"{key}[{i}]")
    return out
