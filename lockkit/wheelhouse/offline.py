"""How to install from a wheelhouse with no network: one text for what ``wheelhouse
unpack`` prints and for the header of the wheelhouse's ``requirements.txt``.

The route that works with any pip comes first: ``--find-links`` plus a ``--hash``
requirements file. ``-r pylock.toml`` needs pip >= 26.1 (pip's NEWS for 26.1:
"experimental support to read requirements from standardized pylock.toml files",
pypa/pip#13876); an older pip reads the lock as a requirements file and stops at its
first line, ``Invalid requirement: 'lock-version = "1.0"'``. uv reads it too.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockkit._internal.parse import parse_json
from lockkit.errors import LockkitError

__all__ = ["install_hint", "requirements_header", "target_of", "venv_python"]

_SYS_PLATFORM = {"linux": "linux", "darwin": "macos", "win32": "windows"}


def venv_python(python: str | None) -> str:
    """The interpreter a printed ``-m venv`` command names: the lock's own Python
    (``python3.12``), never a bare ``python`` that may be another version there, where pip
    then finds no file ("from versions: none"); ``python3`` only for a lock that names none."""
    return f"python{python}" if python else "python3"


def target_of(data: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """The OS, architecture and Python a lock's tables name: its ``environments`` marker
    (``sys_platform``, ``platform_machine``, as compile writes them) and its Python. Read
    from the lock alone, so a wheelhouse's ``requirements.txt`` is derived again, byte for
    byte, from the same lock; "unknown" where the lock does not say."""
    from lockkit.lock.meta import python_of

    envs = data.get("environments")
    marker = " ".join(e for e in envs if isinstance(e, str)) if isinstance(envs, list) else ""
    sys_platform = re.search(r"sys_platform\s*==\s*'([^']+)'", marker)
    machine = re.search(r"platform_machine\s*==\s*'([^']+)'", marker)
    try:
        python: str | None = python_of(data, "the lock")
    except LockkitError:
        python = None
    return (_SYS_PLATFORM.get(sys_platform[1], sys_platform[1]) if sys_platform else "unknown",
            machine[1] if machine else "unknown", python)


def install_hint(folder: Path, *, tools_checked: bool = False,
                 venvs: Path | None = None) -> str:
    """The commands that install from the wheelhouse *folder* into a new venv ``v`` (in
    *venvs*, else the current folder; ``lk`` for lockkit itself beside it).

    ``tools/`` is outside the project's lock: unless *tools_checked* (the whole archive
    matched the sender's sha256), its commands come under a line that says so, never as
    a verified step."""
    q = shlex.quote
    here, lock = q(str(folder)), q(str(folder / "pylock.toml"))
    v, lk = (q(str(venvs / name)) if venvs else name for name in ("v", "lk"))
    reqs = folder / "requirements.txt"
    hashes = " --require-hashes" if _has_hashes(reqs) else ""
    python = venv_python(_python_of(folder))
    lines = [
        "install with any pip, into a new venv:",
        f"  {python} -m venv {v} && {v}/bin/pip install --no-index --find-links {here}"
        f"{hashes} -r {q(str(reqs))}",
        "or from the lock itself, with pip >= 26.1 or uv:",
        f"  {v}/bin/pip install --no-index -r {lock}",
        f"  uv pip install --python {v}/bin/python --offline --no-index -r {lock}",
    ]
    if (folder / "tools").is_dir():
        tools = q(str(folder / "tools"))
        platform = _platform_of(folder)
        lines += ["lockkit itself, to verify here with no network (any pip), in the "
                  "project's folder:" if tools_checked else
                  "not verified: tools/ (lockkit itself, for the command below) is not "
                  "covered by the lock; compare the archive's sha256 with the sender's, then "
                  "rerun with --sha256:",
                  f"  {python} -m venv {lk} && {lk}/bin/pip install --no-index --find-links "
                  f"{tools} lockkit",
                  f"  {lk}/bin/lockkit verify --wheelhouse {here}"
                  + (f" --platform {q(platform)}" if platform else "")]
    return "\n".join(lines)


def _platform_of(folder: Path) -> str | None:
    """The platform the wheelhouse's manifest.json names (None: it names none)."""
    try:
        data = parse_json((folder / "manifest.json").read_text(encoding="utf-8"), folder)
    except (OSError, ValueError):
        return None
    platform = data.get("platform") if isinstance(data, dict) else None
    return platform if isinstance(platform, str) and platform else None


def _python_of(folder: Path) -> str | None:
    """The Python the wheelhouse's ``pylock.toml`` is for (None: it says none)."""
    from lockkit.lock.model import foreign_tables

    path = folder / "pylock.toml"
    try:
        data = foreign_tables(path, path)
    except (OSError, LockkitError):
        return None
    return None if data is None else target_of(data)[2]


def requirements_header(platform: str, data: Mapping[str, Any], tools: bool = False
                        ) -> list[str]:
    """The comment lines that open a wheelhouse's ``requirements.txt`` (run in its folder):
    the OS, architecture and Python of the lock *data* first, so that pip's "from versions:
    none" on another machine reads as the wrong machine, not as tampering; with *tools*,
    how to install lockkit from ``tools/`` too."""
    os_name, arch, python = target_of(data)
    venv = venv_python(python)
    lines = [f"# {platform} ({os_name} {arch}, Python {python or 'unknown'}), with no network "
             "and any pip, in this folder:",
             f"#   {venv} -m venv v && v/bin/pip install --no-index --find-links . "
             "--require-hashes -r requirements.txt",
             "# pip >= 26.1 (older ones fail on 'lock-version') and uv also take -r pylock.toml"]
    if tools:
        lines.append(f"# lockkit itself, to verify here: {venv} -m venv lk && "
                     "lk/bin/pip install --no-index --find-links tools lockkit")
    return lines


def _has_hashes(requirements: Path) -> bool:
    try:
        return "--hash=" in requirements.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # a wheelhouse's requirements.txt always carries them
