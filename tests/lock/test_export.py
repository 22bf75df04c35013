"""`lockkit export`: the committed lock as a requirements file any pip installs, or a pylock.

The indexes are the loopback replicas of conftest (the PyTorch index as pytorch/test-infra
``s3_management/manage_v2.py`` renders it, a PEP 503 default index); the installs run the
real pip a fresh venv gets (the interpreter's bundled pip, 23.x here) and the real uv.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.pylock import Pylock

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from tests.support.project import OFFICIAL, assert_conforms
from tests.support.pytorch_index import R2

TORCH_FILE = "torch-2.5.1%2Bcpu-cp311-cp311-linux_x86_64.whl"
LOCKED = {"filelock": "3.16.1", "numpy": "2.1.0", "torch": "2.5.1+cpu"}


def compiled(project: Path, platform: str = "linux-cpu") -> dict:
    assert main(["compile", "--project", str(project), "--platform", platform]) == 0
    lock = tomllib.loads((project / "locks" / f"pylock.{platform}.toml").read_text())
    assert_conforms(lock, platform, project)
    return lock


def export(project: Path, capsys, *extra: str, platform: str = "linux-cpu") -> str:
    capsys.readouterr()  # what compile printed
    assert main(["export", "--project", str(project), "--platform", platform, *extra]) == 0
    return capsys.readouterr().out


def logical(text: str) -> dict[str, list[str]]:
    """Requirement lines as pip joins them: ``{requirement: [--hash values]}``."""
    joined = text.replace(" \\\n", " ")
    found: dict[str, list[str]] = {}
    for line in joined.splitlines():
        if line.startswith(("#", "--")) or not line.strip():
            continue
        head, *hashes = line.split(" --hash=")
        found[head.strip()] = [h.strip() for h in hashes]
    return found


def lock_hashes(lock: dict, name: str) -> list[str]:
    (pkg,) = [p for p in lock["packages"] if p["name"] == name]
    files = pkg.get("wheels", []) + ([pkg["sdist"]] if "sdist" in pkg else [])
    return sorted(f"sha256:{f['hashes']['sha256']}" for f in files)


def test_torch_by_url_the_others_by_version_with_every_wheel_hashed(project, indexes, capsys):
    indexes.default.add_sdist("filelock", "3.16.1")  # a package with a wheel and an sdist
    lock = compiled(project)
    (filelock,) = [p for p in lock["packages"] if p["name"] == "filelock"]
    assert "sdist" not in filelock  # not in allow-sdist: wheels only, in the lock ...
    assert len(lock_hashes(lock, "filelock")) == 1
    text = export(project, capsys)
    lines = logical(text)
    torch_url = f"{indexes.pt.r2}/whl/cpu/{TORCH_FILE}"  # the lock's R2 URL, mirrored
    assert lines == {"filelock==3.16.1": lock_hashes(lock, "filelock"),
                     "numpy==2.1.0": lock_hashes(lock, "numpy"),
                     f"torch @ {torch_url}": lock_hashes(lock, "torch")}
    assert f"--index-url {indexes.url}/simple\n" in text
    raw = (project / "locks" / "pylock.linux-cpu.toml").read_bytes()
    assert f"(sha256 {hashlib.sha256(raw).hexdigest()})" in text.splitlines()[0]
    assert "pip install --require-hashes -r requirements-rebuild.txt" in text
    assert export(project, capsys) == text  # the same lock, the same bytes


def _sdist_hash(lock: dict, name: str) -> str:
    (pkg,) = [p for p in lock["packages"] if p["name"] == name]
    return f"sha256:{pkg['sdist']['hashes']['sha256']}"


def test_allow_sdist_keeps_the_sdist_in_the_lock_and_the_export(project, indexes, capsys):
    indexes.default.add_sdist("filelock", "3.16.1")
    (project / "lockkit.toml").write_text(indexes.config(extra='allow-sdist = ["filelock"]\n'))
    lock = compiled(project)
    assert len(lock_hashes(lock, "filelock")) == 2
    assert logical(export(project, capsys))["filelock==3.16.1"] == lock_hashes(lock, "filelock")


def test_an_older_locks_sdist_is_not_exported_without_allow_sdist(project, indexes, capsys):
    """A lock that still lists a package's sdist (compiled while allow-sdist named it, or by
    an older lockkit): the export hashes the wheels only, so pip can never build it."""
    indexes.default.add_sdist("filelock", "3.16.1")
    (project / "lockkit.toml").write_text(indexes.config(extra='allow-sdist = ["filelock"]\n'))
    lock = compiled(project)
    (project / "lockkit.toml").write_text(indexes.config())
    capsys.readouterr()
    assert main(["export", "--project", str(project), "--platform", "linux-cpu"]) == 0
    out, err = capsys.readouterr()
    hashes = logical(out)["filelock==3.16.1"]
    assert len(hashes) == 1 and _sdist_hash(lock, "filelock") not in hashes
    assert "is stale" in err and "allow-sdist" in err


@pytest.mark.parametrize("name", ["req.txt", "a folder/req's.txt"])
def test_the_install_hint_names_the_file_as_given(project, capsys, tmp_path, name):
    """``-o /abs/path/req.txt``: the hint names that path (quoted for the shell where it
    must be), so it is right from any folder, not only from the file's own."""
    import shlex

    compiled(project)
    out = tmp_path / name
    out.parent.mkdir(exist_ok=True)
    assert main(["export", "--project", str(project), "--platform", "linux-cpu",
                 "-o", str(out)]) == 0
    hint = [ln for ln in out.read_text().splitlines() if "--require-hashes -r" in ln]
    assert hint == [f"#   .venv-rebuild/bin/python -m pip install --require-hashes -r "
                    f"{shlex.quote(str(out))}"]
    assert shlex.split(hint[0].split("#", 1)[1])[-1] == str(out)


