"""The one rule for the folders lockkit writes whole, and the one code that replaces them.

``wheelhouse build --out``, ``wheelhouse unpack --out``, ``sync --venv`` and ``verify
--report-dir`` each write a folder where the user says, and a second run replaces what
the first left there. ``pip download -d``, ``pip wheel -w`` and ``uv build --out-dir``
all mean "put files in this folder", so ``--out .`` is a natural mistake, and lockkit
never deletes what it did not make. A folder is written at a path only when the path is

- missing, or an empty folder;
- a folder lockkit made, of the same kind and for the same platform: a wheelhouse (its
  ``manifest.json``, and nothing it does not list), a venv (the ``.lockkit.json`` that
  ``sync`` writes), a report (the ``dossier.json`` of ``verify``);

and never the project folder, the current folder, or a folder above either (symlinks
resolved). :func:`check` says so before any work starts, with one line naming the folder
and what is in it; :func:`swap`, the only code that removes an output folder, checks
again at the moment it replaces one. Files are read through the memo store's regular-file
rule (:func:`lockkit.cache.memo.read_regular`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from lockkit.errors import ConfigError, WriteError

__all__ = ["MARKER", "OLD", "STAGE", "STALE_AGE", "Made", "check", "made", "mark", "swap",
           "sweep_stale"]

MARKER = ".lockkit.json"  # what lockkit made, in a folder with no manifest of its own (a venv)
STAGE, OLD = "tmp-", "old-"  # the prefixes after ".<name>." of the stage and old folders
# Stage and old folders of a build older than this are debris of a killed run (the rule
# the cache applies to partial downloads); younger ones may belong to a running build.
STALE_AGE = 24 * 3600
_MAX_JSON = 64 << 20  # a marker, manifest or dossier read to recognise a folder
_LABELS = {"wheelhouse": "a lockkit wheelhouse", "venv": "a venv lockkit made",
           "report": "a lockkit report"}
_WHEELHOUSE_META = ("manifest.json", "SHA256SUMS")  # beside the files a manifest lists
_CHOOSE = "choose an empty or new folder"


class Made:
    """What lockkit made at a folder: *kind* (wheelhouse, venv, report) for *platform*, and
    *foreign*: what is in it that lockkit did not put there (a wheelhouse lists its own).
    (A plain class: the warm rebuild imports this module, and not ``dataclasses``.)"""

    __slots__ = ("foreign", "kind", "platform")

    def __init__(self, kind: str, platform: str, foreign: tuple[str, ...] = ()) -> None:
        self.kind, self.platform, self.foreign = kind, platform, foreign


def check(path: Path, *, kind: str, platform: str, project: Path | None = None,
          flag: str | None = None) -> Path:
    """The absolute folder to write at for *path* (a symlink: the folder it points to), or
    a :class:`ConfigError` naming the folder and what is in it; *flag* names the option
    the path came from, *project* the project folder (refused, as the current one is)."""
    where = _shown(f"{flag} {path}" if flag else str(path))
    if path.is_symlink() and not path.exists():
        raise ConfigError(f"{where}: a symlink to {_shown(os.readlink(path))}, which does not "
                          f"exist; {_CHOOSE}")
    real = path.resolve()
    _not_in_use(real, where, project)
    if not os.path.lexists(real):
        return real
    if not real.is_dir():
        raise ConfigError(f"{where}: is a file, not a folder; {_CHOOSE}")
    try:
        entries = sorted(os.listdir(real))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be listed ({exc.strerror}); {_CHOOSE}") from None
    if not entries:
        return real
    found = made(real)
    wanted = f"{_LABELS[kind]} for {platform}"
    if found is None:
        why = f"holds {_names(real, entries)}"
    elif (found.kind, found.platform) != (kind, platform):
        why = f"it is {_LABELS[found.kind]} for {_shown(found.platform)}"
    elif found.foreign:
        raise ConfigError(f"{where}: {wanted} that also holds {_few(list(found.foreign))}, "
                          f"which lockkit did not write; move that out, or {_CHOOSE}")
    else:
        return real
    raise ConfigError(f"{where}: not empty and not {wanted} ({why}); {_CHOOSE}")


def _not_in_use(real: Path, where: str, project: Path | None) -> None:
    """Refuse the current folder, the project folder and every folder above either."""
    try:
        cwd: Path | None = Path.cwd()
    except OSError:  # removed under the running command: there is no current folder
        cwd = None
    for name, folder in (("the project folder", project), ("the current folder", cwd)):
        if folder is None:
            continue
        folder = folder.resolve()
        if real == folder:
            raise ConfigError(f"{where}: is {name}; {_CHOOSE}")
        if real in folder.parents:
            raise ConfigError(f"{where}: {_shown(str(real))} holds {name}; {_CHOOSE}")


def made(folder: Path, *, listing: bool = True) -> Made | None:
    """What lockkit made at *folder*, by the file each kind writes; None: not lockkit's.
    ``listing=False``: a wheelhouse's files are not compared with its manifest."""
    marker = _read_json(folder / MARKER)
    if isinstance(marker, dict) and marker.get("made-by") == "lockkit" and \
            marker.get("kind") in _LABELS and isinstance(marker.get("platform"), str):
        return Made(marker["kind"], marker["platform"])
    manifest = _read_json(folder / "manifest.json")
    if isinstance(manifest, dict) and isinstance(manifest.get("platform"), str) and \
            isinstance(manifest.get("files"), list):
        listed = {f.get("path") for f in manifest["files"] if isinstance(f, dict)}
        return Made("wheelhouse", manifest["platform"],
                    tuple(_unlisted(folder, listed)) if listing else ())
    dossier = _read_json(folder / "dossier.json")
    if isinstance(dossier, dict) and dossier.get("kind") == "verify" and \
            isinstance(dossier.get("platform"), str):
        return Made("report", dossier["platform"])
    return None


