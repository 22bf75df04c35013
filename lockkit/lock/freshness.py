"""Is a committed lock still what lockkit would write? The ``compile --check`` gate.

A lock records, in ``[tool.lockkit]``:

- ``inputs``: what decided its content, readable: each input's normalised requirements
  (comments, blank lines and spacing do not count) and the options (platform definition,
  Python, index URL without credentials, allow-sdist, exclude-newer, lock format);
- ``inputs-fingerprint``: the sha256 of that record;
- ``packages-digest``: the sha256 of the ``packages`` table as lockkit wrote it.

:func:`verdict` then tells four states apart: *missing*; *modified* (the packages table no
longer matches its digest: a hand edit, a merge gone wrong; or it names a file on a host
compile does not take it from, :mod:`lockkit.lock.origins`, whatever its digest says);
*stale* (an input changed, and which one; or the lock holds what lockkit no longer
writes, named); *fresh*. lockkit's own version is not an input: an upgrade invalidates
locks only when ``LOCK_FORMAT`` changes.

An ``index-url`` holding a ``${VAR}`` outside its user info is recorded as written and,
in ``index-url-digest``, as the sha256 of what it expands to now, user info removed
(:func:`index_url_digest`): the variable naming another index makes the lock stale, and
neither its value nor any credential is written. Such an option is recorded only for a
``${VAR}`` URL, so no other lock's fingerprint moved; a lock written before it was
recorded reads as stale, saying why (a recompile writes the same packages).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar

from lockkit._internal.compat import tomllib
from lockkit._internal.redact import masked, strip_credentials
from lockkit.config.inputs import effective_inputs, normalized_inputs
from lockkit.config.project import Project
from lockkit.errors import ConfigError, LockkitError
from lockkit.index.urls import expand, placeholders
from lockkit.lock.meta import LockMeta
from lockkit.lock.model import Lock, LockFile, LockTables, lock_tables, lock_text
from lockkit.lock.origins import Origins
from lockkit.lock.python import lock_python
from lockkit.platforms.definitions import Platform

__all__ = ["LOCK_FORMAT", "InputsRecord", "Options", "Outcome", "Status", "Verdict",
           "check_platforms", "fingerprint", "index_url_digest", "input_changes",
           "inputs_record", "packages_digest_of_read", "read_lock", "read_tables",
           "requirement_changes", "stale_warning", "verdict"]

# Bump when what lockkit writes changes in a way old locks must be redone for (it is in
# every inputs fingerprint and, through the lock's metadata, in compile's memo key).
# 2: environments name the architecture; sdists only for the packages in allow-sdist.
LOCK_FORMAT = 2

_EDITED = "its packages table was edited after lockkit wrote it"

VerdictStatus = Literal["fresh", "stale", "modified", "missing"]
# compile: written | unchanged | failed; --check: a verdict; --locked: a verdict that is
# not fresh, else matches | differs (from a fresh resolution) | failed
Status = Literal["written", "unchanged", "failed", "fresh", "stale", "modified", "missing",
                 "matches", "differs"]


# The options of an inputs record, as compile records them ([tool.lockkit] inputs.options).
Options = TypedDict("Options", {
    "platform": str, "python": str, "index-url": str, "allow-sdist": list[str],
    "exclude-newer": str, "lock-format": int,
    "index-url-digest": str,  # only for a ${VAR} index-url (index_url_digest)
}, total=False)


class InputsRecord(TypedDict):
    """What decided a lock's content, as compile records it (``[tool.lockkit] inputs``):
    each input's normalised requirements by label, and the options."""

    requirements: dict[str, list[str]]
    options: Options


@dataclass(frozen=True, kw_only=True)
class Outcome:
    platform: str
    path: Path
    status: Status
    packages: int = 0
    error: LockkitError | None = None
    detail: str = ""  # for --check and --locked: what changed, what differs
    note: str = ""  # for --check: what a fresh verdict took on its word
    differences: tuple[str, ...] = ()  # for --locked: each, from a fresh resolution


@dataclass(frozen=True, kw_only=True)
class Verdict:
    status: VerdictStatus
    detail: str = ""
    unchecked: str = ""  # what a fresh verdict took on its word (Origins.unchecked)