def test_the_header_names_the_os_arch_and_python_and_venv_command(project, capsys):
    """On another OS, CPU or Python pip finds no file ("from versions: none"): the header
    says which machine the file is for, so that reads as the wrong machine, not tampering,
    and the venv command names the lock's Python, not a bare ``python``."""
    lock = compiled(project)
    head = export(project, capsys).splitlines()
    assert head[0].startswith("# lockkit export --platform linux-cpu: ")  # recognise()'s
    python = lock["tool"]["lockkit"]["python"]
    assert head[1].startswith(f"# For linux x86_64, Python {python}: ")
    assert f"#   python{python} -m venv .venv-rebuild" in head


def test_official_keeps_the_lock_urls(project, indexes, capsys):
    compiled(project)
    text = export(project, capsys, "--official")
    assert f"torch @ {R2}/whl/cpu/{TORCH_FILE}" in logical(text)
    assert indexes.pt.url not in text and "no mirrors applied" in text


def test_every_torch_family_package_is_pinned_by_url(project, indexes, capsys):
    lock = compiled(project, "linux-cu126")
    lines = logical(export(project, capsys, platform="linux-cu126"))
    family = {h.split(" @ ")[0]: h.split(" @ ")[1] for h in lines if " @ " in h}
    assert set(family) == {"torch", "triton"}
    assert all(url.startswith(f"{indexes.pt.r2}/whl/cu126/") for url in family.values())
    assert lines["nvidia-cublas-cu12==12.6.4.1"] == lock_hashes(lock, "nvidia-cublas-cu12")
    assert len(lines) == len(lock["packages"])


# --- the real pip of a fresh venv -------------------------------------------------------------

def _clean_env() -> dict[str, str]:
    """No pip settings of this machine: the exported file alone must be enough."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _fresh_venv(path: Path) -> Path:
    """``python -m venv``: the venv gets the interpreter's bundled pip, the oldest here."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True,
                          env=_clean_env(), timeout=600)


