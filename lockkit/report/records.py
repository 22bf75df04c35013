"""The parts of a dossier: commands, steps, checks, fingerprints, inventory, facts.

Each is a frozen dataclass with ``to_dict`` (its JSON form) and ``from_dict``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from lockkit.report import shapes
from lockkit.report.shapes import STATUSES, ApplicationKind, Status

__all__ = ["ApplicationResult", "CheckResult", "CommandRecord", "Fingerprint", "GitState",
           "Inventory", "PackageRow", "ResumeResult", "SchemaError", "StepResult", "Variant",
           "required"]


_APPLICATION_KINDS: tuple[ApplicationKind, ...] = get_args(ApplicationKind)


class SchemaError(ValueError):
    """A document that is not a dossier this lockkit can read (the message says why)."""


def required(data: Mapping[str, Any], key: str, where: str) -> Any:
    """*data*[*key*], or a SchemaError naming it by its path (*where* is the prefix)."""
    if key not in data:
        raise SchemaError(f"{where}{key}: missing")
    return data[key]


@dataclass(frozen=True, kw_only=True)
class CommandRecord:
    """One command run, redacted: the step it served, how it ended, how long it took."""

    step: str
    argv: tuple[str, ...]
    returncode: int | None
    duration_s: float
    cwd: str | None = None
    timed_out: bool = False

    def to_dict(self) -> shapes.CommandDoc:
        return {"step": self.step, "argv": list(self.argv), "cwd": self.cwd,
                "returncode": self.returncode, "timed_out": self.timed_out,
                "duration_s": self.duration_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CommandRecord:
        code = d.get("returncode")
        return cls(step=str(d.get("step", "")), argv=tuple(map(str, d.get("argv") or ())),
                   returncode=code, duration_s=float(d.get("duration_s") or 0.0),
                   cwd=d.get("cwd"), timed_out=bool(d.get("timed_out", False)))


@dataclass(frozen=True, kw_only=True)
class StepResult:
    name: str
    status: Status
    duration_s: float = 0.0
    needs: tuple[str, ...] = ()
    error: str | None = None
    reason: str | None = None
    waived: bool = False  # skipped as the config declared, with the reason: not incomplete
    detail: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise SchemaError(f"step {self.name}: status {self.status!r} is not one of "
                              f"{', '.join(STATUSES)}")
        if self.waived and self.status != "skipped":
            raise SchemaError(f"step {self.name}: waived, but {self.status}, not skipped")

    @property
    def note(self) -> str:
        """The error, else the reason: what a table shows beside the status."""
        return self.error or self.reason or ""

    @property
    def shown_status(self) -> str:
        """The status as tables print it: a waiver says so."""
        return "skipped (waived)" if self.waived else self.status

    def to_dict(self) -> shapes.StepDoc:
        doc: shapes.StepDoc = {
            "name": self.name, "status": self.status, "duration_s": self.duration_s,
            "needs": list(self.needs), "error": self.error, "reason": self.reason,
            "detail": dict(self.detail)}
        if self.waived:  # only when true: documents of runs without a waiver are unchanged
            doc["waived"] = True
        return doc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepResult:
        return cls(name=str(required(d, "name", "steps[].")),
                   status=required(d, "status", "steps[]."),
                   duration_s=float(d.get("duration_s") or 0.0),
                   needs=tuple(d.get("needs") or ()), error=d.get("error"),
                   reason=d.get("reason"), waived=bool(d.get("waived", False)),
                   detail=dict(d.get("detail") or {}))


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """One named check of the application's output and what it saw."""

    name: str
    passed: bool
    detail: str

    def to_dict(self) -> shapes.CheckDoc:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckResult:
        return cls(name=str(d["name"]), passed=bool(d["passed"]), detail=str(d.get("detail")))


