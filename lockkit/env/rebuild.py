"""The rebuild half of verify: host, venv, install, pip-check, inventory.

The host step checks this machine against the platform and finds the interpreter
(:mod:`lockkit.env.interpreter`); the install step is :mod:`lockkit.env.install`.
Installer calls are isolated from user and global pip/uv configuration (``--no-config``,
``--isolated``, no ``PIP_*``/``UV_*`` variables), and every command runs the new venv's
interpreter by its path.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from lockkit._internal import proc
from lockkit._internal.uv import uv_bin
from lockkit.env.install import (
    dist_info_folders,
    installer_error,
    shared_for,
    wheelhouse_folder,
)
from lockkit.env.interpreter import find_interpreter, interpreter_tags, lock_python
from lockkit.lock.model import Lock
from lockkit.platforms.arch import arch_family, host_arch, host_os
from lockkit.platforms.definitions import Platform
from lockkit.report.records import Inventory, PackageRow
from lockkit.steps.context import Run
from lockkit.steps.engine import Step, StepFailed

__all__ = ["VENV_GONE", "check_machine", "check_step", "host_step", "inventory_step",
           "package_table", "same_version", "venv_gone", "venv_step"]

VENV_GONE = "the venv was removed while verify ran (cache prune?)"


# --- host --------------------------------------------------------------------------------

def host_step(run: Run, step: Step) -> None:
    check_machine(run.opts.platform, step)
    python, facts = find_interpreter(run, lock_python(run))
    step.detail["interpreter"] = run.found.python = facts
    run.interpreter = python
    wheelhouse = wheelhouse_folder(run)
    if wheelhouse is not None:
        tags = set(interpreter_tags(facts))
        bad = [w.name for w in sorted(wheelhouse.glob("*.whl"))
               if not tags & set(parse_wheel_filename(w.name)[3])]
        if bad:
            raise StepFailed(f"{len(bad)} wheel(s) do not install on this interpreter "
                             f"({facts['platform']}): {', '.join(bad[:3])}")


def check_machine(plat: Platform, step: Step) -> None:
    """This machine's OS and CPU family are the platform's (``verify --existing`` too)."""
    here_os, here_arch = host_os(), host_arch()
    step.detail.update(os=here_os, arch=here_arch, platform_os=plat.os, platform_arch=plat.arch)
    if here_os != plat.os or here_arch != arch_family(plat.arch):
        raise StepFailed(f"this machine is {here_os}/{here_arch}; platform {plat.name} is "
                         f"{plat.os}/{plat.arch}: verify it on a {plat.os}/{plat.arch} machine")


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
        raise StepFailed(f"creating the venv failed: {installer_error(result)}")
    run.venv = venv
    run.python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run.seed = _distributions(venv)
    step.detail.update(path=str(venv), interpreter=str(run.interpreter),
                       seed=sorted(f"{k}=={v}" for k, v in run.seed.items()))


def venv_gone(run: Run, step: Step) -> None:
    """A failed *step* whose venv is no longer there says so: the installer's or a probe's
    own error ("No such file or directory") would blame the step for what removed the
    folder under it (an older lockkit's ``cache prune``, a hand ``rm``)."""
    if step.status == "failed" and run.venv is not None and run.python is not None \
            and not run.python.exists() and not (step.error or "").startswith(VENV_GONE):
        step.error = f"{VENV_GONE}: {run.venv}; the step said: {step.error}"


def _shared_venv(run: Run) -> Path | None:
    """``<cache>/verify/venvs/<platform>``, emptied, when this run may take it, else None.

    The venv is as fresh as in a temp folder (the folder is removed and made again); what
    its stable path buys is bytecode. torch's ~5 s of compiling on first import went into
    the venv's own ``__pycache__`` and was lost with it. With the folder's path the same
    every run, and uv linking the same unpacked files from its cache (install.install_step), the
    ``.pyc`` files in ``<cache>/verify/pyc`` (``pycache_prefix``) stay valid: CPython checks
    each against its source's path, mtime and size, and recompiles any other. One run holds
    the folder at a time (``flock``); another run, ``--keep-venv``, pip, a cache-less run
    or one whose cache is not private (:func:`shared_root`) takes a temp folder."""
    opts = run.opts
    if opts.keep_venv or opts.installer != "uv" or os.name != "posix":
        return None
    root = shared_for(run)
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


# --- pip-check and inventory ---------------------------------------------------------------

def check_step(run: Run, step: Step) -> None:
    assert run.python is not None
    if run.opts.installer == "uv":
        argv = [uv_bin(), "pip", "check", "--no-config", "--python", str(run.python)]
    else:
        argv = [str(run.python), "-m", "pip", "check", "--isolated",
                "--disable-pip-version-check"]
    result = run.call("pip-check", argv, timeout=300, env=proc.isolated_env())
    step.detail["output"] = (result.stdout + result.stderr).strip()[-2000:]
    if not result.ok:
        raise StepFailed(f"dependency conflicts: "
                         f"{proc.last_error_line(result.stdout or result.stderr)}")


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
                                if n in run.expected and not same_version(v, run.expected[n]))),
        seed=tuple(sorted(run.seed)))
    run.found.packages = package_table(run.lock, installed)
    run.found.inventory = inventory
    if run.opts.installer == "uv":
        argv = [uv_bin(), "pip", "freeze", "--no-config", "--python", str(run.python)]
    else:
        argv = [str(run.python), "-m", "pip", "freeze", "--all", "--isolated",
                "--disable-pip-version-check"]
    frozen = run.call("inventory", argv, timeout=300, env=proc.isolated_env())
    run.attachments["installed-after.txt"] = frozen.stdout
    step.detail.update(inventory.to_dict())
    if inventory.problems:
        raise StepFailed("installed packages differ from the lock: "
                         + "; ".join(inventory.problems))


def package_table(lock: Lock | None, installed: dict[str, str]) -> tuple[PackageRow, ...]:
    """Each installed distribution with the index and sha256 the *lock* (None: the run could
    not read it) gives its version."""
    entries = lock.package_tables() if lock is not None else {}
    rows = []
    for name in sorted(installed):
        entry: Mapping[str, Any] = entries.get(canonicalize_name(name), {})
        files = entry.get("wheels", []) + ([entry["sdist"]] if "sdist" in entry else [])
        rows.append(PackageRow(name=name, version=installed[name], index=entry.get("index"),
                               sha256=tuple(sorted(f.get("hashes", {}).get("sha256", "")
                                                   for f in files))))
    return tuple(rows)


def same_version(a: str, b: str) -> bool:
    """Exact, local label included: 2.5.1 is not 2.5.1+rocm6.2."""
    try:
        return Version(a) == Version(b) and Version(a).local == Version(b).local
    except InvalidVersion:
        return a == b


def _distributions(venv: Path) -> dict[str, str]:
    """Name -> version of every ``*.dist-info`` in the venv, read from its METADATA."""
    found: dict[str, str] = {}
    for folder in dist_info_folders(venv):
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
