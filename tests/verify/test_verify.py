"""`lockkit verify` and `lockkit diagnose`: real rebuilds, real probes, the dossier."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from lockkit.cli import main
from lockkit.config.project import load_project
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import load_platforms
from lockkit.report.model import Dossier
from lockkit.steps.context import Options as VerifyOptions
from lockkit.verify.run import verify as run_verify
from tests.support.failing_host import FailingHost
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer
from tests.support.project import lockkit
from tests.support.pytorch_index import R2, PyTorchIndex

ORDER = ["host", "venv", "install", "pip-check", "inventory", "system", "gpu", "extensions",
         "application", "resume"]


def statuses(doc: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in doc["steps"]}


def verify(project: Path, *extra: str, network: bool = False) -> tuple[int, dict, Path]:
    reports = project / "report"
    run = lockkit("verify", "--project", str(project), "--platform", "linux-cpu",
                  "--report-dir", str(reports), *extra, network=network)
    doc = json.loads((reports / "dossier.json").read_text())
    return run.returncode, doc, reports


def test_offline_verify_of_the_example_passes_every_step(example):
    run = lockkit("verify", "--project", str(example), "--platform", "linux-cpu",
                  network=False)
    assert run.returncode == 0, run.stdout + run.stderr
    (folder,) = (example / ".lockkit" / "reports" / "linux-cpu").iterdir()
    doc = json.loads((folder / "dossier.json").read_text())
    assert [s["name"] for s in doc["steps"]] == ORDER
    assert set(statuses(doc).values()) == {"passed"} and doc["result"] == "passed"
    assert doc["first_error"] is None and doc["schema_version"] == 2
    assert doc["lock_sha256"] and doc["platform"] == "linux-cpu"
    assert doc["inventory"]["missing"] == doc["inventory"]["extra"] == []
    assert doc["inventory"]["mismatched"] == []
    torch = doc["system"]["torch"]
    assert torch["version"] == "2.13.0+cpu" and torch["cuda"] is None and torch["hip"] is None
    assert doc["checks"]["gpu"]["checks"]["matmul"]["status"] == "passed"
    # the GPU step passed: torch's collect_env (a torch import of its own) did not run
    assert doc["system"]["collect_env"] == {"skipped": "run only when the gpu step fails"}
    assert not any("--collect-env" in c["argv"] for c in doc["commands"])
    app = doc["checks"]["application"]
    assert app["passed"] and app["max_abs_diff"] is not None
    steps_of_commands = [c["step"] for c in doc["commands"]]
    assert steps_of_commands == sorted(steps_of_commands, key=ORDER.index)  # in order
    install = next(c for c in doc["commands"] if c["step"] == "install")
    assert "--no-config" in install["argv"] and "--offline" in install["argv"]
    assert "torch==2.13.0+cpu" in (folder / "installed-after.txt").read_text()
    md = (folder / "dossier.md").read_text()
    app_row = f"| {ORDER.index('application') + 1} | application | passed |"
    assert "**Result: passed**" in md and app_row in md
    assert "torch.utils.collect_env: not recorded (run only when the gpu step fails)" in md
    assert "verify linux-cpu: passed" in run.stdout
    assert "s3cret" not in (folder / "dossier.json").read_text()
    # issue 36: the application's and resume's commands and logs name no machine path
    system = _system_paths(doc)
    assert _absolute_paths({k: v for k, v in doc.items() if k != "roots"}) == []
    logs = {p.name: p.read_text() for p in folder.iterdir() if p.suffix in (".log", ".txt")}
    assert "application.log" in logs and _absolute_paths(logs) == []
    assert set(_absolute_paths(md.split("\n- lockkit version:")[1].splitlines())) <= system


def test_plain_pip_procedure_also_passes(copy_of):
    code, doc, _ = verify(copy_of(), "--installer", "pip")
    assert code == 0, doc["first_error"]
    install = next(c for c in doc["commands"] if c["step"] == "install")
    assert install["argv"][1:4] == ["-m", "pip", "install"]
    assert "--require-hashes" in install["argv"]
    assert "pip" in doc["inventory"]["seed"]


def test_tampered_weights_fail_the_application_step(copy_of):
    project = copy_of()
    weights = project / "model" / "weights.npz"
    data = bytearray(weights.read_bytes())
    data[-100] ^= 0x01
    weights.unlink()
    weights.write_bytes(bytes(data))
    code, doc, _ = verify(project)
    assert code == 1
    assert statuses(doc)["application"] == "failed"
    assert doc["first_error"].startswith("application: fingerprint model/weights.npz")
    assert all(statuses(doc)[s] == "passed" for s in ORDER[:ORDER.index("application")])


def test_reference_outside_tolerance_names_the_worst_id(copy_of):
    project = copy_of()
    ref = project / "reference" / "embeddings.npy"
    values = np.load(ref)
    values[3, 0] += 0.01
    ref.unlink()
    np.save(ref, values)
    import hashlib

    text = (project / "lockkit.toml").read_text()
    old = next(line for line in text.splitlines() if line.startswith('"reference/embeddings.npy"'))
    new = f'"reference/embeddings.npy" = "{hashlib.sha256(ref.read_bytes()).hexdigest()}"'
    (project / "lockkit.toml").write_text(text.replace(old, new))
    code, doc, _ = verify(project)
    assert code == 1 and statuses(doc)["application"] == "failed"
    ids = json.loads((project / "reference" / "ids.json").read_text())
    assert ids[3] in doc["first_error"] and "tolerance" in doc["first_error"]


def test_no_gpu_on_a_cpu_platform_skips_nothing(copy_of):
    """Issue 14: --no-gpu skips GPU work only; linux-cpu has none, so the gpu step's CPU
    checks and the application still run (it used to skip both: incomplete)."""
    import xml.etree.ElementTree as ET

    project = copy_of()
    code, doc, _ = verify(project, "--no-gpu", "--junit", str(project / "junit.xml"))
    assert code == 0 and doc["result"] == "passed", doc["first_error"]
    assert statuses(doc)["gpu"] == "passed" and statuses(doc)["application"] == "passed"
    assert doc["steps"][ORDER.index("gpu")]["detail"]["no_gpu"].startswith("no effect")
    suite = ET.parse(project / "junit.xml").getroot().find("testsuite")
    assert [c.get("name") for c in suite.iter("testcase")] == ORDER
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        str(len(ORDER)), "0", "0")


def test_untracked_file_is_not_in_the_clean_copy(copy_of):
    """In git, the application runs on committed files only: an untracked one is absent."""
    project = copy_of()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A", "."], check=True)
    subprocess.run(["git", "-C", str(project), "rm", "-q", "--cached", "embed.py"], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "-m", "example"], check=True)
    code, doc, _ = verify(project)
    assert code == 1 and statuses(doc)["application"] == "failed"
    assert "embed.py" in doc["first_error"]
    assert "embed.py: not committed: git add it" in doc["first_error"]  # not "missing"
    git = doc["fingerprints"]["code"]
    assert git["git"] is True and len(git["revision"]) == 40 and git["dirty"] is True


# --- failure paths with fake torch builds ------------------------------------------------------

@pytest.fixture
def fake_project(tmp_path):
    """A project whose PyTorch index (the replica of the real one) serves one fake torch
    build, chosen by the test."""
    pt = PyTorchIndex(tmp_path / "pytorch")
    server = IndexServer(tmp_path / "index")
    with pt, server:
        def make(platform: str, **fake) -> Path:
            local = fake.pop("local")
            pt.put(local, build_fake_torch(tmp_path / "built", version=f"2.5.1+{local}", **fake))
            server.index("/simple")
            root = tmp_path / "proj"
            root.mkdir()
            (root / "requirements.in").write_text("torch==2.5.1\n")
            (root / "lockkit.toml").write_text(
                f'index-url = "{server.url}/simple"\nplatforms = ["{platform}"]\n'
                + mirrors(pt))
            assert main(["compile", "--project", str(root)]) == 0
            assert main(["wheelhouse", "build", "--project", str(root), "--platform", platform,
                         "--cache-dir", str(tmp_path / "cache")]) == 0
            return root
        yield make


def mirrors(pt: PyTorchIndex) -> str:
    return "[mirrors]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())


def verify_fake(root: Path, platform: str, *extra: str) -> tuple[int, dict]:
    run = lockkit("verify", "--project", str(root), "--platform", platform, "--report-dir",
                  str(root / "report"), *extra, network=False)
    return run.returncode, json.loads((root / "report" / "dossier.json").read_text())


def test_fake_cuda_build_on_a_gpu_less_machine_refuses_cpu_fallback(fake_project):
    root = fake_project("linux-cu126", local="cu126", cuda="12.6", devices=0)
    code, doc = verify_fake(root, "linux-cu126")
    assert code == 1
    assert statuses(doc)["gpu"] == "failed" and statuses(doc)["application"] == "not-run"
    assert "refuses a CPU fallback" in doc["first_error"]
    assert doc["system"]["torch"]["cuda"] == "12.6" and doc["system"]["torch"]["hip"] is None


def test_cuda_lock_that_installed_a_cpu_build_fails_the_build_check(fake_project):
    root = fake_project("linux-cu126", local="cu126", cuda=None, devices=0)
    code, doc = verify_fake(root, "linux-cu126")
    assert code == 1 and statuses(doc)["gpu"] == "failed"
    assert doc["first_error"].startswith("gpu: build")
    assert statuses(doc)["application"] == "not-run"


def test_no_gpu_on_a_gpu_platform_is_incomplete_never_passed(fake_project):
    """On a CUDA platform --no-gpu skips the gpu step and the application (it would run on
    that GPU, against references made there): incomplete, whatever else passed."""
    root = fake_project("linux-cu126", local="cu126", cuda="12.6", devices=0)
    (root / "lockkit.toml").write_text((root / "lockkit.toml").read_text() + (
        '[verify]\napplication = "none"\nreason = "a waiver does not stand in for a GPU"\n'))
    code, doc = verify_fake(root, "linux-cu126", "--no-gpu")
    assert code == 1 and doc["result"] == "incomplete"
    assert statuses(doc)["system"] == "passed", doc["first_error"]
    assert statuses(doc)["gpu"] == statuses(doc)["application"] == "skipped"
    assert doc["steps"][-1]["reason"] == "gpu skipped"


@pytest.mark.slow
def test_a_hanging_probe_fails_its_step_with_a_timeout(fake_project):
    root = fake_project("linux-cpu", local="cpu", cuda=None, hang=True)
    code, doc = verify_fake(root, "linux-cpu", "--probe-timeout", "3")
    assert code == 1 and statuses(doc)["system"] == "failed"
    assert "timed out after 3s" in doc["first_error"]
    assert statuses(doc)["gpu"] == statuses(doc)["application"] == "not-run"


def test_a_verify_that_does_not_pass_ends_as_every_failure_does(fake_project, capsys):
    """Before: ``lockkit: verify incomplete: ...``, unlike every other failure."""
    root = fake_project("linux-cu126", local="cu126", cuda="12.6", devices=0)
    capsys.readouterr()
    assert main(["verify", "--project", str(root), "--platform", "linux-cu126",
                 "--report-dir", str(root / "report"), "--no-gpu"]) == 1
    err = capsys.readouterr().err
    # off a terminal, the install is one phase line (on one, the bar counts the packages)
    packages = len(Lock.read(root / "locks" / "pylock.linux-cu126.toml").pylock.packages)
    assert [line for line in err.splitlines() if "installing" in line] == [
        f"linux-cu126: installing {packages} packages..."]
    last, hint = err.strip().splitlines()[-2:]
    assert last.startswith("lockkit: error: verify incomplete: "), last
    assert hint == f"hint: every step's result and output: {root / 'report' / 'dossier.md'}"


def test_the_install_step_counts_the_packages_in_the_venv_as_they_land(fake_project, tmp_path):
    """What verify's bar shows during the install: ``installing done/total``, where done
    only grows and ends at the lock's package count once the installer is through."""
    root = fake_project("linux-cpu", local="cpu", cuda=None)
    seen: list[tuple[str, int, int]] = []
    outcome = run_verify(VerifyOptions(
        project=load_project(root), platform=load_platforms(None)["linux-cpu"],
        cache_root=tmp_path / "cache", on_progress=lambda *told: seen.append(told)))
    assert outcome.dossier.step("install").status == "passed"
    total = len(Lock.read(root / "locks" / "pylock.linux-cpu.toml").pylock.packages)
    assert {(what, of) for what, _, of in seen} == {("installing", total)}
    done = [n for _, n, _ in seen]
    assert done == sorted(done) and done[-1] == total


