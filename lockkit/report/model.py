"""The dossier: what one verify or diagnose run found, as frozen, versioned data.

verify and diagnose *return* a :class:`Dossier` and write nothing; the renderers in this
package (``json``, ``markdown``, ``junit``, ``terminal``) turn it into files and tables,
and ``lockkit diff`` loads it back with :meth:`Dossier.from_dict` and compares fields.
Facts the probes report (the system chain, the GPU checks) stay the probe's own JSON
objects, reached through typed accessors: the probes run inside the target interpreter
and their shape is theirs.

Schema 2 adds structured fingerprints (path, expected and actual sha256) and the
command records' ``timed_out``; a schema-1 dossier is upgraded on load, a newer one is
refused with one line. Later additions to schema 2 are optional keys a reader of an
earlier schema-2 document finds absent: ``warnings`` (things the run noticed that do not
change its result, such as a stale lock), a step's ``waived`` and a fingerprint's
``uncommitted`` flag, the ``command`` kind of the application check, ``roots``: the
folders the document's paths are written relative to (:mod:`~lockkit.report.roots`;
absent in the absolute form, ``--absolute-paths``), and, from ``verify --existing``,
``environment``, the result ``passed-existing``, the inventory's ``altered`` files, and
``taken_on_its_word``: what such a run's verdict did not check itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lockkit.report import shapes
from lockkit.report.checks import registry
from lockkit.report.checks.interface import CheckRecord
from lockkit.report.facts import SystemFacts
from lockkit.report.records import (
    CommandRecord,
    Fingerprint,
    GitState,
    Inventory,
    PackageRow,
    SchemaError,
    StepResult,
    Variant,
    required,
)
from lockkit.report.roots import relative
from lockkit.report.shapes import RESULTS, Json, Result

__all__ = ["SCHEMA_VERSION", "Dossier"]

SCHEMA_VERSION = 2


def _opt(cls: Any, value: Any) -> Any:
    return cls.from_dict(value) if isinstance(value, Mapping) else None


def _roots(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise SchemaError(f"roots: expected an object of name -> absolute path, got {value!r}")
    return dict(value)


@dataclass(frozen=True, kw_only=True)
class Dossier:
    """One run of ``verify`` (kind ``verify``) or ``diagnose`` (kind ``diagnose``)."""

    kind: Literal["verify", "diagnose"]
    lockkit_version: str
    started: str
    result: Result
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
    options: Mapping[str, Json] = field(default_factory=dict)
    variant: Variant | None = None
    packages: tuple[PackageRow, ...] | None = None
    commands: tuple[CommandRecord, ...] = ()
    inventory: Inventory | None = None
    system: SystemFacts | None = None
    gpu: Mapping[str, Any] | None = None  # gpu_probe.py's report
    # each check's record (lockkit.report.checks.registry), by its key; absent: none left
    checks: Mapping[str, CheckRecord] = field(default_factory=dict)
    code: GitState | None = None
    fingerprints: tuple[Fingerprint, ...] | None = None
    embedding_config: Mapping[str, Any] | None = None
    application_config: Mapping[str, Any] | None = None  # [verify.application] as read
    environment_passed_to_probes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # noticed, not judged: e.g. the lock is stale
    # where a command that passed its timeout stalled (lockkit.probes.hang): step, phase, frame,
    # detail and the stacks every process of its group printed
    hang: shapes.HangDoc | None = None
    # name -> absolute folder (roots.ROOT_NAMES: project, venv, ..., lockkit, tools, python):
    # the JSON document and dossier.md write the paths under them as <name>/...
    # (lockkit.report.roots); {}: as they are
    roots: Mapping[str, str] = field(default_factory=dict)
    # verify --existing: "existing environment (not rebuilt)"; None for a rebuild
    environment: str | None = None
    # verify --existing: what its verdict took on someone's word (see verify.existing)
    taken_on_its_word: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Every step passed (or was waived): a rebuild's ``passed``, or an existing
        environment's ``passed-existing``."""
        return self.result in ("passed", "passed-existing")

    def step(self, name: str) -> StepResult | None:
        return next((s for s in self.steps if s.name == name), None)

    @property
    def subject(self) -> str:
        return self.platform or self.python or ""

    @property
    def why_incomplete(self) -> str:
        skipped = [f"{s.name} ({s.reason})" for s in self.steps
                   if s.status == "skipped" and not s.waived]
        return "not every step ran: " + "; ".join(skipped)

    @property
    def waivers(self) -> list[StepResult]:
        """The steps the project's config waived, each with its reason."""
        return [s for s in self.steps if s.waived]

    def to_dict(self) -> shapes.DossierDoc:
        """The JSON document: schema 1's keys, in its order, plus schema 2's additions; its
        paths relative to the roots, listed after ``kind``, when there are roots."""
        doc: shapes.DossierDoc = relative(self._document(), self.roots)
        if not self.roots:
            return doc
        head: shapes.DossierDoc = {"schema_version": doc.pop("schema_version"),
                                   "kind": doc.pop("kind"), "roots": dict(self.roots)}
        return {**head, **doc}

    def _document(self) -> shapes.DossierDoc:
        doc: shapes.DossierDoc = {
            "schema_version": self.schema_version, "kind": self.kind,
            "lockkit_version": self.lockkit_version, "started": self.started,
            "command_line": list(self.command_line)}
        if self.kind == "verify":
            doc.update({"platform": self.platform, "lock": self.lock,
                        "lock_sha256": self.lock_sha256, "interpreter": self.interpreter,
                        "installer": self.installer, "isolation": self.isolation,
                        "wheelhouse": self.wheelhouse, "options": dict(self.options),
                        "variant": self.variant.to_dict() if self.variant else None})
        else:
            doc["python"] = self.python
        if self.environment is not None:  # only then: a rebuild's document is unchanged
            doc["environment"] = self.environment
            doc["taken_on_its_word"] = list(self.taken_on_its_word)
        doc.update({"result": self.result, "first_error": self.first_error,
                    "warnings": list(self.warnings)})
        if self.hang is not None:  # only then: documents of runs that did not hang unchanged
            doc["hang"] = shapes.HangDoc(**self.hang)
        if self.kind == "verify":
            doc["packages"] = ([p.to_dict() for p in self.packages]
                               if self.packages is not None else None)
        doc.update({"steps": [s.to_dict() for s in self.steps],
                    "commands": [c.to_dict() for c in self.commands]})
        if self.kind == "verify":
            doc["inventory"] = self.inventory.to_dict() if self.inventory else None
        doc["system"] = dict(self.system.raw) if self.system else None
        checks: shapes.ChecksDoc = {"gpu": dict(self.gpu) if self.gpu is not None else None}
        if self.kind == "verify":
            for check in registry.RECORDS:
                found = check.of(self.checks)
                checks[check.key] = found.to_dict() if found is not None else None
        doc["checks"] = checks
        if self.kind == "verify":
            self._verify_tail(doc)
        return doc

    def _verify_tail(self, doc: shapes.DossierDoc) -> None:
        """A verify document's last keys: the fingerprints, the tables as declared, the
        variables the probes were given."""
        doc["fingerprints"] = {
            "code": (self.code or GitState(git=False)).to_dict(),
            "files": ([f.to_dict() for f in self.fingerprints]
                      if self.fingerprints is not None else None)}
        doc["embedding_config"] = (dict(self.embedding_config)
                                   if self.embedding_config is not None else None)
        if self.application_config is not None:
            doc["application_config"] = dict(self.application_config)
        doc["environment_passed_to_probes"] = list(self.environment_passed_to_probes)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Dossier:
        """Load a dossier written by this or an earlier lockkit (schema 1 is upgraded)."""
        if not isinstance(d, Mapping):
            raise SchemaError("expected a JSON object")
        version = _schema_version(d)
        kind = required(d, "kind", "")
        if kind not in ("verify", "diagnose"):
            raise SchemaError(f"kind: {kind!r} is not verify or diagnose")
        result = d.get("result", "incomplete")  # a run that never reached its verdict
        if result not in RESULTS:
            raise SchemaError(f"result: {result!r} is not one of {', '.join(RESULTS)}")
        steps = required(d, "steps", "")
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
                checks={c.key: found for c in registry.RECORDS
                        if (found := c.read(checks.get(c.key))) is not None},
                code=GitState.from_dict(prints.get("code")) if kind == "verify" else None,
                fingerprints=(tuple(upgrade(f) for f in files)
                              if isinstance(files, list) else None),
                embedding_config=d.get("embedding_config"),
                application_config=d.get("application_config"),
                environment_passed_to_probes=tuple(d.get("environment_passed_to_probes") or ()),
                warnings=tuple(map(str, d.get("warnings") or ())), roots=_roots(d.get("roots")),
                environment=d.get("environment"),
                taken_on_its_word=tuple(map(str, d.get("taken_on_its_word") or ())),
                hang=d["hang"] if isinstance(d.get("hang"), Mapping) else None)
        except SchemaError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise SchemaError(f"malformed ({type(exc).__name__}: {exc})") from None


def _schema_version(d: Mapping[str, Any]) -> int:
    version = d.get("schema_version", 1)  # documents from before the field: schema 1
    if not isinstance(version, int) or isinstance(version, bool):
        raise SchemaError(f"schema_version: expected a number, got {version!r}")
    if version > SCHEMA_VERSION:
        raise SchemaError(f"schema_version {version} is newer than this lockkit reads "
                          f"({SCHEMA_VERSION}): upgrade lockkit")
    if version < 1:
        raise SchemaError(f"schema_version {version}: no such dossier schema")
    return version
