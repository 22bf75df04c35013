"""Is a committed lock still what lockkit would write? The ``compile --check`` gate.

A lock records, in ``[tool.lockkit]``:

- ``inputs``: what decided its content, readable: each input's normalised requirements
  (comments, blank lines and spacing do not count) and the options (platform definition,
  Python, index URL without credentials, allow-sdist, exclude-newer, lock format);
- ``inputs-fingerprint``: the sha256 of that record;
- ``packages-digest``: the sha256 of the ``packages`` table as lockkit wrote it.

``check`` then tells four states apart: *missing*; *modified* (the packages table no
longer matches its digest: a hand edit, a merge gone wrong); *stale* (an input changed,
and which one); *fresh*. lockkit's own version is not an input: an upgrade invalidates
locks only when ``LOCK_FORMAT`` changes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lockkit._compat import tomllib
from lockkit._record import record
from lockkit.config import Project, normalized_inputs
from lockkit.errors import LockkitError
from lockkit.platforms import Platform
from lockkit.redact import redact, strip_credentials

__all__ = ["LOCK_FORMAT", "Outcome", "Verdict", "check", "check_platforms", "files_digest",
           "fingerprint", "inputs_record", "lock_python",
           "packages_digest_of_read", "seal", "stale_warning"]

LOCK_FORMAT = 1  # bump when what lockkit writes changes in a way old locks must be redone for


@record
class Outcome:
    platform: str
    path: Path
    status: str  # "written" | "unchanged" | "fresh" | "stale" | "missing" | "failed"
    packages: int = 0
    error: LockkitError | None = None
    detail: str = ""  # for --check: what changed


@record
class Verdict:
    status: str  # "fresh" | "stale" | "modified" | "missing"
    detail: str = ""


def inputs_record(project: Project, platform: Platform, python: str,
                  requirements: Mapping[str, list[str]]) -> dict[str, Any]:
    """*requirements* is :func:`lockkit.config.normalized_inputs`, read once per command."""
    return {
        # a direct URL in a requirement may carry user:token@: recorded redacted
        "requirements": {label: [redact(r) for r in reqs]
                         for label, reqs in requirements.items()},
        "options": _options(project, platform, python),
    }


def _options(project: Project, platform: Platform, python: str) -> dict[str, Any]:
    return {
        "platform": platform.fingerprint,
        "python": python,
        "index-url": strip_credentials(project.index_url or ""),
        "allow-sdist": sorted(project.allow_sdist),
        "exclude-newer": project.exclude_newer or "",
        "lock-format": LOCK_FORMAT,
    }


def files_digest(project: Project, platform: Platform, python: str,
                 labels: Iterable[str], read: dict[Path, bytes] | None = None) -> str | None:
    """The sha256 of the bytes of every file the inputs were read from, and the options.

    The gate's quick path: when these bytes are what ``compile`` read, the normalised
    inputs are too, and ``--check`` need not parse a requirement (nor import packaging).
    The files are the config file, the configured inputs and every file the recorded
    labels name (the includes); any difference, a comment included, only sends the check
    down the full path, which says whether it matters. None if a file cannot be read.
    *read* keeps the bytes of the files read for one command (every lock has the same)."""
    files = input_files(project, labels)
    digest = hashlib.sha256(json.dumps(_options(project, platform, python),
                                       sort_keys=True).encode())
    read = {} if read is None else read
    for path in sorted(files):
        try:
            data = read[path] if path in read else read.setdefault(path, path.read_bytes())
        except OSError:
            return None
        digest.update(f"\0{path.relative_to(project.root).as_posix()}\0{len(data)}\0".encode()
                      if path.is_relative_to(project.root) else f"\0{path}\0".encode())
        digest.update(data)
    return "sha256:" + digest.hexdigest()


def input_files(project: Project, labels: Iterable[str]) -> set[Path]:
    """The config file, the configured inputs and every file the recorded *labels* name."""
    files = {project.root / entry for entry in project.requirements}
    files |= {project.root / _LABEL_SECTION.sub("", label) for label in labels}
    if project.config_file is not None:
        files.add(project.config_file)
    return files


# "pyproject.toml[project.dependencies]", "x/pyproject.toml[dependency-groups.dev]"
_LABEL_SECTION = re.compile(r"\[(?:project\.|dependency-groups\.)[^\]]*\]$")


def fingerprint(record: dict[str, Any]) -> str:
    blob = json.dumps(record, sort_keys=True).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def packages_digest_of_read(table: Any) -> str:
    """The digest of a lock's packages table as read from its text (compile writes the
    lock, reads it back and takes this; the gate takes it of the file), so dates and
    numbers compare as the file holds them."""
    blob = json.dumps(table, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def lock_python(project: Project, platform: Platform) -> str:
    """The Python version a platform's lock is resolved for."""
    return project.python or platform.python