def test_verify_json_prints_the_dossier_document(fake_project):
    """`verify --json` prints dossier.json's document on stdout (no table); status lines
    stay on stderr; the document loads back into the model unchanged."""
    # a CUDA platform: --no-gpu skips GPU work only, and a CPU platform has none (issue 14)
    root = fake_project("linux-cu126", local="cu126", cuda="12.6", devices=0)
    run = lockkit("verify", "--project", str(root), "--platform", "linux-cu126", "--report-dir",
                  str(root / "report"), "--json", "--no-gpu", network=False)
    assert run.returncode == 1  # nothing on the device: incomplete
    doc = json.loads(run.stdout)
    assert doc == json.loads((root / "report" / "dossier.json").read_text())
    assert Dossier.from_dict(doc).to_dict() == doc
    assert doc["result"] == "incomplete" and statuses(doc)["gpu"] == "skipped"
    assert statuses(doc)["system"] == "passed", doc["first_error"]
    assert "dossier:" in run.stderr and "verify incomplete" in run.stderr
    host = [c for c in doc["commands"] if c["step"] == "host"]
    assert any(c["argv"][:2] == [str(Path(c["argv"][0])), "-I"] for c in host)  # recorded


def _shared(report: Path) -> dict[str, str]:
    """dossier.json, dossier.md and JUnit of *report* as a second machine would compare them:
    the roots' listing left out, every number (timings, timestamps) written N."""
    doc = json.loads((report / "dossier.json").read_text())
    md = [line for line in (report / "dossier.md").read_text().splitlines()
          if not line.startswith("- paths relative to: ")]
    junit = [line for line in (report / "junit.xml").read_text().splitlines()
             if 'name="root.' not in line]
    texts = {"json": json.dumps({k: v for k, v in doc.items() if k != "roots"}),
             "md": "\n".join(md), "junit": "\n".join(junit)}
    return {name: re.sub(r"\d+", "N", text) for name, text in texts.items()}


