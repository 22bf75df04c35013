"""Reading a config table key by key, every problem collected and named by its key path.

The config-side twin of the platform loader's checker (``lockkit.platforms.definitions``): a file's
mistakes are reported together, one ``key.path: what was expected, got what`` each, in
one :class:`~lockkit.errors.ConfigError` naming the file, so a user fixes them in one go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal

from lockkit._internal.redact import redact
from lockkit.errors import ConfigError

__all__ = ["Checker", "LockkitRequirement", "Runner", "lockkit_requirement", "runner_labels"]

Runner = str | list[str]  # one runner label, or labels a runner must all carry


class Checker:
    """Collects the problems of one file (or one flag) before raising them together."""

    def __init__(self, source: Path | str | None) -> None:
        self.source = source
        self.errors: list[str] = []
        self.hints: list[str] = []

    def fail(self, key: str, message: str, hint: str | None = None) -> None:
        self.errors.append(f"{key}: {message}" if key else message)
        if hint and hint not in self.hints:
            self.hints.append(hint)

    def unknown(self, table: dict[str, Any], known: Iterable[str], where: str = "") -> None:
        """Each key not in *known*, with the closest known one suggested."""
        known = sorted(known)
        for key in sorted(set(table) - set(known)):
            import difflib

            close = difflib.get_close_matches(key, known, n=1)
            tip = f" (did you mean '{where}{close[0]}'?)" if close else ""
            self.errors.append(f"unknown key '{where}{key}'{tip}")

    def table(self, data: dict[str, Any], key: str, kind: str) -> dict[str, Any]:
        """``data[key]`` as a table (empty when absent or not a table, which is recorded)."""
        value = data.get(key, {})
        if isinstance(value, dict):
            return value
        self.fail(key, f"expected a table ({kind}), got {value!r}")
        return {}

    def string(self, data: dict[str, Any], key: str, expected: str,
               pattern: re.Pattern[str] | None = None) -> str | None:
        """An optional string key, matching *pattern* when given."""
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, str) and (pattern is None or pattern.fullmatch(value)):
            return value
        self.fail(key, f"expected {expected}, got {value!r}")
        return None

    def strings(self, data: dict[str, Any], key: str, *,
                one: bool = False) -> tuple[str, ...] | None:
        """A list of strings (or, with *one*, a single string taken as a list of one)."""
        if key not in data:
            return None
        value = data[key]
        if one and isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        kind = "a string or a list of strings" if one else "a list of strings"
        self.fail(key, f"expected {kind}, got {value!r}")
        return None

    def raise_if_any(self) -> None:
        if self.errors:
            prefix = f"{self.source}: " if self.source is not None else ""
            raise ConfigError(redact(prefix + "; ".join(self.errors)),  # values are echoed
                              hint="; ".join(self.hints) or None)


def runner_labels(value: Any) -> Runner | None:
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


def lockkit_requirement(value: Any, key: str = "ci.lockkit"
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
