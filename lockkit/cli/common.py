"""What verify and sync share: the platform a run is for, the checks of the paths given,
and how a run fetches the lock's files when no wheelhouse is given. The heavy modules are
imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from pathlib import Path

    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform

__all__ = ["check_given_paths", "lock_fetcher", "pick_platform"]


def pick_platform(project: Project, name: str | None, command: str) -> Platform:
    """The named platform, else the config's only one, else the best this machine runs
    that has a lock (said on stderr as ``<command>: picked ...``); its lock must exist."""
    from lockkit.platforms.definitions import load_platforms, select_platforms

    known = load_platforms(project.root)
    if name is None and len(project.platforms) != 1:
        from lockkit.platforms.host import choose

        picked = choose(known, {n for n in known if project.lock_path(n).is_file()}, "lock")
        name = picked.platform.name
        ui.say(f"{command}: picked {name} for this machine ({picked.reason})")
    # without a name, the config's only platform: an unknown one is traced to the file
    platform, = select_platforms(known, [name] if name else [], False, project.platforms,
                                 project.config_file)
    if not project.lock_path(platform.name).is_file():
        raise UsageError(f"{project.lock_path(platform.name)}: no lock",
                         hint=f"run 'lockkit compile --platform {platform.name}'")
    return platform


def check_given_paths(args: argparse.Namespace) -> None:
    """``--wheelhouse`` and ``--python``, where given, must exist (before any work starts)."""
    if args.wheelhouse is not None and not args.wheelhouse.is_dir():
        raise UsageError(f"--wheelhouse {args.wheelhouse}: not a folder")
    if args.python is not None and not args.python.exists():
        raise UsageError(f"--python {args.python}: no such interpreter")


def lock_fetcher(project: Project, platform: Platform, cache_dir: Path | None
                 ) -> Callable[[Path], Path]:
    """Without a wheelhouse: the lock's files fetched by hash into a temp one, through the
    cache (``cache_dir``, else the default one)."""
    def fetch(dest: Path) -> Path:
        from lockkit.cache.layout import default_cache_dir
        from lockkit.cache.store import Cache
        from lockkit.index.auth import Credentials
        from lockkit.wheelhouse import build as wheelhouse
        from lockkit.wheelhouse.fetch import http_client

        with http_client(credentials=Credentials.for_project(project)) as client:
            wheelhouse.build(project, platform, dest, client=client,
                             cache=Cache((cache_dir or default_cache_dir()).absolute()))
        return dest
    return fetch
