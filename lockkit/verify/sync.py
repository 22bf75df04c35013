"""``lockkit sync``: rebuild a project's venv from its lock, fresh, and swap it in whole.

The default venv is ``<project>/.venv``, the one ``uv sync`` manages (pip-tools'
``pip-sync`` edits the active environment in place instead; a fresh rebuild cannot).
The steps are verify's own (:mod:`lockkit.env.rebuild`, :mod:`lockkit.env.install`):
host, venv, install from the wheelhouse or the lock's URLs by hash, pip-check,
inventory; ``verify=True`` runs the whole verify plan (system, gpu, extensions,
application, resume) on the new venv too.

The new venv is built beside the old one, in ``<name>.lockkit-new-<pid>@<start>`` (same
folder, so the swap is renames on one filesystem), marked as lockkit's (``.lockkit.json``,
with its platform) and swapped in only when every step passed
(:func:`lockkit._internal.outdir.swap`: the old venv renamed aside, the new one into its place,
the old one removed). The folder
replaced is only a venv lockkit made for the same platform, or an empty one
(:func:`target`): a venv made by anything else is never removed. Nor is what a user put
in lockkit's venv: a file no ``*.dist-info/RECORD`` of the venv owns and that is not the
venv's own layout (:func:`foreign`: an editable checkout in ``src/``, a notes file) makes
``sync`` refuse before anything is built, and again right before the swap; ``force``
replaces the venv anyway. On any failure, or
Ctrl-C, the new folder is removed and the old venv was never touched. Everything else of
the run (uv's cache, the hashed requirements, a wheelhouse fetched from the lock's URLs,
the application's clean copy) is in a temp folder, as verify's is, never in the project.

A venv is not relocatable by default: its scripts' shebangs and ``activate`` hold its
absolute path (``sys.prefix`` is found at run time from ``bin/python``, so it follows).
With uv the venv is made ``--relocatable`` (uv's own answer: scripts and activate find
the venv from where they are). The stdlib venv and pip have no such mode, so with
``installer="pip"`` the build folder's path is rewritten to the final one in ``bin/``'s
scripts and activate files and in ``pyvenv.cfg``, before the swap (:func:`rebase`).
"""

from __future__ import annotations

import datetime
import os
import secrets
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lockkit._internal.endings import interrupt_held
from lockkit._internal.fs import temp_private
from lockkit._internal.leftovers import hold, owner_mark, owner_tag
from lockkit._internal.outdir import MARKER, check, mark, swap, sweep_stale
from lockkit.env import rebuild
from lockkit.env.ownership import record_rows, unowned
from lockkit.errors import ConfigError, UsageError
from lockkit.report.model import Dossier
from lockkit.steps.context import Options
from lockkit.steps.engine import Step
from lockkit.verify.run import PLAN, execute, make_dossier, new_run, plan

__all__ = ["NEW", "REBUILD", "SyncOptions", "Synced", "foreign", "rebase", "sync", "target"]

REBUILD = PLAN[:PLAN.index(("inventory", ("install",))) + 1]  # host .. inventory
NEW = ".lockkit-new-"  # <venv name><NEW><pid>@<start>: the new venv, built beside the old one
# The venv's own layout, which no RECORD lists: what uv venv, python -m venv and virtualenv
# write at its top (uv: .gitignore, CACHEDIR.TAG, and .lock, the file uv locks the venv
# by while it installs), the marker sync writes, the interpreter links and activate scripts
# in bin/ (Scripts/ on Windows), and virtualenv's (older uv's) start-up files in
# site-packages. Folders (include/, lib/...) hold nothing of their own.
_TOP = frozenset({"pyvenv.cfg", MARKER, ".gitignore", "CACHEDIR.TAG", ".lock", "lib64"})
_SCRIPTS = frozenset({"activate_this.py", "deactivate.bat", "pydoc.bat"})
_TOOL_SITE = ("_virtualenv.pth", "_virtualenv.py")
_FORCE = "pass --force to replace the venv anyway"


@dataclass(frozen=True, kw_only=True)
class SyncOptions:
    check: Options  # verify's options: project, platform, wheelhouse, python, installer...
    venv: Path  # the venv to replace or create (absolute: see target())
    verify: bool = False  # also run verify's system, gpu, extensions, application, resume
    force: bool = False  # replace the venv even when it holds files lockkit did not install


@dataclass(frozen=True, kw_only=True)
class Synced:
    venv: Path
    dossier: Dossier  # the steps that ran (kind "verify": the same steps and facts)
    attachments: Mapping[str, str]  # installed-after.txt
    swapped: bool  # the new venv is in place
    verified: bool  # with verify=True, and every step of verify passed

    @property
    def result(self) -> str:
        return self.dossier.result