def check_platforms(project: Project, platforms: list[Platform]) -> list[Outcome]:
    """Each lock's state: fresh, stale (naming the change), modified or missing.

    A lock whose input files are byte for byte what compile read is fresh at once; the
    inputs are parsed and normalised only for the others (once for all of them)."""
    requirements: dict[str, list[str]] | None = None
    read: dict[Path, bytes] = {}
    outcomes = []
    for platform in platforms:
        path = project.lock_path(platform.name)
        python = lock_python(project, platform)
        verdict = _quick_check(project, platform, python, path, read)
        if verdict is None:
            requirements = requirements or normalized_inputs(project)
            verdict = check(path, inputs_record(project, platform, python, requirements),
                            platform)
        outcomes.append(Outcome(platform=platform.name, path=path, status=verdict.status,
                                detail=verdict.detail))
    return outcomes


_SEAL = "# lockkit seal: sha256:"
_TOOL = b"\n[tool.lockkit]\n"


def seal(text: str) -> str:
    """*text* (a lock as compile writes it) with a last comment line holding the sha256 of
    every line above: a lock whose seal holds is byte for byte what compile wrote, so the
    gate needs not parse its packages to know they were not edited."""
    return f"{text}{_SEAL}{hashlib.sha256(text.encode()).hexdigest()}\n"


def _sealed_tool(raw: bytes) -> dict[str, Any] | None:
    """The ``[tool.lockkit]`` table of a lock whose seal holds (only that part is parsed:
    tomli_w writes it last), else None."""
    cut = raw.rfind(b"\n" + _SEAL.encode()) + 1
    body, trailer = raw[:cut], raw[cut + len(_SEAL):]
    if cut == 0 or trailer.rstrip(b"\n").decode("ascii", "replace") != \
            hashlib.sha256(body).hexdigest():
        return None
    start = body.rfind(_TOOL)
    try:
        part = tomllib.loads(body[start:].decode("utf-8")) if start >= 0 else {}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    tool = part.get("tool", {}).get("lockkit")
    return tool if isinstance(tool, dict) else None


def _quick_check(project: Project, platform: Platform, python: str, path: Path,
                 read: dict[Path, bytes]) -> Verdict | None:
    """*fresh* when the lock's seal holds (nothing in it was edited) and its recorded
    files digest still does (no input file changed), else None: the full check decides."""
    try:
        tool = _sealed_tool(path.read_bytes())
    except OSError:
        return None
    if tool is None:
        return None
    recorded, labels = tool.get("input-files-digest"), tool.get("inputs", {}).get("requirements")
    if isinstance(recorded, str) and isinstance(labels, dict) and \
            recorded == files_digest(project, platform, python, labels, read):
        return Verdict(status="fresh")
    return None


