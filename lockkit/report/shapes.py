"""The dossier's JSON shapes: what each part's ``to_dict`` writes, as TypedDicts, and the
values its statuses and kinds take.

The lowest module of ``report/``: :mod:`~lockkit.report.records`,
:mod:`~lockkit.report.extrecords` and :mod:`~lockkit.report.model` build these documents,
the renderers and ``diff`` read them. A key that a document holds only when it is set (a
waiver, an uncommitted file) is in the ``total=False`` class beside the shape, so a
document of a run without it keeps the bytes it had. What a probe printed, or a table as
the project declared it, stays the foreign JSON it was (:data:`Foreign`).
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, TypedDict, get_args

__all__ = ["ApplicationDoc", "ApplicationKind", "CheckDoc", "ChecksDoc", "CommandDoc",
           "DossierDoc", "ExtensionCheckDoc", "ExtensionStatus", "ExtensionsDoc", "FingerprintDoc",
           "FingerprintsDoc", "Foreign", "GitDoc", "HangDoc", "HangPhase", "InventoryDoc", "Json",
           "NativePackageDoc", "PackageDoc", "RESULTS", "Result", "ResumeDoc", "STATUSES",
           "Status", "StepDoc", "VariantDoc"]

Status = Literal["passed", "failed", "skipped", "not-run"]  # a step's
STATUSES: tuple[Status, ...] = get_args(Status)
ExtensionStatus = Literal["passed", "failed", "not-run"]  # not-run: the probe ended first
# "passed-existing": every step of a ``verify --existing`` passed; an environment checked
# as it was, never to be read as a rebuild's "passed"
Result = Literal["passed", "failed", "incomplete", "passed-existing"]  # a run's
RESULTS: tuple[Result, ...] = get_args(Result)
# where a command that passed its timeout stalled (lockkit.probes.hang)
HangPhase = Literal["data loading", "host-device transfer", "torch operation",
                    "the project's code", "unknown"]
# embedding: [verify.embedding]; command: [verify.application]'s command and its files
ApplicationKind = Literal["embedding", "command"]

# A value lockkit puts into a document from its own facts (a diff's cell, a run's options).
Json: TypeAlias = str | int | float | bool | None | list["Json"] | dict[str, "Json"]
# Foreign JSON: a probe's report or a table as the project wrote it, passed on as it came.
Foreign = dict[str, Any]


class CommandDoc(TypedDict):
    step: str
    argv: list[str]
    cwd: str | None
    returncode: int | None
    timed_out: bool
    duration_s: float


class _StepDoc(TypedDict):
    name: str
    status: Status
    duration_s: float
    needs: list[str]
    error: str | None
    reason: str | None
    detail: dict[str, object]  # the step's facts, JSON values


class StepDoc(_StepDoc, total=False):
    waived: bool  # only when true


class CheckDoc(TypedDict):
    name: str
    passed: bool
    detail: str


class _FingerprintDoc(CheckDoc):
    path: str
    expected: str
    sha256: str | None


class FingerprintDoc(_FingerprintDoc, total=False):
    uncommitted: bool  # only when true


class _ApplicationDoc(TypedDict):
    kind: ApplicationKind
    passed: bool
    first_error: str | None
    worst_id: str | None
    max_abs_diff: float | None
    min_cosine: float | None
    checks: list[CheckDoc]


class ApplicationDoc(_ApplicationDoc, total=False):
    command: list[str]  # these two for kind "command" only
    returncode: int | None


class ResumeDoc(TypedDict):
    passed: bool
    first_error: str | None
    steps: int
    resume_steps: int
    diverging_step: int | None
    max_loss_diff: float | None
    atol: float
    rtol: float
    reason: str | None
    command: list[str]


class _InventoryDoc(TypedDict):
    expected: int
    installed: int
    missing: list[str]
    extra: list[str]
    mismatched: list[str]
    seed: list[str]


class InventoryDoc(_InventoryDoc, total=False):
    # verify --existing's findings: each only when it found something
    altered: list[str]
    unowned_code: list[str]
    unowned: list[str]
    record_from_wheel: list[str]
    record_on_its_word: list[str]
    import_paths: list[str]
    shadowed: list[str]
    tooling: list[str]
    allowed_extra: list[str]
    import_variables: dict[str, str]


class PackageDoc(TypedDict):
    name: str
    version: str
    index: str | None
    sha256: list[str]


class _GitDoc(TypedDict):
    git: bool


class GitDoc(_GitDoc, total=False):
    revision: str | None  # these two in a git checkout only
    dirty: bool | None


class VariantDoc(TypedDict):
    name: str
    reason: str
    changes: list[str]


class ExtensionCheckDoc(TypedDict):
    module: str
    status: ExtensionStatus
    device: str | None
    stage: str | None
    error: str | None
    file: str | None
    compiled: bool | None
    value: str | None
    seconds: float | None


class NativePackageDoc(TypedDict):
    name: str
    version: str
    wheel: str
    tags: str
    libraries: int
    examples: list[str]


class ExtensionsDoc(TypedDict):
    passed: bool
    first_error: str | None
    device: str | None
    config: Foreign | None
    checks: list[ExtensionCheckDoc]
    native_packages: list[NativePackageDoc]
    hang: HangDoc | None


class _HangDoc(TypedDict):
    phase: HangPhase
    frame: str | None
    detail: str
    stacks: str


class HangDoc(_HangDoc, total=False):
    """Where a timed-out command stalled (:class:`lockkit.probes.hang.HangReport`)."""

    step: str  # the dossier's, first: the step whose command stalled


# "gpu": gpu_probe.py's report; then, in a verify's document, each check's record under its
# key, in the order of lockkit.report.checks.registry.RECORDS (each Recorded names its shape)
ChecksDoc: TypeAlias = dict[str, Any]


class FingerprintsDoc(TypedDict):
    code: GitDoc
    files: list[FingerprintDoc] | None


class DossierDoc(TypedDict, total=False):
    """``dossier.json``: a verify's keys, or a diagnose's (``python`` for the verify's
    lock and platform keys); the keys marked "only" appear only when set."""

    schema_version: int
    kind: Literal["verify", "diagnose"]
    roots: dict[str, str]  # only with roots
    lockkit_version: str
    started: str
    command_line: list[str]
    platform: str | None
    lock: str | None
    lock_sha256: str | None
    interpreter: str | None
    installer: str | None
    isolation: str | None
    wheelhouse: str | None
    options: dict[str, Json]
    variant: VariantDoc | None
    python: str | None
    environment: str | None  # only for verify --existing
    taken_on_its_word: list[str]  # only for verify --existing
    result: Result
    first_error: str | None
    warnings: list[str]
    hang: HangDoc  # only when a command stalled
    packages: list[PackageDoc] | None
    steps: list[StepDoc]
    commands: list[CommandDoc]
    inventory: InventoryDoc | None
    system: Foreign | None  # system_probe.py's report
    checks: ChecksDoc
    fingerprints: FingerprintsDoc
    embedding_config: Foreign | None  # the tables as the project wrote them
    application_config: Foreign | None  # only with [verify.application]
    environment_passed_to_probes: list[str]