def inputs_record(project: Project, platform: Platform, python: str,
                  requirements: Mapping[str, list[str]]) -> InputsRecord:
    """*requirements*: :func:`.normalized_inputs`, as *platform* resolves them (its own lines)."""
    return {
        # a direct URL in a requirement may carry user:token@: recorded redacted
        "requirements": {label: [masked(r) for r in reqs] for label, reqs in
                         effective_inputs(project, platform, requirements).items()},
        "options": _options(project, platform, python),
    }


def _options(project: Project, platform: Platform, python: str) -> Options:
    options: Options = {
        "platform": platform.fingerprint,
        "python": python,
        "index-url": strip_credentials(project.index_url or ""),
        "allow-sdist": sorted(project.allow_sdist),
        "exclude-newer": project.exclude_newer or "",
        "lock-format": LOCK_FORMAT,
    }
    digest = index_url_digest(project.index_url)
    if digest is not None:
        options["index-url-digest"] = digest
    return options


def index_url_digest(index_url: str | None) -> str | None:
    """The sha256 of the URL a ``${VAR}`` index-url names now: expanded, its user info
    removed (credentials, literal or from a variable, never count and are never hashed),
    a trailing slash dropped. None for a URL without a ``${VAR}`` outside its user info,
    whose text is recorded as it is.

    A variable in the path or query is part of the address: its new value (a rotated
    token there) makes the lock stale; a token belongs in the user info
    (``https://user:${TOKEN}@host/simple``), which no digest sees. A variable not set
    here expands to nothing, so its digest is another one: such a lock is not fresh."""
    if not index_url or not placeholders(strip_credentials(index_url)):
        return None
    now = strip_credentials(expand(index_url)).rstrip("/")
    return "sha256:" + hashlib.sha256(now.encode("utf-8")).hexdigest()


