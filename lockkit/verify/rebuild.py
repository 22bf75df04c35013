"""The rebuild half of verify: host, venv, install, pip-check, inventory.

Installer calls are isolated from user and global pip/uv configuration (``--no-config``,
``--isolated``, no ``PIP_*``/``UV_*`` variables), and every command runs the new venv's
interpreter by its path.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from packaging.tags import Tag, compatible_tags, cpython_tags, platform_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from lockkit._internal import proc as _run
from lockkit._internal.compat import tomllib
from lockkit._internal.fs import sha256_file
from lockkit._internal.private import private_folder
from lockkit._internal.proc import last_error_line
from lockkit._internal.uv import uv_bin
from lockkit.cache.layout import make_root
from lockkit.cache.memo import MemoStore
from lockkit.errors import LockkitError
from lockkit.lock.lockfile import python_of, read_lock
from lockkit.platforms.arch import arch_family, host_arch, host_os
from lockkit.report.model import Inventory, PackageRow
from lockkit.verify.context import Run
from lockkit.verify.steps import Step, StepFailed
from lockkit.wheelhouse import trust

__all__ = ["check_step", "host_step", "install_step", "inventory_step", "shared_root",
           "venv_step"]

_INSTALL_TIMEOUT = 1800


# --- host --------------------------------------------------------------------------------

def host_step(run: Run, step: Step) -> None:
    plat = run.opts.platform
    here_os, here_arch = host_os(), host_arch()
    step.detail.update(os=here_os, arch=here_arch, platform_os=plat.os, platform_arch=plat.arch)
    if here_os != plat.os or here_arch != arch_family(plat.arch):
        raise StepFailed(f"this machine is {here_os}/{here_arch}; platform {plat.name} is "
                         f"{plat.os}/{plat.arch}: verify it on a {plat.os}/{plat.arch} machine")
    python, facts = find_interpreter(run, lock_python(run))
    step.detail["interpreter"] = run.found.python = facts
    run.interpreter = python
    wheelhouse = wheelhouse_folder(run)
    if wheelhouse is not None:
        tags = set(_tags_of(facts))
        bad = [w.name for w in sorted(wheelhouse.glob("*.whl"))
               if not tags & set(parse_wheel_filename(w.name)[3])]
        if bad:
            raise StepFailed(f"{len(bad)} wheel(s) do not install on this interpreter "
                             f"({facts['platform']}): {', '.join(bad[:3])}")


def lock_python(run: Run) -> str:
    """The Python version of the committed lock (:func:`lockkit.lock.lockfile.python_of`): the
    project's ``python``, or the platform's default when it names none."""
    lock = run.opts.project.lock_path(run.opts.platform.name)
    try:
        return python_of(read_lock(lock)[0], lock)
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None


def find_interpreter(run: Run, version: str) -> tuple[Path, dict[str, Any]]:
    """An interpreter of Python *version* (the lock's) and its facts, for verify and sync.

    ``--python``, which must be that version; else the one ``uv python find`` names (uv's
    own discovery: its managed installs, PATH, the Windows registry; ``--system``: never
    the interpreter of a virtual environment, such as the project's ``.venv`` that sync
    replaces); else the first ``python<version>`` on PATH that runs and says it is that
    version, an activated venv's included (``uv venv`` and ``python -m venv`` both make
    the new venv from its base interpreter). A pyenv shim of a version not selected
    fails to run and is passed by. None found: one line naming the version, the lock and
    how to give one (``--python PATH``)."""
    lock = run.opts.project.lock_path(run.opts.platform.name).name
    given = run.opts.python
    if given is not None:
        facts = _interpreter_facts(run, given)
        if facts["version"] != version:
            raise StepFailed(f"--python {given} is Python {facts['version']}; {lock} is for "
                             f"Python {version}: pass --python with a Python {version} "
                             "interpreter")
        return given, facts
    for candidate in _candidates(run, version):
        try:
            facts = _interpreter_facts(run, candidate)
        except StepFailed:
            continue
        if facts["version"] == version:
            return candidate, facts
    raise StepFailed(f"no Python {version} interpreter found ({lock} is for Python {version}; "
                     f"'uv python find {version}' and python{version} on PATH found none): "
                     f"pass --python PATH to a Python {version} interpreter, or install one "
                     f"('uv python install {version}')")


def _candidates(run: Run, version: str) -> Iterator[Path]:
    found = run.call("host", [uv_bin(), "python", "find", "--system", "--no-config",
                              "--offline", "--no-python-downloads", version], timeout=60,
                     env=_run.isolated_env())
    if found.ok and found.stdout.strip():
        yield Path(found.stdout.strip())
    name = f"python{version}{'.exe' if os.name == 'nt' else ''}"
    for folder in filter(None, os.environ.get("PATH", "").split(os.pathsep)):
        path = Path(folder) / name
        if path.is_file() and os.access(path, os.X_OK):
            yield path


_FACTS = ("import json, platform, sys, sysconfig; print(json.dumps({'version': "
          "'%d.%d' % sys.version_info[:2], 'full': platform.python_version(), "
          "'implementation': sys.implementation.name, 'platform': sysconfig.get_platform(), "
          "'executable': sys.executable}))")


def _interpreter_facts(run: Run, python: Path) -> dict[str, Any]:
    result = run.call("host", [str(python), "-I", "-c", _FACTS], timeout=60,
                      env=_run.isolated_env())
    try:
        if result.ok:
            facts = json.loads(result.stdout)
            if isinstance(facts, dict):
                return facts
    except json.JSONDecodeError:
        pass
    raise StepFailed(f"cannot run the interpreter {python}: {_run.outcome(result)}")


def _tags_of(facts: dict[str, Any]) -> list[Tag]:
    """The tags of an interpreter on this machine (same OS and libc as lockkit's own)."""
    version = tuple(int(x) for x in facts["version"].split("."))
    plats = list(platform_tags())
    return [*cpython_tags(version, platforms=plats),
            *compatible_tags(version, interpreter=f"cp{version[0]}{version[1]}",
                             platforms=plats)]


def wheelhouse_folder(run: Run) -> Path | None:
    if run.opts.wheelhouse is not None:
        folder = run.opts.wheelhouse
    else:
        folder = run.opts.project.root / "wheelhouse" / run.opts.platform.name
        if not folder.is_dir():
            return None
    if not (folder / "manifest.json").is_file():
        raise StepFailed(f"{folder}: not a wheelhouse (no manifest.json)")
    return folder


# --- venv --------------------------------------------------------------------------------

def venv_step(run: Run, step: Step, *, at: Path | None = None,
              moved_to: Path | None = None) -> None:
    """A new venv in ``<work>/venv``, or in the empty folder *at*. *moved_to*: the folder
    it will be renamed to once complete (``lockkit sync``): uv makes it ``--relocatable``
    (scripts and activate find the venv from where they are), the stdlib venv takes that
    folder's name as its prompt."""
    venv = at or _shared_venv(run) or run.work / "venv"
    assert run.interpreter is not None
    if run.opts.installer == "uv":  # no ensurepip: uv installs and checks without pip
        argv = [uv_bin(), "venv", "--no-config", "--quiet", "--python", str(run.interpreter),
                *(["--relocatable"] if moved_to else []), str(venv)]
    else:
        argv = [str(run.interpreter), "-m", "venv",
                *(["--prompt", moved_to.name] if moved_to else []), str(venv)]
    result = run.call("venv", argv, timeout=300)
    if not result.ok:
        raise StepFailed(f"creating the venv failed: {_why(result)}")
    run.venv = venv
    run.python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run.seed = _distributions(venv)
    step.detail.update(path=str(venv), interpreter=str(run.interpreter),
                       seed=sorted(f"{k}=={v}" for k, v in run.seed.items()))


def _shared_venv(run: Run) -> Path | None:
    """``<cache>/verify/venvs/<platform>``, emptied, when this run may take it, else None.

    The venv is as fresh as in a temp folder (the folder is removed and made again); what
    its stable path buys is bytecode. torch's ~5 s of compiling on first import went into
    the venv's own ``__pycache__`` and was lost with it. With the folder's path the same
    every run, and uv linking the same unpacked files from its cache (install_step), the
    ``.pyc`` files in ``<cache>/verify/pyc`` (``pycache_prefix``) stay valid: CPython checks
    each against its source's path, mtime and size, and recompiles any other. One run holds
    the folder at a time (``flock``); another run, ``--keep-venv``, pip, a cache-less run
    or one whose cache is not private (:func:`shared_root`) takes a temp folder."""
    opts = run.opts
    if opts.keep_venv or opts.installer != "uv" or os.name != "posix":
        return None
    root = shared_root(opts.cache_root)
    if root is None:
        return None
    import fcntl

    folder = root / "venvs" / opts.platform.name
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        held = open(folder.parent / f"{opts.platform.name}.lock", "a+b")  # noqa: SIM115
    except OSError:
        return None
    try:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another run has it
        held.close()
        return None
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        held.close()
        return None
    run.held, run.pycache = held, root / "pyc"
    return folder


# --- install -----------------------------------------------------------------------------

def install_step(run: Run, step: Step) -> None:
    opts = run.opts
    lock = opts.project.lock_path(opts.platform.name)
    folder = wheelhouse_folder(run)
    if folder is None:
        if opts.fetch is None:
            raise StepFailed(f"no wheelhouse for {opts.platform.name}: run 'lockkit "
                             f"wheelhouse build --platform {opts.platform.name}' or pass "
                             "--wheelhouse")
        folder = opts.fetch(run.work / "wheelhouse")
        step.detail["source"] = "the lock's URLs (fetched, hash-checked, into a temp wheelhouse)"
    else:
        step.detail["source"] = f"wheelhouse {folder} (no network)"
    manifest = _check_wheelhouse(folder, lock)
    run.wheelhouse = folder
    try:  # the committed lock is the only authority: the folder's own lock files are not read
        checked = trust.check_folder(folder, trust.selection(lock, opts.platform), manifest)
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None
    run.expected = {c.package: c.version for c in checked}
    reqs = run.work / "install" / "requirements.txt"  # hashes of the lock, checked just now
    reqs.parent.mkdir(exist_ok=True)
    shared = shared_root(opts.cache_root) if opts.installer == "uv" else None
    reqs.write_text(trust.requirements(checked), encoding="utf-8")
    step.detail["checked"] = (f"{len(checked)} wheel(s) hashed and matched against "
                              f"{lock.name}; the installer enforces the same hashes")
    assert run.python is not None
    uv_cache = None
    if shared is not None:
        uv_cache = shared / "uv"
        links = [a for d in _by_hash(checked, shared) for a in ("--find-links", str(d))]
        argv = [uv_bin(), "pip", "install", "--no-config", "--offline", "--no-index",
                "--quiet", "--python", str(run.python), *links, "--require-hashes",
                "-r", str(reqs)]
    elif opts.installer == "uv":
        argv = [uv_bin(), "pip", "install", "--no-config", "--offline", "--no-index",
                "--quiet", "--python", str(run.python), "--find-links", str(folder),
                "--require-hashes", "-r", str(reqs)]
    else:
        argv = [str(run.python), "-m", "pip", "install", "--isolated", "--no-index",
                "--disable-pip-version-check", "--quiet", "--find-links", str(folder),
                "--require-hashes", "-r", str(reqs)]
    with _counting_installs(run, len(checked)):
        result = run.call("install", argv, timeout=_INSTALL_TIMEOUT, env=_run.isolated_env(),
                          uv_cache=uv_cache)
    step.detail.update(installer=opts.installer, packages=len(run.expected),
                       isolated="installer ran without user/global pip or uv configuration "
                                "(--no-config / --isolated, PIP_* and UV_* removed)")
    if not result.ok:
        raise StepFailed(f"{opts.installer} install failed: {_why(result)}")


@contextlib.contextmanager
def _counting_installs(run: Run, total: int) -> Iterator[None]:
    """While the installer runs, tell ``on_progress`` every quarter second how many of the
    lock's *total* packages are in the venv: the ``*.dist-info`` folders that were not
    there before, each written once its package is in place (pip and uv both)."""
    tell = run.opts.on_progress
    if tell is None or run.venv is None:
        yield
        return
    venv = run.venv
    before = set(_dist_info_folders(venv))
    stop = threading.Event()

    def installed() -> int:
        return min(total, len(set(_dist_info_folders(venv)) - before))

    def watch() -> None:
        while not stop.is_set():
            tell("installing", installed(), total)
            stop.wait(0.25)

    watcher = threading.Thread(target=watch, name="lockkit-install-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
    tell("installing", installed(), total)  # the last word: what is in the venv now


def _dist_info_folders(venv: Path) -> list[Path]:
    return [*venv.glob("lib*/python*/site-packages/*.dist-info"),
            *venv.glob("Lib/site-packages/*.dist-info")]


_SHARED = "verify"  # <cache>/verify: wheels/<sha256>/<file>, uv's cache, venvs/, pyc/


def shared_root(cache_root: Path | None) -> Path | None:
    """``<cache>/verify``, where verify's installs are kept between runs, made private
    (0700) to this user, when the cache folder is private to this user (the memo store's
    rule, :class:`lockkit.cache.memo.MemoStore`); else None, and a run keeps its uv cache,
    bytecode and venv in its own temp folder, removed after it. uv trusts what its cache
    holds and CPython the ``.pyc`` files of a bytecode prefix: in a folder another user
    can write, either runs their code as the user who runs verify."""
    if cache_root is None:
        return None
    root = cache_root / _SHARED
    try:
        make_root(cache_root)
        if not MemoStore(cache_root).trusted:
            return None
        make_root(root)
        if not private_folder(root):
            return None
        if stat.S_IMODE(os.lstat(root).st_mode) & 0o077:  # made by an older lockkit
            os.chmod(root, 0o700)
    except OSError:
        return None
    return root


def _by_hash(checked: list[trust.Checked], shared: Path) -> list[Path]:
    """One ``--find-links`` folder per wheel, named by its content: ``<cache>/verify/
    wheels/<sha256>/<file>``, a hard link to the wheel just hashed.

    uv keeps what it unpacks from a local wheel under the wheel's path; a wheelhouse at a
    new path (every test, every unpacked archive) cost a new unpacked torch (~700 MB) and
    seconds of unzipping. One path per content lets the next verify of any wheelhouse with
    the same torch link it from uv's cache (``<cache>/verify/uv``) into the fresh venv.
    Through ``--find-links`` the packages install as from an index (``pip freeze`` says
    ``name==version``, no direct URL), and the installer still checks every hash."""
    folders = []
    for c in sorted(checked, key=lambda c: c.package):
        dest = shared / "wheels" / c.sha256 / c.path.name
        if not dest.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.parent / f".{dest.name}.{os.getpid()}.tmp"
            try:
                os.link(c.path, tmp)
            except OSError:  # another file system
                shutil.copyfile(c.path, tmp)
            os.replace(tmp, dest)
        folders.append(dest.parent)
    return folders


def _why(result: _run.Result) -> str:
    """A failed command's error line, or that it timed out."""
    if result.timed_out:
        return _run.outcome(result)
    return last_error_line(result.stderr or result.stdout)


def _check_wheelhouse(folder: Path, lock: Path) -> dict[str, Any]:
    """The manifest says the wheelhouse was built from this lock (a hint for honest
    mistakes, not a proof: the files are hashed against the lock afterwards)."""
    try:
        manifest: dict[str, Any] = json.loads(
            (folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise StepFailed(f"{folder}/manifest.json: unreadable: {exc}") from None
    if not lock.is_file():
        raise StepFailed(f"{lock}: no lock; run 'lockkit compile'")
    if manifest.get("lock_sha256") != sha256_file(lock):
        raise StepFailed(f"{folder} was built from another version of {lock.name}: "
                         "rebuild it with 'lockkit wheelhouse build'")
    for entry in manifest.get("files", []):
        path = folder / entry["path"]
        if not path.is_file() or path.stat().st_size != entry["size"]:
            raise StepFailed(f"{path}: missing or not the size the manifest lists")
    return manifest


# --- pip-check and inventory ---------------------------------------------------------------

def check_step(run: Run, step: Step) -> None:
    assert run.python is not None
    if run.opts.installer == "uv":
        argv = [uv_bin(), "pip", "check", "--no-config", "--python", str(run.python)]
    else:
        argv = [str(run.python), "-m", "pip", "check", "--isolated",
                "--disable-pip-version-check"]
    result = run.call("pip-check", argv, timeout=300, env=_run.isolated_env())
    step.detail["output"] = (result.stdout + result.stderr).strip()[-2000:]
    if not result.ok:
        raise StepFailed(f"dependency conflicts: "
                         f"{last_error_line(result.stdout or result.stderr)}")


def inventory_step(run: Run, step: Step) -> None:
    assert run.venv is not None and run.python is not None
    installed = {k: v for k, v in _distributions(run.venv).items()  # the venv's own pip and
                 if k in run.expected or k not in run.seed}       # setuptools are not extras
    inventory = Inventory(
        expected=len(run.expected), installed=len(installed),
        missing=tuple(sorted(f"{n}=={v}" for n, v in run.expected.items()
                             if n not in installed)),
        extra=tuple(sorted(f"{n}=={v}" for n, v in installed.items()
                           if n not in run.expected)),
        mismatched=tuple(sorted(f"{n}: lock {run.expected[n]}, installed {v}"
                                for n, v in installed.items()
                                if n in run.expected and not _same_version(v, run.expected[n]))),
        seed=tuple(sorted(run.seed)))
    run.found.packages = _package_table(run.opts.project.lock_path(run.opts.platform.name),
                                           installed)
    run.found.inventory = inventory
    if run.opts.installer == "uv":
        argv = [uv_bin(), "pip", "freeze", "--no-config", "--python", str(run.python)]
    else:
        argv = [str(run.python), "-m", "pip", "freeze", "--all", "--isolated",
                "--disable-pip-version-check"]
    frozen = run.call("inventory", argv, timeout=300, env=_run.isolated_env())
    run.attachments["installed-after.txt"] = frozen.stdout
    step.detail.update(inventory.to_dict())
    if inventory.problems:
        raise StepFailed("installed packages differ from the lock: "
                         + "; ".join(inventory.problems))


def _package_table(lock: Path, installed: dict[str, str]) -> tuple[PackageRow, ...]:
    """Each installed distribution with the index and sha256 the lock gives its version."""
    try:
        entries = {canonicalize_name(p["name"]): p
                   for p in tomllib.loads(lock.read_text(encoding="utf-8"))["packages"]}
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        entries = {}
    rows = []
    for name in sorted(installed):
        entry: dict[str, Any] = entries.get(canonicalize_name(name), {})
        files = entry.get("wheels", []) + ([entry["sdist"]] if "sdist" in entry else [])
        rows.append(PackageRow(name=name, version=installed[name], index=entry.get("index"),
                               sha256=tuple(sorted(f.get("hashes", {}).get("sha256", "")
                                                   for f in files))))
    return tuple(rows)


def _same_version(a: str, b: str) -> bool:
    """Exact, local label included: 2.5.1 is not 2.5.1+rocm6.2."""
    try:
        return Version(a) == Version(b) and Version(a).local == Version(b).local
    except InvalidVersion:
        return a == b


def _distributions(venv: Path) -> dict[str, str]:
    """Name -> version of every ``*.dist-info`` in the venv, read from its METADATA."""
    found: dict[str, str] = {}
    for folder in _dist_info_folders(venv):
        if (folder / "METADATA").is_file():
            found.update(_name_version(folder / "METADATA"))
    return found


def _name_version(meta: Path) -> dict[str, str]:
    name = version = None
    with meta.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                break
            if line.startswith("Name:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("Version:"):
                version = line.split(":", 1)[1].strip()
    return {canonicalize_name(name): version} if name and version else {}