def target(venv: Path, platform: str, *, project: Path | None = None,
           flag: str | None = "--venv", force: bool = False) -> Path:
    """The folder to sync: absolute, a symlink's target (the link keeps working); refused
    with a :class:`UsageError` if it runs lockkit itself, and a ``ConfigError`` unless it
    is missing, empty or a venv lockkit made for *platform* (:func:`lockkit._internal.outdir.check`,
    which also refuses *project*, the current folder and the folders above them), or
    (unless *force*) when it holds what lockkit did not install (:func:`keep_foreign`)."""
    if venv.exists() and Path(sys.prefix).resolve() == venv.resolve():
        raise UsageError(f"--venv {venv}: lockkit runs from this venv",
                         hint="a venv cannot be replaced by a program running from it: run "
                              "lockkit from another environment (pipx, uvx, a tools venv)")
    real = check(venv, kind="venv", platform=platform, project=project, flag=flag)
    if not force:
        keep_foreign(real, f"{flag} {venv}" if flag else str(venv))
    return real


def keep_foreign(venv: Path, where: str) -> None:
    """A ``ConfigError`` (exit 2) naming what in lockkit's *venv* no package installed,
    a few names and a count, when there is any; nothing is changed."""
    found = foreign(venv)  # a missing or empty folder holds nothing
    if found:
        raise ConfigError(f"{_printable(where)}: a venv lockkit made that also holds "
                          f"{_few(found)}, which lockkit did not install; move that out, or "
                          f"{_FORCE}", hint="a sync replaces the whole venv")


def foreign(venv: Path) -> list[str]:
    """What in *venv* (absolute) no ``*.dist-info/RECORD`` of its site-packages owns and
    the venv's layout does not account for, relative to it, sorted; a folder at the top
    that nothing installed uses (``src/``) is named once, with a ``/``. Links are never
    followed. Ownership is :mod:`lockkit.env.ownership`'s, bytecode of owned files
    included."""
    sites = sorted(venv.glob("lib/python*/site-packages")) + sorted(
        venv.glob("Lib/site-packages"))
    owned = _owned(sites) | {os.path.join(s, n) for s in sites for n in _TOOL_SITE}
    found = unowned(sites, owned, set())
    # a start-up file is listed as "<path>: <why>" (no ": " in a why): the path is enough
    paths = [*(c.rsplit(": ", 1)[0] for c in found.code), *found.other]
    paths += _outside(venv, {str(s) for s in sites}, owned)
    used = {"bin", "Scripts", "lib", "Lib", "include", "Include"} | {
        os.path.relpath(p, venv).split(os.sep, 1)[0] for p in owned}
    names: set[str] = set()
    for path in paths:
        rel = os.path.relpath(path, venv)
        top = rel.split(os.sep, 1)[0]
        names.add(rel if top in used or top == rel else top + "/")
    return sorted(n.replace(os.sep, "/") for n in names)


def _owned(sites: list[Path]) -> set[str]:
    """The absolute, normalised path of every file each site folder's RECORDs list
    (scripts in ``bin/`` too: RECORD names them ``../../../bin/<name>``). A RECORD that
    cannot be read owns nothing: its files are then named, never removed unasked."""
    owned: set[str] = set()
    for site in sites:
        for record in site.glob("*.dist-info/RECORD"):
            try:
                text = record.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            owned.update(os.path.normpath(os.path.join(site, p)) for p, _ in record_rows(text))
    return owned


def _outside(venv: Path, sites: set[str], owned: set[str]) -> list[str]:
    """Files and links of *venv* outside its *sites* that are neither *owned* nor the
    venv's own layout."""
    found = []
    for folder, dirs, files in os.walk(venv):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in sites]
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in files + links:
            path = os.path.normpath(os.path.join(folder, name))
            if path not in owned and not _layout(os.path.relpath(path, venv).split(os.sep)):
                found.append(path)
    return found


def _layout(parts: list[str]) -> bool:
    """A file the venv tool wrote: at the top, or an interpreter link or activate script."""
    if len(parts) == 1:
        return parts[0] in _TOP
    name = parts[1].lower()
    return len(parts) == 2 and parts[0] in ("bin", "Scripts") and (
        name in _SCRIPTS or name.startswith(("activate", "python")))


