"""``lockkit wheelhouse sbom``: a wheelhouse folder's CycloneDX SBOM written again, from its
manifest and the lock it was built from (:mod:`lockkit.wheelhouse.sbom`); its path to stdout
(``-o -``: the SBOM itself)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.cli.common import shown_path, wheelhouse_folder, wheelhouse_inputs
from lockkit.cli.flags import FORCE, OUTPUT_RULE, output, project_flag
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse

    from lockkit._internal.outfile import Given

__all__ = ["DESCRIPTION", "HELP", "SbomOptions", "add_arguments", "handle"]

HELP = "(re)write the wheelhouse's CycloneDX SBOM"
DESCRIPTION = ("Write sbom.cdx.json (CycloneDX 1.6 JSON) for an existing wheelhouse "
               "folder, from its manifest.json and the lock it was built from: every "
               "file's name, version, package URL, sha256 and the lock's URL, for a site "
               "to review before the folder crosses its air gap. 'wheelhouse build' "
               "writes it already; this is for folders built before, or for a copy "
               "elsewhere (-o). The same lock gives the same bytes.")


def add_arguments(sbom: argparse.ArgumentParser) -> None:
    sbom.add_argument("--platform", required=True, metavar="NAME",
                      help="platform whose wheelhouse the SBOM describes")
    project_flag(sbom)
    sbom.add_argument("--from", dest="folder", type=Path, metavar="DIR",
                      help="wheelhouse folder (default: <project>/wheelhouse/<platform>)")
    sbom.add_argument("--lock", type=Path, metavar="FILE",
                      help="the lock the folder was built from (default: "
                           "<project>/locks/pylock.<platform>.toml)")
    sbom.add_argument("-o", "--output", type=output, metavar="FILE",
                      help="write here instead (default: sbom.cdx.json in the folder, which "
                           "is then listed in its manifest.json). "
                           + OUTPUT_RULE.format(what="an SBOM naming lockkit as its tool")
                           + ", nor a path inside the folder read")
    sbom.add_argument("--force", action="store_true", help=FORCE)
    sbom.set_defaults(options=SbomOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class SbomOptions:
    """``lockkit wheelhouse sbom``'s flags, typed."""

    platform: str
    project: Path | None
    folder: Path | None
    lock: Path | None
    output: Given | None
    force: bool

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> SbomOptions:
        return cls(platform=ns.platform, project=ns.project, folder=ns.folder, lock=ns.lock,
                   output=ns.output, force=ns.force)


def handle(options: SbomOptions) -> int:
    """Write the SBOM; its path goes to stdout (``-o -``: the SBOM itself), a summary line
    to stderr."""
    from lockkit._internal import outfile
    from lockkit.cli.common import load
    from lockkit.wheelhouse import sbom

    project = load(options.project)
    root = project.root
    folder = wheelhouse_folder(options.folder, root, options.platform)
    lock = (options.lock or root / "locks" / f"pylock.{options.platform}.toml").absolute()
    if not lock.is_file():
        raise UsageError(f"{shown_path(lock)}: no such lock",
                         hint="pass the lock the folder was built from with --lock")
    out = None if options.output is None else outfile.check(
        options.output, what=sbom.WHAT, recognise=sbom.recognise, force=options.force, flag="-o",
        inputs=wheelhouse_inputs(project, folder, lock, "the wheelhouse folder read (leave -o "
                                                        "out to write its own sbom.cdx.json)"))
    from lockkit.lock.model import Lock

    written = sbom.refresh(folder, Lock.read(lock), project.secrets, out)
    if out is not None and out.kind != "file":
        ui.say(f"{options.platform}: SBOM of {shown_path(folder)} -> {out.shown}")
        return 0
    ui.say(f"{options.platform}: SBOM of {shown_path(folder)} -> {shown_path(written)}")
    print(written)
    return 0

