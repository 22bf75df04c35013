"""Issue 26, item 3: ``verify`` of a platform without torch (examples/service).

Nothing of torch is locked, so there is nothing to check on a device: the system step
records the interpreter and OS, the gpu step is skipped saying why, and that skip blocks
nothing, so a run whose other steps pass (the service's application and resume declared
none) is ``passed``, never ``incomplete``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.project import built_service, lockkit


def verify(root: Path, *extra: str) -> tuple[int, dict, str]:
    run = lockkit("verify", "--project", str(root), "--platform", "linux-service",
                  "--report-dir", str(root / "report"), *extra, network=False)
    doc = json.loads((root / "report" / "dossier.json").read_text())
    return run.returncode, doc, run.stdout + run.stderr


def test_verify_of_a_torchless_platform_passes_without_a_device_check(tmp_path, indexes):
    root = built_service(tmp_path, indexes)
    code, doc, out = verify(root)
    steps = {s["name"]: s for s in doc["steps"]}
    assert code == 0 and doc["result"] == "passed", (doc["first_error"], out)
    assert steps["system"]["status"] == "passed"
    assert steps["system"]["detail"]["torch"] == "not checked: no torch in this lock"
    gpu = steps["gpu"]
    assert gpu["status"] == "skipped" and gpu["waived"]
    assert gpu["reason"].startswith("no torch in this lock")
    assert steps["extensions"]["status"] == "passed"
    assert steps["application"]["status"] == steps["resume"]["status"] == "skipped"
    assert doc["system"]["python"] and doc["system"]["os"]  # what there is to record
    assert not [c for c in doc["commands"] if "gpu_probe.py" in " ".join(c["argv"])]
    assert "no torch" in (root / "report" / "dossier.md").read_text()


def test_no_gpu_changes_nothing_there(tmp_path, indexes):
    root = built_service(tmp_path, indexes)
    code, doc, out = verify(root, "--no-gpu")
    assert code == 0 and doc["result"] == "passed", (doc["first_error"], out)


def test_a_lock_without_torch_on_linux_cpu_verifies_saying_no_torch_in_this_lock(
        tmp_path, indexes):
    """Issue 42: a service with no torch, locked on ``linux-cpu`` (a platform with torch),
    failed the system step ("import torch failed: ModuleNotFoundError"). Its lock of tiny
    wheels from the loopback default index now verifies: the torch, gpu, extensions and
    resume steps say "no torch in this lock" and none of them fails; the declared
    extension is imported without torch; the dossier says so."""
    from lockkit.cli import main

    root = tmp_path / "svc"
    root.mkdir()
    (root / "requirements.in").write_text("jinja2\nfilelock\n")
    (root / "lockkit.toml").write_text(indexes.config(extra=(
        '[verify]\napplication = "none"\nreason = "a service checked by its own tests"\n'
        '[verify.extensions]\nmodules = [{ module = "filelock", smoke = '
        '"torch is None and module.__version__ == \'3.16.1\'" }]\n')))
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) == 0
    lock = (root / "locks" / "pylock.linux-cpu.toml").read_text()
    assert 'name = "jinja2"' in lock and 'name = "torch"' not in lock
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(tmp_path / "cache"), "--no-tools"]) == 0
    run = lockkit("verify", "--project", str(root), "--platform", "linux-cpu",
                  "--report-dir", str(root / "report"), network=False)
    doc = json.loads((root / "report" / "dossier.json").read_text())
    steps = {s["name"]: s for s in doc["steps"]}
    assert run.returncode == 0 and doc["result"] == "passed", (doc["first_error"], run.stderr)
    assert steps["system"]["status"] == "passed"
    assert steps["system"]["detail"]["torch"] == "not checked: no torch in this lock"
    for name in ("gpu", "resume"):
        assert steps[name]["status"] == "skipped" and steps[name]["waived"], steps[name]
        assert steps[name]["reason"].startswith("no torch in this lock: "), steps[name]
    ext = steps["extensions"]
    assert ext["status"] == "passed" and ext["detail"]["filelock"] == "passed", ext
    assert ext["detail"]["torch"] == "not imported: no torch in this lock"
    dossier = (root / "report" / "dossier.md").read_text()
    assert "**Result: passed**" in dossier
    assert "> **Waived:** gpu: no torch in this lock: nothing to check on a device" in dossier
