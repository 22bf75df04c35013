"""The dossier: what one verify or diagnose run found, as frozen, versioned data.

verify and diagnose *return* a :class:`Dossier` and write nothing; the renderers in this
package (``json``, ``markdown``, ``junit``, ``terminal``) turn it into files and tables,
and ``lockkit diff`` loads it back with :meth:`Dossier.from_dict` and compares fields.
Facts the probes report (the system chain, the GPU checks) stay the probe's own JSON
objects, reached through typed accessors: the probes run inside the target interpreter
and their shape is theirs.

Schema 2 adds structured fingerprints (path, expected and actual sha256) and the
command records' ``timed_out``; a schema-1 dossier is upgraded on load, a newer one is
refused with one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["SCHEMA_VERSION", "ApplicationResult", "CheckResult", "CommandRecord", "Dossier",
           "Fingerprint", "GitState", "Inventory", "PackageRow", "SchemaError", "StepResult",
           "SystemFacts", "TorchFacts", "Variant", "STATUSES", "RESULTS"]

SCHEMA_VERSION = 2
STATUSES = ("passed", "failed", "skipped", "not-run")
RESULTS = ("passed", "failed", "incomplete")


class SchemaError(ValueError):
    """A document that is not a dossier this lockkit can read (the message says why)."""


def _req(data: Mapping[str, Any], key: str, where: str) -> Any:
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

    def to_dict(self) -> dict[str, Any]:
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
    status: str  # one of STATUSES
    duration_s: float = 0.0
    needs: tuple[str, ...] = ()
    error: str | None = None
    reason: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise SchemaError(f"step {self.name}: status {self.status!r} is not one of "
                              f"{', '.join(STATUSES)}")

    @property
    def note(self) -> str:
        """The error, else the reason: what a table shows beside the status."""
        return self.error or self.reason or ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "duration_s": self.duration_s,
                "needs": list(self.needs), "error": self.error, "reason": self.reason,
                "detail": dict(self.detail)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepResult:
        return cls(name=str(_req(d, "name", "steps[].")), status=_req(d, "status", "steps[]."),
                   duration_s=float(d.get("duration_s") or 0.0),
                   needs=tuple(d.get("needs") or ()), error=d.get("error"),
                   reason=d.get("reason"), detail=dict(d.get("detail") or {}))


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """One named check of the application's output and what it saw."""

    name: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
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

    @property
    def passed(self) -> bool:
        return self.actual == self.expected

    @property
    def name(self) -> str:
        return f"fingerprint {self.path}"

    @property
    def detail(self) -> str:
        if self.actual is None:
            return f"{self.path}: missing (expected sha256 {self.expected})"
        if self.passed:
            return f"{self.path}: sha256 {self.actual}"
        return (f"{self.path}: sha256 {self.actual}, expected {self.expected}: restore the "
                "file, or regenerate the reference and record the new fingerprint")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail,
                "path": self.path, "expected": self.expected, "sha256": self.actual}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fingerprint:
        return cls(path=str(d["path"]), expected=str(d["expected"]), actual=d.get("sha256"))

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
    """The project's own check (today: the embedding comparison), in its fixed order."""

    kind: str
    checks: tuple[CheckResult, ...]
    worst_id: str | None = None
    max_abs_diff: float | None = None
    min_cosine: float | None = None

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def first_error(self) -> str | None:
        failed = next((c for c in self.checks if not c.passed), None)
        return f"{failed.name}: {failed.detail}" if failed else None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "passed": self.passed, "first_error": self.first_error,
                "worst_id": self.worst_id, "max_abs_diff": self.max_abs_diff,
                "min_cosine": self.min_cosine, "checks": [c.to_dict() for c in self.checks]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ApplicationResult:
        return cls(kind=str(d.get("kind", "embedding")),
                   checks=tuple(CheckResult.from_dict(c) for c in d.get("checks") or ()),
                   worst_id=d.get("worst_id"), max_abs_diff=d.get("max_abs_diff"),
                   min_cosine=d.get("min_cosine"))