def test_two_copies_of_a_project_verify_to_dossiers_without_path_noise(fake_project, tmp_path):
    """Issue 26: one lock verified from two project folders (their venvs, wheelhouses and
    temp folders apart, as on two machines). The documents write paths relative to the
    roots, listed once, so they differ in no path and ``lockkit diff`` finds nothing."""
    first = fake_project("linux-cpu", local="cpu", cuda=None)
    second = tmp_path / "elsewhere" / "proj"
    shutil.copytree(first, second)
    docs = [verify_fake(root, "linux-cpu", "--junit", str(root / "report" / "junit.xml"))[1]
            for root in (first, second)]
    assert _shared(first / "report") == _shared(second / "report")
    assert [d["roots"]["project"] for d in docs] == [str(first), str(second)]
    assert docs[0]["roots"]["tmp"] != docs[1]["roots"]["tmp"]
    assert docs[1]["lock"] == "<project>/locks/pylock.linux-cpu.toml"
    assert docs[1]["wheelhouse"] == "<wheelhouse>"
    assert docs[1]["steps"][ORDER.index("venv")]["detail"]["path"] == "<venv>"
    for doc in docs:  # the roots' own paths are in the listing only
        rest = json.dumps({k: v for k, v in doc.items() if k != "roots"})
        assert [path for path in doc["roots"].values() if path in rest] == []
    run = lockkit("diff", str(first / "report"), str(second / "report"))
    assert run.returncode == 0 and run.stdout.startswith("no differences"), run.stdout


