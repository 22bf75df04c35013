"""``lockkit wheelhouse pack``: a wheelhouse folder, checked against the lock it was built
from, written as one reproducible archive (:mod:`lockkit.wheelhouse.archive`); its sha256 to
stdout and beside it, with the command the receiver runs."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit._internal.ui import human_size
from lockkit.cli.common import shown_path, wheelhouse_folder, wheelhouse_inputs
from lockkit.cli.flags import FORCE, OUTPUT_RULE, output, project_flag
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse

    from lockkit._internal.outfile import Given

__all__ = ["DESCRIPTION", "HELP", "PackOptions", "add_arguments", "handle"]

HELP = "write the wheelhouse as one reproducible archive"
DESCRIPTION = ("Pack wheelhouse/<platform>/ into one tar with one top folder, "
               "<platform>-wheelhouse/ (manifest.json and SHA256SUMS first, then sorted "
               "members, fixed times, owners and modes): the same folder gives the "
               "same bytes. The folder must be the wheelhouse of the lock it was built "
               "from: every wheel hashed against it, every other file derived again. "
               "The archive's sha256 goes to stdout and to <archive>.sha256, for the "
               "receiver to check out of band (unpack --sha256).")


def add_arguments(pack: argparse.ArgumentParser) -> None:
    pack.add_argument("--platform", required=True, metavar="NAME",
                      help="platform whose wheelhouse is packed")
    project_flag(pack)
    pack.add_argument("--from", dest="folder", type=Path, metavar="DIR",
                      help="wheelhouse folder (default: <project>/wheelhouse/<platform>)")
    pack.add_argument("-o", "--output", type=output, metavar="FILE",
                      help="archive (default: <project>/wheelhouse/<platform>.wheelhouse.tar"
                           "). " + OUTPUT_RULE.format(what="an archive it packed")
                           + ", nor a path inside the folder packed. With '-', the tar goes "
                             "to stdout, its sha256 line to stderr and no <archive>.sha256 "
                             "is written")
    pack.add_argument("--force", action="store_true", help=FORCE)
    pack.add_argument("--lock", type=Path, metavar="FILE",
                      help="the committed lock the folder was built from (default: the "
                           "one its manifest names, in <project>/locks)")
    pack.set_defaults(options=PackOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class PackOptions:
    """``lockkit wheelhouse pack``'s flags, typed."""

    platform: str
    project: Path | None
    folder: Path | None
    output: Given | None
    force: bool
    lock: Path | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> PackOptions:
        return cls(platform=ns.platform, project=ns.project, folder=ns.folder,
                   output=ns.output, force=ns.force, lock=ns.lock)


def handle(options: PackOptions) -> int:
    """Write the archive (``-o -``: on stdout, then the sha256 line goes to stderr)."""
    from lockkit._internal import outfile
    from lockkit.cli.common import load
    from lockkit.wheelhouse import archive

    project = load(options.project)
    root = project.root
    folder = wheelhouse_folder(options.folder, root, options.platform)
    if options.lock is not None and not options.lock.is_file():
        raise UsageError(f"--lock {options.lock}: no such file")
    inputs = wheelhouse_inputs(project, folder, options.lock, "the folder being packed")
    given = options.output or root / "wheelhouse" / f"{options.platform}.wheelhouse.tar"
    out = outfile.check(given if given == outfile.STDOUT else Path(given).absolute(),
                        what=archive.ARCHIVE, recognise=archive.recognise, inputs=inputs,
                        force=options.force, flag="-o" if options.output else None)
    if out.to_stdout and sys.stdout.isatty():  # as tar refuses: bytes no one can read
        raise UsageError("-o -: stdout is a terminal; refusing to write a tar there",
                         hint="redirect it (> FILE, | ssh ...), or give -o a file")
    archive.sidecar_target(out, force=options.force)  # refused before the work, not after it
    # the folder is checked against the lock it was built from, every file derived again
    from lockkit.lock.model import Lock

    lock = Lock.read(options.lock.absolute() if options.lock else archive.named_lock(folder, root))
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    with ui.progress(f"{options.platform}: packing", size, bytes_=True,
                     phase=f"{options.platform}: packing {human_size(size)}...") as advance:
        _, digest = archive.packed(folder, out, lock=lock, project_dir=root,
                                   on_bytes=advance, force=options.force,
                                   secrets=project.secrets)
    if out.kind != "file":
        ui.say(f"{options.platform}: packed {shown_path(folder)} -> {out.shown}")
        print(f"{digest}  {out.shown}", file=sys.stderr if out.to_stdout else sys.stdout)
        return 0
    shown, sidecar = Path(out.given), archive.sidecar(Path(out.given))
    ui.say(f"{options.platform}: packed {shown_path(folder)} -> {shown_path(shown)} "
           f"({human_size(shown.stat().st_size)}); its sha256 -> {shown_path(sidecar)}: send "
           "it out of band, the receiver checks it with 'wheelhouse unpack --sha256'")
    ui.say("the receiver runs, in the project's folder, beside the archive:\n  "
           + _receiver_command(shown.name, digest, project.lock_path(options.platform).name))
    print(f"{digest}  {shown}")
    return 0


def _receiver_command(archive_name: str, digest: str, lock_name: str) -> str:
    """The command a receiver pastes: the archive by its name (where it lands there), the
    sha256 sent out of band, and the project's committed lock of its platform."""
    import shlex

    return shlex.join(["lockkit", "wheelhouse", "unpack", archive_name, "--sha256", digest,
                       "--lock", f"locks/{lock_name}"])

