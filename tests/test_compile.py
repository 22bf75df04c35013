from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.pylock import Pylock

from conftest import LINUX, OFFICIAL
from lockkit.cli import main


def lock_of(project: Path, platform: str) -> dict:
    return tomllib.loads((project / "locks" / f"pylock.{platform}.toml").read_text())


def pkgs(lock: dict) -> dict[str, dict]:
    return {p["name"]: p for p in lock["packages"]}


@pytest.mark.parametrize(
    "platform,torch_version,extra",
    [
        ("linux-cpu", "2.5.1+cpu", set()),
        ("linux-cu126", "2.5.1+cu126", {"triton", "nvidia-cublas-cu12"}),
        ("linux-rocm6", "2.5.1+rocm6.2", {"pytorch-triton-rocm"}),
    ],
)
def test_each_platform_gets_its_own_build(project, platform, torch_version, extra):
    assert main(["compile", "--project", str(project), "--platform", platform]) == 0
    lock = lock_of(project, platform)
    Pylock.from_dict(lock)  # a valid PEP 751 file
    packages = pkgs(lock)
    assert packages["torch"]["version"] == torch_version
    assert set(packages) == {"torch", "numpy", "filelock"} | extra
    index = OFFICIAL + "/" + lock["tool"]["lockkit"]["torch-index"].rsplit("/", 1)[1]
    assert packages["torch"]["index"] == index
    assert packages["torch"]["wheels"][0]["url"].startswith(index + "/")  # official, not mirror
    for p in lock["packages"]:
        for wheel in p["wheels"]:
            assert len(wheel["hashes"]["sha256"]) == 64
    meta = lock["tool"]["lockkit"]
    assert meta["platform"] == platform and meta["inputs-fingerprint"].startswith("sha256:")


def test_planted_packages_on_default_index_are_never_chosen(project, indexes):
    default = next(i for i in indexes.indexes if i.prefix == "/simple")
    default.add("torch", "9.9.9", tag=LINUX)
    default.add("pytorch-triton-rocm", "99.0.0", tag=LINUX)
    (project / "requirements.in").write_text("torch\n")
    assert main(["compile", "--project", str(project), "--platform", "linux-rocm6"]) == 0
    packages = pkgs(lock_of(project, "linux-rocm6"))
    assert packages["torch"]["version"] == "2.5.1+rocm6.2"
    assert packages["pytorch-triton-rocm"]["version"] == "3.1.0"
    assert packages["pytorch-triton-rocm"]["index"] == OFFICIAL + "/rocm6.2"


def test_pinned_index_missing_package_is_an_error_not_a_fallback(project, indexes, capsys):
    rocm = next(i for i in indexes.indexes if i.prefix == "/whl/rocm6.2")
    rocm.status["torch"] = 404
    default = next(i for i in indexes.indexes if i.prefix == "/simple")
    default.add("torch", "2.5.1", tag=LINUX)
    assert main(["compile", "--project", str(project), "--platform", "linux-rocm6"]) == 1
    msg = capsys.readouterr().err
    assert "must come from the PyTorch index" in msg and OFFICIAL + "/rocm6.2" in msg
    assert not (project / "locks" / "pylock.linux-rocm6.toml").exists()


def test_recompile_is_byte_identical_and_check_gate(project, capsys):
    args = ["compile", "--project", str(project), "--platform", "linux-cpu"]
    assert main(args + ["--check"]) == 1
    assert "linux-cpu (missing)" in capsys.readouterr().err
    assert main(args) == 0
    path = project / "locks" / "pylock.linux-cpu.toml"
    first = path.read_bytes()
    assert main(args) == 0
    assert path.read_bytes() == first
    assert main(args + ["--check"]) == 0
    (project / "requirements.in").write_text("torch==2.5.1\nnumpy\nfilelock\n")
    assert main(args + ["--check"]) == 1
    assert "linux-cpu (stale)" in capsys.readouterr().err
    assert path.read_bytes() == first  # --check writes nothing


def test_credentials_never_written_or_printed(project, indexes, capsys, monkeypatch):
    monkeypatch.setenv("LK_TOKEN", "s3cr3t-token")
    url = indexes.url.replace("http://", "http://alice:${LK_TOKEN}@") + "/simple"
    assert main(["compile", "--project", str(project), "--index-url", url]) == 0
    text = (project / "locks" / "pylock.linux-cpu.toml").read_text()
    assert "s3cr3t" not in text and "alice" not in text and "LK_TOKEN" not in text
    assert any(auth for _, auth in indexes.requests)  # the credentials were really used
    assert "s3cr3t" not in capsys.readouterr().err


def test_cpu_platform_refuses_a_cuda_build(project, indexes, capsys):
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\n'
        f'[mirrors]\n"{OFFICIAL}/cpu" = "{indexes.url}/whl/cu126"\n'
    )
    assert main(["compile", "--project", str(project), "--platform", "linux-cpu"]) == 1
    assert "is not a CPU build" in capsys.readouterr().err


