"""What the steps of one run found, one typed field per kind of finding.

Each step sets its own fields as it learns them, before it judges them: a step that
fails still leaves what it found for the dossier (the system chain of a torch that does
not import, the fingerprints of a file that differs). The holder is mutable so the
steps can fill it in order; every value put in it is frozen (a frozen dataclass, a
tuple, or a mapping no step changes after setting it). ``verify`` builds its dossier
from every field (:func:`lockkit.verify.run.make_dossier`), ``diagnose`` from the system
and GPU ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockkit.probes.probe import ProbeResult
from lockkit.report.checks.interface import CheckRecord
from lockkit.report.facts import SystemFacts
from lockkit.report.records import (
    Fingerprint,
    GitState,
    Inventory,
    PackageRow,
)
from lockkit.report.shapes import HangDoc

__all__ = ["Findings"]


@dataclass(kw_only=True)
class Findings:
    """One run's findings, each None until the step that finds it has run."""

    # things the run noticed that do not change its result (a stale lock)
    warnings: tuple[str, ...] = ()
    taken: tuple[str, ...] = ()  # verify --existing: what its verdict took on its word
    # host: the project's revision and whether its files differ from it
    code: GitState | None = None
    # host: the interpreter the venv is made from (version, full, implementation,
    # platform, executable), as it reported itself
    python: Mapping[str, Any] | None = None
    # inventory: the installed distributions, with the lock's index and hashes
    packages: tuple[PackageRow, ...] | None = None
    inventory: Inventory | None = None
    # system: the chain as the interpreter sees it (kept when the step fails)
    system: SystemFacts | None = None
    # system -> gpu: the GPU probe's report from the system step's process (one torch
    # import for both), waiting for the gpu step to judge it
    gpu_result: ProbeResult | None = None
    # gpu: gpu_probe.py's report, with the host's driver check added to its checks
    gpu: Mapping[str, Any] | None = None
    # application: the declared files' fingerprints and the table read
    fingerprints: tuple[Fingerprint, ...] | None = None
    application_config: Mapping[str, Any] | None = None
    embedding_config: Mapping[str, Any] | None = None
    # each check's record, by its key: its step leaves one of the type its report
    # declaration names (lockkit.verify.checks.CHECKS, lockkit.report.checks)
    checks: dict[str, CheckRecord] = field(default_factory=dict)
    # the first command of the run that passed its timeout: its step and where it
    # stalled (lockkit.probes.hang)
    hang: HangDoc | None = None
