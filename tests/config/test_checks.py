"""The project checks' one interface: each ``[verify.<key>]`` reader in
``lockkit.config.checks`` and, on the verify side, its step and record, joined by the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lockkit.config.checks import CHECKS, VerifyConfig, table_checks, verify_keys
from lockkit.config.checks.application import ApplicationConfig
from lockkit.config.checks.embedding import EmbeddingConfig
from lockkit.config.project import load_project
from lockkit.errors import ConfigError
from lockkit.report.checks.registry import RECORDS
from lockkit.verify import existing, run
from lockkit.verify.checks import CHECKS as STEPS


def test_each_check_module_reads_its_own_key():
    checks = table_checks()
    assert [c.key for c in checks] == list(CHECKS)
    assert all(c.key in c.fields for c in checks)  # each fills the field of its own key
    assert verify_keys() == {*CHECKS, "reason"}


def test_every_step_check_has_a_table_reader_and_leaves_a_record_the_dossier_lists():
    """A check added to verify's list without its reader, or whose report declaration is
    not in the dossier's list, fails here, not in a user's run."""
    for step in STEPS:
        assert step.key in CHECKS, step.key
        assert step.report in RECORDS and step.report.key == step.key, step.key


@pytest.mark.parametrize("plan", [run.plan(), existing.plan()], ids=["rebuild", "existing"])
def test_both_plans_end_with_the_checks_in_their_order(plan):
    assert plan[-len(STEPS):] == [(s.key, s.after) for s in STEPS]


def test_a_project_without_verify_table_imports_no_check_module(tmp_path):
    (tmp_path / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    code = ("import sys; from pathlib import Path; from lockkit.config.project import "
            f"load_project; load_project(Path({str(tmp_path)!r})); "
            "print(sorted(m for m in sys.modules if m.startswith('lockkit.config.checks.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_every_check_table_problem_is_reported_in_one_error_in_the_checks_order(tmp_path):
    (tmp_path / "lockkit.toml").write_text(
        '[verify]\nbogus = 1\n[verify.extensions]\nmodules = []\n'
        '[verify.resume]\nsteps = 0\n[verify.embedding]\ndim = 0\n')
    with pytest.raises(ConfigError) as caught:
        load_project(tmp_path)
    text = str(caught.value)
    order = [text.index(s) for s in ("unknown key 'verify.bogus'", "verify.extensions.modules",
                                     "verify.resume", "verify.embedding")]
    assert order == sorted(order)  # unknown keys first, then each check's, in CHECKS order
    hint = caught.value.hint or ""
    assert all(c.hint in hint for c in table_checks() if c.key != "application")


def test_the_example_fills_the_verify_config():
    example = Path(__file__).resolve().parents[2] / "examples" / "embeddings"
    verify = load_project(example).verify
    assert set(verify.tables) == {"embedding", "resume", "extensions"}
    assert verify.get("embedding", EmbeddingConfig) is not None
    assert verify.get("application", ApplicationConfig) is None


def test_the_fields_a_reader_fills_are_checked_against_the_types_its_check_declares():
    """A reader names the VerifyConfig fields it fills as text: VerifyConfig.of takes each
    only as the type its check declares, and a field no check declares is lockkit's bug,
    said at once."""
    from lockkit.config.checks.resume import ResumeConfig

    checks, resume = table_checks(), ResumeConfig(none="inference only")
    config = VerifyConfig.of({"resume": resume, "application_waiver": "a library"}, checks)
    assert config == VerifyConfig(tables={"resume": resume, "application_waiver": "a library"})
    assert config.get("resume", ResumeConfig) == resume
    assert config.get("application_waiver", str) == "a library"
    assert VerifyConfig.of({"embedding": None}, checks) == VerifyConfig()
    with pytest.raises(TypeError, match="VerifyConfig.resume: expected ResumeConfig, got str"):
        VerifyConfig.of({"resume": "none"}, checks)
    with pytest.raises(TypeError, match="no field 'resumes'"):
        VerifyConfig.of({"resumes": resume}, checks)
    with pytest.raises(TypeError, match="VerifyConfig.resume: expected str, got ResumeConfig"):
        config.get("resume", str)