def test_absolute_paths_writes_the_paths_as_they_are(fake_project):
    root = fake_project("linux-cpu", local="cpu", cuda=None)
    junit = root / "junit.xml"
    _, doc = verify_fake(root, "linux-cpu", "--absolute-paths", "--junit", str(junit))
    assert "roots" not in doc
    assert doc["lock"] == str(root / "locks" / "pylock.linux-cpu.toml")
    assert doc["wheelhouse"] == str(root / "wheelhouse" / "linux-cpu")
    venv = doc["steps"][ORDER.index("venv")]["detail"]["path"]
    assert Path(venv).is_absolute() and Path(venv, "bin", "python").exists()
    md = (root / "report" / "dossier.md").read_text()
    assert "paths relative to" not in md and "<project>" not in md and str(root) in md
    assert 'name="root.' not in junit.read_text()


def test_inventory_that_differs_from_the_lock(tmp_path):
    """A wheel that smuggles in a second distribution: the venv no longer matches the lock."""
    pt = PyTorchIndex(tmp_path / "pytorch")
    server = IndexServer(tmp_path / "index")
    with pt, server:
        default = server.index("/simple")
        pt.put("cpu", build_fake_torch(tmp_path / "built", version="2.5.1+cpu", cuda=None))
        default.add("filelock", "3.16.1", files={
            "filelock-3.16.1.data/purelib/sneaky-1.0.dist-info/METADATA":
                "Metadata-Version: 2.1\nName: sneaky\nVersion: 1.0\n",
            "filelock-3.16.1.data/purelib/sneaky-1.0.dist-info/WHEEL":
                "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            "filelock-3.16.1.data/purelib/sneaky-1.0.dist-info/RECORD": ""})
        root = tmp_path / "proj"
        root.mkdir()
        (root / "requirements.in").write_text("torch==2.5.1\nfilelock\n")
        (root / "lockkit.toml").write_text(f'index-url = "{server.url}/simple"\n' + mirrors(pt))
        assert main(["compile", "--project", str(root)]) == 0
        assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                     "--cache-dir", str(tmp_path / "cache")]) == 0
    code, doc = verify_fake(root, "linux-cpu")
    assert code == 1 and statuses(doc)["inventory"] == "failed"
    assert "sneaky==1.0" in doc["first_error"]
    assert all(statuses(doc)[s] == "not-run" for s in ("system", "gpu", "application"))


