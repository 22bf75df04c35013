"""The generated GitHub workflow (parsed back as YAML) and the JUnit view of a dossier."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
import yaml

from lockkit import ci
from lockkit.errors import ConfigError
from lockkit.platforms import load_platforms
from lockkit.report.junit import to_junit, write_junit

WANT = ["linux-cpu", "linux-cu126", "linux-rocm6", "macos-arm64", "windows-cpu", "windows-cu126"]
DEFAULTS = {
    "linux-cpu": "ubuntu-latest", "macos-arm64": "macos-14", "windows-cpu": "windows-latest",
    "linux-cu126": ["self-hosted", "linux", "x64", "gpu", "cuda"],
    "linux-cu128": ["self-hosted", "linux", "x64", "gpu", "cuda"],
    "linux-rocm6": ["self-hosted", "linux", "x64", "gpu", "rocm"],
    "windows-cu126": ["self-hosted", "windows", "x64", "gpu", "cuda"],
}


@pytest.fixture
def platforms(tmp_path):
    return load_platforms(tmp_path)


def _workflow(platforms, names=WANT, **kwargs):
    text = ci.github_workflow([platforms[n] for n in names], **kwargs)
    return text, yaml.safe_load(text)


def _runs(job: dict) -> list[str]:
    return [s["run"] for s in job["steps"] if "run" in s]


def _locks(root, *names: str) -> None:
    """Lock files on disk (outside a git repository a lock on disk counts as committed)."""
    (root / "locks").mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / "locks" / f"pylock.{name}.toml").write_text('lock-version = "1.0"\n')


# --- the workflow ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_default_runner_for_every_shipped_platform(platforms, name):
    assert ci.default_runner(platforms[name]) == DEFAULTS[name]


def test_workflow_jobs_triggers_and_gate(platforms):
    _, doc = _workflow(platforms)
    # YAML 1.1 (PyYAML) reads the key `on` as True; GitHub reads it as "on".
    assert doc.get("on", doc.get(True)) == ["push", "pull_request", "workflow_dispatch"]
    assert set(doc["jobs"]) == {"locks", "verify"}
    locks, verify = doc["jobs"]["locks"], doc["jobs"]["verify"]
    assert locks["runs-on"] == "ubuntu-latest"
    # the locks job checks exactly the platforms that get a verify job
    assert ("lockkit compile --check " + "".join(f"--platform {n} " for n in WANT)
            + "--project .") in _runs(locks)
    assert verify["needs"] == "locks"
    assert verify["strategy"]["fail-fast"] is False
    assert verify["runs-on"] == "${{ matrix.runner }}"


def test_matrix_is_the_requested_platforms_with_runners_and_pythons(platforms):
    runners = {"linux-cu126": ["self-hosted", "a100"], "windows-cpu": "win-big",
               "linux-cu128": "unused-override"}
    _, doc = _workflow(platforms, runners=runners)
    include = doc["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert [e["platform"] for e in include] == WANT
    want = {**DEFAULTS, "linux-cu126": ["self-hosted", "a100"], "windows-cpu": "win-big"}
    for entry in include:
        assert set(entry) == {"platform", "runner", "python", "lock"}
        assert entry["runner"] == want[entry["platform"]]
        assert entry["python"] == platforms[entry["platform"]].python
        assert isinstance(entry["python"], str)


def test_python_override_stays_a_string(platforms):
    _, doc = _workflow(platforms, ["linux-cpu"], python="3.10")
    (entry,) = doc["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert entry["python"] == "3.10"  # not the float 3.1


def test_verify_steps_and_artifact(platforms):
    _, doc = _workflow(platforms, project="examples/embeddings")
    steps = doc["jobs"]["verify"]["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    assert steps[1]["with"]["python-version"] == "${{ matrix.python }}"
    runs = _runs(doc["jobs"]["verify"])
    build = ("lockkit wheelhouse build --platform ${{ matrix.platform }} "
             "--project examples/embeddings")
    verify = ("lockkit verify --platform ${{ matrix.platform }} --project examples/embeddings "
              "--report-dir lockkit-report --junit lockkit-report/junit.xml")
    assert runs.index(build) < runs.index(verify)
    upload = steps[-1]
    assert upload["uses"] == "actions/upload-artifact@" + ci.ACTIONS["actions/upload-artifact"][0]
    assert upload["if"] == "always()"
    assert upload["with"]["name"] == "dossier-${{ matrix.platform }}"
    assert upload["with"]["path"] == "lockkit-report"


def test_workflow_is_deterministic_and_written_atomically(platforms, tmp_path):
    text, _ = _workflow(platforms)
    assert text == _workflow(platforms)[0]
    out = tmp_path / ci.DEFAULT_OUTPUT
    ci.write_workflow(text, out)
    assert out.read_text(encoding="utf-8") == text
    assert [p.name for p in out.parent.iterdir()] == ["lockkit.yml"]


@pytest.mark.parametrize("project", ["my project", "a: b #c", "sub\\dir", "-odd"])
def test_awkward_project_paths_survive_yaml(platforms, project):
    _, doc = _workflow(platforms, ["linux-cpu"], project=project)
    (check,) = [r for r in _runs(doc["jobs"]["locks"]) if "compile" in r]
    word = check.split("--project ", 1)[1]
    assert word.strip('"') == project.replace("\\", "/").replace("-odd", "./-odd")


@pytest.mark.parametrize("project", ["/proj", "C:\\work", "it's", "$HOME/x"])
def test_unsafe_project_paths_are_refused(platforms, project):
    with pytest.raises(ValueError, match="project"):
        ci.github_workflow([platforms["linux-cpu"]], project=project)


def test_bad_platform_lists_and_runners_are_refused(platforms):
    with pytest.raises(ValueError, match="at least one"):
        ci.github_workflow([])
    with pytest.raises(ValueError, match="named twice: linux-cpu"):
        ci.github_workflow([platforms["linux-cpu"]] * 2)
    with pytest.raises(ValueError, match="linux-cpu"):
        ci.github_workflow([platforms["linux-cpu"]], runners={"linux-cpu": []})


def test_validate_runners_names_each_bad_key(platforms):
    assert ci.validate_runners({"linux-cpu": " big ", "linux-cu126": ["self-hosted", "gpu"]},
                               platforms) == {"linux-cpu": "big",
                                              "linux-cu126": ["self-hosted", "gpu"]}
    with pytest.raises(ConfigError) as err:
        ci.validate_runners({"linux-cuda126": "x", "linux-cpu": 3, "macos-arm64": []}, platforms)
    message = str(err.value)
    assert "[ci.runners].linux-cuda126: unknown platform (did you mean 'linux-cu126'?)" in message
    assert "[ci.runners].linux-cpu: expected a label" in message
    assert "[ci.runners].macos-arm64: expected a label" in message


# --- JUnit ----------------------------------------------------------------------------------

SECRET = "https://user:tok@host/x"


def _dossier() -> dict:
    def step(name, status, duration=0.0, error=None, reason=None):
        return {"name": name, "status": status, "duration_s": duration, "needs": [],
                "error": error, "reason": reason, "detail": {}}
    return {
        "kind": "verify", "platform": "linux-cu126", "result": "failed",
        "started": "2026-12-03T10:40:18Z", "lockkit_version": "0.1.0",
        "first_error": f"install: cannot fetch {SECRET}",
        "steps": [step("host", "passed", 0.07), step("venv", "passed", 0.031),
                  step("install", "failed", 4.2, error=f"cannot fetch {SECRET}: 401\x1b[0m"),
                  step("pip-check", "not-run", reason="install failed"),
                  step("gpu", "skipped", reason="--no-gpu"),
                  step("application", "not-run")],
    }


def test_junit_counts_names_and_messages(tmp_path):
    path = tmp_path / "report" / "junit.xml"
    write_junit(_dossier(), path)
    raw = path.read_bytes()
    assert raw.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    assert b"tok" not in raw and b"\x1b" not in raw
    root = ET.fromstring(raw)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "lockkit verify linux-cu126"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("6", "1", "0", "3")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["host", "venv", "install", "pip-check", "gpu",
                                              "application"]
    assert {c.get("classname") for c in cases} == {"lockkit.verify.linux-cu126"}
    (failure,) = cases[2].findall("failure")
    assert failure.get("message") == "cannot fetch https://***@host/x: 401[0m"
    assert cases[3].find("skipped").get("message") == "not run: install failed"
    assert cases[4].find("skipped").get("message") == "--no-gpu"
    assert cases[5].find("skipped").get("message") == "not run"
    assert all(not list(c) for c in cases[:2])
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["first_error"] == "install: cannot fetch https://***@host/x"
    assert [p.name for p in path.parent.iterdir()] == ["junit.xml"]


def test_junit_is_well_formed_for_the_common_schema(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(_dossier(), path)
    root = ET.parse(path).getroot()
    assert [c.tag for c in root] == ["testsuite"]
    for el in (root, *root):
        for key in ("tests", "failures", "errors", "skipped"):
            assert int(el.get(key)) >= 0
        assert float(el.get("time")) == pytest.approx(4.301)
    suite = root[0]
    assert [c.tag for c in suite] == ["properties"] + ["testcase"] * 6
    assert suite.get("timestamp") == "2026-12-03T10:40:18"
    for case in suite.findall("testcase"):
        assert set(case.attrib) == {"classname", "name", "time"}
        float(case.get("time", ""))
        assert len(case) <= 1 and all(c.tag in ("failure", "skipped") for c in case)


def test_junit_for_diagnose_and_bad_status():
    doc: dict[str, Any] = {"kind": "diagnose", "python": "venv/bin/python", "result": "passed",
           "steps": [{"name": "system", "status": "passed", "duration_s": 1.5}]}
    suite = to_junit(doc)[0]
    assert suite.get("name") == "lockkit diagnose venv/bin/python"
    assert suite[-1].get("classname") == "lockkit.diagnose"
    doc["steps"][0]["status"] = "exploded"
    with pytest.raises(ValueError, match=r"steps\[0\].status: 'exploded'"):
        to_junit(doc)


def test_cli_writes_the_workflow_and_junit_flag_exists(tmp_path, monkeypatch):
    import yaml

    from lockkit.cli import main

    (tmp_path / "lockkit.toml").write_text(
        'platforms = ["linux-cpu", "linux-rocm6"]\n[ci.runners]\nlinux-rocm6 = "mi300"\n')
    _locks(tmp_path, "linux-cpu", "linux-rocm6")
    monkeypatch.chdir(tmp_path)
    assert main(["ci", "github"]) == 0
    flow = yaml.safe_load((tmp_path / ".github" / "workflows" / "lockkit.yml").read_text())
    entries = flow["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert {e["platform"]: e["runner"] for e in entries} == {"linux-cpu": "ubuntu-latest",
                                                             "linux-rocm6": "mi300"}
    (tmp_path / "lockkit.toml").write_text('[ci.runners]\nlinux-cpux = "x"\n')
    assert main(["ci", "github"]) == 2


# --- bad input: ConfigError for the config, UsageError for flags; one line, exit 2 ----------

def test_library_errors_are_config_or_usage_errors(platforms):
    from lockkit.errors import UsageError

    with pytest.raises(UsageError, match="--project '/proj': must be relative"):
        ci.github_workflow([platforms["linux-cpu"]], project="/proj")
    with pytest.raises(UsageError, match="platforms: at least one is needed"):
        ci.github_workflow([])
    with pytest.raises(ConfigError, match=r"\[ci.runners\].linux-cpu: expected a label"):
        ci.github_workflow([platforms["linux-cpu"]], runners={"linux-cpu": [" "]})


def _cli_ci(tmp_path, monkeypatch, config: str) -> tuple[int, str]:
    from lockkit.cli import main

    (tmp_path / "lockkit.toml").write_text(config)
    _locks(tmp_path, "linux-cpu")
    monkeypatch.chdir(tmp_path)
    return main(["ci", "github"]), str(tmp_path / "lockkit.toml")


@pytest.mark.parametrize("version", ["3.10", "3.9", "3.12"])
def test_cli_writes_the_project_python_as_a_quoted_string(tmp_path, monkeypatch, version):
    code, _ = _cli_ci(tmp_path, monkeypatch, f'python = "{version}"\n')
    assert code == 0
    text = (tmp_path / ".github" / "workflows" / "lockkit.yml").read_text()
    assert f'python: "{version}"' in text
    (entry,) = yaml.safe_load(text)["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert entry["python"] == version


@pytest.mark.parametrize("config,expected", [
    ('ci = "x"\n', "ci: expected a table ([ci]), got 'x'"),
    ("python = 3.10\n", 'python: expected a version string such as "3.11", got 3.1'),
    ('[ci.runners]\nlinux-cpux = "x"\n',
     "[ci.runners].linux-cpux: unknown platform (did you mean 'linux-cpu'?)"),
    ("[ci.runners]\nlinux-cpu = 7\n", "ci.runners.linux-cpu: expected a label"),
], ids=["ci-string", "python-number", "unknown-platform", "runner-number"])
def test_cli_bad_ci_config_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys, config,
                                                       expected):
    code, path = _cli_ci(tmp_path, monkeypatch, config)
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"lockkit: error: {path}: " in err and expected in err
    assert not (tmp_path / ".github").exists()  # nothing written


def test_cli_writes_a_platform_files_python_as_a_quoted_string(tmp_path, monkeypatch):
    from pathlib import Path

    import lockkit

    shipped = Path(lockkit.__file__).parents[1] / "platforms" / "linux-cpu.toml"
    (tmp_path / "platforms").mkdir()
    text = shipped.read_text()
    old = next(line for line in text.splitlines() if line.startswith("python ="))
    (tmp_path / "platforms" / "linux-cpu.toml").write_text(text.replace(old, 'python = "3.10"'))
    code, _ = _cli_ci(tmp_path, monkeypatch, 'platforms = ["linux-cpu"]\n')
    assert code == 0
    flow = yaml.safe_load((tmp_path / ".github" / "workflows" / "lockkit.yml").read_text())
    (entry,) = flow["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert entry["python"] == "3.10"
