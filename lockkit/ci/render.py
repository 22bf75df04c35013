"""The workflow's text, piece by piece: YAML scalars that read back as the same string,
runner labels, the project folder as one word every runner's shell reads the same, the
install step and the header comment on where lockkit comes from.

The workflow is written as text, not dumped by a YAML library: the output is the same
bytes for the same inputs, reads like a hand-written file, and lockkit needs no YAML
package at run time. Every value goes through :func:`scalar`, which quotes whatever YAML
would otherwise read as something else (``3.10`` as a float, ``on`` as a bool).
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from lockkit.config.keys import LockkitRequirement, runner_labels
from lockkit.errors import ConfigError, UsageError

__all__ = ["install_step", "lock_path", "posix", "project_arg", "quoted", "runner_yaml",
           "scalar", "where_from"]

# The step installing a lockkit that pip cannot check by hash (a VCS commit, or [ci] lockkit
# without --hash), after the pinned file: the requirement comes from its env, never from
# text substituted into the script.
_UNHASHED = """\
import os, subprocess, sys
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
                          "--no-deps", os.environ["LOCKKIT_REQUIREMENT"]]))
"""

_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_SPECIAL = {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"}


def _plain(value: str, flow: bool) -> bool:
    """Whether YAML reads *value* back unquoted as this very string."""
    if not value or value != value.strip() or value.lower() in _SPECIAL:
        return False
    if value[0] in _INDICATORS or value[0].isdigit() or value[0] in "+.":
        return False  # an indicator, or something that may read as a number
    if any(ord(c) < 0x20 or c in "\x7f\x85\u2028\u2029" for c in value):
        return False
    if ": " in value or " #" in value or value.endswith(":"):
        return False
    return not (flow and any(c in ",[]{}" for c in value))


def quoted(value: str) -> str:
    """A double-quoted YAML scalar: JSON's escapes are a subset of YAML's."""
    return json.dumps(value, ensure_ascii=True)


def scalar(value: str, *, flow: bool = False) -> str:
    """*value* plain when that reads back as the same string, else double-quoted."""
    return value if _plain(value, flow) else quoted(value)


def runner_yaml(name: str, runner: Any) -> str:
    """A ``runs-on`` value: one label, or a flow list of labels."""
    labels = runner_labels(list(runner) if isinstance(runner, tuple) else runner)
    if isinstance(labels, str):
        return scalar(labels, flow=True)
    if labels is not None:
        return "[" + ", ".join(scalar(label, flow=True) for label in labels) + "]"
    raise ConfigError(f"[ci.runners].{name}: expected a label or a non-empty list of labels, "
                      f"got {runner!r}")


def project_arg(project: str) -> str:
    """The project folder as one shell word that bash, pwsh and cmd all read the same."""
    if PurePosixPath(project).is_absolute() or PureWindowsPath(project).is_absolute():
        raise UsageError(f"--project {project!r}: must be relative to the repository root")
    word = posix(project)
    if word.startswith("-"):
        word = "./" + word  # not an option
    if re.fullmatch(r"[A-Za-z0-9_./-]+", word):
        return word
    if re.search(r"[\"'$`%!\x00-\x1f]", word):
        raise UsageError(f"--project {project!r}: quotes, $, %, !, backquotes and control "
                         "characters cannot be passed safely to every runner's shell")
    return f'"{word}"'


def where_from(req: LockkitRequirement, own: bool, pins: str, hashed: bool) -> list[str]:
    """The generated file's comment on where lockkit and its dependencies come from."""
    where = {"index": "the default package index (or the runner's pip configuration)",
             "path": "a file committed to this repository", "url": "that URL",
             "vcs": "that commit of the repository"}[req.source]
    check = ("pip checks its hash" if req.hashes or "#sha256=" in req.requirement
             else "the commit pins its content" if req.source == "vcs"
             else "nothing checks its content")
    lines = [f"# lockkit comes from {where}:", f"#   {req.requirement} ({check}).",
             f"# lockkit and its dependencies are installed from {pins} in pip's",
             "# hash-checking mode (--require-hashes): every file by its sha256, none by name",
             "# alone" + ("." if hashed else ", but lockkit itself (see above).")]
    if own:
        lines += ["# This is the default: lockkit's own wheel, written there by `lockkit ci",
                  "# github` with that file, never taken by name from an index. Commit both",
                  "# with this file; [ci] lockkit in lockkit.toml names another source."]
    return lines


def install_step(pins: str, *, only_binary: bool = True, unhashed: str | None = None,
                 indent: str = "      ") -> list[str]:
    """The step installing lockkit and its dependencies from *pins* (a path from the
    repository root: pip reads a requirements file's paths from the working directory)
    in pip's hash-checking mode; then *unhashed*, a lockkit pip cannot check by hash,
    alone (see ``_UNHASHED``)."""
    command = ("python -m pip install --disable-pip-version-check --require-hashes"
               + (" --only-binary :all:" if only_binary else "") + f" -r {project_arg(pins)}")
    lines = [f"{indent}- name: install lockkit", f"{indent}  run: {scalar(command)}"]
    if unhashed is not None:
        lines += [f"{indent}- name: install lockkit itself (not hash-checked)",
                  f"{indent}  shell: python",
                  f"{indent}  env:",
                  f"{indent}    LOCKKIT_REQUIREMENT: {scalar(unhashed)}",
                  f"{indent}  run: |",
                  *(f"{indent}    {line}" for line in _UNHASHED.splitlines())]
    return lines


def posix(project: str) -> str:
    """*project* with ``/`` separators (a Windows user may type ``a\\b``)."""
    return PureWindowsPath(project).as_posix() if "\\" in project else project


def lock_path(project: str, name: str) -> str:
    """The platform's lock in the repository, as hashFiles() and git ls-files take it."""
    return (PurePosixPath(posix(project)) / "locks" / f"pylock.{name}.toml").as_posix()