@pytest.fixture
def exported(project, indexes, capsys, tmp_path) -> Path:
    compiled(project)
    out = tmp_path / "requirements-rebuild.txt"
    capsys.readouterr()
    assert main(["export", "--project", str(project), "--platform", "linux-cpu",
                 "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""  # -o: nothing on stdout
    indexes.forget_requests()
    return out


@pytest.mark.slow
def test_the_exports_printed_commands_run_as_printed(exported, project, tmp_path):
    """Each command line of the header, run as printed from another folder, where the
    lock's ``python3.11`` is on PATH but no bare ``python`` (as on Debian): the venv is
    made with the lock's Python and its pip installs the locked packages."""
    text = exported.read_text().splitlines()
    start = text.index(next(ln for ln in text if ln.startswith("# Install with any pip")))
    commands = [ln[1:].strip() for ln in text[start + 1:start + 3]]
    lock = tomllib.loads((project / "locks" / "pylock.linux-cpu.toml").read_text())
    version = lock["tool"]["lockkit"]["python"]
    assert commands[0] == f"python{version} -m venv .venv-rebuild"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / f"python{version}").symlink_to(Path(sys.base_prefix) / "bin" / f"python{version}")
    env = {**_clean_env(), "PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])}
    here = tmp_path / "elsewhere"
    here.mkdir()
    for command in commands:
        run = subprocess.run(["sh", "-c", command], cwd=here, capture_output=True, text=True,
                             env=env, timeout=600)
        assert run.returncode == 0, (command, run.stderr)
    listed = json.loads(_pip(here / ".venv-rebuild" / "bin" / "python", "list", "--isolated",
                             "--format=json").stdout)
    assert {p["name"]: p["version"] for p in listed if p["name"] not in
            ("pip", "setuptools")} == LOCKED


@pytest.mark.slow
def test_a_fresh_venvs_pip_installs_the_export(exported, project, indexes, tmp_path):
    lock = project / "locks" / "pylock.linux-cpu.toml"
    python = _fresh_venv(tmp_path / "venv")
    pip_version = _pip(python, "--version").stdout.split()[1]
    assert int(pip_version.split(".")[0]) < 26  # a pip that cannot read pylock.toml
    # the file's own install line, as printed (bar the venv's path), run from another folder
    hint = next(ln for ln in exported.read_text().splitlines() if "--require-hashes -r" in ln)
    line = hint.split("#", 1)[1].strip().replace(".venv-rebuild/bin/python", str(python))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run(["sh", "-c", line.replace(" install ", " install --isolated -q ")],
                         cwd=elsewhere, capture_output=True, text=True, env=_clean_env(),
                         timeout=600)
    assert run.returncode == 0, run.stderr
    listed = json.loads(_pip(python, "list", "--isolated", "--format=json").stdout)
    assert {p["name"]: p["version"] for p in listed if p["name"] not in
            ("pip", "setuptools")} == LOCKED
    freeze = _pip(python, "freeze", "--isolated").stdout.splitlines()
    torch_sha = lock_hashes(tomllib.loads(lock.read_text()), "torch")[0].split(":")[1]
    # pip records the hash it checked in direct_url.json (PEP 610), and freeze shows it
    assert sorted(freeze) == ["filelock==3.16.1", "numpy==2.1.0",
                              f"torch @ {indexes.pt.r2}/whl/cpu/{TORCH_FILE}#sha256={torch_sha}"]
    assert [p for p in indexes.pt.requests if p.endswith(TORCH_FILE)]  # by its URL ...
    assert not [p for p, _ in indexes.server.requests if "/torch/" in p]  # ... never a page


@pytest.mark.slow
def test_pip_refuses_a_tampered_hash(exported, tmp_path):
    text = exported.read_text()
    digest = text.split("numpy==2.1.0 \\\n    --hash=sha256:")[1][:64]
    exported.write_text(text.replace(digest, hashlib.sha256(b"tampered").hexdigest()))
    python = _fresh_venv(tmp_path / "venv")
    run = _pip(python, "install", "--isolated", "--require-hashes", "-r", str(exported))
    assert run.returncode != 0
    assert "DO NOT MATCH THE HASHES" in run.stderr and "numpy" in run.stderr


@pytest.mark.slow
def test_the_pylock_export_installs_with_uv(project, indexes, capsys, tmp_path):
    import uv

    lock = compiled(project)
    out = tmp_path / "pylock.linux-cpu.toml"
    assert main(["export", "--project", str(project), "--platform", "linux-cpu", "--format",
                 "pylock", "-o", str(out)]) == 0
    copy = tomllib.loads(out.read_text())
    Pylock.from_dict(copy)
    (torch,) = [p for p in copy["packages"] if p["name"] == "torch"]
    assert torch["index"] == f"{indexes.pt.main}/whl/cpu"  # through the mirrors
    python = _fresh_venv(tmp_path / "venv")
    run = subprocess.run([uv.find_uv_bin(), "pip", "install", "--no-config", "--python",
                          str(python), "--cache-dir", str(tmp_path / "uvcache"), "-r", str(out)],
                         capture_output=True, text=True, env=_clean_env(), timeout=600)
    assert run.returncode == 0, run.stderr
    capsys.readouterr()
    assert main(["export", "--project", str(project), "--platform", "linux-cpu", "--format",
                 "pylock", "--official"]) == 0
    assert tomllib.loads(capsys.readouterr().out) == lock  # --official: the lock itself


# --- credentials and bad input ----------------------------------------------------------------

def test_credentials_are_never_written(project, indexes, capsys, monkeypatch):
    monkeypatch.setenv("LK_TOKEN", "s3cr3t-token")
    monkeypatch.setenv("PT_TOKEN", "pt-s3cr3t")
    mirrors = "".join(f'"{k}" = "{v.replace("http://", "http://bob:${PT_TOKEN}@")}"\n'
                      for k, v in indexes.pt.mirrors().items())
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url.replace("http://", "http://alice:${LK_TOKEN}@")}/simple"\n'
        f"[mirrors]\n{mirrors}")
    compiled(project)
    for fmt in ("requirements", "pylock"):
        text = export(project, capsys, "--format", fmt)
        for secret in ("s3cr3t", "alice", "bob", "LK_TOKEN", "PT_TOKEN", "@127"):
            assert secret not in text, (fmt, secret)
    assert "netrc or keyring" in export(project, capsys)


