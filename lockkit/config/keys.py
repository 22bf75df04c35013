"""The ``[ci]`` values that need more than a type: runner labels and the requirement the
CI workflow installs lockkit from. The key-path reader that reads them, as every table, is
:class:`lockkit._internal.keys.KeyReader`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Literal

__all__ = ["REFRESH_SCHEDULES", "CiConfig", "LockkitRequirement", "RefreshSchedule", "Runner",
           "lockkit_requirement", "runner_labels"]

Runner = str | list[str]  # one runner label, or labels a runner must all carry
RefreshSchedule = Literal["daily", "weekly", "monthly"]  # [ci] refresh, --refresh
REFRESH_SCHEDULES: tuple[RefreshSchedule, ...] = ("daily", "weekly", "monthly")


def runner_labels(value: object) -> Runner | None:
    """A ``[ci.runners]`` value with its labels stripped, or None when it is not one label
    or a non-empty list of labels."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(x, str) and x.strip() for x in value):
        return [x.strip() for x in value]
    return None


_HASH = re.compile(r"--hash=(sha256|sha384|sha512):([0-9a-f]+)")
_HASH_LEN = {"sha256": 64, "sha384": 96, "sha512": 128}
_VCS_COMMIT = re.compile(r"(git|hg)\+\S+@[0-9a-f]{40}")  # a full commit: the content is fixed
_ARCHIVE = (".whl", ".tar.gz", ".zip")
Source = Literal["index", "path", "url", "vcs"]


@dataclass(frozen=True, kw_only=True)
class LockkitRequirement:
    """``[ci] lockkit``: what the CI workflow installs lockkit from.

    *requirement* is the pip requirement without its ``--hash`` options, which are in
    *hashes* (``sha256:<hex>``); *source* says where pip gets it: an index (``==`` pin),
    a file in the repository (*requirement* is its path), a URL, or a VCS commit.
    """

    requirement: str
    hashes: tuple[str, ...] = ()
    source: Source = "index"


def lockkit_requirement(value: object, key: str = "ci.lockkit"
                        ) -> tuple[LockkitRequirement | None, list[str]]:
    """Parse ``[ci] lockkit``: one pip requirement line naming lockkit, pinned to one
    version, file, URL or commit (``lockkit>=1`` from an index is refused: the name there
    is not known to be ours), with optional ``--hash=sha256:...`` options."""
    if not isinstance(value, str) or not value.strip():
        return None, [f"{key}: expected a pip requirement string such as "
                      f"'lockkit==1.2.3', got {value!r}"]
    words = value.split()
    hashes = [w for w in words if w.startswith("--")]
    text = " ".join(w for w in words if not w.startswith("--"))
    problems = [f"{key}: {w!r} is not a --hash=sha256:<hex> option" for w in hashes
                if not ((m := _HASH.fullmatch(w)) and len(m[2]) == _HASH_LEN[m[1]])]
    found, problem = _source(text)
    if problem is None and hashes and found == "vcs":
        problem = "pip cannot check the hash of a VCS checkout (the commit pins it)"
    if problem is not None:
        problems.append(f"{key}: {text!r}: {problem}")
    if problems:
        return None, problems
    return LockkitRequirement(requirement=text, hashes=tuple(h[7:] for h in hashes),
                              source=found), []


def _source(text: str) -> tuple[Source, str | None]:
    """Where pip gets *text* from, or why *text* cannot be used."""
    from packaging.requirements import InvalidRequirement, Requirement  # [ci] lockkit only
    from packaging.utils import canonicalize_name

    if text.endswith(_ARCHIVE) and "@" not in text and ":" not in text.split("/")[0]:
        return "path", _path_problem(text)
    try:
        req = Requirement(text)
    except InvalidRequirement as err:
        return "index", f"not a pip requirement ({err})"
    if canonicalize_name(req.name) != "lockkit":
        return "index", "names another project than lockkit"
    if req.url is not None:
        vcs = req.url.split("#", 1)[0]
        if req.url.startswith(("git+", "hg+", "svn+", "bzr+")):
            return "vcs", None if _VCS_COMMIT.fullmatch(vcs) else \
                "pin a full 40-hex commit (name@<sha>): a branch or tag can move"
        return "url", None if req.url.startswith("https://") else "use an https:// URL"
    pins = [s for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    if len(pins) != 1 or len(req.specifier) != 1:
        return "index", "pin one version (lockkit==1.2.3), a file, a URL or a commit"
    return "index", None


def _path_problem(path: str) -> str | None:
    """A repository file: relative, inside the repository, a lockkit wheel or sdist."""
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute() \
            or ".." in PureWindowsPath(path).parts:
        return "give a path relative to the repository root, inside it"
    from packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        parse_sdist_filename,
        parse_wheel_filename,
    )

    name = PureWindowsPath(path).name
    try:
        project = (parse_wheel_filename(name)[0] if name.endswith(".whl")
                   else parse_sdist_filename(name)[0])
    except (InvalidWheelFilename, InvalidSdistFilename) as err:
        return f"not a wheel or sdist file name ({err})"
    return None if project == "lockkit" else "names another project than lockkit"


@dataclass(frozen=True, kw_only=True)
class CiConfig:
    """The ``[ci]`` table, validated when the project loads."""

    runners: dict[str, Runner] = field(default_factory=dict)  # [ci.runners]; names: ci/
    lockkit: LockkitRequirement | None = None  # [ci] lockkit; None: the ci stage's default
    # [ci] refresh: the schedule of the refresh pull request (lockkit.ci.refresh.SCHEDULES)
    refresh: RefreshSchedule | None = None
