"""The generated GitHub workflow (parsed back as YAML) and the JUnit view of a dossier."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

import lockkit
from lockkit._internal.redact import NO_SECRETS
from lockkit.ci import workflow as ci
from lockkit.config.keys import LockkitRequirement, lockkit_requirement
from lockkit.errors import ConfigError
from lockkit.platforms.definitions import load_platforms
from lockkit.report import junit
from lockkit.report.junit import write_junit
from tests.support.index_server import build_wheel

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


# a committed wheel, hashed: what the pure-text tests install unless they name another
OWN = LockkitRequirement(requirement=".lockkit/ci/lockkit-1.0-py3-none-any.whl",
                         hashes=(f"sha256:{'a' * 64}",), source="path")


def _workflow(platforms, names=WANT, **kwargs):
    kwargs.setdefault("lockkit", OWN)
    text = ci.github_workflow([platforms[n] for n in names], **kwargs)
    return text, yaml.safe_load(text)


def _runs(job: dict) -> list[str]:
    return [s["run"] for s in job["steps"] if "run" in s]


def _locks(root, *names: str) -> None:
    """Lock files on disk (git-added by the callers that need them committed)."""
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
    assert set(doc["jobs"]) == {"locks", "verify", "attest"}
    locks, verify = doc["jobs"]["locks"], doc["jobs"]["verify"]
    assert locks["runs-on"] == "ubuntu-latest"
    # the locks job checks exactly the platforms that get a verify job, against a fresh
    # resolution (a forged lock passes an offline check: issue 31)
    assert ("lockkit compile --locked " + "".join(f"--platform {n} " for n in WANT)
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
        ci.github_workflow([platforms["linux-cpu"]], project=project, lockkit=OWN)


def test_bad_platform_lists_and_runners_are_refused(platforms):
    with pytest.raises(ValueError, match="at least one"):
        ci.github_workflow([], lockkit=OWN)
    with pytest.raises(ValueError, match="named twice: linux-cpu"):
        ci.github_workflow([platforms["linux-cpu"]] * 2, lockkit=OWN)
    with pytest.raises(ValueError, match="linux-cpu"):
        ci.github_workflow([platforms["linux-cpu"]], runners={"linux-cpu": []}, lockkit=OWN)


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


# --- a safe workflow: pins, the lockkit requirement, locks, caches, --project ----------------

PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+@[0-9a-f]{40}")
SHA = "0123456789abcdef0123456789abcdef01234567"


def _steps(doc: dict) -> list[dict]:
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def _installs(doc: dict) -> list[dict]:
    return [s for s in _steps(doc) if s.get("name") == "install lockkit"]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=root, check=True,
                   capture_output=True)


def _repo(tmp_path: Path, config: str, committed: tuple[str, ...] = ("linux-cpu",),
          sub: str = ".") -> Path:
    """A git repository whose project (at *sub*) has *committed* locks in a commit."""
    repo = tmp_path / "repo"
    project = repo / sub
    project.mkdir(parents=True)
    _git(repo, "init", "-q")
    (project / "lockkit.toml").write_text(config)
    _locks(project, *committed)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "locks")
    return repo


def _cli(cwd: Path, monkeypatch, *argv: str) -> int:
    from lockkit.cli import main

    monkeypatch.chdir(cwd)
    return main(["ci", "github", *argv])


def _written(repo: Path) -> tuple[str, dict]:
    text = (repo / ".github" / "workflows" / "lockkit.yml").read_text()
    return text, yaml.safe_load(text)


def test_every_action_is_pinned_to_a_commit_with_its_tag(platforms):
    text, doc = _workflow(platforms)
    uses = [s["uses"] for s in _steps(doc) if "uses" in s]
    from lockkit.ci import refresh

    refreshing = yaml.safe_load(refresh.refresh_workflow([platforms["linux-cpu"]], lockkit=OWN))
    uses += [s["uses"] for j in refreshing["jobs"].values() for s in j["steps"] if "uses" in s]
    assert {u.split("@")[0] for u in uses} == set(ci.ACTIONS)  # the table covers them all
    for use in uses:
        assert PINNED.fullmatch(use), use
        sha, tag = ci.ACTIONS[use.split("@")[0]]
        assert use.endswith("@" + sha)
        assert f"{use} # {tag}" in text and re.fullmatch(r"v\d+\.\d+\.\d+", tag)


def test_only_the_attest_job_may_mint_an_id_token_and_it_runs_no_lockkit(platforms):
    """The signature needs an OIDC token; the jobs that run lockkit and the project's code
    (locks, verify) never hold one."""
    from lockkit.report.intoto import PREDICATE_TYPE

    _, doc = _workflow(platforms)
    jobs = doc["jobs"]
    assert "permissions" not in jobs["locks"] and "permissions" not in jobs["verify"]
    attest = jobs["attest"]
    assert attest["permissions"] == {"contents": "read", "id-token": "write",
                                     "attestations": "write"}
    assert attest["needs"] == "verify"
    assert attest["strategy"]["matrix"] == jobs["verify"]["strategy"]["matrix"]
    assert not any("run" in s for s in attest["steps"])
    sign = attest["steps"][-1]
    assert sign["uses"].startswith("actions/attest@")
    assert sign["with"] == {"subject-path": "${{ matrix.lock }}",
                            "predicate-type": PREDICATE_TYPE,
                            "predicate-path": "lockkit-report/dossier.json"}


def test_read_only_permissions_no_persisted_token_no_expression_in_scripts(platforms):
    _, doc = _workflow(platforms)
    assert doc["permissions"] == {"contents": "read"}
    checkouts = [s for s in _steps(doc) if s.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 3
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)
    for step in _steps(doc):
        # only the matrix values this file defines may be substituted into a script
        outside = re.sub(r"\$\{\{ matrix\.(platform|python) \}\}", "", step.get("run", ""))
        assert "${{" not in outside, step


PIP = ("python -m pip install --disable-pip-version-check --require-hashes "
       "--only-binary :all: -r .lockkit/ci/requirements.txt")
APART = "install lockkit itself (not hash-checked)"


@pytest.mark.parametrize("requirement,apart", [
    ("lockkit==1.2.3", True),
    (f"lockkit @ git+https://git.example.invalid/org/lockkit@{SHA}", True),
    ("lockkit @ https://files.example.invalid/lockkit-1.2.3-py3-none-any.whl#sha256=" + "a" * 64,
     False),
], ids=["index-no-hash", "vcs", "url-hashed"])
def test_the_install_step_installs_the_pins_and_an_unhashable_lockkit_apart(platforms,
                                                                           requirement, apart):
    """Every job installs lockkit and its dependencies from the pins in hash-checking mode;
    a lockkit pip cannot hash (a VCS commit, a pin without --hash) follows, alone."""
    from lockkit.ci import pins

    req, problems = lockkit_requirement(requirement)
    assert problems == [] and req is not None
    text, doc = _workflow(platforms, ["linux-cpu"], lockkit=req)
    steps = _installs(doc)
    assert [s["run"] for s in steps] == [PIP, PIP]  # the locks job and the verify job
    after = [s for s in _steps(doc) if s.get("name") == APART]
    assert [s.get("env") for s in after] == ([{"LOCKKIT_REQUIREMENT": requirement}] * 2
                                             if apart else [])
    assert f"#   {requirement} (" in text  # the file says where lockkit comes from
    assert "This is the default" not in text
    listed = pins.pins_text(req, [], "3.11")
    assert ("\nlockkit @ https://files.example.invalid/" in listed) is not apart
    assert (f"#   {requirement}\n" in listed) is apart  # named in the header as not listed


def _own_wheel(repo: Path, sub: str = ".") -> Path:
    (wheel,) = (repo / sub / ".lockkit" / "ci").glob("lockkit-*.whl")
    return wheel


@pytest.mark.network  # uv builds lockkit's own wheel: hatchling from the default index
def test_the_default_is_lockkits_own_wheel_installed_by_its_hash(tmp_path, monkeypatch,
                                                                  capsys):
    repo = _repo(tmp_path, 'platforms = ["linux-cpu"]\n')
    assert _cli(repo, monkeypatch) == 0
    wheel = _own_wheel(repo)
    assert wheel.name == f"lockkit-{lockkit.__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert "lockkit/ci/workflow.py" in names and "lockkit/_platforms/linux-cpu.toml" in names
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    text, doc = _written(repo)
    assert [s["run"] for s in _installs(doc)] == [PIP, PIP]
    pinned = (repo / ".lockkit" / "ci" / "requirements.txt").read_text()
    # by path and sha256, never a name an index could serve
    assert f"\n.lockkit/ci/{wheel.name} \\\n    --hash=sha256:{digest}\n" in pinned
    assert f"#   .lockkit/ci/{wheel.name} (pip checks its hash)." in text
    assert "hash-checking mode (--require-hashes)" in text
    assert "lockkit==" not in text and "\nlockkit==" not in pinned
    err = capsys.readouterr().err
    assert f"wrote .lockkit/ci/{wheel.name} (sha256:{digest}): CI installs lockkit" in err
    assert "warning" not in err
    assert wheel.stat().st_mode & 0o777 == 0o666 & ~_umask()
    # [ci] lockkit replaces it
    (repo / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n[ci]\nlockkit = "lockkit==9"\n')
    assert _cli(repo, monkeypatch) == 0
    assert {s["env"]["LOCKKIT_REQUIREMENT"] for s in _steps(_written(repo)[1])
            if s.get("name") == APART} == {"lockkit==9"}
    assert "[ci] lockkit: lockkit==9 cannot be checked by hash" in capsys.readouterr().err


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.network  # uv builds lockkit's own wheel: hatchling from the default index
def test_two_runs_write_the_same_wheel_bytes_and_workflow(tmp_path, monkeypatch):
    repo = _repo(tmp_path, 'platforms = ["linux-cpu"]\n', sub="apps/emb")
    assert _cli(repo, monkeypatch, "--project", "apps/emb") == 0
    pins = repo / "apps" / "emb" / ".lockkit" / "ci" / "requirements.txt"
    first, flow = _own_wheel(repo, "apps/emb").read_bytes(), _written(repo)[0]
    pinned = pins.read_text()
    _own_wheel(repo, "apps/emb").unlink()
    assert _cli(repo, monkeypatch, "--project", "apps/emb") == 0
    assert _own_wheel(repo, "apps/emb").read_bytes() == first
    assert _written(repo)[0] == flow and pins.read_text() == pinned
    assert "-r apps/emb/.lockkit/ci/requirements.txt" in flow
    assert f"\napps/emb/.lockkit/ci/lockkit-{lockkit.__version__}-py3-none-any.whl " in pinned


def test_outside_a_git_repository_nothing_is_written(tmp_path, monkeypatch, capsys):
    """Outside git, as inside, CI would see only committed locks: refused, exit 2."""
    from lockkit.cli import main

    (tmp_path / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    _locks(tmp_path, "linux-cpu")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert main(["ci", "github"]) == 2
    err = capsys.readouterr().err
    assert f"lockkit: error: {tmp_path}: not in a git repository, so no lock can be shown " \
           "to be committed" in err
    assert "hint: git init, then git add locks/" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lockkit.toml", "locks"]


@pytest.mark.network  # uv builds lockkit's own wheel: hatchling from the default index
def test_platforms_without_a_committed_lock_are_left_out_and_named(tmp_path, monkeypatch,
                                                                   capsys):
    repo = _repo(tmp_path, 'platforms = ["linux-cpu", "macos-arm64", "windows-cpu"]\n')
    _locks(repo, "macos-arm64")  # on disk, not committed; windows-cpu has none
    assert _cli(repo, monkeypatch) == 0
    _, doc = _written(repo)
    include = doc["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert [e["platform"] for e in include] == ["linux-cpu"]
    assert _runs(doc["jobs"]["locks"])[-1] == \
        "lockkit compile --locked --platform linux-cpu --project ."
    err = capsys.readouterr().err
    assert "left out macos-arm64: locks/pylock.macos-arm64.toml is not committed" in err
    assert "left out windows-cpu: no lock (locks/pylock.windows-cpu.toml" in err
    assert "verify on linux-cpu\n" in err


def test_no_committed_lock_at_all_is_refused(tmp_path, monkeypatch, capsys):
    repo = _repo(tmp_path, 'platforms = ["macos-arm64"]\n')
    assert _cli(repo, monkeypatch) == 2
    err = capsys.readouterr().err
    assert "lockkit: error: no platform has a committed lock" in err and "Traceback" not in err
    assert "left out macos-arm64: no lock" in err
    assert not (repo / ".github").exists()


def test_caches_are_keyed_by_each_platforms_lock(platforms):
    _, doc = _workflow(platforms, ["linux-cpu", "windows-cpu"], project="apps/emb")
    verify = doc["jobs"]["verify"]
    locks = {e["platform"]: e["lock"] for e in verify["strategy"]["matrix"]["include"]}
    assert locks == {"linux-cpu": "apps/emb/locks/pylock.linux-cpu.toml",
                     "windows-cpu": "apps/emb/locks/pylock.windows-cpu.toml"}
    (cache,) = [s for s in verify["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert "${{ hashFiles(matrix.lock) }}" in cache["with"]["key"]
    assert "${{ matrix.platform }}" in cache["with"]["key"]
    paths = cache["with"]["path"].splitlines()
    assert paths == [ci.CACHES["LOCKKIT_CACHE_DIR"], ci.CACHES["UV_CACHE_DIR"],
                     "apps/emb/wheelhouse/${{ matrix.platform }}"]
    for step in verify["steps"]:  # every lockkit command uses the cached folders
        if step.get("run", "").startswith("lockkit "):
            assert step["env"] == ci.CACHES
    (gate,) = [s for s in doc["jobs"]["locks"]["steps"] if "actions/cache@" in s.get("uses", "")]
    assert gate["with"]["key"] == "lockkit-locks-${{ hashFiles('apps/emb/locks/pylock.*.toml') }}"


@pytest.mark.network  # uv builds lockkit's own wheel: hatchling from the default index
def test_an_absolute_project_inside_the_repository_is_made_relative(tmp_path, monkeypatch):
    repo = _repo(tmp_path, 'platforms = ["linux-cpu"]\n', sub="apps/emb")
    assert _cli(repo, monkeypatch, "--project", str(repo / "apps" / "emb")) == 0
    _, doc = _written(repo)
    assert _runs(doc["jobs"]["locks"])[-1].endswith("--project apps/emb")
    (entry,) = doc["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert entry["lock"] == "apps/emb/locks/pylock.linux-cpu.toml"
    (repo / ".github").rename(tmp_path / "first")
    # from inside the project, '.' is the same project and the file goes to the root
    assert _cli(repo / "apps" / "emb", monkeypatch) == 0
    assert _written(repo)[0] == (tmp_path / "first" / "workflows" / "lockkit.yml").read_text()


def test_a_project_outside_the_repository_is_refused(tmp_path, monkeypatch, capsys):
    repo = _repo(tmp_path, 'platforms = ["linux-cpu"]\n')
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    _locks(outside, "linux-cpu")
    assert _cli(repo, monkeypatch, "--project", str(outside)) == 2
    err = capsys.readouterr().err
    assert f"lockkit: error: --project {outside}: outside the repository" in err
    assert "Traceback" not in err and not (repo / ".github").exists()


@pytest.mark.parametrize("value,expected", [
    ('"lockkit"', "ci.lockkit: 'lockkit': pin one version"),
    ('"lockkit>=1.0"', "ci.lockkit: 'lockkit>=1.0': pin one version"),
    ('"lockkitt==1.0"', "names another project than lockkit"),
    ('"lockkit @ git+https://git.example.invalid/o/lockkit@main"', "pin a full 40-hex commit"),
    ('"lockkit==1.0 --hash=sha256:abc"', "'--hash=sha256:abc' is not a --hash=sha256:<hex>"),
    ('"/abs/lockkit-1.0-py3-none-any.whl"', "relative to the repository root"),
    ("3", "ci.lockkit: expected a pip requirement string"),
], ids=["bare", "range", "other-name", "vcs-branch", "short-hash", "absolute-path", "number"])
def test_bad_ci_lockkit_is_one_line_naming_the_file_and_key(tmp_path, monkeypatch, capsys,
                                                            value, expected):
    code, path = _cli_ci(tmp_path, monkeypatch, f"[ci]\nlockkit = {value}\n")
    assert code == 2
    err = capsys.readouterr().err
    assert f"lockkit: error: {path}: " in err and expected in err and "Traceback" not in err
    assert not (tmp_path / ".github").exists()


def test_a_committed_wheel_is_hashed_and_a_wrong_hash_refused(tmp_path, monkeypatch, capsys):
    repo = _repo(tmp_path, 'platforms = ["linux-cpu"]\n[ci]\n'
                           'lockkit = "dist/lockkit-1.0-py3-none-any.whl"\n')
    assert _cli(repo, monkeypatch) == 2
    missing = "dist/lockkit-1.0-py3-none-any.whl: no such file committed to the repository"
    assert missing in capsys.readouterr().err
    wheel = build_wheel(repo / "dist", "lockkit", "1.0")
    assert _cli(repo, monkeypatch) == 2  # on disk, not in git: CI would not have it
    assert missing in capsys.readouterr().err
    _git(repo, "add", "dist")
    assert _cli(repo, monkeypatch) == 0
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    text, doc = _written(repo)
    assert [s["run"] for s in _installs(doc)] == [PIP, PIP]
    pinned = (repo / ".lockkit" / "ci" / "requirements.txt").read_text()
    assert f"\ndist/lockkit-1.0-py3-none-any.whl \\\n    --hash=sha256:{digest}\n" in pinned
    assert "a file committed to this repository" in text and "pip checks its hash" in text
    (repo / "lockkit.toml").write_text(
        'platforms = ["linux-cpu"]\n[ci]\nlockkit = "dist/lockkit-1.0-py3-none-any.whl '
        f'--hash=sha256:{"0" * 64}"\n')
    assert _cli(repo, monkeypatch) == 2
    assert f"has sha256:{digest}, not the hash given" in capsys.readouterr().err


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
    write_junit(_dossier(), path, NO_SECRETS)
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
    write_junit(_dossier(), path, NO_SECRETS)
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
    suite = ET.fromstring(junit.render(doc, NO_SECRETS))[0]
    assert suite.get("name") == "lockkit diagnose venv/bin/python"
    assert suite[-1].get("classname") == "lockkit.diagnose"
    doc["steps"][0]["status"] = "exploded"
    with pytest.raises(ValueError, match=r"steps\[0\].status: 'exploded'"):
        junit.render(doc, NO_SECRETS)


def test_cli_writes_the_workflow_and_junit_flag_exists(tmp_path, monkeypatch):
    import yaml

    from lockkit.cli import main

    (tmp_path / "lockkit.toml").write_text(
        'platforms = ["linux-cpu", "linux-rocm6"]\n[ci.runners]\nlinux-rocm6 = "mi300"\n')
    _locks(tmp_path, "linux-cpu", "linux-rocm6")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "locks")
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
        ci.github_workflow([platforms["linux-cpu"]], project="/proj", lockkit=OWN)
    with pytest.raises(UsageError, match="platforms: at least one is needed"):
        ci.github_workflow([], lockkit=OWN)
    with pytest.raises(ConfigError, match=r"\[ci.runners\].linux-cpu: expected a label"):
        ci.github_workflow([platforms["linux-cpu"]], runners={"linux-cpu": [" "]},
                           lockkit=OWN)


def _cli_ci(tmp_path, monkeypatch, config: str) -> tuple[int, str]:
    from lockkit.cli import main

    (tmp_path / "lockkit.toml").write_text(config)
    _locks(tmp_path, "linux-cpu")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "locks")
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


def test_cli_sets_up_the_python_requires_python_chose_for_the_lock(tmp_path, monkeypatch):
    """pyproject.toml's requires-python moves the lock to 3.12 (compile's one rule): the
    verify job sets up 3.12, not the platform file's default, which no wheel would fit."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\nrequires-python = ">=3.12"\n')
    code, _ = _cli_ci(tmp_path, monkeypatch, 'platforms = ["linux-cpu"]\n')
    assert code == 0
    flow = yaml.safe_load((tmp_path / ".github" / "workflows" / "lockkit.yml").read_text())
    (entry,) = flow["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert entry["python"] == "3.12"


def test_a_requirements_file_lockkit_did_not_write_is_never_replaced(tmp_path, monkeypatch,
                                                                     capsys):
    """.lockkit/ci/requirements.txt written by hand: refused before any work (--force
    replaces it), nothing written."""
    repo = _repo(tmp_path, 'platforms = ["linux-cpu"]\n')
    mine = repo / ".lockkit" / "ci" / "requirements.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my own pins\nidna==3.10\n")
    assert _cli(repo, monkeypatch) == 2
    err = capsys.readouterr().err
    assert "requirements.txt: a file lockkit did not write" in err and "--force" in err
    assert mine.read_text() == "# my own pins\nidna==3.10\n"
    assert not (repo / ".github").exists()
    assert sorted(p.name for p in mine.parent.iterdir()) == ["requirements.txt"]
