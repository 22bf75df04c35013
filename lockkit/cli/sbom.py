"""``lockkit wheelhouse sbom``: (re)write a wheelhouse folder's CycloneDX SBOM."""

from __future__ import annotations

import argparse

from lockkit._internal import ui
from lockkit.errors import UsageError

__all__ = ["cmd_wheelhouse_sbom"]


def cmd_wheelhouse_sbom(args: argparse.Namespace) -> int:
    """Write the SBOM; its path goes to stdout, a summary line to stderr."""
    from lockkit.cli.build import project_root, shown_path, wheelhouse_folder
    from lockkit.wheelhouse import sbom

    root = project_root(args.project)
    folder = wheelhouse_folder(args.folder, root, args.platform)
    lock = (args.lock or root / "locks" / f"pylock.{args.platform}.toml").absolute()
    if not lock.is_file():
        raise UsageError(f"{shown_path(lock)}: no such lock",
                         hint="pass the lock the folder was built from with --lock")
    written = sbom.refresh(folder, lock, args.output.absolute() if args.output else None)
    ui.say(f"{args.platform}: SBOM of {shown_path(folder)} -> {shown_path(written)}")
    print(written)
    return 0
