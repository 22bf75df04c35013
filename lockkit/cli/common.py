"""What the commands share: the project folder, paths and sizes as printed, the wheelhouse
folder a command reads, the platform a run is for, the checks of the paths given, how a run
fetches the lock's files when no wheelhouse is given, and a new report folder. The heavy
modules are imported on first use."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from lockkit._internal.outfile import Inputs
    from lockkit.config.project import Project
    from lockkit.lock.model import Lock
    from lockkit.platforms.definitions import Platform
    from lockkit.wheelhouse.build import BuildResult

__all__ = ["check_given_paths", "for_project", "load", "lock_fetcher", "new_report_folder",
           "output_inputs", "pick_platform", "project_root", "shown_path", "wheelhouse_folder",
           "wheelhouse_inputs"]


def load(given: Path | None, *, mirrors: list[str] | None = None, index_url: str | None = None,
         exclude_newer: str | None = None, max_page_size: int | None = None) -> Project:
    """The project a command works on (:func:`lockkit.config.project.load_project`, with
    the command's flags), its ``${VAR}`` values concealed from then on in every line the
    command says (:func:`lockkit._internal.log.hide`): each command loads it here."""
    from lockkit._internal import log
    from lockkit.config.project import load_project

    project = load_project(given, mirrors=mirrors, index_url=index_url,
                           exclude_newer=exclude_newer, max_page_size=max_page_size)
    log.hide(project.secrets)
    return project


def project_root(given: Path | None) -> Path:
    """``--project``, else the folder every command finds
    (:func:`lockkit.config.project.load_project`: the nearest lockkit.toml or [tool.lockkit]
    upward), so pack and sbom work from the same
    sub-folder build did."""
    return load(given).root


def output_inputs(project: Project) -> Inputs:
    """The project's inputs an output file must never replace (lockkit._internal.outfile):
    its config, locks and requirement files, the files they include too (a file that
    cannot be read is named alone: its own error belongs to the command that reads it)."""
    from lockkit._internal.outfile import project_inputs
    from lockkit.config.reqfile import read_tree
    from lockkit.errors import LockkitError

    files = [project.root / r for r in project.requirements]
    for top in [f for f in files if f.name != "pyproject.toml"]:  # its own reader's
        try:
            files += [f.path for f in read_tree(top, project.root)]
        except (LockkitError, OSError):
            pass
    return project_inputs(project.root, project.config_file, [str(f) for f in files])


def wheelhouse_inputs(project: Project, folder: Path, lock: Path | None, what: str) -> Inputs:
    """The files pack and sbom read, never written over: the project's config, requirement
    files and locks, the lock given, and the wheelhouse folder (any path inside it)."""
    inputs = output_inputs(project)
    return inputs.add(files=[(lock, "the lock given")] if lock else [], folders=[(folder, what)])


def wheelhouse_folder(folder: Path | None, root: Path, platform: str) -> Path:
    """``folder``, else the project's ``wheelhouse/<platform>``, as an absolute path; it
    must exist (pack and sbom read a folder that build made)."""
    folder = (folder or root / "wheelhouse" / platform).absolute()
    if not folder.is_dir():
        raise UsageError(f"{shown_path(folder)}: no wheelhouse folder",
                         hint=f"run 'lockkit wheelhouse build --platform {platform}'")
    return folder


# The commands that take --project (diff and diagnose read the files they are given).
_WITH_PROJECT = ("platforms", "compile", "wheelhouse", "verify", "export", "cache", "sync", "ci")


def for_project(text: str | None, project: Path | None) -> str | None:
    """*text* (a hint, a warning) with ``--project DIR`` added to each 'lockkit ...'
    command it quotes, when the command that printed it was given ``--project``: run as
    printed, from the same folder, the hinted command then acts on the same project (it
    said 'lockkit compile', which from there found no project, or another one)."""
    if not text or project is None:
        return text
    import re
    import shlex

    def add(found: re.Match[str]) -> str:
        words = found.group(1).split()
        if (len(words) < 2 or words[1] not in _WITH_PROJECT or "--project" in words
                or "--help" in words):
            return found.group(0)
        return f"'{found.group(1)} --project {shlex.quote(str(project))}'"
    return re.sub(r"'(lockkit [^']+)'", add, text)


def shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def pick_platform(project: Project, name: str | None, command: str) -> Platform:
    """The named platform, else the config's only one, else the best this machine runs
    that has a lock (said on stderr as ``<command>: picked ...``); its lock must exist."""
    from lockkit.platforms.definitions import load_catalog

    catalog = load_catalog(project.root)
    known = catalog.platforms
    if name is None and len(project.platforms) != 1:
        from lockkit.platforms.host import choose

        picked = choose(known, {n for n in known if project.lock_path(n).is_file()}, "lock")
        name = picked.platform.name
        ui.say(f"{command}: picked {name} for this machine ({picked.reason})")
    # without a name, the config's only platform: an unknown one is traced to the file
    platform, = catalog.select([name] if name else [], False, project.platforms,
                               project.config_file)
    if not project.lock_path(platform.name).is_file():
        raise UsageError(f"{project.lock_path(platform.name)}: no lock",
                         hint=f"run 'lockkit compile --platform {platform.name}'")
    return platform


def check_given_paths(wheelhouse: Path | None, python: Path | None) -> None:
    """``--wheelhouse`` and ``--python``, where given, must exist (before any work starts)."""
    if wheelhouse is not None and not wheelhouse.is_dir():
        raise UsageError(f"--wheelhouse {wheelhouse}: not a folder")
    if python is not None and not python.exists():
        raise UsageError(f"--python {python}: no such interpreter")


def lock_fetcher(project: Project, platform: Platform, cache_dir: Path | None
                 ) -> Callable[[Path, Lock], BuildResult]:
    """Without a wheelhouse: the files of the lock (the run's, read once) fetched by hash
    into a temp one, through the cache (``cache_dir``, else the default one); the build's
    result says where each file came from."""
    def fetch(dest: Path, lock: Lock) -> BuildResult:
        from lockkit.cache.layout import default_cache_dir
        from lockkit.cache.store import Cache
        from lockkit.download.fetch import http_client
        from lockkit.index.auth import Credentials
        from lockkit.wheelhouse import build as wheelhouse

        credentials = Credentials.for_indexes(project.index_url, project.mirrors)
        with http_client(credentials=credentials) as client:
            return wheelhouse.build(project, platform, dest, client=client, lock=lock,
                                    cache=Cache((cache_dir or default_cache_dir()).absolute()))
    return fetch


def new_report_folder(parent: Path, stamp: str) -> Path:
    """``parent/stamp``, or ``stamp-2``, ``stamp-3``...: a folder this run alone created
    (``mkdir`` fails on an existing one), so two runs in the same second keep both."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10000):
        folder = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise UsageError(f"{parent}: 10000 report folders for {stamp}; remove old reports")
