"""``dossier.intoto.json``: a verify dossier as an in-toto Statement v1, checked against a
JSON Schema written from the in-toto attestation spec (tests/support/)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from lockkit._internal.redact import NO_SECRETS, Secrets
from lockkit.report import intoto, write_folder
from lockkit.report import json as json_format
from lockkit.report.model import Dossier

SCHEMA = json.loads((Path(__file__).parents[1] / "support"
                     / "intoto_statement_v1.schema.json").read_text())
LOCK_TEXT = b'lock-version = "1.0"\n'
LOCK_SHA = hashlib.sha256(LOCK_TEXT).hexdigest()


def _dossier(project: Path, **extra: object) -> Dossier:
    return Dossier.from_dict({
        "schema_version": 2, "kind": "verify", "lockkit_version": "0", "started": "x",
        "command_line": ["lockkit", "verify"], "platform": "linux-cpu", "result": "passed",
        "lock": str(project / "locks" / "pylock.linux-cpu.toml"), "lock_sha256": LOCK_SHA,
        "roots": {"project": str(project)},
        "steps": [{"name": "host", "status": "passed", "duration_s": 0.1}], **extra})


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def test_the_report_folder_holds_a_statement_that_validates_against_in_toto_v1(tmp_path):
    project = tmp_path / "proj"
    write_folder(tmp_path / "r", _dossier(project), {}, NO_SECRETS)
    statement = json.loads((tmp_path / "r" / "dossier.intoto.json").read_text())
    _validator().validate(statement)
    # the subject is the verified lock, named by its place in the project, not the machine
    assert statement["subject"] == [{"name": "locks/pylock.linux-cpu.toml",
                                      "digest": {"sha256": LOCK_SHA}}]
    assert statement["predicateType"] == intoto.PREDICATE_TYPE
    # the predicate is dossier.json's document, as written
    assert statement["predicate"] == json.loads((tmp_path / "r" / "dossier.json").read_text())
    # no machine path outside the roots list
    outside = {k: v for k, v in statement["predicate"].items() if k != "roots"}
    assert str(tmp_path) not in json.dumps({**statement, "predicate": outside})


@pytest.mark.parametrize("broken", [
    {"_type": "https://in-toto.io/Statement/v0.1"},
    {"subject": []},
    {"subject": [{"name": "locks/x.toml", "digest": {"sha256": "ABC"}}]},
    {"subject": [{"name": "locks/x.toml"}]},
    {"predicateType": "not a uri"},
])
def test_the_schema_refuses_what_the_spec_refuses(tmp_path, broken):
    """The schema can fail: each of the spec's rules, broken once, is refused."""
    dossier = _dossier(tmp_path)
    statement = intoto.statement(dossier, json_format.document(dossier, NO_SECRETS))
    assert statement is not None
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate({**statement, **broken})


def test_no_statement_without_a_lock_digest(tmp_path):
    """diagnose (or a verify that never read its lock) attests nothing: no subject."""
    plain = _dossier(tmp_path, lock_sha256=None)
    write_folder(tmp_path / "r", plain, {}, NO_SECRETS)
    assert not (tmp_path / "r" / "dossier.intoto.json").exists()
    assert (tmp_path / "r" / "dossier.json").is_file()


def test_a_secret_in_the_dossier_stays_out_of_the_statement(tmp_path):
    d = _dossier(tmp_path, command_line=["lockkit", "--index-url",
                                         "https://user:s3cret@127.0.0.1/simple?k=t0k3n-v4lue"])
    write_folder(tmp_path / "r", d, {}, Secrets.of({"${LK_KEY}": "t0k3n-v4lue"}))
    text = (tmp_path / "r" / "dossier.intoto.json").read_text()
    assert "s3cret" not in text and "***@127.0.0.1" in text
    assert "t0k3n-v4lue" not in text and "k=${LK_KEY}" in text
