"""The dossier model and its renderers: round trips, schema upgrades, one document for
``verify --json``, ``diagnose --json`` and dossier.json, and one system step for both."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import uv

from lockkit._internal.proc import isolated_env
from lockkit._internal.redact import NO_SECRETS
from lockkit.cli import main
from lockkit.report import json as json_format
from lockkit.report import junit, markdown, write_folder
from lockkit.report.checks.application import APPLICATION
from lockkit.report.model import SCHEMA_VERSION, Dossier
from lockkit.report.records import CommandRecord, Fingerprint, SchemaError, StepResult
from lockkit.verify.diagnose import diagnose
from tests.support.index_server import build_wheel

SHA_A, SHA_B = "a" * 64, "b" * 64


def _verify_dossier(**changes) -> Dossier:
    doc = {
        "schema_version": 2, "kind": "verify", "lockkit_version": "0", "started": "x",
        "command_line": ["lockkit", "verify"], "platform": "linux-cpu", "result": "failed",
        "first_error": "application: fingerprint model.npz: ...",
        "steps": [{"name": "host", "status": "passed", "duration_s": 0.1},
                  {"name": "application", "status": "failed", "error": "boom"}],
        "commands": [{"step": "host", "argv": ["git", "status"], "returncode": None,
                      "timed_out": True, "duration_s": 60.0}],
        "fingerprints": {"code": {"git": True, "revision": "abc", "dirty": False},
                         "files": [{"path": "model.npz", "expected": SHA_A, "sha256": SHA_B},
                                   {"path": "data.csv", "expected": SHA_A, "sha256": None}]},
        "checks": {"gpu": None, "application": {"kind": "embedding", "checks": [
            {"name": "files", "passed": True, "detail": "5 files read"}]}},
        "system": {"torch": {"version": "2.13.0+cpu", "cuda": None, "devices": []}},
    }
    doc.update(changes)
    return Dossier.from_dict(doc)


def test_round_trip_is_lossless():
    d = _verify_dossier()
    again = Dossier.from_dict(json.loads(json_format.render(d, NO_SECRETS)))
    assert again == d and again.to_dict() == d.to_dict()
    assert again.commands[0].timed_out and again.commands[0].returncode is None
    assert [f.passed for f in again.fingerprints] == [False, False]
    assert again.system.torch.version == "2.13.0+cpu"


def test_fingerprints_are_fields_not_prose():
    d = _verify_dossier()
    changed, missing = d.fingerprints
    assert (changed.path, changed.expected, changed.actual) == ("model.npz", SHA_A, SHA_B)
    assert missing.actual is None and "missing" in missing.detail
    doc = d.to_dict()["fingerprints"]["files"][0]
    assert doc["sha256"] == SHA_B and doc["expected"] == SHA_A and doc["passed"] is False


def test_schema_1_dossier_is_upgraded_on_load():
    """Schema 1 kept fingerprints only as sentences; they are read once, when loading."""
    old: dict[str, Any] = dict(_verify_dossier().to_dict())
    old["schema_version"] = 1
    old["fingerprints"]["files"] = [
        {"name": "fingerprint model.npz", "passed": False,
         "detail": f"model.npz: sha256 {SHA_B}, expected {SHA_A}: restore the file, or ..."},
        {"name": "fingerprint data.csv", "passed": False,
         "detail": f"data.csv: missing (expected sha256 {SHA_A})"},
        {"name": "fingerprint ok.py", "passed": True, "detail": f"ok.py: sha256 {SHA_A}"}]
    d = Dossier.from_dict(old)
    assert d.schema_version == SCHEMA_VERSION
    assert [(f.path, f.expected, f.actual) for f in d.fingerprints] == [
        ("model.npz", SHA_A, SHA_B), ("data.csv", SHA_A, None), ("ok.py", SHA_A, SHA_A)]


@pytest.mark.parametrize("change,words", [
    ({"schema_version": 99}, "schema_version 99 is newer than this lockkit reads"),
    ({"schema_version": "2"}, "schema_version: expected a number"),
    ({"kind": "audit"}, "kind: 'audit' is not verify or diagnose"),
    ({"result": "maybe"}, "result: 'maybe' is not one of passed, failed, incomplete"),
    ({"steps": [{"name": "host", "status": "weird"}]}, "status 'weird' is not one of"),
    ({"steps": "host"}, "steps: expected a list"),
])
def test_unreadable_dossiers_are_refused_with_one_line(change, words):
    doc = _verify_dossier().to_dict()
    doc.update(change)
    with pytest.raises(SchemaError) as err:
        Dossier.from_dict(doc)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_diff_refuses_a_newer_dossier_naming_the_file(tmp_path, capsys):
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    doc = _verify_dossier().to_dict()
    old.write_text(json.dumps(doc))
    new.write_text(json.dumps({**doc, "schema_version": 3}))
    assert main(["diff", str(old), str(new)]) == 2
    err = capsys.readouterr().err
    assert str(new) in err and "newer than this lockkit reads" in err


def test_diff_compares_fingerprint_fields(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json_format.render(_verify_dossier(), NO_SECRETS))
    other = _verify_dossier().to_dict()
    other["fingerprints"]["files"][0]["sha256"] = SHA_A
    b.write_text(json.dumps(other))
    assert main(["diff", str(a), str(b), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(d["layer"], d["key"], d["a"], d["b"]) for d in out["differences"]] == [
        ("data", "model.npz", SHA_B, SHA_A)]


def test_renderers_redact_credentials_and_write_whole_files(tmp_path):
    d = _verify_dossier(command_line=["lockkit", "--index-url",
                                      "https://user:s3cret@127.0.0.1/simple"])
    write_folder(tmp_path / "r", d, {"application.log": "token https://u:s3cret@127.0.0.1/x"},
                 NO_SECRETS)
    texts = {p.name: p.read_text() for p in (tmp_path / "r").iterdir()}
    assert set(texts) == {"dossier.json", "dossier.md", "application.log"}
    assert all("s3cret" not in t for t in texts.values())
    assert "**Result: failed**" in texts["dossier.md"]
    assert "✘ model.npz: sha256 " + SHA_B in markdown.render(d, NO_SECRETS)
    suite = ET.fromstring(junit.render(d, NO_SECRETS))[0]
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")


def test_step_status_is_checked_when_built():
    with pytest.raises(SchemaError):
        StepResult(name="x", status="green")  # type: ignore[arg-type]  # what is checked
    assert CommandRecord.from_dict({"step": "s", "argv": ["a"], "returncode": 0,
                                    "duration_s": 1}).timed_out is False


def test_fingerprint_detail_matches_the_embedding_check_wording():
    f = Fingerprint(path="w.npz", expected=SHA_A, actual=SHA_B)
    assert f.detail.startswith(f"w.npz: sha256 {SHA_B}, expected {SHA_A}: restore the file")


def test_issue_14_fields_round_trip_and_render():
    """A command-kind application check, a waived step, an uncommitted fingerprint and a
    warning: each survives JSON and shows in dossier.md; none changes SCHEMA_VERSION."""
    d = _verify_dossier(
        result="passed", first_error=None, warnings=["pylock.linux-cpu.toml is stale"],
        steps=[{"name": "host", "status": "passed"},
               {"name": "application", "status": "skipped", "waived": True,
                "reason": 'application = "none": a library'}],
        fingerprints={"code": {"git": True, "revision": "abc", "dirty": False},
                      "files": [{"path": "app.py", "expected": SHA_A, "sha256": None,
                                 "uncommitted": True}]},
        application_config={"command": ["{python}", "app.py"], "timeout": 60.0},
        checks={"gpu": None, "application": {
            "kind": "command", "command": ["{python}", "app.py"], "returncode": 0,
            "worst_id": "out/m.json $.loss", "max_abs_diff": 1e-7,
            "checks": [{"name": "command", "passed": True, "detail": "exited 0"}]}})
    doc = json.loads(json_format.render(d, NO_SECRETS))
    again = Dossier.from_dict(doc)
    assert again == d and again.to_dict() == doc and doc["schema_version"] == SCHEMA_VERSION
    assert doc["steps"][1]["waived"] is True and "waived" not in doc["steps"][0]
    app = APPLICATION.of(again.checks)
    assert app is not None and app.command == ("{python}", "app.py") and again.waivers[0].waived
    assert again.fingerprints[0].detail.startswith("app.py: not committed: git add it")
    assert again.result == "passed" and "application" not in again.why_incomplete
    md = markdown.render(again, NO_SECRETS)
    assert "> **Warning:** pylock.linux-cpu.toml is stale" in md
    assert '> **Waived:** application: application = "none": a library' in md
    assert "| 2 | application | skipped (waived) |" in md
    assert "- command: `{python} app.py` → exit 0" in md
    with pytest.raises(SchemaError, match="waived, but passed"):
        StepResult(name="x", status="passed", waived=True)
    embedding = _verify_dossier().to_dict()["checks"]["application"]
    assert "command" not in embedding and "returncode" not in embedding  # unchanged shape


# --- one system step for verify and diagnose ---------------------------------------------

def _venv_with(tmp_path: Path, module: str) -> Path:
    wheel = build_wheel(tmp_path / "wheels", "torch", "0.0.1", files={"torch/__init__.py": module})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    run = subprocess.run([uv.find_uv_bin(), "pip", "install", "--python", str(python),
                          "--no-index", "--no-cache", "--no-config", str(wheel)],
                         capture_output=True, text=True, env=isolated_env(), timeout=300)
    assert run.returncode == 0, run.stderr
    return python


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
def test_a_torch_without_a_version_fails_the_system_step(tmp_path):
    """The review found diagnose and verify disagreeing here; both now use chain.system_step."""
    python = _venv_with(tmp_path, "# imports fine, says nothing\n")
    d = diagnose(python, timeout=60)
    assert d.result == "failed" and d.step("system").status == "failed"
    assert d.first_error.startswith("system: torch: ")
    assert d.step("gpu").status == "not-run"
    assert [c.step for c in d.commands] == ["system"]


def test_diagnose_json_is_the_dossier_document(tmp_path, capsys):
    """`diagnose --json` prints what Dossier.to_dict gives: it loads back unchanged."""
    assert main(["diagnose", "--python", sys.executable, "--json",
                 "--probe-timeout", "60"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    d = Dossier.from_dict(doc)
    assert d.kind == "diagnose" and d.schema_version == SCHEMA_VERSION
    assert d.to_dict() == doc
    assert [s.name for s in d.steps] == ["system", "gpu"]


# --- system and GPU probes in one process ------------------------------------------------

_GPU_WORK_FAILS = '''
import os, sys, time, types
__version__ = "2.5.1+cpu"
version = types.SimpleNamespace(cuda=None, hip=None, git_version="mini")


class cuda:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def device_count():
        return 0


class Generator:  # first touched by the GPU probe's matrix product
    def __init__(self):
        if os.environ.get("LANG") == "hang.UTF-8":
            time.sleep(3600)
        os.abort()
'''


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout and signals")
@pytest.mark.parametrize("lang,error", [("C.UTF-8", "killed by SIGABRT"),
                                        ("hang.UTF-8", "timed out after 5s")])
@pytest.mark.slow
def test_a_gpu_check_that_dies_keeps_the_system_facts(tmp_path, monkeypatch, lang, error):
    """`system_probe.py --then-gpu` imports torch once; the system report is flushed before
    the GPU work, so a crash or hang there fails only the GPU part."""
    from lockkit.probes.probe import run_chain

    python = _venv_with(tmp_path, _GPU_WORK_FAILS)
    monkeypatch.setenv("LANG", lang)  # LANG crosses the probes' allow-list
    seen: list = []
    system, gpu = run_chain(python, ["--expect", "cpu", "--device", "cpu"], 5, seen.append)
    assert system.status == "passed" and system.data["torch"]["version"] == "2.5.1+cpu"
    assert gpu is not None and gpu.status == "failed" and gpu.error.startswith(error)
    assert len(seen) == 1 and seen[0].argv[-5:] == ("--then-gpu", "--expect", "cpu",
                                                     "--device", "cpu")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
def test_system_and_gpu_reports_from_one_process(tmp_path):
    from lockkit.probes.probe import gpu_status, run_chain

    python = _venv_with(tmp_path, _GPU_WORK_FAILS.replace("os.abort()", "pass"))
    system, gpu = run_chain(python, None, 30)
    assert system.status == "passed" and gpu is None  # --no-gpu: the system part only
    assert system.command[-1].endswith("system_probe.py")
    system, gpu = run_chain(python, ["--expect", "cpu", "--device", "cpu"], 30)
    assert gpu is not None and gpu.data["probe"] == "gpu"
    assert gpu_status(gpu.data)[0] == "failed"  # the mini torch cannot multiply: judged


@pytest.mark.parametrize("module", [json_format, markdown, junit], ids=lambda m: m.__name__)
def test_each_file_format_renders_a_dossier_to_text_through_render(module):
    """One entry per format: ``render(dossier, secrets) -> str``, so the report folder and the
    commands call each the same way."""
    d = _verify_dossier()
    text = module.render(d, NO_SECRETS)
    assert isinstance(text, str) and text.endswith("\n") and d.platform in text
    assert list(inspect.signature(module.render).parameters) == ["dossier", "secrets"]
