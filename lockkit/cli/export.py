"""``lockkit export``: the platform's lock as a hashed requirements file or a pylock copy.

As ``uv export`` does, the result goes to stdout unless ``-o FILE`` names a file (written
atomically); status lines go to stderr.
"""

from __future__ import annotations

import argparse
import sys

from lockkit._internal import ui

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit._internal.fs import write_atomic
    from lockkit.config.project import load_project
    from lockkit.lock import export
    from lockkit.lock.freshness import stale_warning
    from lockkit.platforms.definitions import load_catalog

    if args.format == "pylock" and args.output is not None:
        export.check_pylock_name(args.output)
    project = load_project(args.project, mirrors=args.mirror)
    platform, = load_catalog(project.root).select([args.platform], False, project.platforms)
    if args.format == "pylock":
        text = export.pylock_text(project, platform, official=args.official)
    else:
        reqs = export.requirements(project, platform, official=args.official)
        # the file as given (absolute stays absolute): the hint is run from anywhere
        name = str(args.output) if args.output is not None else export.DEFAULT_NAME
        text = export.requirements_text(reqs, name)
        if reqs.unmirrored:
            ui.say(f"warning: {', '.join(reqs.unmirrored)}: a mirror serves the index but "
                   "not the file's host, so the line keeps the lock's official URL; map "
                   "that host too (--mirror OFFICIAL=MIRROR), or install from a wheelhouse")
    stale = stale_warning(project, platform)  # after reading: an unreadable lock is its error
    if stale:
        ui.say(f"warning: {stale}")
    if args.output is None:
        sys.stdout.write(text)
        return 0
    write_atomic(args.output, text)
    ui.say(f"{platform.name}: wrote {args.output} ({args.format})")
    return 0