def fingerprint(record: Mapping[str, object]) -> str:
    blob = json.dumps(record, sort_keys=True).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def packages_digest_of_read(table: Any) -> str:
    """The digest of a lock's packages table as read from its text (compile takes it of the
    lock it writes, the gate of the file), so dates and numbers compare as the file holds."""
    blob = json.dumps(table, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def check_platforms(project: Project, platforms: list[Platform]) -> list[Outcome]:
    """Each lock's state: fresh, stale (naming the change), modified or missing. Every
    lock is read once, its packages digest taken and its file URLs checked against the
    hosts the project and platform allow, and the inputs are normalised (once for all of
    them): no part of a lock, which anyone can edit, vouches for the rest. Nothing here
    rests on the lock being valid PEP 751, so it is not validated (:class:`LockTables`):
    the commands that use its packages refuse one that is not."""
    requirements: dict[str, list[str]] | None = None
    outcomes = []
    for platform in platforms:
        path = project.lock_path(platform.name)
        requirements = requirements or normalized_inputs(project)
        current = inputs_record(project, platform, lock_python(project, platform),
                                requirements)
        origins, read = Origins.of(project, platform), read_tables(path)
        said = read if isinstance(read, Verdict) else verdict(read, current, platform, origins)
        outcomes.append(Outcome(platform=platform.name, path=path, status=said.status,
                                detail=said.detail, note=said.unchecked))
    return outcomes


def read_lock(found: LockFile) -> Lock | Verdict:
    """The lock compile *found* (read once), validated, for :func:`verdict`; or the verdict:
    *missing*, or *modified* where it is refused (a lock anyone can edit is judged)."""
    return _judged(found, lambda: Lock.validated(found.tables()))


def read_tables(found: Path | LockFile) -> LockTables | Verdict:
    """:func:`read_lock` not validated as PEP 751, as ``--check`` judges (a path: read here)."""
    if isinstance(found, Path):
        path = found
        try:
            found = LockFile(path=path, text=lock_text(path) if path.is_file() else None)
        except ConfigError as exc:
            return _refused(path, exc, None)
    return _judged(found, found.tables)


_Read = TypeVar("_Read", bound=LockTables)


def _judged(found: LockFile, read: Callable[[], _Read]) -> _Read | Verdict:
    if found.text is None:  # else the lock as *read* parses it (validated or not)
        return Verdict(status="missing")
    try:
        return read()
    except ConfigError as exc:
        return _refused(found.path, exc, found.text)


def _refused(path: Path, exc: ConfigError, text: str | None) -> Verdict:
    """A lock refused (its *text* parsed again only here): edited when its packages digest
    is not its own (a hand-changed version is no PEP 751), else not a lock lockkit wrote."""
    try:  # TOML nested too deep for any reader is bad input (exit 2), never a verdict
        data = None if text is None else lock_tables(text, path)
    except tomllib.TOMLDecodeError:
        data = None
    try:
        edited = data is not None and packages_digest_of_read(
            data["packages"]) != LockMeta.of(data, path).packages_digest
    except (LockkitError, KeyError, TypeError):
        edited = False
    why = f"not a lock lockkit wrote ({str(exc).removeprefix(f'{path}: ')})"
    return Verdict(status="modified", detail=_EDITED if edited else why)


def verdict(lock: LockTables, current: InputsRecord, platform: Platform | None = None,
            origins: Origins | None = None) -> Verdict:
    """The state of *lock* against the *current* inputs record; with the *platform*, a
    changed platform is told in words (renamed, moved index, new backend); with its
    *origins*, a lock whose inputs match but whose files are on hosts compile does not
    take them from is modified (a stale lock is stale first: a changed index-url moves
    every URL, and that is what it says)."""
    meta, data = lock.meta, lock.data
    if meta == LockMeta():
        return Verdict(status="modified", detail="not a lock lockkit wrote (no [tool.lockkit])")
    if packages_digest_of_read(data.get("packages")) != meta.packages_digest:
        return Verdict(status="modified", detail=_EDITED)
    old_form = _old_form(data, current, platform)
    if meta.inputs_fingerprint == fingerprint(current):
        if origins is not None and (strays := origins.strays(data)):
            return Verdict(status="modified", detail=origins.detail(strays))
        if old_form:
            return Verdict(status="stale", detail=old_form)
        return Verdict(status="fresh", unchecked=origins.unchecked if origins else "")
    detail = explain(meta.inputs, current)
    if platform is not None:
        detail = detail.replace(_PLATFORM_CHANGED, platform_change(meta, platform))
    return Verdict(status="stale", detail="; ".join(d for d in (detail, old_form) if d))


def _old_form(data: Mapping[str, Any], current: InputsRecord,
              platform: Platform | None) -> str:
    """What a lock of an older form holds that lockkit no longer writes, in words: an
    ``environments`` without the architecture (pip and uv install it on any CPU) and sdists
    of packages not in allow-sdist (an installer builds them where no wheel fits)."""
    from packaging.utils import canonicalize_name

    said = []
    envs = data.get("environments")
    shown = ", ".join(map(str, envs)) if isinstance(envs, list) else repr(envs)
    if not (isinstance(envs, list) and any("platform_machine" in str(e) for e in envs)):
        said.append(f"its environments name no architecture ({shown})")
    elif platform is not None and envs != [platform.marker]:
        said.append(f"its environments are {shown}, not {platform.marker}")
    allowed = {canonicalize_name(n) for n in current["options"].get("allow-sdist", [])}
    sdists = [str(p.get("name")) for p in data.get("packages", [])
              if isinstance(p, dict) and "sdist" in p
              and canonicalize_name(str(p.get("name"))) not in allowed]
    if sdists:
        more = f" and {len(sdists) - 5} more" if len(sdists) > 5 else ""
        said.append(f"it lists the sdist of {len(sdists)} package(s) not in allow-sdist "
                    f"({', '.join(sdists[:5])}{more})")
    return "; ".join(said)


def stale_warning(project: Project, platform: Platform, lock: LockTables) -> str | None:
    """For the commands that use *lock* as it is: None when fresh, else what changed."""
    try:
        record = inputs_record(project, platform, lock_python(project, platform),
                               normalized_inputs(project))
    except LockkitError as exc:
        return f"{lock.path.name}: its freshness could not be checked ({exc})"
    said = verdict(lock, record, platform, Origins.of(project, platform))
    if said.status in ("fresh", "missing"):
        return None
    return (f"{lock.path.name} is {said.status} against its inputs ({said.detail}): "
            f"run 'lockkit compile --platform {platform.name}' to make it current")


_PLATFORM_CHANGED = "the platform definition changed"


def platform_change(meta: LockMeta, platform: Platform) -> str:
    """What the lock's ``[tool.lockkit]`` says its platform was, against what it is now:
    a renamed or re-pointed family name must never pass as a mere fingerprint change."""
    said = []
    was = meta.platform
    if was and was != platform.name:
        said.append(f"platform renamed {was} -> {platform.name}")
    old_index, new_index = meta.torch_index or "", platform.torch_index or ""
    old = meta.backend
    old_backend = " ".join(v for v in (old.kind, old.version) if v) if old else ""
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


def explain(recorded: Any, current: InputsRecord) -> str:
    """Which input changed, in words: files, requirements, options."""
    if not isinstance(recorded, dict):
        return "written by an older lockkit (no inputs recorded)"
    was, now = recorded.get("requirements", {}), current["requirements"]
    said = [f"{label}: new input" for label in now if label not in was]
    said += [f"{label}: no longer an input" for label in was if label not in now]
    for label in (lb for lb in now if lb in was):
        said += input_changes(label, was[label], now[label])
    old_opts = recorded.get("options", {})
    for key, value in current["options"].items():
        if key == "index-url-digest" and old_opts.get(key) != value:
            said += filter(None, [_index_change(old_opts, current["options"])])
        elif old_opts.get(key) != value:
            said.append(_option_change(key, old_opts.get(key), value))
    return "; ".join(said) or "the inputs fingerprint does not match"


def _index_change(old: Mapping[str, Any], now: Options) -> str:
    """A ``${VAR}`` index-url that names another URL, in words: the variables, never
    their values nor the digests (a changed literal is said as a literal change)."""
    if old.get("index-url") != now["index-url"]:
        return ""
    names = placeholders(now["index-url"])
    shown = ", ".join(names)
    unset = [n for n in names if not os.environ.get(n[2:-1])]
    if unset:
        return (f"index-url: {', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not "
                "set here, so the index it names cannot be compared with the lock's")
    if "index-url-digest" not in old:
        return (f"index-url: this lock does not record what its {shown} expanded to "
                "(written by an older lockkit)")
    verb = "expands" if len(names) == 1 else "expand"
    return f"index-url changed (its {shown} now {verb} to another URL)"


def input_changes(label: str, was: list[str], now: list[str]) -> list[str]:
    """The requirements an input changed, gained and lost, named (:func:`requirement_changes`);
    for a file outside the project (its label climbs out: ``../``, or is absolute) only
    counted, as its lines are never quoted (:mod:`lockkit.config.inputfile`)."""
    said = requirement_changes(was, now)
    if label.startswith(("../", "/")) or label == "..":
        counts = [f"{n} requirement(s) {word}" for word in ("changed", "added", "removed")
                  if (n := sum(line.startswith(word + " ") for line in said))]
        return [f"{label}: {', '.join(counts)} (not shown: the file is outside the "
                f"project)"] if counts else []
    return [f"{label}: {line}" for line in said]


def requirement_changes(was: list[str], now: list[str]) -> list[str]:
    """``changed numpy>=2 → numpy>=2.1``, ``added X``, ``removed Y``: the lines that left
    and came paired by canonical name (in order, where a name has several), so a new bound
    reads as one change; a line that does not parse as a requirement stays added/removed."""
    added = [r for r in now if r not in was]
    removed = [r for r in was if r not in now]
    gone: dict[str | None, list[str]] = {}
    for line in removed:
        gone.setdefault(_requirement_name(line), []).append(line)
    changed, new = [], []
    for line in added:
        name = _requirement_name(line)
        olds = gone.get(name) if name is not None else None
        if olds:
            changed.append(f"changed {olds.pop(0)} → {line}")
        else:
            new.append(f"added {line}")
    left = [f"removed {line}" for olds in gone.values() for line in olds]
    return changed + new + left


def _requirement_name(line: str) -> str | None:
    """The canonical name of a requirement line; None for one that does not parse."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return None


def _option_change(key: str, old: Any, new: Any) -> str:
    if key == "platform":
        return _PLATFORM_CHANGED
    if key == "lock-format":
        return f"lock format {old if old is not None else '(none)'} -> {new} (a newer lockkit)"
    def shown(value: Any) -> str:
        return "(unset)" if value in (None, "", []) else str(value)

    return f"{key}: {shown(old)} -> {shown(new)}"
