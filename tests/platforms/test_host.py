"""``lockkit platforms --host``: this machine's platforms from fake /proc and /sys trees.

The trees hold what the real files hold (formats from astral-sh/uv
crates/uv-torch/src/accelerator.rs, which parses the same files).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.platforms import host
from lockkit.platforms.definitions import load_platforms

# /proc/driver/nvidia/version as the driver writes it (uv's parser comment quotes this line)
PROC_NVIDIA = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  "
               "(dvs-builder@U16-I3-D08-1-2)  Mon Dec 30 17:26:13 UTC 2024\n"
               "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.write_text(text)
    return root


def names(rulings: list[host.Ruling]) -> list[str]:
    return [r.platform.name for r in rulings]


def reasons(rulings: list[host.Ruling]) -> dict[str, str]:
    return {r.platform.name: r.reason for r in rulings}


@pytest.fixture
def shipped():
    return load_platforms()


def test_cpu_only_box_runs_only_the_cpu_platform(tmp_path, shipped):
    machine = host.detect(tree(tmp_path, {"proc/cpuinfo": "x"}), os_="linux", arch="x86_64")
    assert machine.gpus == () and machine.libc == "glibc"
    fits, out = host.rank(shipped.values(), machine)
    assert names(fits) == ["linux-cpu"]
    why = reasons(out)
    assert why["linux-cu130"] == "needs an NVIDIA GPU; none found"
    assert why["linux-rocm64"] == "needs an AMD GPU (ROCm); none found"
    assert why["linux-xpu"] == "needs an Intel GPU; none found"
    assert why["linux-cpu-aarch64"] == "arch aarch64, this machine is x86_64"
    assert why["windows-cpu"] == "OS windows, this machine runs linux"
    assert "linux-rocm6" not in why  # an alias is ranked under its target's name


def test_nvidia_box_with_an_old_driver_rules_out_cuda_13(tmp_path, shipped):
    root = tree(tmp_path, {"proc/driver/nvidia/version": PROC_NVIDIA.format(v="550.144.03")})
    machine = host.detect(root, os_="linux", arch="x86_64")
    assert machine.gpus[0].driver == "550.144.03"
    fits, out = host.rank(shipped.values(), machine)
    assert names(fits) == ["linux-cu128", "linux-cu126", "linux-cpu"]  # best first
    assert reasons(fits)["linux-cu128"].startswith("NVIDIA driver 550.144.03 (")
    assert reasons(out)["linux-cu130"] == ("CUDA 13.0 needs NVIDIA driver >= 580; "
                                           "this machine has 550.144.03")
    assert "driver >= 580" in reasons(out)["linux-cuda-default"]


def test_nvidia_driver_below_the_cuda_12_minimum(tmp_path, shipped):
    root = tree(tmp_path, {"sys/module/nvidia/version": "470.256.02\n"})
    fits, out = host.rank(shipped.values(), host.detect(root, os_="linux", arch="x86_64"))
    assert names(fits) == ["linux-cpu"]
    assert reasons(out)["linux-cu126"] == ("CUDA 12.6 needs NVIDIA driver >= 525.60.13; "
                                           "this machine has 470.256.02")


def test_new_driver_prefers_cuda_13_from_the_pytorch_index(tmp_path, shipped):
    root = tree(tmp_path, {"sys/module/nvidia/version": "580.65.06\n"})
    fits, _ = host.rank(shipped.values(), host.detect(root, os_="linux", arch="x86_64"))
    assert names(fits)[:4] == ["linux-cu132", "linux-cu130", "linux-cuda-default", "linux-cu128"]


def test_nvidia_smi_is_the_last_resort(tmp_path):
    calls = []

    def run(argv):
        calls.append(argv[0])
        return "575.51.03\n" if argv[0] == "nvidia-smi" else None

    machine = host.detect(tmp_path, os_="linux", arch="x86_64", run=run)
    assert machine.gpus[0].source == "nvidia-smi" and machine.gpus[0].driver == "575.51.03"


def test_rocm_box(tmp_path, shipped):
    root = tree(tmp_path, {"dev/kfd": "", "sys/module/amdgpu/": ""})
    fits, out = host.rank(shipped.values(), host.detect(root, os_="linux", arch="x86_64"))
    assert names(fits) == ["linux-rocm72", "linux-rocm71", "linux-rocm64", "linux-cpu"]
    assert reasons(out)["linux-cu126"] == "needs an NVIDIA GPU; none found"


def test_intel_gpu_found_on_the_pci_bus(tmp_path, shipped):
    root = tree(tmp_path, {"sys/bus/pci/devices/0000:00:02.0/class": "0x030000\n",
                           "sys/bus/pci/devices/0000:00:02.0/vendor": "0x8086\n",
                           "sys/bus/pci/devices/0000:00:1f.0/class": "0x060100\n",
                           "sys/bus/pci/devices/0000:00:1f.0/vendor": "0x8086\n"})
    fits, _ = host.rank(shipped.values(), host.detect(root, os_="linux", arch="x86_64"))
    assert names(fits) == ["linux-xpu", "linux-cpu"]


def test_aarch64_box_runs_aarch64_platforms(tmp_path, shipped):
    root = tree(tmp_path, {"sys/module/nvidia/version": "580.95.05\n"})
    fits, out = host.rank(shipped.values(), host.detect(root, os_="linux", arch="aarch64"))
    assert names(fits) == ["linux-cu132-aarch64", "linux-cu130-aarch64", "linux-cu128-aarch64",
                           "linux-cpu-aarch64"]
    assert reasons(out)["linux-cpu"] == "arch x86_64, this machine is arm64"


def test_musl_box_rules_out_glibc_builds(tmp_path, shipped):
    root = tree(tmp_path, {"lib/ld-musl-x86_64.so.1": ""})
    fits, out = host.rank(shipped.values(), host.detect(root, os_="linux", arch="x86_64"))
    assert fits == [] and reasons(out)["linux-cpu"] == "libc glibc, this machine has musl"


def test_pick_takes_the_best_platform_that_has_a_lock(tmp_path, shipped):
    root = tree(tmp_path, {"sys/module/nvidia/version": "550.144.03\n"})
    machine = host.detect(root, os_="linux", arch="x86_64")
    assert host.pick(shipped.values(), machine, {"linux-cpu", "linux-cu126"}).platform.name \
        == "linux-cu126"
    assert host.pick(shipped.values(), machine, {"linux-cu130", "windows-cpu"}) is None


def test_min_driver_table_is_uvs(shipped):
    assert host.min_driver(shipped["linux-cu130"]) == "580"
    assert host.min_driver(shipped["linux-cu126"]) == "525.60.13"
    assert host.min_driver(shipped["windows-cu128"]) == "528.33"
    assert host.min_driver(shipped["linux-cpu"]) is None


def test_platforms_host_command(tmp_path, monkeypatch, capsys):
    root = tree(tmp_path / "root", {"proc/driver/nvidia/version":
                                    PROC_NVIDIA.format(v="550.144.03")})
    real = host.detect
    monkeypatch.setattr(host, "detect", lambda: real(root, os_="linux", arch="x86_64"))
    assert main(["platforms", "--host", "--json", "--project", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc["runs"]] == ["linux-cu128", "linux-cu126", "linux-cpu"]
    assert {"name": "linux-cu130", "reason": "CUDA 13.0 needs NVIDIA driver >= 580; this "
            "machine has 550.144.03"} in doc["ruled_out"]
    assert main(["platforms", "--host", "--project", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1  linux-cu128" in out and "ruled out" in out


# --- verify and wheelhouse unpack without --platform ----------------------------------------

@pytest.fixture
def cpu_box(tmp_path, monkeypatch):
    real = host.detect
    root = tree(tmp_path / "cpu-box", {"proc/cpuinfo": "x"})
    monkeypatch.setattr(host, "detect", lambda: real(root, os_="linux", arch="x86_64"))


def test_verify_without_platform_picks_the_best_locked_one(tmp_path, cpu_box, capsys):
    proj = tmp_path / "proj"
    (proj / "locks").mkdir(parents=True)
    (proj / "lockkit.toml").write_text('platforms = ["linux-cu126", "linux-cpu"]\n')
    (proj / "locks" / "pylock.linux-cu126.toml").write_text("not a lock")
    assert main(["verify", "--project", str(proj)]) == 2
    err = capsys.readouterr().err
    assert ("--platform: required: no platform with a lock runs on this machine "
            "(linux-cu126: needs an NVIDIA GPU; none found)") in err
    (proj / "locks" / "pylock.linux-cpu.toml").write_text("not a lock")
    assert main(["verify", "--project", str(proj)]) != 0
    err = capsys.readouterr().err
    assert "verify: picked linux-cpu for this machine (cpu on linux x86_64)" in err
    assert "pylock.linux-cpu.toml" in err and "Traceback" not in err


def test_unpack_a_folder_picks_the_best_archive(tmp_path, cpu_box, capsys):
    folder = tmp_path / "wheelhouse"
    folder.mkdir()
    for name in ("linux-cu130", "linux-cpu", "windows-cpu"):
        (folder / f"{name}.wheelhouse.tar").write_bytes(b"not a tar")
    assert main(["wheelhouse", "unpack", str(folder)]) != 0
    err = capsys.readouterr().err
    assert "wheelhouse unpack: picked linux-cpu (cpu on linux x86_64)" in err
    assert "linux-cpu.wheelhouse.tar" in err and "Traceback" not in err
    (folder / "linux-cpu.wheelhouse.tar").unlink()
    assert main(["wheelhouse", "unpack", str(folder)]) == 2
    assert ("no platform with a wheelhouse archive runs on this machine (linux-cu130: needs an "
            "NVIDIA GPU; none found; windows-cpu: OS windows, this machine runs linux)"
            ) in capsys.readouterr().err