def test_usage_errors_exit_2(tmp_path, project):
    assert main(["verify", "--project", str(project), "--platform", "linux-cpu"]) == 2
    assert main(["verify", "--project", str(project), "--platform", "nope"]) == 2


# --- diagnose ------------------------------------------------------------------------------

def test_diagnose_real_cpu_torch(torch_venv):
    run = lockkit("diagnose", "--python", str(torch_venv), "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads(run.stdout)
    assert statuses(doc) == {"system": "passed", "gpu": "passed"}
    assert doc["system"]["torch"]["version"] == "2.13.0+cpu"
    assert doc["steps"][1]["detail"]["expect_source"] == "the torch build found"


def test_diagnose_expecting_cuda_on_cpu_torch_fails(torch_venv):
    run = lockkit("diagnose", "--python", str(torch_venv), "--expect", "cuda")
    assert run.returncode == 1
    assert "gpu" in run.stdout and "failed" in run.stdout


def test_a_second_verify_links_torch_from_uv_and_reuses_its_bytecode(copy_of, tmp_path):
    """The venv is new every run, in <cache>/verify/venvs/<platform>; uv links the wheels
    it unpacked before (one path per content) and the interpreter keeps its bytecode in
    <cache>/verify/pyc. A run that finds the folder held by another uses a temp venv."""
    import fcntl
    import os

    cache = Path(os.environ["LOCKKIT_CACHE_DIR"])  # the session's (conftest)
    project = copy_of()
    code, doc, reports = verify(project, "--absolute-paths")
    assert code == 0, doc["first_error"]
    shutil.rmtree(reports)
    venv = next(s for s in doc["steps"] if s["name"] == "venv")["detail"]["path"]
    assert Path(venv) == cache / "verify" / "venvs" / "linux-cpu"
    # pycache_prefix mirrors the source's folder: <pyc>/<venv path>/.../torch/__init__.*.pyc
    assert list((cache / "verify" / "pyc").rglob("site-packages/torch/__init__.cpython-*.pyc"))
    install = next(c for c in doc["commands"] if c["step"] == "install")
    assert "--require-hashes" in install["argv"]
    links = [Path(a) for a in install["argv"] if a.startswith(str(cache / "verify" / "wheels"))]
    assert len(links) == doc["inventory"]["expected"]  # one folder per wheel
    (wheel,) = [w for d in links for w in d.glob("torch-*.whl")]
    assert wheel.parent.name == hashlib.sha256(wheel.read_bytes()).hexdigest()
    with open(cache / "verify" / "venvs" / "linux-cpu.lock", "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        code, doc, _ = verify(project, "--absolute-paths")
    assert code == 0, doc["first_error"]
    venv = next(s for s in doc["steps"] if s["name"] == "venv")["detail"]["path"]
    assert not Path(venv).is_relative_to(cache)  # a temp venv: the folder was taken


def test_verify_leaves_uvs_default_cache_untouched(tmp_path):
    pt = PyTorchIndex(tmp_path / "pytorch")
    server = IndexServer(tmp_path / "index")
    with pt, server:
        pt.put("cpu", build_fake_torch(tmp_path / "built", version="2.5.1+cpu", cuda=None))
        server.index("/simple")
        root = tmp_path / "proj"
        root.mkdir()
        (root / "requirements.in").write_text("torch==2.5.1\n")
        mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())
        (root / "lockkit.toml").write_text(f'index-url = "{server.url}/simple"\n'
                                           f'platforms = ["linux-cpu"]\n[mirrors]\n{mirrors}')
        assert main(["compile", "--project", str(root)]) == 0
        assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                     "--cache-dir", str(tmp_path / "cache")]) == 0
    user_cache = tmp_path / "user-uv-cache"
    user_cache.mkdir()
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "UV_CACHE_DIR": str(user_cache), "TMPDIR": str(temp)}
    run = subprocess.run([sys.executable, "-m", "lockkit", "verify", "--project", str(root),
                          "--platform", "linux-cpu", "--report-dir", str(root / "report")],
                         capture_output=True, text=True, timeout=900, env=env)
    doc = json.loads((root / "report" / "dossier.json").read_text())
    steps = {s["name"]: s["status"] for s in doc["steps"]}
    assert steps["install"] == "passed", run.stderr
    assert list(user_cache.iterdir()) == []  # the user's uv cache: not one file
    assert list(temp.iterdir()) == []  # the verify-scoped cache went with the temp folder



