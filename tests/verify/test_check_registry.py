"""A check is its own folders and one line in each stage's list of checks: a dummy check,
added to temporary copies of those lists (and nowhere else), is read from its
``[verify.dummy]`` table when the project loads, runs as a step of both plans, leaves its
record in the dossier's JSON (read back as its own type) and its section in dossier.md."""

from __future__ import annotations

import datetime as dt
import json
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest

from lockkit._internal.redact import NO_SECRETS
from lockkit.config import checks as config_checks
from lockkit.config.checks.rules import Check, Fields
from lockkit.config.project import load_project
from lockkit.errors import ConfigError
from lockkit.platforms.definitions import load_platforms
from lockkit.report import json as json_format
from lockkit.report import markdown
from lockkit.report.checks import registry
from lockkit.report.checks.interface import Recorded
from lockkit.report.model import Dossier
from lockkit.steps.context import Options, Run
from lockkit.steps.engine import Step, Steps, StepSkipped
from lockkit.verify import checks as verify_checks
from lockkit.verify import existing, run
from lockkit.verify.checks import StepCheck


@dataclass(frozen=True, kw_only=True)
class DummyConfig:
    word: str


class DummyDoc(TypedDict):
    passed: bool
    word: str


@dataclass(frozen=True, kw_only=True)
class DummyResult:
    word: str
    passed: bool = True

    def to_dict(self) -> DummyDoc:
        return {"passed": self.passed, "word": self.word}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DummyResult:
        return cls(word=str(d["word"]), passed=bool(d["passed"]))


def _read(root: Path, verify: Mapping[str, object]) -> tuple[Fields, list[str]]:
    table = verify.get("dummy")
    if table is None:
        return {}, []
    if not isinstance(table, dict) or not isinstance(table.get("word"), str):
        return {}, ["verify.dummy.word: expected a string"]
    return {"dummy": DummyConfig(word=table["word"])}, []


def _markdown(record: DummyResult) -> list[str]:
    return ["", "## Dummy check", "", f"- said {record.word}"]


def _step(r: Run, step: Step) -> None:
    cfg = r.opts.project.verify.get("dummy", DummyConfig)
    if cfg is None:
        raise StepSkipped("no [verify.dummy]")
    r.found.checks["dummy"] = DummyResult(word=cfg.word)


DUMMY = Recorded(key="dummy", record=DummyResult, load=DummyResult.from_dict,
                 markdown=_markdown, shape=DummyDoc)


@pytest.fixture
def dummy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dummy check's line in each list: its config module, its record, its step."""
    module = types.ModuleType(f"{config_checks.__name__}.dummy")
    module.__dict__["CHECK"] = Check(key="dummy", read=_read, hint='write word = "..."',
                                     fields={"dummy": DummyConfig})
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(config_checks, "CHECKS", (*config_checks.CHECKS, "dummy"))
    monkeypatch.setattr(registry, "RECORDS", (*registry.RECORDS, DUMMY))
    monkeypatch.setattr(verify_checks, "CHECKS", (
        *verify_checks.CHECKS, StepCheck(key="dummy", after=(), step=_step, report=DUMMY)))


def _project(root: Path, table: str) -> Path:
    (root / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n' + table)
    return root


def test_a_check_in_the_registry_is_configured_run_recorded_and_rendered(dummy, tmp_path):
    project = load_project(_project(tmp_path, '[verify.dummy]\nword = "hello"\n'))
    assert project.verify.get("dummy", DummyConfig) == DummyConfig(word="hello")
    assert run.plan()[-1] == existing.plan()[-1] == ("dummy", ())
    r = Run(opts=Options(project=project, platform=load_platforms(None)["linux-cpu"]),
            work=tmp_path / "work", steps=Steps(run.plan()))
    assert r.steps.execute("dummy", run.step_bodies(r)["dummy"]).status == "passed"
    dossier = run.make_dossier(r, dt.datetime.now(dt.timezone.utc))
    doc = json.loads(json_format.render(dossier, NO_SECRETS))
    assert list(doc["checks"]) == ["gpu", "application", "extensions", "resume", "dummy"]
    assert doc["checks"]["dummy"] == {"passed": True, "word": "hello"}
    assert Dossier.from_dict(doc).checks == {"dummy": DummyResult(word="hello")}
    assert "\n## Dummy check\n\n- said hello\n" in markdown.render(dossier, NO_SECRETS)


def test_the_dummy_table_is_checked_at_load_with_its_hint(dummy, tmp_path):
    with pytest.raises(ConfigError) as err:
        load_project(_project(tmp_path, "[verify.dummy]\nword = 1\n"))
    assert "verify.dummy.word: expected a string" in str(err.value)
    assert 'write word = "..."' in str(err.value.hint)


def test_without_its_line_in_the_registry_the_table_is_an_unknown_key(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'verify.dummy'"):
        load_project(_project(tmp_path, '[verify.dummy]\nword = "hello"\n'))
    assert all(step != "dummy" for step, _ in run.plan())