@dataclass(frozen=True, kw_only=True)
class Fingerprint:
    """A file the result depends on: the sha256 declared and the one found (None: missing)."""

    path: str
    expected: str
    actual: str | None
    uncommitted: bool = False  # in the project folder but not in git (not in the clean copy)

    @property
    def passed(self) -> bool:
        return self.actual == self.expected

    @property
    def name(self) -> str:
        return f"fingerprint {self.path}"

    @property
    def detail(self) -> str:
        if self.actual is None and self.uncommitted:
            return (f"{self.path}: not committed: git add it (the check runs on a clean copy "
                    f"of the committed files; expected sha256 {self.expected})")
        if self.actual is None:
            return f"{self.path}: missing (expected sha256 {self.expected})"
        if self.passed:
            return f"{self.path}: sha256 {self.actual}"
        return (f"{self.path}: sha256 {self.actual}, expected {self.expected}: restore the "
                "file, or regenerate the reference and record the new fingerprint")

    def to_dict(self) -> shapes.FingerprintDoc:
        doc: shapes.FingerprintDoc = {
            "name": self.name, "passed": self.passed, "detail": self.detail,
            "path": self.path, "expected": self.expected, "sha256": self.actual}
        if self.uncommitted:
            doc["uncommitted"] = True
        return doc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fingerprint:
        return cls(path=str(d["path"]), expected=str(d["expected"]), actual=d.get("sha256"),
                   uncommitted=bool(d.get("uncommitted", False)))

    @classmethod
    def from_schema1(cls, d: Mapping[str, Any]) -> Fingerprint:
        """Schema 1 kept only the sentence; read it once, here, when upgrading."""
        path = str(d["name"]).removeprefix("fingerprint ")
        detail = str(d.get("detail", ""))
        expected = re.search(r"expected (?:sha256 )?([0-9a-f]{64})", detail)
        actual = None if ": missing" in detail else (
            re.search(r"sha256 ([0-9a-f]{64})", detail) or [None, None])[1]
        return cls(path=path, expected=expected[1] if expected else (actual or ""),
                   actual=actual)


@dataclass(frozen=True, kw_only=True)
class ApplicationResult:
    """The project's own check, its checks in their fixed order. ``kind`` is
    ``embedding`` ([verify.embedding]: ``worst_id`` is a sample identifier) or
    ``command`` ([verify.application]: the command line, its exit code, and ``worst_id``
    the compared file and JSON path of the largest difference)."""

    kind: ApplicationKind
    checks: tuple[CheckResult, ...]
    worst_id: str | None = None
    max_abs_diff: float | None = None
    min_cosine: float | None = None
    command: tuple[str, ...] | None = None  # kind "command": as configured, {python} kept
    returncode: int | None = None

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def first_error(self) -> str | None:
        failed = next((c for c in self.checks if not c.passed), None)
        return f"{failed.name}: {failed.detail}" if failed else None

    def to_dict(self) -> shapes.ApplicationDoc:
        doc: shapes.ApplicationDoc = {
            "kind": self.kind, "passed": self.passed, "first_error": self.first_error,
            "worst_id": self.worst_id, "max_abs_diff": self.max_abs_diff,
            "min_cosine": self.min_cosine, "checks": [c.to_dict() for c in self.checks]}
        if self.kind == "command":
            doc["command"], doc["returncode"] = list(self.command or ()), self.returncode
        return doc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ApplicationResult:
        command, kind = d.get("command"), d.get("kind", "embedding")
        if kind not in _APPLICATION_KINDS:
            raise SchemaError(f"checks.application.kind: {kind!r} is not one of "
                              f"{', '.join(_APPLICATION_KINDS)}")
        return cls(kind=kind,
                   checks=tuple(CheckResult.from_dict(c) for c in d.get("checks") or ()),
                   worst_id=d.get("worst_id"), max_abs_diff=d.get("max_abs_diff"),
                   min_cosine=d.get("min_cosine"),
                   command=tuple(map(str, command)) if command is not None else None,
                   returncode=d.get("returncode"))