def mark(folder: Path, *, kind: str, platform: str) -> None:
    """Write the marker :func:`made` reads in a folder that has no manifest of its own."""
    text = json.dumps({"made-by": "lockkit", "kind": kind, "platform": platform}) + "\n"
    with open(folder / MARKER, "x", encoding="utf-8") as fh:  # the umask's mode
        fh.write(text)


def _read_json(path: Path) -> object:
    """A small JSON file's value; None for anything else. Only a regular file is read
    (``O_NOFOLLOW|O_NONBLOCK``, then ``fstat``): never a symlink, a FIFO or a device."""
    from lockkit._internal.private import read_regular

    data = read_regular(path, _MAX_JSON, private=False)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _unlisted(folder: Path, listed: set[object]) -> list[str]:
    """What in a wheelhouse its manifest does not list: a file, an empty folder, a link."""
    files = {p for p in listed if isinstance(p, str)}
    parents = set()
    for rel in files:
        while "/" in rel:
            rel = rel.rsplit("/", 1)[0]
            parents.add(rel)
    foreign: list[str] = []
    _walk(str(folder), "", files, parents, foreign)
    return foreign


def _walk(path: str, prefix: str, files: set[str], parents: set[str],
          foreign: list[str]) -> None:
    """Into the folders the manifest's paths need, and no others; links never followed."""
    try:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:  # unreadable: not known to be lockkit's
        foreign.append(prefix or "./")
        return
    for entry in entries:
        rel = prefix + entry.name
        if entry.is_dir(follow_symlinks=False):
            if rel in parents:
                _walk(entry.path, rel + "/", files, parents, foreign)
            else:
                foreign.append(rel + "/")
        elif not (entry.is_file(follow_symlinks=False)
                  and (rel in files or rel in _WHEELHOUSE_META)):
            foreign.append(rel)


def _names(folder: Path, entries: list[str]) -> str:
    return _few([n + ("/" if (folder / n).is_dir() and not (folder / n).is_symlink() else "")
                 for n in entries])


def _few(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``, ``a, b and 3 more``: one line, however named."""
    shown = [_shown(n) for n in names]
    if len(shown) > 3:
        shown = [*shown[:2], f"{len(shown) - 2} more"]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _shown(name: str) -> str:
    """*name* as one line: a control character or line break is escaped."""
    return name if name.isprintable() else ascii(name)


def swap(stage: Path, out: Path) -> None:
    """Replace *out* with the complete *stage* (a folder lockkit made, beside it), where
    :func:`check` allows it for the stage's kind and platform; the old folder survives
    any failure before the new one is in place."""
    found = made(stage, listing=False)  # the stage is what this run just wrote
    if found is None:
        raise AssertionError(f"{stage}: a stage lockkit cannot recognise")
    out = check(out, kind=found.kind, platform=found.platform)
    if not os.path.lexists(out):
        os.replace(stage, out)
        return
    import tempfile

    from lockkit._internal.leftovers import hold, owner_tag

    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.{OLD}{owner_tag()}", dir=out.parent))
    hold(old)
    os.replace(out, old / "x")
    try:
        os.replace(stage, out)
    except BaseException:
        try:
            os.replace(old / "x", out)
        except OSError as exc:
            raise WriteError(f"{out}: the new folder could not be moved in, nor the old one "
                             f"back ({exc.strerror}): the old one is at {old / 'x'}") from exc
        os.rmdir(old)
        raise
    _remove(old)


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def sweep_stale(out: Path, max_age: float = STALE_AGE) -> list[Path]:
    """Remove what killed runs left beside *out*: the stage and old folders of a build,
    an unpack's stage, a sync's new venv, once the process named in it is gone
    (:mod:`lockkit._internal.leftovers`); a stage or old folder without that mark (an
    older lockkit's) once it is older than *max_age*. A folder of a run still going is
    left alone; one line says what went."""
    from lockkit._internal.leftovers import orphaned, say_swept

    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return []
    now, removed = time.time(), []
    marked = (f".{out.name}.{STAGE}", f".{out.name}.{OLD}", f".{out.name}.partial-",
              f"{out.name}.lockkit-new-")
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
            if any(orphaned(entry.name, p, path=entry.path) for p in marked) or (
                    entry.name.startswith(marked[:2]) and
                    now - st.st_mtime > max_age):
                _remove_tree(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    say_swept(removed)
    return removed


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path)
