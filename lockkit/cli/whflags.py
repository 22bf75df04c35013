"""The ``wheelhouse`` command's flags (build, pack, sbom, unpack): the parser calls
:func:`wheelhouse` when that command runs (and for ``--help``). Nothing runs here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lockkit.cli.flags import FORCE, FOUND, OUTPUT_RULE, output, project_args
from lockkit.index.http import PER_HOST

__all__ = ["JOBS", "wheelhouse"]

JOBS = 16  # files at once, and connections to one host: measured against 8 and 32 on a
# CDN-like edge (benchmarks/cudaset.py; docs/explanation/benchmarks.md says why)


def wheelhouse(sub: Any) -> None:
    wh = sub.add_parser(
        "wheelhouse", help="download a lock's wheels into an offline-installable folder",
        description="Build, pack and unpack per-platform wheelhouses: every wheel of "
                    "locks/pylock.<platform>.toml, hash-checked, with a pylock.toml, a "
                    "requirements.txt and a PEP 503 simple/ tree that install with no network.")
    whsub = wh.add_subparsers(dest="wheelhouse_command", metavar="ACTION", required=True)
    _wheelhouse_build(whsub)
    _wheelhouse_pack(whsub)
    _wheelhouse_sbom(whsub)
    _wheelhouse_unpack(whsub)


def _wheelhouse_build(whsub: Any) -> None:
    build = whsub.add_parser(
        "build", help="fetch the lock's wheels into wheelhouse/<platform>/",
        description="Fetch every file the platform's lock selects (cache, --find-links, "
                    "mirror, then the lock's URL), verify each sha256 while it streams, and "
                    "write the folder atomically. A second build of the same lock downloads "
                    "nothing. tools/ carries lockkit and its dependencies for the platform "
                    "(each hash-checked, pinned in tools/requirements.txt), so the offline "
                    "machine can run 'lockkit verify'; they are not part of the application's "
                    "requirements.txt or pylock.toml.")
    build.add_argument("--platform", required=True, metavar="NAME",
                       help="platform whose lock to use")
    build.add_argument("--out", type=Path, metavar="DIR",
                       help="output folder: a new or empty one, or a wheelhouse lockkit "
                            "built for the platform, which is replaced (default: "
                            "<project>/wheelhouse/<platform>)")
    build.add_argument("--find-links", action="append", type=Path, default=[], metavar="DIR",
                       help="folder of files to take by hash before downloading (repeatable)")
    # Sized for the network, not the cores: a download waits on its link (a CDN edge caps
    # each connection), and the bytes cost little CPU (1 MiB reads, hashed on a second
    # thread). At most max(PER_HOST, --jobs) connections go to one host, files and ranged
    # parts together.
    build.add_argument("--jobs", type=int, default=JOBS,
                       help=f"files downloaded at once (default {JOBS}); at most {PER_HOST} "
                            "connections to one host (or JOBS, when larger), a large "
                            "file's ranged parts included")
    build.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="content-addressed download cache (default: the user cache folder, "
                            "or $LOCKKIT_CACHE_DIR)")
    build.add_argument("--retries", type=int, default=3,
                       help="retries of a 5xx, reset, timeout or truncated body (default 3)")
    build.add_argument("--timeout", type=float, default=60.0, metavar="S",
                       help="seconds without data before a download counts as timed out "
                            "(default 60); a file whose host never answers fails after "
                            "(N+1) x S plus pauses of 0.5, 1, 2... s between tries (N: "
                            "--retries; 15.5 s at --timeout 3), and that host is not asked "
                            "again for the file")
    build.add_argument("--fallback-to-official", action="store_true",
                       help="after a configured mirror fails, try the official host "
                            "(default: an air-gapped build never reaches for it)")
    build.add_argument(
        "--no-tools", action="store_true",
        default=os.environ.get("LOCKKIT_NO_TOOLS", "") not in ("", "0"),
        help="leave out tools/ (lockkit's own wheel and its dependencies, resolved for the "
             "platform from index-url, for running 'lockkit verify' on the offline machine: "
             "pip install --no-index --find-links <wheelhouse>/tools lockkit); also "
             "LOCKKIT_NO_TOOLS=1. A platform whose Python lockkit does not support gets "
             "no tools/, with a note")
    project_args(build)


def _wheelhouse_pack(whsub: Any) -> None:
    pack = whsub.add_parser(
        "pack", help="write the wheelhouse as one reproducible archive",
        description="Pack wheelhouse/<platform>/ into one tar with one top folder, "
                    "<platform>-wheelhouse/ (manifest.json and SHA256SUMS first, then sorted "
                    "members, fixed times, owners and modes): the same folder gives the "
                    "same bytes. The folder must be the wheelhouse of the lock it was built "
                    "from: every wheel hashed against it, every other file derived again. "
                    "The archive's sha256 goes to stdout and to <archive>.sha256, for the "
                    "receiver to check out of band (unpack --sha256).")
    pack.add_argument("--platform", required=True, metavar="NAME",
                      help="platform whose wheelhouse is packed")
    pack.add_argument("--project", type=Path, default=None, metavar="DIR", help=FOUND)
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


def _wheelhouse_sbom(whsub: Any) -> None:
    sbom = whsub.add_parser(
        "sbom", help="(re)write the wheelhouse's CycloneDX SBOM",
        description="Write sbom.cdx.json (CycloneDX 1.6 JSON) for an existing wheelhouse "
                    "folder, from its manifest.json and the lock it was built from: every "
                    "file's name, version, package URL, sha256 and the lock's URL, for a site "
                    "to review before the folder crosses its air gap. 'wheelhouse build' "
                    "writes it already; this is for folders built before, or for a copy "
                    "elsewhere (-o). The same lock gives the same bytes.")
    sbom.add_argument("--platform", required=True, metavar="NAME",
                      help="platform whose wheelhouse the SBOM describes")
    sbom.add_argument("--project", type=Path, default=None, metavar="DIR", help=FOUND)
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


def _wheelhouse_unpack(whsub: Any) -> None:
    unpack = whsub.add_parser(
        "unpack", help="check and extract a wheelhouse archive",
        description="Check every member against the archive's manifest before anything "
                    "appears; refuse members outside its top folder, links, devices, "
                    "absolute or '..' paths and unlisted members; leave nothing behind on "
                    "failure. The platform is the archive's manifest's, never its file "
                    "name's.")
    unpack.add_argument("archive", type=Path, metavar="FILE",
                        help="the archive 'wheelhouse pack' wrote (<platform>.wheelhouse.tar)")
    unpack.add_argument("--out", type=Path, metavar="DIR",
                        help="destination folder: a new or empty one, or a wheelhouse "
                             "lockkit wrote for the archive's platform, which is replaced "
                             "(default: the archive's name without .wheelhouse.tar, in the "
                             "current folder, as 'tar xf' extracts; inside a project, in its "
                             ".lockkit/unpacked/, which git ignores)")
    unpack.add_argument("--lock", type=Path, metavar="FILE",
                        help="check every file the printed install commands read against "
                             "this committed lock (locks/pylock.<platform>.toml): each wheel "
                             "by hash, pylock.toml, requirements.txt, simple/ and the "
                             "SBOM derived again, no other wheel anywhere; tools/ is not "
                             "covered")
    unpack.add_argument("--project", type=Path, default=None, metavar="DIR",
                        help="the project whose platforms (its platforms/ included) the "
                             "archive and --lock may be for (default: the folder of --lock's "
                             "locks/, else the nearest folder with lockkit.toml or "
                             "[tool.lockkit], from the current one up to the repository root; "
                             "without one, the shipped platforms)")
    unpack.add_argument("--sha256", metavar="HEX",
                        help="the archive's sha256 as the sender gave it, out of band ('pack' "
                             "prints it and writes <archive>.sha256): the whole archive, "
                             "tools/ included, is checked before anything is extracted")