@dataclass(frozen=True, kw_only=True)
class ResumeResult:
    """The training-resume check: run A (N+M steps) against B (N steps, checkpoint) + C
    (a new process resuming for M steps), R naming what the resume did not restore."""

    steps: int  # N, before the checkpoint
    resume_steps: int  # M, after it
    passed: bool
    first_error: str | None = None
    diverging_step: int | None = None
    max_loss_diff: float | None = None
    atol: float = 0.0
    rtol: float = 0.0
    reason: str | None = None
    command: tuple[str, ...] = ()

    def to_dict(self) -> shapes.ResumeDoc:
        return {"passed": self.passed, "first_error": self.first_error,
                "steps": self.steps, "resume_steps": self.resume_steps,
                "diverging_step": self.diverging_step, "max_loss_diff": self.max_loss_diff,
                "atol": self.atol, "rtol": self.rtol, "reason": self.reason,
                "command": list(self.command)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResumeResult:
        return cls(steps=int(d["steps"]), resume_steps=int(d["resume_steps"]),
                   passed=bool(d["passed"]), first_error=d.get("first_error"),
                   diverging_step=d.get("diverging_step"),
                   max_loss_diff=d.get("max_loss_diff"), atol=float(d.get("atol") or 0.0),
                   rtol=float(d.get("rtol") or 0.0), reason=d.get("reason"),
                   command=tuple(map(str, d.get("command") or ())))


@dataclass(frozen=True, kw_only=True)
class Inventory:
    expected: int
    installed: int
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    mismatched: tuple[str, ...] = ()
    seed: tuple[str, ...] = ()
    # verify --existing (lockkit.verify.existing, .ownership, .importenv): files against
    # RECORD and RECORD against the lock's wheel, files no RECORD lists, RECORDs taken on
    # their word, the import variables (values redacted), what they add and shadow
    altered: tuple[str, ...] = ()
    unowned_code: tuple[str, ...] = ()
    unowned: tuple[str, ...] = ()
    record_from_wheel: tuple[str, ...] = ()
    record_on_its_word: tuple[str, ...] = ()
    import_variables: Mapping[str, str] = field(default_factory=dict)
    import_paths: tuple[str, ...] = ()
    shadowed: tuple[str, ...] = ()
    # installer tooling with no start-up code (not an extra), extras the user vouched for
    tooling: tuple[str, ...] = ()
    allowed_extra: tuple[str, ...] = ()

    @property
    def problems(self) -> list[str]:
        return self.failures(extras=True)

    def failures(self, *, extras: bool) -> list[str]:
        """What fails the inventory; *extras*: whether packages the lock does not name, and
        files no RECORD lists that Python does not run unasked, do (``verify --existing``
        lists them, and fails on them with ``--strict`` only)."""
        return (([f"missing {', '.join(self.missing)}"] if self.missing else [])
                + ([f"not in the lock {', '.join(self.extra)}"] if self.extra and extras
                   else [])
                + list(self.mismatched)
                + _first("files differ from their RECORD", self.altered)
                + _first("files no RECORD lists that Python runs", self.unowned_code)
                + _first("the environment's variables change what Python imports",
                         self.shadowed)
                + (_first("files no RECORD lists", self.unowned) if extras else []))

    def to_dict(self) -> shapes.InventoryDoc:
        doc: shapes.InventoryDoc = {"expected": self.expected, "installed": self.installed,
                             "missing": list(self.missing), "extra": list(self.extra),
                             "mismatched": list(self.mismatched), "seed": list(self.seed)}
        for key in _EXISTING_KEYS:
            if getattr(self, key):
                doc[key] = list(getattr(self, key))
        if self.import_variables:  # these keys only when set: a rebuild's reads as before
            doc["import_variables"] = dict(self.import_variables)
        return doc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Inventory:
        return cls(expected=int(d.get("expected") or 0), installed=int(d.get("installed") or 0),
                   import_variables=dict(d.get("import_variables") or {}),
                   **{k: tuple(d.get(k) or ()) for k in ("missing", "extra", "mismatched",
                                                         "seed", *_EXISTING_KEYS)})


_EXISTING_KEYS: tuple[Literal["altered", "unowned_code", "unowned", "record_from_wheel",
                              "record_on_its_word", "import_paths", "shadowed", "tooling",
                              "allowed_extra"], ...]
_EXISTING_KEYS = ("altered", "unowned_code", "unowned", "record_from_wheel",
                  "record_on_its_word", "import_paths", "shadowed", "tooling",
                  "allowed_extra")


def _first(what: str, items: tuple[str, ...]) -> list[str]:
    return ([f"{what}: {items[0]}" + (" (and more: the inventory lists them)"
                                      if len(items) > 1 else "")] if items else [])


@dataclass(frozen=True, kw_only=True)
class PackageRow:
    """An installed distribution with the index and sha256 the lock gives its version."""

    name: str
    version: str
    index: str | None = None
    sha256: tuple[str, ...] = ()

    def to_dict(self) -> shapes.PackageDoc:
        return {"name": self.name, "version": self.version, "index": self.index,
                "sha256": list(self.sha256)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PackageRow:
        return cls(name=str(d["name"]), version=str(d.get("version")), index=d.get("index"),
                   sha256=tuple(sorted(d.get("sha256") or ())))


@dataclass(frozen=True, kw_only=True)
class GitState:
    git: bool
    revision: str | None = None
    dirty: bool | None = None

    def to_dict(self) -> shapes.GitDoc:
        if not self.git:
            return {"git": False}
        return {"git": True, "revision": self.revision, "dirty": self.dirty}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> GitState:
        d = d or {}
        return cls(git=bool(d.get("git")), revision=d.get("revision"), dirty=d.get("dirty"))


@dataclass(frozen=True, kw_only=True)
class Variant:
    """A run declared as an intended variant: ``diff`` lists its layers apart."""

    name: str
    reason: str
    changes: tuple[str, ...]

    def to_dict(self) -> shapes.VariantDoc:
        return {"name": self.name, "reason": self.reason, "changes": list(self.changes)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Variant | None:
        if not d:
            return None
        return cls(name=str(d.get("name")), reason=str(d.get("reason")),
                   changes=tuple(d.get("changes") or ()))