def _few(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``, ``a, b and 3 more``: one line."""
    shown = [_printable(n) for n in names]
    if len(shown) > 3:
        shown = [*shown[:2], f"{len(shown) - 2} more"]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _printable(name: str) -> str:
    return name if name.isprintable() else ascii(name)


def sync(opts: SyncOptions) -> Synced:
    """Build, check and (when every step passed) swap in the new venv; see the module."""
    if os.name == "nt" and opts.check.installer == "pip":
        raise UsageError("--installer pip: on Windows pip's .exe launchers hold the build "
                         "folder's path, so its venv cannot be moved into place",
                         hint="use --installer uv (a --relocatable venv)")
    started = datetime.datetime.now(datetime.timezone.utc)
    final = opts.venv
    steps = plan() if opts.verify else REBUILD
    sweep_stale(final)  # a killed sync's new venv beside it
    with interrupt_held() as held:  # no Ctrl-C between the folder and the try that removes it
        work = temp_private("lockkit-sync-")  # as verify's: never in the project
    build: Path | None = None
    swapped = False
    try:
        held.reraise()
        run = new_run(opts.check, work, steps)
        build = _beside(final, NEW)
        execute(run, steps, {"venv": lambda s: rebuild.venv_step(run, s, at=build,
                                                                moved_to=final)})
        dossier = make_dossier(run, started)
        if dossier.result == "passed":
            if not opts.force:  # what a user put there since target() checked
                keep_foreign(final, str(final))
            rebase(build, final)
            mark(build, kind="venv", platform=opts.check.platform.name)
            swap(build, final)
            swapped = True
    finally:
        _remove(work)
        if build is not None and not swapped:
            _remove(build)
    return Synced(venv=final, dossier=dossier, attachments=dict(run.attachments),
                  swapped=swapped, verified=opts.verify and swapped)


def _remove(folder: Path) -> None:
    """Remove *folder*, again after a moment if something was still landing in it: a
    command killed by a signal is reaped before this runs, but a process of its group
    that was mid-write when SIGKILL came finishes that write first (a sync ended by
    SIGTERM once left its work folder behind)."""
    for pause in (0.0, 0.05, 0.2):
        time.sleep(pause)
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            return


def _beside(final: Path, infix: str) -> Path:
    """A new empty folder ``<final name><infix><pid>@<start>`` beside *final* (same
    filesystem: the swap is renames), made with ``mkdir``, so with the user's umask mode.
    The name says which process builds it (a later sync sweeps it if that one was killed:
    :mod:`lockkit._internal.leftovers`), and is no longer than needed: pip writes it into
    the ``#!`` lines of the scripts, whose length is limited; a second one of the same
    process gets a random ending."""
    final.parent.mkdir(parents=True, exist_ok=True)
    name = f"{final.name}{infix}{owner_mark()}"
    while True:
        path = final.with_name(name)
        name = f"{final.name}{infix}{owner_tag()}{secrets.token_hex(2)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        hold(path)
        return path


def rebase(venv: Path, final: Path) -> None:
    """Write *final* where *venv*'s own path is written: the shebangs of ``bin/``'s scripts
    (pip writes ``#!<venv>/bin/python``), the activate scripts and ``pyvenv.cfg``.
    Only text files that start with ``#!`` or are named ``activate*``/``pyvenv.cfg`` are
    read; the build path is unique (``<name>.lockkit-new-<pid>@<start>``), so every occurrence
    is that venv's own. A uv ``--relocatable`` venv has none: nothing changes."""
    old, new = os.fsencode(venv), os.fsencode(final)
    scripts = venv / ("Scripts" if os.name == "nt" else "bin")
    for path in [venv / "pyvenv.cfg", *sorted(scripts.iterdir())]:
        if path.is_symlink() or not path.is_file() or not _may_hold_path(path):
            continue
        data = path.read_bytes()
        if old not in data:
            continue
        tmp = path.with_name(path.name + ".lockkit-tmp")
        tmp.write_bytes(data.replace(old, new))
        shutil.copymode(path, tmp)
        os.replace(tmp, path)


def _may_hold_path(path: Path) -> bool:
    """A script (``#!``), an activate file or ``pyvenv.cfg``: a binary is never read."""
    if path.name == "pyvenv.cfg" or path.name.lower().startswith("activate"):
        return True
    with path.open("rb") as f:
        return f.read(2) == b"#!"


def progress_line(step: Step) -> str:
    """``sync: install passed (3.2 s)``: one line per finished step, for stderr."""
    why = step.error or step.reason
    return (f"sync: {step.name} {step.status} ({step.duration:.1f} s)"
            + (f": {why}" if why else ""))