def check(path: Path, current: dict[str, Any], platform: Platform | None = None) -> Verdict:
    """The state of the lock at *path* against the *current* inputs record; with the
    *platform*, a changed platform is told in words (renamed, moved index, new backend)."""
    if not path.is_file():
        return Verdict(status="missing")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        tool = data["tool"]["lockkit"]
        digest_ok = packages_digest_of_read(data["packages"]) == tool.get("packages-digest")
    except (KeyError, TypeError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Verdict(status="modified", detail=f"not a lock lockkit wrote ({exc})")
    if not digest_ok:
        return Verdict(status="modified", detail="its packages table was edited after "
                                                 "lockkit wrote it")
    if tool.get("inputs-fingerprint") == fingerprint(current):
        return Verdict(status="fresh")
    detail = explain(tool.get("inputs"), current)
    if platform is not None:
        detail = detail.replace(_PLATFORM_CHANGED, platform_change(tool, platform))
    return Verdict(status="stale", detail=detail)


def stale_warning(project: Project, platform: Platform) -> str | None:
    """One line for verify and ``wheelhouse build``, which use a lock as it is: None when
    it is fresh (or missing: they say so themselves), else what changed since compile."""
    path = project.lock_path(platform.name)
    try:
        record = inputs_record(project, platform, project.python or platform.python,
                               normalized_inputs(project))
    except LockkitError as exc:
        return f"{path.name}: its freshness could not be checked ({exc})"
    verdict = check(path, record, platform)
    if verdict.status in ("fresh", "missing"):
        return None
    return (f"{path.name} is {verdict.status} against its inputs ({verdict.detail}): "
            f"run 'lockkit compile --platform {platform.name}' to make it current")


_PLATFORM_CHANGED = "the platform definition changed"


def platform_change(tool: dict[str, Any], platform: Platform) -> str:
    """What the lock's ``[tool.lockkit]`` says its platform was, against what it is now:
    a renamed or re-pointed family name must never pass as a mere fingerprint change."""
    said = []
    was = tool.get("platform")
    if isinstance(was, str) and was and was != platform.name:
        said.append(f"platform renamed {was} -> {platform.name}")
    old_index, new_index = tool.get("torch-index") or "", platform.torch_index or ""
    old: dict[str, Any] = tool["backend"] if isinstance(tool.get("backend"), dict) else {}
    old_backend = " ".join(str(v) for v in (old.get("kind"), old.get("version")) if v)
    new_backend = " ".join(v for v in (platform.backend.kind, platform.backend.version) if v)
    moved = []
    if old_index != new_index:
        moved.append(f"torch index {old_index or '(default index)'} -> "
                     f"{new_index or '(default index)'}")
    if old_backend and old_backend != new_backend:
        moved.append(f"backend {old_backend} -> {new_backend}")
    if moved and platform.alias_of:
        said.append(f"{platform.name} is now an alias of {platform.alias_of}")
    return "; ".join(said + moved) or _PLATFORM_CHANGED


def explain(recorded: Any, current: dict[str, Any]) -> str:
    """Which input changed, in words: files, requirements, options."""
    if not isinstance(recorded, dict):
        return "written by an older lockkit (no inputs recorded)"
    was, now = recorded.get("requirements", {}), current["requirements"]
    said = [f"{label}: new input" for label in now if label not in was]
    said += [f"{label}: no longer an input" for label in was if label not in now]
    for label in (lb for lb in now if lb in was):
        added = [r for r in now[label] if r not in was[label]]
        removed = [r for r in was[label] if r not in now[label]]
        said += [f"{label}: added {r}" for r in added] + [f"{label}: removed {r}" for r in removed]
    old_opts = recorded.get("options", {})
    for key, value in current["options"].items():
        if old_opts.get(key) != value:
            said.append(_option_change(key, old_opts.get(key), value))
    return "; ".join(said) or "the inputs fingerprint does not match"


def _option_change(key: str, old: Any, new: Any) -> str:
    if key == "platform":
        return _PLATFORM_CHANGED
    if key == "lock-format":
        return f"lock format {old if old is not None else '(none)'} -> {new} (a newer lockkit)"
    def shown(value: Any) -> str:
        return "(unset)" if value in (None, "", []) else str(value)

    return f"{key}: {shown(old)} -> {shown(new)}"
