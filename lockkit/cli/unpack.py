"""``lockkit wheelhouse unpack``: an archive (or the best of a folder of them for this
machine) unpacked as hostile input (:func:`lockkit.wheelhouse.archive.unpack`), checked
against the committed lock (``--lock``) and the sender's sha256 (``--sha256``) when given,
then what it covers said before the install commands it vouches for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit._internal.ui import human_size
from lockkit.cli.common import shown_path
from lockkit.errors import ArchiveError, UsageError

if TYPE_CHECKING:
    import argparse

    from lockkit.lock.model import Lock

__all__ = ["DESCRIPTION", "HELP", "UnpackOptions", "add_arguments", "handle"]

HELP = "check and extract a wheelhouse archive"
DESCRIPTION = ("Check every member against the archive's manifest before anything "
               "appears; refuse members outside its top folder, links, devices, "
               "absolute or '..' paths and unlisted members; leave nothing behind on "
               "failure. The platform is the archive's manifest's, never its file "
               "name's.")


def add_arguments(unpack: argparse.ArgumentParser) -> None:
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
    unpack.set_defaults(options=UnpackOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class UnpackOptions:
    """``lockkit wheelhouse unpack``'s arguments, typed."""

    archive: Path
    out: Path | None
    lock: Path | None
    project: Path | None
    sha256: str | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> UnpackOptions:
        return cls(archive=ns.archive, out=ns.out, lock=ns.lock, project=ns.project,
                   sha256=ns.sha256)


def handle(options: UnpackOptions) -> int:
    from lockkit.wheelhouse import archive
    from lockkit.wheelhouse.manifest import Manifest
    from lockkit.wheelhouse.offline import install_hint

    project_dir = _unpack_project(options.project, options.lock)
    given = options.archive
    if given.is_dir():  # a folder of <platform>.wheelhouse.tar: the best for this machine
        given = _pick(given, project_dir)
    if not given.is_file():
        raise UsageError(f"{given}: no such archive")
    if options.lock is not None and not options.lock.is_file():
        raise UsageError(f"--lock {options.lock}: no such file")
    name = given.name.removesuffix(".tar").removesuffix(".wheelhouse")
    lock = _read_lock(options.lock)
    ignored = None if options.out else _ignored_here(project_dir)
    size = given.stat().st_size
    with ui.progress(f"{name}: unpacking", size, bytes_=True,
                     phase=f"{name}: unpacking {human_size(size)}...") as advance:
        out = archive.unpack(given, options.out or (ignored or Path.cwd()) / name,
                             lock=lock,
                             project_dir=project_dir, sha256=options.sha256,
                             flag="--out" if options.out else None, on_bytes=advance)
    ui.say(f"unpacked {given} -> {shown_path(out)}")
    if ignored is not None:
        ui.say(f"in the project, under {shown_path(ignored)}, which git ignores (its "
               ".gitignore holds '*'), as do the venvs of the commands below")
    ui.say(_covered(options.lock, options.sha256, Manifest.read(out).data["platform"]))
    ui.say(install_hint(out, tools_checked=options.sha256 is not None, venvs=ignored))
    return 0


def _ignored_here(project_dir: Path | None) -> Path | None:
    """Where unpack extracts with no --out: in a project, ``.lockkit/unpacked/`` (made with
    a ``.gitignore`` of ``*``: git stays clean; never ``wheelhouse/<platform>``, which may be
    the sender's own); elsewhere None: the current folder, as 'tar xf' extracts."""
    from lockkit._internal.fs import ignored_folder

    here = Path.cwd().resolve()
    if project_dir is None or not here.is_relative_to(project_dir.resolve()):
        return None
    return ignored_folder(project_dir / ".lockkit" / "unpacked")


def _read_lock(path: Path | None) -> Lock | None:
    """``--lock FILE``, read once (:meth:`lockkit.lock.model.Lock.read`); None without it."""
    from lockkit.lock.model import Lock

    return Lock.read(path.absolute()) if path is not None else None


def _covered(lock: Path | None, sha256: str | None, platform: str) -> str:
    """What the clean unpack covers, said before the commands it vouches for."""
    said = []
    if sha256 is not None:
        said.append("checked: the whole archive, tools/ included, is the one the sender "
                    "packed (--sha256)")
    if lock is not None:
        said.append(f"checked: every file the install commands read, tools/ aside, is what "
                    f"{lock} implies (each wheel by hash; pylock.toml, requirements.txt, "
                    "simple/ and sbom.cdx.json derived again)")
    return "\n".join(said) or (
        "not verified: only that the archive agrees with its own manifest, not with a "
        "committed lock or the sender's sha256; rerun with --lock "
        f"locks/pylock.{platform}.toml, or --sha256 with the sender's")


def _pick(folder: Path, project_dir: Path | None) -> Path:
    """The archive of *folder* for the best platform this machine runs, each archive's
    platform read from its manifest (an unreadable archive keeps its name's, and is
    refused when unpacked)."""
    from lockkit.platforms.definitions import load_platforms
    from lockkit.platforms.host import choose
    from lockkit.wheelhouse import archive
    from lockkit.wheelhouse.manifest import Manifest

    known = load_platforms(project_dir)
    tars: dict[str, Path] = {}
    for path in sorted(folder.glob("*.wheelhouse.tar")):
        try:
            platform = archive.archive_platform(path, Manifest.read(path), known)
        except ArchiveError:
            platform = path.name.removesuffix(".wheelhouse.tar")
        if platform in tars:
            raise UsageError(f"{tars[platform]} and {path} are both for {platform!r}",
                             hint="pass the archive to unpack")
        tars[platform] = path
    if not tars:
        raise UsageError(f"{folder}: no wheelhouse archive (*.wheelhouse.tar) in it",
                         hint="pass the archive itself: 'lockkit wheelhouse unpack FILE'")
    try:
        picked = choose(known, set(tars), "wheelhouse archive")
    except UsageError as exc:  # choose's words are verify's, whose --platform unpack has not
        why = str(exc).removeprefix("--platform: required: ")
        raise UsageError(f"{folder}: {why}",
                         hint="pass the archive to unpack: "
                              + ", ".join(str(p) for p in tars.values())) from None
    ui.say(f"wheelhouse unpack: picked {picked.platform.name} ({picked.reason})")
    return tars[picked.platform.name]


def _unpack_project(project: Path | None, lock: Path | None) -> Path | None:
    """The project whose platforms unpack knows: ``--project``; else the project of
    ``--lock FILE`` when it lies in a ``locks/`` folder; else the current folder's (as
    every command finds it); None, the shipped platforms only, outside any project."""
    from lockkit.config.project import find_project, project_root

    if project is not None:
        return project_root(project)
    if lock is not None and lock.absolute().parent.name == "locks":
        return lock.absolute().parent.parent
    return find_project(Path.cwd())
