"""``[verify.extensions]``: the modules imported and smoke-called inside the venv (never in
lockkit's process), the native-code list, and the example passing end to end with the
real CPU torch. (The table, checked at load: ``tests/config/test_extensions.py``.)"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from lockkit._internal.redact import NO_SECRETS
from lockkit.probes import hang
from lockkit.probes.probe import run_lines
from lockkit.report import markdown
from lockkit.report.extrecords import ExtensionCheck, ExtensionsResult, NativePackage
from lockkit.report.model import Dossier
from lockkit.verify.checks.extensions.step import _checks, native_packages
from tests.support.fake_torch import build_fake_extension, build_fake_torch
from tests.support.index_server import build_wheel
from tests.support.probes import venv_with
from tests.support.project import lockkit

KERNEL = "CUDA error: no kernel image is available for execution on the device"


# --- the probe, in a venv -------------------------------------------------------------

@pytest.fixture
def ext_venv(tmp_path, numpy_wheel):
    def make(**ext: Any) -> Path:
        wheels = tmp_path / "wheels"
        built = [build_fake_torch(wheels, version="2.5.1+cu126", cuda="12.6", devices=1),
                 build_fake_extension(wheels, **ext), numpy_wheel]
        return venv_with(tmp_path / "venv", built)
    return make


def probe(python: Path, tmp_path: Path, specs: list[dict[str, str]], device: str = "cuda:0",
          timeout: float = 60) -> tuple[tuple[ExtensionCheck, ...], str | None]:
    checks, ended, _ = probe_stderr(python, tmp_path, specs, device, timeout)
    return checks, ended


def probe_stderr(python: Path, tmp_path: Path, specs: list[dict[str, str]],
                 device: str = "cuda:0", timeout: float = 60
                 ) -> tuple[tuple[ExtensionCheck, ...], str | None, str]:
    spec_file = tmp_path / "specs.json"
    spec_file.write_text(json.dumps(specs))
    lines, ended, stderr = run_lines(python, "gpu_probe.py",
                                     ["--extensions", str(spec_file), "--device", device],
                                     timeout)
    return _checks([s["module"] for s in specs], lines, ended, device), ended, stderr


TRUE = "module.add_one is not None"


def test_an_import_and_a_smoke_call_pass(ext_venv, tmp_path):
    checks, ended = probe(ext_venv(), tmp_path, [{"module": "fake_ext", "smoke": TRUE},
                                                 {"module": "json"}])
    assert ended is None and [c.status for c in checks] == ["passed", "passed"]
    assert checks[0].device == "cuda:0" and checks[0].value == "True"
    assert checks[0].file and checks[0].file.endswith("fake_ext/__init__.py")
    assert checks[0].compiled is False


def test_an_op_failing_on_the_device_fails_its_smoke(ext_venv, tmp_path):
    python = ext_venv(op_error=KERNEL)
    smoke = "module.add_one(torch.ones(1, device=device))"
    checks, _ = probe(python, tmp_path, [{"module": "fake_ext", "smoke": smoke}])
    assert checks[0].status == "failed" and checks[0].stage == "smoke"
    assert KERNEL in (checks[0].error or "") and "on cuda:0" in (checks[0].error or "")
    cpu, _ = probe(python, tmp_path, [{"module": "fake_ext", "smoke": smoke}], device="cpu")
    assert cpu[0].status == "passed"  # the same op on the CPU works: the device is the cause


def test_an_import_failure_and_a_false_smoke_are_named(ext_venv, tmp_path):
    checks, _ = probe(ext_venv(import_error="libcudart.so.12: cannot open shared object file"),
                      tmp_path, [{"module": "fake_ext"}, {"module": "json", "smoke": "1 == 2"}])
    assert checks[0].stage == "import" and "libcudart.so.12" in (checks[0].error or "")
    assert checks[1].stage == "smoke" and "returned False" in (checks[1].error or "")


@pytest.mark.slow
def test_a_hanging_smoke_names_its_module_and_keeps_the_others(ext_venv, tmp_path):
    specs = [{"module": "json"}, {"module": "fake_ext", "smoke": "__import__('time').sleep(60)"},
             {"module": "os"}]
    start = time.monotonic()
    checks, ended, stderr = probe_stderr(ext_venv(), tmp_path, specs, timeout=5)
    assert time.monotonic() - start < 5 + 10
    assert ended == "timed out after 5s"
    assert [c.status for c in checks] == ["passed", "failed", "not-run"]
    assert "fake_ext: the extensions probe timed out after 5s" in (checks[1].error or "")
    stalled = hang.explain(stderr)  # SIGABRT + -X faulthandler: every thread's stack
    assert stalled is not None and 'File "<smoke of fake_ext>", line 1' in stalled.stacks


# --- native code ----------------------------------------------------------------------

def test_native_packages_from_tags_or_shared_libraries(tmp_path):
    build_wheel(tmp_path, "pure", "1.0")
    build_wheel(tmp_path, "compiled", "2.0", tag="cp311-cp311-manylinux_2_28_x86_64",
                files={"compiled/_core.cpython-311-x86_64-linux-gnu.so": "ELF"})
    build_wheel(tmp_path, "bundled", "3.0", files={"bundled/libs/libfoo.so.1": "ELF"})
    build_wheel(tmp_path, "abi3", "4.0", tag="cp39-abi3-win_amd64",
                files={"abi3/_x.pyd": "MZ"})
    found = {n.name: n for n in native_packages(tmp_path)}
    assert sorted(found) == ["abi3", "bundled", "compiled"]
    assert found["compiled"].tags == "cp311-cp311-manylinux_2_28_x86_64"
    assert found["compiled"].libraries == 1 and found["bundled"].tags == "py3-none-any"
    assert found["abi3"].examples == ("abi3/_x.pyd",)
    only = native_packages(tmp_path, {"compiled": "2.0"})
    assert [n.name for n in only] == ["compiled"]
    assert native_packages(None) == () and native_packages(tmp_path / "absent") == ()


def test_the_result_round_trips_and_renders():
    result = ExtensionsResult(
        checks=(ExtensionCheck(module="torch._C", status="passed", device="cpu", value="True"),
                ExtensionCheck(module="x", status="failed", device="cpu", stage="import",
                               error="import x failed: ModuleNotFoundError: x")),
        native=(NativePackage(name="torch", version="2.13.0+cpu", wheel="torch.whl",
                              tags="cp311-cp311-linux_x86_64", libraries=40,
                              examples=("torch/lib/libtorch.so",)),),
        device="cpu", config={"modules": [{"module": "torch._C"}], "timeout": 30.0})
    assert ExtensionsResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert result.first_error == "import x failed: ModuleNotFoundError: x"
    doc = Dossier(kind="verify", lockkit_version="0", started="now", result="failed",
                  steps=(), checks={"extensions": result})
    assert Dossier.from_dict(json.loads(json.dumps(doc.to_dict()))).checks == {"extensions": result}
    text = markdown.render(doc, NO_SECRETS)
    assert "## Compiled extensions" in text and "✘ x on cpu: import x failed" in text
    assert "- torch 2.13.0+cpu (cp311-cp311-linux_x86_64, 40 shared libraries)" in text


# --- real CPU torch: the example ------------------------------------------------------

def test_the_example_s_extensions_pass_with_real_cpu_torch(copy_of):
    root = copy_of()
    # --collect-env: torch's own report too, though the GPU (here CPU) step passes
    run = lockkit("verify", "--project", str(root), "--platform", "linux-cpu", "--report-dir",
                  str(root / "report"), "--collect-env", network=False)
    doc = json.loads((root / "report" / "dossier.json").read_text())
    steps = {s["name"]: s for s in doc["steps"]}
    assert steps["extensions"]["status"] == "passed", steps["extensions"]
    ext = doc["checks"]["extensions"]
    assert [c["module"] for c in ext["checks"]] == ["torch._C", "torch.nn.functional"]
    assert all(c["status"] == "passed" and c["device"] == "cpu" for c in ext["checks"])
    assert ext["checks"][0]["compiled"] is True  # torch/_C.cpython-311-....so
    native = {n["name"] for n in ext["native_packages"]}
    assert {"torch", "numpy", "markupsafe"} <= native and "sympy" not in native
    tools = doc["system"]["toolchain"]["tools"]
    assert set(tools) == {"cc", "gcc", "clang", "cl", "nvcc", "hipcc", "cmake", "ninja"}
    assert tools["nvcc"]["version"] == "not found" or tools["nvcc"]["path"]
    info = doc["system"]["collect_env"]
    assert info["info"]["torch_version"].startswith("2.13.0"), info
    assert info["info"]["cuda_compiled_version"] is None
    md = (root / "report" / "dossier.md").read_text()
    assert "## Build toolchain" in md and "## Compiled extensions" in md
    assert run.returncode == 0, run.stderr[-2000:]
