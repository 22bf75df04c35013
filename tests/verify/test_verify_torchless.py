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
    assert steps["system"]["detail"]["torch"].startswith("not checked: the platform has no "
                                                         "torch")
    gpu = steps["gpu"]
    assert gpu["status"] == "skipped" and gpu["waived"]
    assert gpu["reason"].startswith("the platform has no torch ([torch] absent or empty) "
                                    "and its lock names none")
    assert steps["extensions"]["status"] == "passed"
    assert steps["application"]["status"] == steps["resume"]["status"] == "skipped"
    assert doc["system"]["python"] and doc["system"]["os"]  # what there is to record
    assert not [c for c in doc["commands"] if "gpu_probe.py" in " ".join(c["argv"])]
    assert "no torch" in (root / "report" / "dossier.md").read_text()


def test_no_gpu_changes_nothing_there(tmp_path, indexes):
    root = built_service(tmp_path, indexes)
    code, doc, out = verify(root, "--no-gpu")
    assert code == 0 and doc["result"] == "passed", (doc["first_error"], out)
