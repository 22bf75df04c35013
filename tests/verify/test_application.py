"""[verify.application] (any command), the application = "none" waiver, and the
frictions of issue 14: stale-lock warnings, lockkit's outputs never dirty, uncommitted
fingerprints, diagnose's default interpreter, --no-gpu on CPU. (The table, read at load:
``tests/config/test_application.py``; unique report folders: ``tests/cli/test_cli.py``.)"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.errors import UsageError
from lockkit.verify.checks.application.compare import compare_values
from lockkit.verify.diagnose import default_python
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer
from tests.support.project import lockkit
from tests.support.pytorch_index import PyTorchIndex

ORDER = ["host", "venv", "install", "pip-check", "inventory", "system", "gpu", "extensions",
         "application", "resume"]
NO_RESUME = '\n[verify.resume]\nnone = "app.py never trains"\n'


APP = '''\
import json, os, sys
import torch
os.makedirs("out", exist_ok=True)
loss = 0.25 + float(os.environ.get("APP_SHIFT", "0"))
with open("out/metrics.json", "w") as fh:
    json.dump({"loss": loss, "epochs": 2, "torch": torch.__version__.split("+")[0],
               "curve": [1.0, 0.5, loss]}, fh)
'''
REASON = "the loss is summed in float64 in one thread: only printing rounds it"
REFERENCE = {"loss": 0.2500001, "epochs": 2, "torch": "2.5.1", "curve": [1.0, 0.5, 0.25]}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def statuses(doc: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in doc["steps"]}


# --- a fake-torch project, compiled and its wheelhouse built once for the module ----------

@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Iterator[Path]:
    """numpy (real, as pip supplies it here) lets the fake torch run the gpu step's CPU
    matmul check, so the application step is reached."""
    base = tmp_path_factory.mktemp("app")
    fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet",
                              "--only-binary", ":all:", "-d", str(base / "np"), "numpy"],
                             capture_output=True, text=True, timeout=600)
    if fetched.returncode != 0:
        pytest.skip(f"numpy is not available to pip here: {fetched.stderr[-200:]}")
    pt = PyTorchIndex(base / "pytorch")
    server = IndexServer(base / "index")
    with pt, server:
        pt.put("cpu", build_fake_torch(base / "built", version="2.5.1+cpu", cuda=None))
        default = server.index("/simple")
        for wheel in (base / "np").glob("*.whl"):
            default.put(wheel)
        root = base / "proj"
        root.mkdir()
        (root / "requirements.in").write_text("torch==2.5.1\nnumpy\n")
        mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())
        (root / "lockkit.toml").write_text(
            f'index-url = "{server.url}/simple"\nplatforms = ["linux-cpu"]\n'
            f"[mirrors]\n{mirrors}")
        assert main(["compile", "--project", str(root)]) == 0
        assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                     "--cache-dir", str(base / "cache")]) == 0
        yield root


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def app_project(built: Path, dest: Path, *, verify: str | None = None,
                commit: bool = True) -> Path:
    """A copy of the built project with app.py, its reference and a [verify] table; in
    git (lockkit's outputs, .lockkit/ and wheelhouse/, left untracked)."""
    root = dest / "proj"
    shutil.copytree(built, root)
    (root / "app.py").write_text(APP)
    (root / "reference").mkdir()
    (root / "reference" / "metrics.json").write_text(json.dumps(REFERENCE))
    if verify is None:
        verify = f'''
[verify.application]
command = ["{{python}}", "app.py"]
timeout = 60
outputs = ["out/metrics.json"]

[verify.application.compare]
"out/metrics.json" = {{ reference = "reference/metrics.json", atol = 1e-6, rtol = 0, \
reason = "{REASON}" }}

[verify.application.fingerprints]
"app.py" = "{sha(root / "app.py")}"
"reference/metrics.json" = "{sha(root / "reference" / "metrics.json")}"
'''
    (root / "lockkit.toml").write_text((root / "lockkit.toml").read_text() + verify + NO_RESUME)
    (root / ".lockkit" / "cache").mkdir(parents=True)
    (root / ".lockkit" / "cache" / "junk").write_text("lockkit's own")
    if commit:
        _git(root, "init", "-q")
        _git(root, "add", "--", "lockkit.toml", "requirements.in", "locks", "app.py",
             "reference")
        _git(root, "commit", "-q", "-m", "app")
    return root


def run_verify(root: Path, *extra: str, report: bool = True) -> tuple[subprocess.CompletedProcess,
                                                                       dict, Path]:
    flags = ["--report-dir", str(root / "report")] if report else []
    run = lockkit("verify", "--project", str(root), "--platform", "linux-cpu", *flags, *extra,
                  network=False)
    folder = (root / "report") if report else next(
        (root / ".lockkit" / "reports" / "linux-cpu").iterdir())
    return run, json.loads((folder / "dossier.json").read_text()), folder


def test_a_command_check_passes_and_is_recorded(built, tmp_path):
    root = app_project(built, tmp_path)
    run, doc, folder = run_verify(root, report=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [s["name"] for s in doc["steps"]] == ORDER and doc["result"] == "passed"
    app = doc["checks"]["application"]
    assert app["kind"] == "command" and app["returncode"] == 0
    assert app["command"] == ["{python}", "app.py"]
    assert [c["name"] for c in app["checks"]] == ["command", "output out/metrics.json",
                                                  "compare out/metrics.json"]
    assert app["worst_id"] == "out/metrics.json $.loss"
    assert app["max_abs_diff"] == pytest.approx(1e-7)
    assert doc["application_config"]["compare"]["out/metrics.json"]["atol"] == 1e-6
    assert [f["path"] for f in doc["fingerprints"]["files"]] == ["app.py",
                                                                "reference/metrics.json"]
    # .lockkit/ (and the report written there) and wheelhouse/ are lockkit's, not the user's
    code = doc["fingerprints"]["code"]
    assert code["git"] is True and code["dirty"] is False
    assert doc["warnings"] == []
    md = (folder / "dossier.md").read_text()
    assert "- command: `{python} app.py` → exit 0" in md
    assert "✔ compare out/metrics.json" in md


def refingerprint(root: Path, path: str) -> None:
    """After an edit of *path*: the config declares its new sha256, and git commits both."""
    text = (root / "lockkit.toml").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith(f'"{path}" = "'))
    (root / "lockkit.toml").write_text(text.replace(line, f'"{path}" = "{sha(root / path)}"'))
    _git(root, "commit", "-q", "-am", f"{path} changed")


@pytest.mark.slow
def test_outside_the_tolerance_names_the_file_and_json_path(built, tmp_path):
    root = app_project(built, tmp_path)
    (root / "app.py").write_text(APP.replace("0.25 +", "0.26 +"))
    refingerprint(root, "app.py")
    run, doc, _ = run_verify(root)
    assert run.returncode == 1 and statuses(doc)["application"] == "failed"
    assert doc["first_error"].startswith("application: compare out/metrics.json: against "
                                         "reference/metrics.json: 2 of 5 numbers outside")
    assert "first difference $.loss: got 0.26, reference 0.2500001" in doc["first_error"]


@pytest.mark.slow
def test_failures_of_the_command_are_named(built, tmp_path):
    root = app_project(built, tmp_path)
    (root / "app.py").write_text("import time, sys\n"
                                 "if len(sys.argv) > 1: time.sleep(60)\n"
                                 "raise SystemExit('no GPU memory left')\n")
    refingerprint(root, "app.py")
    text = (root / "lockkit.toml").read_text()
    run, doc, _ = run_verify(root)
    assert run.returncode == 1
    assert doc["first_error"] == "application: command: exited 1: no GPU memory left"
    assert [c["passed"] for c in doc["checks"]["application"]["checks"]] == [False]
    # a command that outlives its timeout
    (root / "lockkit.toml").write_text(text.replace('"app.py"]', '"app.py", "hang"]')
                                       .replace("timeout = 60", "timeout = 2"))
    _git(root, "commit", "-q", "-am", "hangs")
    start = time.monotonic()
    run, doc, _ = run_verify(root)
    assert run.returncode == 1 and "the command timed out after 2s" in doc["first_error"]
    assert time.monotonic() - start < 60


@pytest.mark.slow
def test_outputs_must_be_written_by_the_command(built, tmp_path):
    root = app_project(built, tmp_path)
    text = (root / "lockkit.toml").read_text()
    (root / "lockkit.toml").write_text(text.replace('outputs = ["out/metrics.json"]',
                                                    'outputs = ["out/model.bin"]'))
    _git(root, "commit", "-q", "-am", "declares an output app.py never writes")
    run, doc, _ = run_verify(root)
    assert run.returncode == 1
    assert doc["first_error"] == "application: output out/model.bin: not written"
    # an output already in the copy (committed) could not be told from a written one
    (root / "out").mkdir()
    (root / "out" / "model.bin").write_text("stale")
    _git(root, "add", "out")
    _git(root, "commit", "-q", "-m", "committed output")
    run, doc, _ = run_verify(root)
    assert doc["first_error"].startswith("application: output out/model.bin exists before "
                                         "the command ran (it is committed)")


def test_an_uncommitted_fingerprinted_file_says_git_add_it(built, tmp_path):
    root = app_project(built, tmp_path, commit=False)
    _git(root, "init", "-q")
    _git(root, "add", "--", "lockkit.toml", "requirements.in", "locks", "reference")
    _git(root, "commit", "-q", "-m", "app.py forgotten")
    run, doc, _ = run_verify(root)
    assert run.returncode == 1
    assert doc["first_error"].startswith("application: fingerprint app.py: app.py: not "
                                         "committed: git add it")
    assert doc["fingerprints"]["files"][0]["uncommitted"] is True
    assert doc["fingerprints"]["code"]["dirty"] is True  # app.py is untracked: truly dirty


def test_application_none_waives_the_step_and_a_stale_lock_is_a_warning(built, tmp_path):
    root = app_project(built, tmp_path, verify='\n[verify]\napplication = "none"\n'
                       'reason = "a library: its own tests run in CI, nothing to serve"\n')
    with open(root / "requirements.in", "a") as fh:
        fh.write("filelock\n")  # an input changed after compile: the lock is stale
    run, doc, _ = run_verify(root, "--no-gpu")  # a CPU platform: --no-gpu changes nothing
    assert run.returncode == 0, doc["first_error"]
    assert doc["result"] == "passed" and statuses(doc)["gpu"] == "passed"
    app = next(s for s in doc["steps"] if s["name"] == "application")
    assert app["status"] == "skipped" and app["waived"] is True
    assert app["reason"] == ('application = "none": a library: its own tests run in CI, '
                             "nothing to serve")
    assert doc["steps"][ORDER.index("gpu")]["detail"]["no_gpu"].startswith("no effect")
    (warning,) = doc["warnings"]
    assert warning.startswith("pylock.linux-cpu.toml is stale against its inputs "
                              "(requirements.in: added filelock)")
    md = (root / "report" / "dossier.md").read_text()
    assert f"> **Warning:** {warning}" in md
    assert "> **Waived:** application: application = \"none\": a library" in md
    assert f"| {ORDER.index('application') + 1} | application | skipped (waived) |" in md
    assert f"warning: {warning}" in run.stderr and "waived: application" in run.stderr
    assert "skipped (waived)" in run.stdout


@pytest.mark.slow
def test_wheelhouse_build_warns_on_a_stale_lock(built, tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(built, root)
    with open(root / "requirements.in", "a") as fh:
        fh.write("filelock\n")
    # the wheelhouse is complete: the build hashes what is there and fetches nothing
    run = lockkit("wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                  "--cache-dir", str(tmp_path / "cache"), network=False)
    assert "warning: pylock.linux-cpu.toml is stale against its inputs (requirements.in: " \
           "added filelock)" in run.stderr


# --- the comparison ------------------------------------------------------------------------

def test_json_comparison_walks_everything_and_names_paths():
    ref = {"loss": 1.0, "n": 3, "tags": ["a", "b"], "inner": {"x": [1.0, 2.0]}}
    same = compare_values(json.loads(json.dumps(ref)), ref, atol=0, rtol=0)
    assert same.passed and same.numbers == 4 and same.max_abs_diff == 0
    close = compare_values({**ref, "loss": 1.0 + 1e-9}, ref, atol=1e-8, rtol=0)
    assert close.passed and close.worst_path == "$.loss"
    off = compare_values({**ref, "inner": {"x": [1.0, 2.5]}}, ref, atol=0.1, rtol=0.1)
    assert not off.passed and off.outside == 1
    assert (off.first or "").startswith("$.inner.x[1]: got 2.5")
    assert compare_values(0.5, 0.5000001, atol=0, rtol=1e-6).passed  # a bare number is JSON
    for got, words in (({**ref, "tags": ["a"]}, "$.tags: 1 items, the reference has 2"),
                       ({k: v for k, v in ref.items() if k != "n"},
                        "$.n: missing (the reference has it)"),
                       ({**ref, "extra": 1}, "$.extra: not in the reference"),
                       ({**ref, "n": True}, "$.n: got true, reference 3"),
                       ({**ref, "loss": float("nan")}, "$.loss: got nan, reference 1.0 "
                                                       "(not finite)")):
        assert compare_values(got, ref, atol=1, rtol=1).first == words


# --- the frictions ---------------------------------------------------------------------------

def test_diagnose_defaults_to_the_active_venv_then_python_on_path(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python, source = default_python({"VIRTUAL_ENV": str(venv), "PATH": ""})
    assert python == venv / "bin" / "python" and "VIRTUAL_ENV" in source
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    # cwd: a folder with no project and no .venv (the clone's own .venv, which set-up 1
    # makes, must not be what the test finds)
    python, source = default_python({"PATH": str(tmp_path / "bin")}, cwd=tmp_path)
    assert python == tmp_path / "bin" / "python" and source == "'python' on PATH"
    with pytest.raises(UsageError, match="no active venv"):
        default_python({"PATH": str(tmp_path / "nothing")}, cwd=tmp_path)
    # the command says which it used, and probes that one (no torch there: system fails)
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    run = subprocess.run([sys.executable, "-m", "lockkit", "diagnose", "--json",
                          "--absolute-paths", "--probe-timeout", "60"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert f"diagnose: {venv / 'bin' / 'python'} (the active venv" in run.stderr
    doc = json.loads(run.stdout)
    assert doc["python"] == str(venv / "bin" / "python")
    assert doc["steps"][0]["detail"]["interpreter_source"].startswith("the active venv")


# --- the real CPU torch, end to end --------------------------------------------------------

SMOKE = '''\
import json, torch
x = torch.arange(6, dtype=torch.float64).reshape(2, 3)
with open("out.json", "w") as fh:
    json.dump({"sum": float((x @ x.T).sum()), "torch": torch.__version__}, fh)
'''


def test_the_example_with_a_command_check_on_real_torch(copy_of):
    """The example's embedding check swapped for [verify.application]: a command that runs
    real torch 2.13.0 in the rebuilt venv and writes JSON compared with a reference."""
    root = copy_of()
    (root / "smoke.py").write_text(SMOKE)
    (root / "reference" / "smoke.json").write_text('{"sum": 83.0, "torch": "2.13.0+cpu"}')
    text = (root / "lockkit.toml").read_text()
    # the embedding tables out; [verify.extensions] and [verify.resume] stay
    text = text[:text.index("\n[verify.embedding]")] + text[text.index("\n[verify.extensions]"):]
    (root / "lockkit.toml").write_text(text + f'''
[verify.application]
command = ["{{python}}", "smoke.py"]
timeout = 120
[verify.application.compare]
"out.json" = {{ reference = "reference/smoke.json", atol = 0, rtol = 0, reason = "exact" }}
[verify.application.fingerprints]
"smoke.py" = "{sha(root / "smoke.py")}"
"reference/smoke.json" = "{sha(root / "reference" / "smoke.json")}"
''')
    run = lockkit("verify", "--project", str(root), "--platform", "linux-cpu", "--report-dir",
                  str(root / "report"), network=False)
    assert (root / "report" / "dossier.json").is_file(), run.stderr
    doc = json.loads((root / "report" / "dossier.json").read_text())
    assert run.returncode == 0, doc["first_error"]
    assert set(statuses(doc).values()) == {"passed"}
    app = doc["checks"]["application"]
    assert app["kind"] == "command" and app["max_abs_diff"] == 0.0
    assert doc["embedding_config"] is None and doc["application_config"]["timeout"] == 120