@dataclass(frozen=True, kw_only=True)
class Inventory:
    expected: int
    installed: int
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    mismatched: tuple[str, ...] = ()
    seed: tuple[str, ...] = ()

    @property
    def problems(self) -> list[str]:
        return (([f"missing {', '.join(self.missing)}"] if self.missing else [])
                + ([f"not in the lock {', '.join(self.extra)}"] if self.extra else [])
                + list(self.mismatched))

    def to_dict(self) -> dict[str, Any]:
        return {"expected": self.expected, "installed": self.installed,
                "missing": list(self.missing), "extra": list(self.extra),
                "mismatched": list(self.mismatched), "seed": list(self.seed)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Inventory:
        return cls(expected=int(d.get("expected") or 0), installed=int(d.get("installed") or 0),
                   **{k: tuple(d.get(k) or ()) for k in ("missing", "extra", "mismatched",
                                                         "seed")})


@dataclass(frozen=True, kw_only=True)
class PackageRow:
    """An installed distribution with the index and sha256 the lock gives its version."""

    name: str
    version: str
    index: str | None = None
    sha256: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason, "changes": list(self.changes)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Variant | None:
        if not d:
            return None
        return cls(name=str(d.get("name")), reason=str(d.get("reason")),
                   changes=tuple(d.get("changes") or ()))


@dataclass(frozen=True, kw_only=True)
class TorchFacts:
    """What ``import torch`` said inside the target interpreter."""

    version: str | None = None
    cuda: str | None = None
    hip: str | None = None
    build: str | None = None
    cudnn: Any = None
    miopen: Any = None
    device_count: int | None = None
    devices: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None

    @classmethod
    def from_probe(cls, d: Any) -> TorchFacts:
        if not isinstance(d, Mapping):
            return cls(error="no torch facts")
        return cls(**{f.name: d.get(f.name) for f in fields(cls) if f.name != "devices"},
                   devices=tuple(x for x in d.get("devices") or () if isinstance(x, Mapping)))


@dataclass(frozen=True, kw_only=True)
class SystemFacts:
    """The system probe's report (``lockkit/probes/system_probe.py`` owns its shape)."""

    raw: Mapping[str, Any]

    @property
    def torch(self) -> TorchFacts:
        return TorchFacts.from_probe(self.raw.get("torch"))

    def section(self, key: str) -> Mapping[str, Any]:
        value = self.raw.get(key)
        return value if isinstance(value, Mapping) else {}


def _opt(cls: Any, value: Any) -> Any:
    return cls.from_dict(value) if isinstance(value, Mapping) else None


@dataclass(frozen=True, kw_only=True)
class Dossier:
    """One run of ``verify`` (kind ``verify``) or ``diagnose`` (kind ``diagnose``)."""

    kind: str
    lockkit_version: str
    started: str
    result: str  # one of RESULTS
    steps: tuple[StepResult, ...]
    schema_version: int = SCHEMA_VERSION
    first_error: str | None = None
    command_line: tuple[str, ...] = ()
    platform: str | None = None
    python: str | None = None  # diagnose: the interpreter probed
    lock: str | None = None
    lock_sha256: str | None = None
    interpreter: str | None = None
    installer: str | None = None
    isolation: str | None = None
    wheelhouse: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    variant: Variant | None = None
    packages: tuple[PackageRow, ...] | None = None
    commands: tuple[CommandRecord, ...] = ()
    inventory: Inventory | None = None
    system: SystemFacts | None = None
    gpu: Mapping[str, Any] | None = None  # gpu_probe.py's report
    application: ApplicationResult | None = None
    code: GitState | None = None
    fingerprints: tuple[Fingerprint, ...] | None = None
    embedding_config: Mapping[str, Any] | None = None
    environment_passed_to_probes: tuple[str, ...] = ()

    def step(self, name: str) -> StepResult | None:
        return next((s for s in self.steps if s.name == name), None)

    @property
    def subject(self) -> str:
        return self.platform or self.python or ""

    @property
    def why_incomplete(self) -> str:
        skipped = [f"{s.name} ({s.reason})" for s in self.steps if s.status == "skipped"]
        return "not every step ran: " + "; ".join(skipped)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: schema 1's keys, in its order, plus schema 2's additions."""
        doc: dict[str, Any] = {
            "schema_version": self.schema_version, "kind": self.kind,
            "lockkit_version": self.lockkit_version, "started": self.started,
            "command_line": list(self.command_line)}
        if self.kind == "verify":
            doc.update(platform=self.platform, lock=self.lock, lock_sha256=self.lock_sha256,
                       interpreter=self.interpreter, installer=self.installer,
                       isolation=self.isolation, wheelhouse=self.wheelhouse,
                       options=dict(self.options),
                       variant=self.variant.to_dict() if self.variant else None)
        else:
            doc["python"] = self.python
        doc.update(result=self.result, first_error=self.first_error)
        if self.kind == "verify":
            doc["packages"] = ([p.to_dict() for p in self.packages]
                               if self.packages is not None else None)
        doc.update(steps=[s.to_dict() for s in self.steps],
                   commands=[c.to_dict() for c in self.commands])
        if self.kind == "verify":
            doc["inventory"] = self.inventory.to_dict() if self.inventory else None
        doc["system"] = dict(self.system.raw) if self.system else None
        checks: dict[str, Any] = {"gpu": dict(self.gpu) if self.gpu is not None else None}
        if self.kind == "verify":
            checks["application"] = self.application.to_dict() if self.application else None
        doc["checks"] = checks
        if self.kind == "verify":
            doc["fingerprints"] = {
                "code": (self.code or GitState(git=False)).to_dict(),
                "files": ([f.to_dict() for f in self.fingerprints]
                          if self.fingerprints is not None else None)}
            doc["embedding_config"] = (dict(self.embedding_config)
                                       if self.embedding_config is not None else None)
            doc["environment_passed_to_probes"] = list(self.environment_passed_to_probes)
        return doc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Dossier:
        """Load a dossier written by this or an earlier lockkit (schema 1 is upgraded)."""
        if not isinstance(d, Mapping):
            raise SchemaError("expected a JSON object")
        version = d.get("schema_version", 1)  # documents from before the field: schema 1
        if not isinstance(version, int) or isinstance(version, bool):
            raise SchemaError(f"schema_version: expected a number, got {version!r}")
        if version > SCHEMA_VERSION:
            raise SchemaError(f"schema_version {version} is newer than this lockkit reads "
                              f"({SCHEMA_VERSION}): upgrade lockkit")
        if version < 1:
            raise SchemaError(f"schema_version {version}: no such dossier schema")
        kind = _req(d, "kind", "")
        if kind not in ("verify", "diagnose"):
            raise SchemaError(f"kind: {kind!r} is not verify or diagnose")
        result = d.get("result", "incomplete")  # a run that never reached its verdict
        if result not in RESULTS:
            raise SchemaError(f"result: {result!r} is not one of {', '.join(RESULTS)}")
        steps = _req(d, "steps", "")
        if not isinstance(steps, Sequence) or isinstance(steps, (str, bytes)):
            raise SchemaError("steps: expected a list")
        checks = d.get("checks") or {}
        prints = d.get("fingerprints") or {}
        files = prints.get("files")
        upgrade = Fingerprint.from_schema1 if version == 1 else Fingerprint.from_dict
        try:
            return cls(
                schema_version=SCHEMA_VERSION, kind=kind,
                lockkit_version=str(d.get("lockkit_version", "")),
                started=str(d.get("started", "")), result=result,
                steps=tuple(StepResult.from_dict(s) for s in steps),
                first_error=d.get("first_error"),
                command_line=tuple(d.get("command_line") or ()),
                platform=d.get("platform"), python=d.get("python"), lock=d.get("lock"),
                lock_sha256=d.get("lock_sha256"), interpreter=d.get("interpreter"),
                installer=d.get("installer"), isolation=d.get("isolation"),
                wheelhouse=d.get("wheelhouse"), options=dict(d.get("options") or {}),
                variant=Variant.from_dict(d.get("variant")),
                packages=(tuple(PackageRow.from_dict(p) for p in d["packages"])
                          if d.get("packages") is not None else None),
                commands=tuple(CommandRecord.from_dict(c) for c in d.get("commands") or ()),
                inventory=_opt(Inventory, d.get("inventory")),
                system=SystemFacts(raw=d["system"]) if isinstance(d.get("system"),
                                                                  Mapping) else None,
                gpu=checks.get("gpu") if isinstance(checks.get("gpu"), Mapping) else None,
                application=_opt(ApplicationResult, checks.get("application")),
                code=GitState.from_dict(prints.get("code")) if kind == "verify" else None,
                fingerprints=(tuple(upgrade(f) for f in files)
                              if isinstance(files, list) else None),
                embedding_config=d.get("embedding_config"),
                environment_passed_to_probes=tuple(d.get("environment_passed_to_probes") or ()))
        except SchemaError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise SchemaError(f"malformed ({type(exc).__name__}: {exc})") from None