def test_sdist_only_package_is_refused_unless_allowed(project, indexes, capsys):
    default = next(i for i in indexes.indexes if i.prefix == "/simple")
    folder = default.root / "onlysdist"
    folder.mkdir()
    import io, tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"Metadata-Version: 2.2\nName: onlysdist\nVersion: 1.0\n"
        info = tarfile.TarInfo("onlysdist-1.0/PKG-INFO"); info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        setup = b"from setuptools import setup\nsetup(name='onlysdist', version='1.0')\n"
        info = tarfile.TarInfo("onlysdist-1.0/setup.py"); info.size = len(setup)
        tf.addfile(info, io.BytesIO(setup))
    (folder / "onlysdist-1.0.tar.gz").write_bytes(buf.getvalue())
    (project / "requirements.in").write_text("onlysdist\n")
    assert main(["compile", "--project", str(project)]) == 1
    assert "onlysdist 1.0 has no wheel" in capsys.readouterr().err


@pytest.mark.parametrize(
    "setup,expected",
    [
        (lambda p: None, "unknown platform nope; known: linux-cpu"),
        (lambda p: (p / "requirements.in").unlink(), "constraint file not found"),
        (lambda p: (p / "requirements.in").write_text("torch\nthis is not ===valid\n"),
         "requirements.in:2: malformed requirement"),
        (lambda p: (p / "lockkit.toml").write_text("platfroms = []\n"),
         "unknown key 'platfroms' (did you mean 'platforms'?)"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_keeps_the_old_lock(project, capsys, setup, expected):
    assert main(["compile", "--project", str(project)]) == 0
    path = project / "locks" / "pylock.linux-cpu.toml"
    before = path.read_bytes()
    setup(project)
    platform = ["--platform", "nope"] if "unknown platform" in expected else []
    assert main(["compile", "--project", str(project), *platform]) == 2
    assert expected in capsys.readouterr().err
    assert path.read_bytes() == before


def test_no_resolution_and_unreachable_index(project, capsys):
    (project / "requirements.in").write_text("torch==7.0\n")
    assert main(["compile", "--project", str(project)]) == 1
    assert "no resolution" in capsys.readouterr().err
    (project / "requirements.in").write_text("numpy\n")
    assert main(["compile", "--project", str(project), "--index-url", "http://127.0.0.1:9/simple"]) == 1
    assert "unreachable" in capsys.readouterr().err


def test_lock_installs_with_uv_from_a_project_platform(project, indexes, tmp_path):
    """A user platform whose torch index is served directly; uv installs the lock."""
    (project / "lockkit.toml").write_text(f'index-url = "{indexes.url}/simple"\n')
    (project / "platforms").mkdir()
    src = (Path(__file__).parents[1] / "platforms" / "linux-cpu.toml").read_text()
    (project / "platforms" / "local-cpu.toml").write_text(
        src.replace(f"{OFFICIAL}/cpu", f"{indexes.url}/whl/cpu"))
    assert main(["compile", "--project", str(project), "--platform", "local-cpu"]) == 0
    import uv
    venv = tmp_path / "venv"
    subprocess.run([uv.find_uv_bin(), "venv", "--no-config", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    r = subprocess.run([uv.find_uv_bin(), "pip", "install", "--no-config", "--python", str(py),
                        "-r", str(project / "locks" / "pylock.local-cpu.toml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(py), "-c", "import torch, numpy; print(torch.__version__)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "2.5.1+cpu"


def test_malformed_platform_file_names_file_and_field(project, capsys):
    (project / "platforms").mkdir()
    (project / "platforms" / "broken.toml").write_text(
        'os = "plan9"\narch = "x"\npython = "3.11"\npython-platform = "x"\n'
        '[backend]\nkind = "cuda"\n[torch]\npackages = ["torch"]\n[gpu]\ndevice = "cuda"\n')
    assert main(["platforms", "--project", str(project)]) == 2
    msg = capsys.readouterr().err
    assert "broken.toml" in msg and "os: 'plan9' is not one of" in msg
    assert "backend.version: required" in msg


def test_python_m_lockkit_and_json_matrix():
    r = subprocess.run([sys.executable, "-m", "lockkit", "platforms", "--json"],
                       capture_output=True, text=True, check=True)
    import json
    rows = json.loads(r.stdout)
    names = {row["name"] for row in rows}
    assert {"linux-cpu", "linux-cu126", "linux-cu128", "linux-rocm6", "macos-arm64",
            "windows-cpu", "windows-cu126"} <= names
    mac = next(row for row in rows if row["name"] == "macos-arm64")
    assert mac["torch_index"] is None and mac["backend"] == {"kind": "mps", "version": None}