def test_a_placeholder_in_a_path_stays_a_placeholder(project, indexes, capsys):
    compiled(project)
    path = project / "locks" / "pylock.linux-cpu.toml"
    lock = path.read_text().replace(f"{indexes.url}/simple",
                                    "https://carol:pw@example.invalid/${IDX_TOKEN}/simple")
    path.write_text(lock)
    text = export(project, capsys)
    assert "--index-url https://example.invalid/${IDX_TOKEN}/simple\n" in text
    assert "carol" not in text and ":pw" not in text


def test_missing_lock_is_one_line_exit_2(project, capsys):
    assert main(["export", "--project", str(project), "--platform", "linux-cpu"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.splitlines()[0] == (f"lockkit: error: {project / 'locks'}"
                                       "/pylock.linux-cpu.toml: lock not found")


@pytest.mark.parametrize("argv, expected", [
    (["--platform", "linux-nope"], "unknown platform 'linux-nope'"),
    (["--platform", "linux-cpu", "--format", "pylock", "-o", "locked.toml"],
     "a PEP 751 lock must be named pylock.toml or pylock.<name>.toml"),
    (["--platform", "linux-cpu", "--format", "wheel"], "invalid choice: 'wheel'"),
])
def test_bad_flags_are_exit_2(project, capsys, tmp_path, argv, expected):
    compiled(project)
    capsys.readouterr()
    assert main(["export", "--project", str(project), *argv]) == 2
    err = capsys.readouterr().err
    assert expected in err.splitlines()[0]
    assert not (tmp_path / "locked.toml").exists()


def test_a_mirror_of_the_index_alone_keeps_the_official_file_url(project, indexes, capsys):
    """A link-rewriting proxy mapped for the index only (as in test_wheelhouse): a URL pin
    cannot go through it, so the official URL stays and the command says so."""
    compiled(project)
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\n'
        f'[mirrors]\n"{OFFICIAL}/cpu" = "{indexes.pt.rewriting("cpu")}"\n')
    capsys.readouterr()
    assert main(["export", "--project", str(project), "--platform", "linux-cpu"]) == 0
    out = capsys.readouterr()
    assert f"torch @ {R2}/whl/cpu/{TORCH_FILE}" in logical(out.out)
    assert "warning: torch: a mirror serves the index but not the file's host" in out.err


def test_a_lock_without_a_default_index_leaves_pips_own(project, indexes, capsys):
    """Packages from uv's built-in default index carry no ``index`` in the lock."""
    compiled(project)
    path = project / "locks" / "pylock.linux-cpu.toml"
    path.write_text(path.read_text().replace(f'index = "{indexes.url}/simple"\n', ""))
    text = export(project, capsys)
    assert "--index-url" not in text and "pip's default index (the lock names none)" in text
    lines = logical(text)
    assert {"filelock==3.16.1", "numpy==2.1.0"} < set(lines)
    assert f"torch @ {indexes.pt.r2}/whl/cpu/{TORCH_FILE}" in lines
