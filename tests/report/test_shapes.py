"""The TypedDicts of :mod:`lockkit.report.shapes` name the keys each part's ``to_dict``
writes: every key a document holds is declared, every required one is there, and a key
declared optional appears only when it is set (the documents' bytes stay as they were)."""

from __future__ import annotations

from typing import Any

import pytest

from lockkit.report import shapes
from lockkit.report.checks.registry import RECORDS as CHECK_RECORDS
from lockkit.report.extrecords import ExtensionCheck, ExtensionsResult, NativePackage
from lockkit.report.model import Dossier
from lockkit.report.records import (
    ApplicationResult,
    CheckResult,
    CommandRecord,
    Fingerprint,
    GitState,
    Inventory,
    PackageRow,
    ResumeResult,
    SchemaError,
    StepResult,
    Variant,
)

SHA = "a" * 64


def _keys(shape: Any) -> tuple[frozenset[str], frozenset[str]]:
    return shape.__required_keys__, shape.__required_keys__ | shape.__optional_keys__


def assert_shape(doc: Any, shape: Any) -> None:
    required, declared = _keys(shape)
    assert set(doc) <= declared, f"{shape.__name__}: undeclared {set(doc) - declared}"
    assert required <= set(doc), f"{shape.__name__}: missing {required - set(doc)}"


CHECK = CheckResult(name="count", passed=True, detail="3 sample identifiers")
HANG = {"phase": "unknown", "frame": None, "detail": "no torch frame", "stacks": ""}
RECORDS = [
    (CommandRecord(step="host", argv=("git",), returncode=0, duration_s=0.5), shapes.CommandDoc),
    (StepResult(name="host", status="passed", detail={"os": "linux"}), shapes.StepDoc),
    (CHECK, shapes.CheckDoc),
    (Fingerprint(path="m.npz", expected=SHA, actual=None), shapes.FingerprintDoc),
    (ApplicationResult(kind="embedding", checks=(CHECK,)), shapes.ApplicationDoc),
    (ResumeResult(steps=2, resume_steps=2, passed=True), shapes.ResumeDoc),
    (Inventory(expected=1, installed=1), shapes.InventoryDoc),
    (PackageRow(name="numpy", version="2.0", sha256=(SHA,)), shapes.PackageDoc),
    (GitState(git=False), shapes.GitDoc),
    (Variant(name="fp16", reason="speed", changes=("system",)), shapes.VariantDoc),
    (ExtensionCheck(module="ext", status="not-run"), shapes.ExtensionCheckDoc),
    (NativePackage(name="torch", version="2", wheel="t.whl", tags="cp311", libraries=3),
     shapes.NativePackageDoc),
    (ExtensionsResult(), shapes.ExtensionsDoc),
]


@pytest.mark.parametrize(("record", "shape"), RECORDS,
                         ids=[type(r).__name__ for r, _ in RECORDS])
def test_a_bare_record_writes_its_required_keys_only(record, shape):
    doc = record.to_dict()
    assert_shape(doc, shape)
    assert set(doc) == shape.__required_keys__


FULL = [
    (StepResult(name="app", status="skipped", waived=True, reason="a library"), shapes.StepDoc),
    (Fingerprint(path="m.npz", expected=SHA, actual=None, uncommitted=True),
     shapes.FingerprintDoc),
    (ApplicationResult(kind="command", checks=(CHECK,), command=("{python}", "a.py"),
                       returncode=0), shapes.ApplicationDoc),
    (Inventory(expected=1, installed=1, import_variables={"PYTHONPATH": "***"},
               **{k: ("x",) for k in ("altered", "unowned_code", "unowned",
                                       "record_from_wheel", "record_on_its_word",
                                       "import_paths", "shadowed", "tooling",
                                       "allowed_extra")}), shapes.InventoryDoc),
    (GitState(git=True, revision="abc", dirty=False), shapes.GitDoc),
]


@pytest.mark.parametrize(("record", "shape"), FULL, ids=[type(r).__name__ for r, _ in FULL])
def test_a_record_with_everything_set_writes_every_declared_key(record, shape):
    doc = record.to_dict()
    assert_shape(doc, shape)
    assert set(doc) == _keys(shape)[1]


def _dossier(kind: str, **extra: Any) -> Dossier:
    return Dossier.from_dict({"kind": kind, "lockkit_version": "0", "started": "x",
                              "result": "passed", "steps": [], **extra})


def test_a_verify_dossier_with_everything_set_writes_every_declared_key():
    d = _dossier("verify", roots={"project": "/srv/p"}, environment="existing environment",
                 hang={"step": "application", **HANG}, application_config={"timeout": 1},
                 checks={"gpu": None, "extensions": {"hang": HANG}})
    doc = d.to_dict()
    assert set(doc) == _keys(shapes.DossierDoc)[1] - {"python"}
    assert list(doc["checks"]) == ["gpu", *(c.key for c in CHECK_RECORDS)]
    assert_shape(doc["checks"]["extensions"], next(c.shape for c in CHECK_RECORDS
                                                  if c.key == "extensions"))
    assert_shape(doc["fingerprints"], shapes.FingerprintsDoc)
    assert_shape(doc["hang"], shapes.HangDoc)
    assert doc["hang"]["step"] == "application"
    assert_shape(doc["checks"]["extensions"]["hang"], shapes.HangDoc)
    assert list(doc)[:3] == ["schema_version", "kind", "roots"]


def test_a_diagnose_dossier_writes_the_declared_keys_without_the_verify_ones():
    doc = _dossier("diagnose", python="/usr/bin/python3").to_dict()
    assert set(doc) <= _keys(shapes.DossierDoc)[1]
    assert "python" in doc and "platform" not in doc and set(doc["checks"]) == {"gpu"}


def test_an_application_kind_outside_the_literal_is_refused_when_read():
    with pytest.raises(SchemaError, match=r"checks\.application\.kind: 'shell' is not one of "
                                          r"embedding, command"):
        ApplicationResult.from_dict({"kind": "shell", "checks": []})