# an absolute POSIX path (a "/" that starts a word, not one inside a URL, a relative path or
# a glob) or a Windows drive path; URLs are taken out of the text first
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")
_ABSOLUTE = re.compile(r"(?<![\w.~/<>:*-])/[\w.~@-]+(?:/[\w.~@+-]*)*|\b[A-Za-z]:\\")


def _absolute_paths(value: object) -> list[str]:
    """The absolute paths in every string of a JSON-shaped *value* (keys too)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _absolute_paths(k) + _absolute_paths(v)]
    if isinstance(value, list):
        return [p for v in value for p in _absolute_paths(v)]
    return _ABSOLUTE.findall(_URL.sub("", value)) if isinstance(value, str) else []


def _system_paths(doc: dict) -> set[str]:
    """The absolute paths that the system layer exists to record (the machine's compilers,
    the driver files looked for), taken out of *doc*."""
    return {p for key in ("toolchain", "driver") for p in _absolute_paths(doc["system"].pop(key))}


def test_a_verify_leaves_no_absolute_path_outside_the_roots(fake_project, tmp_path):
    """Issue 36: every path a verify writes is under a named root: lockkit's own uv and
    probe scripts, the interpreter the venv was built from, and the report folder too
    (given outside the project). The roots' listing is the only place a machine's folders
    are named, in dossier.json, dossier.md and JUnit alike; the one exception is what the
    system layer exists to record, where the machine's compilers and driver files are."""
    root = fake_project("linux-cpu", local="cpu", cuda=None)
    report = tmp_path / "out" / "report"
    run = lockkit("verify", "--project", str(root), "--platform", "linux-cpu",
                  "--report-dir", str(report), "--junit", str(report / "junit.xml"),
                  network=False)
    assert run.returncode == 1  # the fake torch fails its gpu step: error lines are written
    doc = json.loads((report / "dossier.json").read_text())
    roots = doc.pop("roots")
    system = _system_paths(doc)
    assert _absolute_paths(doc) == []
    assert {"project", "venv", "tmp", "report", "lockkit", "tools", "python"} <= set(roots)
    argv = [c["argv"] for c in doc["commands"]]
    assert {a[0] for a in argv if Path(a[0]).name == "uv"} == {"<tools>/uv"}
    assert "<lockkit>/probes/scripts/system_probe.py" in {arg for a in argv for arg in a}
    assert doc["command_line"][-4:] == ["--report-dir", "<report>", "--junit",
                                        "<report>/junit.xml"]
    md = [line for line in (report / "dossier.md").read_text().splitlines()
          if not line.startswith("- paths relative to: ")]
    assert set(_absolute_paths(md)) <= system
    texts = [v for el in ET.parse(report / "junit.xml").iter()
             if not el.get("name", "").startswith("root.")
             for v in (*el.attrib.values(), el.text or "")]
    assert set(_absolute_paths(texts)) <= system


