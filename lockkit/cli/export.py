"""``lockkit export``: the platform's lock as a hashed requirements file or a pylock copy.

As ``uv export`` does, the result goes to stdout unless ``-o FILE`` names a file (written
atomically, under :mod:`lockkit._internal.outfile`'s rule: never over a file lockkit did
not write without ``--force``, never over the project's inputs); status lines go to stderr.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lockkit._internal import ui
from lockkit.cli.common import output_inputs
from lockkit.cli.flags import FORCE, OUTPUT_RULE, output

if TYPE_CHECKING:
    from lockkit._internal.outfile import Given

__all__ = ["DESCRIPTION", "HELP", "ExportOptions", "add_arguments", "handle"]

HELP = "write a lock as a hashed requirements file any pip installs"
DESCRIPTION = ("Write locks/pylock.<platform>.toml in another installer's format, to "
               "stdout unless -o names a file (as 'uv export' does). 'requirements': "
               "a file that pip of any version installs with 'pip install "
               "--require-hashes -r FILE' (pip reads -r pylock.toml only from 26.1): "
               "torch-family packages pinned by URL to the file the lock selects, "
               "the others pinned with == and the hash of every file the lock lists, "
               "from the lock's default index (one --index-url line). 'pylock': the "
               "lock itself. URLs go through the project's [mirrors] unless --official; "
               "user:token@ is never written, a ${VAR} only as the placeholder (pip "
               "fills it from the environment).")


def add_arguments(exp: argparse.ArgumentParser) -> None:
    exp.add_argument("--platform", required=True, metavar="NAME",
                     help="platform whose committed lock to export")
    exp.add_argument("--format", choices=("requirements", "pylock"), default="requirements",
                     help="requirements (default) or pylock (a pylock.<name>.toml)")
    exp.add_argument("-o", "--output", type=output, metavar="FILE",
                     help="write FILE atomically instead of stdout (e.g. "
                          "requirements-rebuild.txt, or pylock.<platform>.toml for pylock). "
                          + OUTPUT_RULE.format(what="an export"))
    exp.add_argument("--force", action="store_true", help=FORCE)
    exp.add_argument("--official", action="store_true",
                     help="write the lock's own URLs, not the project's mirrors")
    exp.add_argument("--project", type=Path, default=None, metavar="DIR",
                     help="project folder holding lockkit.toml (default: the nearest one "
                          "from the current folder up)")
    exp.add_argument("--mirror", action="append", default=[], metavar="OFFICIAL=MIRROR",
                     help="serve an official URL prefix from a mirror, on top of the "
                          "project's [mirrors] (repeatable; the longest prefix wins)")

    exp.set_defaults(options=ExportOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class ExportOptions:
    """``lockkit export``'s flags, typed."""

    platform: str
    format: Literal["requirements", "pylock"]
    output: Given | None
    force: bool
    official: bool
    project: Path | None
    mirror: tuple[str, ...]

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> ExportOptions:
        return cls(platform=ns.platform, format=ns.format, output=ns.output, force=ns.force,
                   official=ns.official, project=ns.project, mirror=tuple(ns.mirror))


def handle(options: ExportOptions) -> int:
    from lockkit._internal import outfile
    from lockkit.cli.common import load
    from lockkit.lock import export
    from lockkit.lock.freshness import stale_warning
    from lockkit.platforms.definitions import load_catalog

    if options.format == "pylock" and isinstance(options.output, Path):  # a file, not stdout
        export.check_pylock_name(options.output)
    project = load(options.project, mirrors=list(options.mirror))
    target = outfile.check(options.output or outfile.STDOUT, what="an export",
                           recognise=export.recognise, force=options.force, flag="-o",
                           inputs=output_inputs(project))
    platform, = load_catalog(project.root).select([options.platform], False, project.platforms)
    lock = export.read(project, platform)
    if options.format == "pylock":
        text = export.pylock_text(project, platform, official=options.official, lock=lock)
    else:
        reqs = export.requirements(project, platform, official=options.official, lock=lock)
        # the file as given (absolute stays absolute): the hint is run from anywhere
        name = export.DEFAULT_NAME if target.kind == "stdout" else str(options.output)
        text = export.requirements_text(reqs, name)
        if reqs.unmirrored:
            ui.warn(f"{', '.join(reqs.unmirrored)}: a mirror serves the index but "
                    "not the file's host, so the line keeps the lock's official URL; map "
                    "that host too (--mirror OFFICIAL=MIRROR), or install from a wheelhouse")
    stale = stale_warning(project, platform, lock)  # after reading: an unreadable lock is its error
    if stale:
        ui.warn(stale)
    outfile.write(target, text)
    if target.kind != "stdout":
        ui.say(f"{platform.name}: wrote {options.output} ({options.format})")
    return 0
