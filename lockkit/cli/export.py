"""``lockkit export``: the platform's lock as a hashed requirements file or a pylock copy.

As ``uv export`` does, the result goes to stdout unless ``-o FILE`` names a file (written
atomically, under :mod:`lockkit._internal.outfile`'s rule: never over a file lockkit did
not write without ``--force``, never over the project's inputs); status lines go to stderr.
"""

from __future__ import annotations

import argparse

from lockkit._internal import ui
from lockkit.cli.common import output_inputs

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit._internal import outfile
    from lockkit.cli.common import load
    from lockkit.lock import export
    from lockkit.lock.freshness import stale_warning
    from lockkit.platforms.definitions import load_catalog

    if args.format == "pylock" and args.output not in (None, outfile.STDOUT):
        export.check_pylock_name(args.output)
    project = load(args.project, mirrors=args.mirror)
    target = outfile.check(args.output or outfile.STDOUT, what="an export",
                           recognise=export.recognise, force=args.force, flag="-o",
                           inputs=output_inputs(project))
    platform, = load_catalog(project.root).select([args.platform], False, project.platforms)
    lock = export.read(project, platform)
    if args.format == "pylock":
        text = export.pylock_text(project, platform, official=args.official, lock=lock)
    else:
        reqs = export.requirements(project, platform, official=args.official, lock=lock)
        # the file as given (absolute stays absolute): the hint is run from anywhere
        name = export.DEFAULT_NAME if target.kind == "stdout" else str(args.output)
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
        ui.say(f"{platform.name}: wrote {args.output} ({args.format})")
    return 0