def test_a_verify_whose_r2_host_answers_503_installs_from_the_origin_and_says_so(
        fake_project, tmp_path):
    """No wheelhouse: the install step fetches the lock's URLs. The lock pins the R2 host,
    which answers 503 (issue 36): the same path comes from download.pytorch.org, hashed
    against the lock, and the install step's record names the host that failed."""
    root = fake_project("linux-cpu", local="cpu", cuda=None)
    shutil.rmtree(root / "wheelhouse")
    down = FailingHost("503")
    try:
        config = root / "lockkit.toml"
        text = config.read_text()
        r2 = next(line for line in text.splitlines() if line.startswith(f'"{R2}"'))
        config.write_text(text.replace(r2, f'"{R2}" = "{down.url}/r2"'))
        main(["verify", "--project", str(root), "--platform", "linux-cpu", "--report-dir",
              str(root / "report"), "--cache-dir", str(tmp_path / "fresh-cache")])
    finally:
        down.close()
    doc = json.loads((root / "report" / "dossier.json").read_text())
    assert any(p.startswith("/r2/whl/cpu/torch-") for p in down.requests)
    install = next(s for s in doc["steps"] if s["name"] == "install")
    assert install["status"] == "passed"  # (the fake torch fails the gpu step later)
    (twin,) = install["detail"]["twin_hosts"]
    assert twin.startswith("torch-2.5.1+cpu-") and "sha256 checked" in twin
    assert f"the mirror of {R2} failed: HTTP 503" in twin
