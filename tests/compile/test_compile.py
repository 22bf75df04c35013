from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from tests.support.project import LINUX, OFFICIAL, assert_conforms
from tests.support.pytorch_index import R2


def lock_of(project: Path, platform: str) -> dict:
    """The lock as written, after checking it conforms (every test's lock goes through here)."""
    lock = tomllib.loads((project / "locks" / f"pylock.{platform}.toml").read_text())
    assert_conforms(lock, platform, project)
    return lock


def pkgs(lock: dict) -> dict[str, dict]:
    return {p["name"]: p for p in lock["packages"]}


def compile_(project: Path, *args: str) -> int:
    return main(["compile", "--project", str(project), *args])


@pytest.mark.parametrize(
    "platform,torch_version,extra",
    [
        ("linux-cpu", "2.5.1+cpu", set()),
        ("linux-cu126", "2.5.1+cu126", {"triton", "nvidia-cublas-cu12"}),
        ("linux-rocm6", "2.5.1+rocm6.2", {"pytorch-triton-rocm"}),
    ],
)
def test_each_platform_gets_its_own_build(project, indexes, platform, torch_version, extra):
    assert compile_(project, "--platform", platform) == 0
    lock = lock_of(project, platform)
    packages = pkgs(lock)
    variant = lock["tool"]["lockkit"]["torch-index"].rsplit("/", 1)[1]
    assert packages["torch"]["version"] == torch_version
    assert set(packages) == {"torch", "numpy", "filelock"} | extra
    assert packages["torch"]["index"] == f"{OFFICIAL}/{variant}"
    # the official URL, on the host the official page links (not the mirror, not the page host)
    wheel = f"torch-{torch_version.replace('+', '%2B')}-{LINUX}.whl"
    assert packages["torch"]["wheels"] == [{
        "name": f"torch-{torch_version}-{LINUX}.whl",
        "url": f"{R2}/whl/{variant}/{wheel}",
        "upload-time": packages["torch"]["wheels"][0]["upload-time"],
        "hashes": packages["torch"]["wheels"][0]["hashes"],
    }]
    assert packages["numpy"]["index"] == packages["filelock"]["index"] == f"{indexes.url}/simple"
    meta = lock["tool"]["lockkit"]
    assert meta["platform"] == platform and meta["inputs-fingerprint"].startswith("sha256:")


def test_torch_page_on_the_second_host_is_accepted_by_the_family_guard(project, indexes):
    """The official page links torch on download-r2: the page listed it, so it is torch's."""
    assert compile_(project, "--platform", "linux-cu126") == 0
    pages = [p for p in indexes.pt.requests if p.startswith("/pt/whl/cu126/")]
    assert "/pt/whl/cu126/torch/" in pages and "/pt/whl/cu126/triton/" in pages
    # pages are asked for with their trailing slash (without it the real index answers 403)
    assert all(p.endswith("/") for p in pages if not p.endswith((".whl", ".metadata")))
    # uv read the PEP 658 metadata the page announced, on the second host through its mirror
    assert any(p.startswith("/r2/whl/cu126/torch-") and p.endswith(".whl.metadata")
               for p in indexes.pt.requests)
    # every other name went to the default index only, never to the PyTorch index
    assert not [p for p in pages if p.rstrip("/").rsplit("/", 1)[1] in ("numpy", "filelock")]


def test_transitive_family_package_comes_from_the_pytorch_index(project, indexes):
    """triton and pytorch-triton-rocm are never asked for: torch pulls them in."""
    (project / "requirements.in").write_text("torch\n")
    for platform, name in (("linux-cu126", "triton"), ("linux-rocm6", "pytorch-triton-rocm")):
        assert compile_(project, "--platform", platform) == 0
        package = pkgs(lock_of(project, platform))[name]
        assert package["version"] == "3.1.0"
        assert package["index"] == OFFICIAL + "/" + ("cu126" if "cu" in platform else "rocm6.2")
        assert package["wheels"][0]["url"].startswith(R2 + "/whl/")


def test_planted_packages_on_the_default_index_are_never_chosen(project, indexes):
    indexes.default.add("torch", "9.9.9", tag=LINUX)
    indexes.default.add("triton", "99.0.0", tag=LINUX)
    indexes.default.add("pytorch-triton-rocm", "99.0.0", tag=LINUX)
    (project / "requirements.in").write_text("torch\n")
    assert compile_(project, "--platform", "linux-rocm6") == 0
    packages = pkgs(lock_of(project, "linux-rocm6"))
    assert packages["torch"]["version"] == "2.5.1+rocm6.2"
    assert packages["pytorch-triton-rocm"]["version"] == "3.1.0"
    assert packages["pytorch-triton-rocm"]["index"] == OFFICIAL + "/rocm6.2"
    assert compile_(project, "--platform", "linux-cu126") == 0
    assert pkgs(lock_of(project, "linux-cu126"))["triton"]["version"] == "3.1.0"
    # asking for the planted version directly is no resolution, never a fallback
    (project / "requirements.in").write_text("torch\ntriton==99.0.0\n")
    assert compile_(project, "--platform", "linux-cu126") == 1


@pytest.mark.parametrize("requirement,name,version", [
    ("numpy>=2.1", "numpy", "2.1.0"),          # the PyTorch index's copied page has 1.26.3
    ("setuptools>=75", "setuptools", "80.9.0"),  # its stale copy: 70.2.0
    ("jinja2>=3.1.5", "jinja2", "3.1.6"),        # its stale copy: 3.1.4
    ("requests", "requests", "2.32.5"),         # no floor: still not the stale 2.28.1
    ("markupsafe", "markupsafe", "3.0.3"),      # MarkupSafe 3.0.2 only, there
])
def test_stale_copies_on_the_pytorch_index_are_never_used(project, indexes, requirement, name,
                                                          version):
    (project / "requirements.in").write_text(f"torch==2.5.1\n{requirement}\n")
    for platform in ("linux-cu126", "linux-rocm6", "macos-arm64"):
        assert compile_(project, "--platform", platform) == 0, platform
        package = pkgs(lock_of(project, platform))[name]
        assert package["version"] == version, platform  # the same on every platform
        assert package["index"] == f"{indexes.url}/simple"


def test_realistic_set_for_cuda_and_rocm(project, indexes, capsys):
    """The closing note's table: torch, numpy>=2, jinja2, setuptools>=75, requests."""
    (project / "requirements.in").write_text(
        "torch==2.5.1\nnumpy>=2\njinja2\nsetuptools>=75\nrequests\n")
    assert compile_(project, "--platform", "linux-cu126", "--platform", "linux-rocm6") == 0
    rows = []
    for platform in ("linux-cu126", "linux-rocm6"):
        for p in lock_of(project, platform)["packages"]:
            index = p["index"].replace(indexes.url + "/simple", "(default index)")
            rows.append(f"{platform:12} {p['name']:20} {p['version']:15} {index}")
    with capsys.disabled():
        print("\n" + "\n".join(rows))
    expected = {"numpy": "2.1.0", "jinja2": "3.1.6", "setuptools": "80.9.0",
                "requests": "2.32.5", "markupsafe": "3.0.3", "filelock": "3.16.1"}
    for platform in ("linux-cu126", "linux-rocm6"):
        packages = pkgs(lock_of(project, platform))
        assert {k: packages[k]["version"] for k in expected} == expected


def test_page_without_hashes_is_hashed_by_lockkit(project, indexes):
    """Nightly and some stable pages give no #sha256: the lock still has the file's own
    (uv downloads such a file to hash it; lockkit hashes whatever uv left unhashed)."""
    (project / "requirements.in").write_text("torch\n")
    assert compile_(project, "--platform", "linux-rocm6") == 0
    lock = lock_of(project, "linux-rocm6")
    wheel = pkgs(lock)["pytorch-triton-rocm"]["wheels"][0]
    served = indexes.pt.base / "bucket" / "whl" / "rocm6.2" / wheel["name"]
    assert wheel["hashes"]["sha256"] == hashlib.sha256(served.read_bytes()).hexdigest()
    assert "#sha256" not in indexes.pt.page("rocm6.2", "pytorch-triton-rocm")


def test_a_link_rewriting_mirror_gives_the_same_lock(project, indexes):
    """Artifactory, Nexus and devpi serve the pages with links to themselves: the lock
    still records the official URLs, byte for byte what the static mirror gives."""
    (project / "requirements.in").write_text("torch==2.5.1\n")
    assert compile_(project, "--platform", "linux-cu126") == 0
    static = (project / "locks" / "pylock.linux-cu126.toml").read_text()
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\n'
        f'[mirrors]\n"{OFFICIAL}/cu126" = "{indexes.pt.rewriting("cu126")}"\n')
    indexes.pt.requests.clear()
    assert compile_(project, "--platform", "linux-cu126") == 0
    assert any(p.startswith("/rw/cu126/simple/torch") for p in indexes.pt.requests)
    assert not any(p.startswith(("/pt/", "/r2/")) for p in indexes.pt.requests)
    rewritten = (project / "locks" / "pylock.linux-cu126.toml").read_text()
    assert _files(rewritten) == _files(static)


def _files(text: str) -> list[tuple]:
    """What identifies each file: name, official URL, sha256 (a proxy may drop upload times)."""
    return [(p["name"], p["version"], p.get("index"), w["name"], w["url"], w["hashes"]["sha256"])
            for p in tomllib.loads(text)["packages"] for w in p["wheels"]]


def test_pytorch_index_refusing_a_family_package_is_an_error_not_a_fallback(project, indexes,
                                                                             capsys):
    """The real index answers 403 (S3's XML) for a name it does not serve."""
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\n'
        f'[mirrors]\n"{OFFICIAL}" = "{indexes.pt.main}/whl/xpu-empty"\n'
        f'"{R2}" = "{indexes.pt.r2}"\n')
    (project / "requirements.in").write_text("torch\n")
    assert compile_(project, "--platform", "linux-rocm6") == 1
    msg = capsys.readouterr().err
    # issue 42: the host that answered 403 is the mirror, named with what it stands for
    assert (f"torch must come from the mirror {indexes.pt.main}/whl/xpu-empty/rocm6.2 (for "
            "the PyTorch index https://download.pytorch.org/whl/rocm6.2), which does not "
            "serve it (HTTP 403") in msg
    assert "HTTP 403" in msg and "never falls back" in msg
    assert not (project / "locks" / "pylock.linux-rocm6.toml").exists()


def test_recompile_is_byte_identical_and_check_gate(project, capsys):
    args = ["compile", "--project", str(project), "--platform", "linux-cpu"]
    assert main(args + ["--check"]) == 1
    assert "linux-cpu: missing (locks/pylock.linux-cpu.toml)" in capsys.readouterr().err
    assert main(args) == 0
    path = project / "locks" / "pylock.linux-cpu.toml"
    first = path.read_bytes()
    assert main(args) == 0
    assert path.read_bytes() == first
    assert main(args + ["--check"]) == 0
    assert "linux-cpu: fresh" in capsys.readouterr().err
    (project / "requirements.in").write_text("torch==2.5.1\nnumpy\nfilelock\n")
    assert main(args + ["--check"]) == 1
    err = capsys.readouterr().err
    assert "linux-cpu: stale (locks/pylock.linux-cpu.toml): requirements.in: added filelock" in err
    assert path.read_bytes() == first  # --check writes nothing


def check_line(project: Path, capsys) -> tuple[int, str]:
    code = main(["compile", "--project", str(project), "--platform", "linux-cpu", "--check"])
    lines = [ln for ln in capsys.readouterr().err.splitlines()
             if ln.startswith("linux-cpu:") and not ln.endswith(": resolving...")]
    return code, lines[0] if lines else ""


@pytest.mark.parametrize("change,expected", [
    (lambda p: (p / "requirements.in").write_text("# the app\ntorch == 2.5.1  # pinned\n\nnumpy\n"),
     "fresh"),
    (lambda p: (p / "requirements.in").write_text("torch==2.5.1\nnumpy>=2\n"),
     "stale (locks/pylock.linux-cpu.toml): requirements.in: changed numpy → numpy>=2"),
    (lambda p: (p / "lockkit.toml").write_text(
        (p / "lockkit.toml").read_text() .replace("platforms", 'python = "3.12"\nplatforms', 1)),
     "stale (locks/pylock.linux-cpu.toml): python: 3.11 -> 3.12"),
    (lambda p: (p / "lockkit.toml").write_text(
        'exclude-newer = "2025-01-01"\n' + (p / "lockkit.toml").read_text()),
     "stale (locks/pylock.linux-cpu.toml): exclude-newer: (unset) -> 2025-01-01"),
    (lambda p: _edit_lock(p, "2.1.0", "2.0.0"),
     "modified (locks/pylock.linux-cpu.toml): its packages table was edited after lockkit "
     "wrote it"),
    (lambda p: _zero_hashes(p), "modified (locks/pylock.linux-cpu.toml): its packages table"),
    (lambda p: (p / "locks" / "pylock.linux-cpu.toml").write_text("<<<<<<< HEAD\n"),
     "modified (locks/pylock.linux-cpu.toml): not a lock lockkit wrote"),
    (lambda p: (p / "locks" / "pylock.linux-cpu.toml").unlink(),
     "missing (locks/pylock.linux-cpu.toml)"),
])
def test_check_tells_fresh_stale_modified_missing(project, capsys, change, expected):
    assert compile_(project, "--platform", "linux-cpu") == 0
    capsys.readouterr()
    change(project)
    code, line = check_line(project, capsys)
    assert line.startswith(f"linux-cpu: {expected}")
    assert code == (0 if expected == "fresh" else 1)


def _edit_lock(project: Path, old: str, new: str) -> None:
    path = project / "locks" / "pylock.linux-cpu.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _zero_hashes(project: Path) -> None:
    import re
    path = project / "locks" / "pylock.linux-cpu.toml"
    path.write_text(re.sub(r'sha256 = "[0-9a-f]{64}"', 'sha256 = "' + "0" * 64 + '"',
                           path.read_text()))


def test_a_lockkit_upgrade_keeps_locks_fresh_unless_the_format_changes(project, capsys,
                                                                       monkeypatch):
    from lockkit.compile import compiler
    from lockkit.lock import freshness
    assert compile_(project, "--platform", "linux-cpu") == 0
    monkeypatch.setattr(compiler, "__version__", "99.0.0")
    assert check_line(project, capsys)[0] == 0
    now = freshness.LOCK_FORMAT
    monkeypatch.setattr(freshness, "LOCK_FORMAT", now + 1)
    code, line = check_line(project, capsys)
    assert code == 1 and f"lock format {now} -> {now + 1} (a newer lockkit)" in line


def test_check_outside_a_project_is_a_usage_error(tmp_path, capsys):
    assert main(["compile", "--check", "--project", str(tmp_path)]) == 2
    assert "--check: no lockkit.toml" in capsys.readouterr().err


def test_credentials_never_written_or_printed(project, indexes, capsys, monkeypatch):
    monkeypatch.setenv("LK_TOKEN", "s3cr3t-token")
    url = indexes.url.replace("http://", "http://alice:${LK_TOKEN}@") + "/simple"
    assert main(["compile", "--project", str(project), "--index-url", url]) == 0
    text = (project / "locks" / "pylock.linux-cpu.toml").read_text()
    assert "s3cr3t" not in text and "alice" not in text and "LK_TOKEN" not in text
    assert any(auth for _, auth in indexes.server.requests)  # the credentials were really used
    assert "s3cr3t" not in capsys.readouterr().err


def test_credentials_for_the_pytorch_mirror_are_used_never_written(project, indexes, capsys,
                                                                     monkeypatch):
    monkeypatch.setenv("PT_TOKEN", "pt-s3cr3t")
    hosts = {k: v.replace("http://", "http://bob:${PT_TOKEN}@")
             for k, v in indexes.pt.mirrors().items()}
    args = [a for k, v in hosts.items() for a in ("--mirror", f"{k}={v}")]
    (project / "lockkit.toml").write_text(f'index-url = "{indexes.url}/simple"\n')
    indexes.pt.auth = ("bob", "pt-s3cr3t")  # the mirrors refuse every request without it
    assert compile_(project, "--platform", "linux-cu126", *args) == 0
    text = (project / "locks" / "pylock.linux-cu126.toml").read_text()
    assert "s3cr3t" not in text and "bob" not in text and "PT_TOKEN" not in text
    assert "127.0.0.1" not in text.replace(f"{indexes.url}/simple", "")
    used = [path for path, auth in indexes.pt.authorizations if auth.startswith("Basic ")]
    assert "/pt/whl/cu126/torch/" in used  # the page, fetched by lockkit's routing index
    # the metadata, fetched by uv: the credentials came from the netrc lockkit gave it,
    # not from the routing index's page (which carries none)
    assert any(p.startswith("/r2/") for p in used)
    assert "s3cr3t" not in capsys.readouterr().err


def test_cpu_platform_refuses_a_cuda_build(project, indexes, capsys):
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\n'
        f'[mirrors]\n"{OFFICIAL}/cpu" = "{indexes.pt.main}/whl/cu126"\n"{R2}" = "{indexes.pt.r2}"\n'
    )
    indexes.default.add("triton", "3.1.0", tag=LINUX)  # not torch-family on a CPU platform
    assert main(["compile", "--project", str(project), "--platform", "linux-cpu"]) == 1
    assert "is not a CPU build" in capsys.readouterr().err


def test_sdist_only_package_is_refused_unless_allowed(project, indexes, capsys):
    folder = indexes.default.root / "onlysdist"
    folder.mkdir()
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"Metadata-Version: 2.2\nName: onlysdist\nVersion: 1.0\n"
        info = tarfile.TarInfo("onlysdist-1.0/PKG-INFO")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        setup = b"from setuptools import setup\nsetup(name='onlysdist', version='1.0')\n"
        info = tarfile.TarInfo("onlysdist-1.0/setup.py")
        info.size = len(setup)
        tf.addfile(info, io.BytesIO(setup))
    (folder / "onlysdist-1.0.tar.gz").write_bytes(buf.getvalue())
    (project / "requirements.in").write_text("onlysdist\n")
    assert main(["compile", "--project", str(project)]) == 1
    assert "onlysdist 1.0 has no wheel" in capsys.readouterr().err


@pytest.mark.parametrize(
    "setup,expected",
    [
        (lambda p: None, "unknown platform 'nope'; known: linux-cpu"),
        (lambda p: (p / "requirements.in").unlink(), "requirements: 'requirements.in': not found"),
        (lambda p: (p / "requirements.in").write_text("torch\nthis is not ===valid\n"),
         "requirements.in:2: 'this is not ===valid': 'is not ===valid' after 'this' is not a "
         "version clause"),
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


@pytest.mark.slow
def test_no_resolution_and_unreachable_index(project, capsys):
    (project / "requirements.in").write_text("torch==7.0\n")
    assert main(["compile", "--project", str(project)]) == 1
    assert "no resolution" in capsys.readouterr().err
    (project / "requirements.in").write_text("numpy\n")
    assert main(["compile", "--project", str(project),
                 "--index-url", "http://127.0.0.1:9/simple"]) == 1
    assert "unreachable" in capsys.readouterr().err
    (project / "requirements.in").write_text("torch\n")
    assert compile_(project, "--mirror", f"{OFFICIAL}=http://127.0.0.1:9/whl") == 1
    err = capsys.readouterr().err
    assert f"the PyTorch index {OFFICIAL}/cpu is unreachable" in err


def test_lock_installs_with_uv_from_a_project_platform(project, indexes, tmp_path):
    """A user platform whose PyTorch index is a private proxy (its pages link files on
    itself, as Artifactory's do): its own URLs are the official ones; uv installs the lock."""
    (project / "lockkit.toml").write_text(f'index-url = "{indexes.url}/simple"\n')
    (project / "platforms").mkdir(exist_ok=True)
    src = (Path(__file__).parents[2] / "platforms" / "linux-cpu.toml").read_text()
    (project / "platforms" / "local-cpu.toml").write_text(
        src.replace(f"{OFFICIAL}/cpu", indexes.pt.rewriting("cpu")).replace(
            f'file-hosts = ["{R2}"]', ""))
    assert main(["compile", "--project", str(project), "--platform", "local-cpu"]) == 0
    import uv
    venv = tmp_path / "venv"
    subprocess.run([uv.find_uv_bin(), "venv", "--no-config", str(venv)], check=True,
                   capture_output=True)
    py = venv / "bin" / "python"
    r = subprocess.run([uv.find_uv_bin(), "pip", "install", "--no-config", "--python", str(py),
                        "-r", str(project / "locks" / "pylock.local-cpu.toml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(py), "-c", "import torch, numpy; print(torch.__version__)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "2.5.1+cpu"


def test_malformed_platform_file_names_file_and_field(project, capsys):
    (project / "platforms").mkdir(exist_ok=True)
    (project / "platforms" / "broken.toml").write_text(
        'os = "plan9"\narch = "x"\npython = "3.11"\npython-platform = "x"\n'
        '[backend]\nkind = "cuda"\n[torch]\npackages = ["torch"]\n'
        'file-hosts = ["https://files.example/whl", "ftp://x"]\n[gpu]\ndevice = "cuda"\n')
    assert main(["platforms", "--project", str(project)]) == 2
    msg = capsys.readouterr().err
    assert "broken.toml" in msg and "os: 'plan9' is not one of" in msg
    assert "backend.version: required" in msg
    assert "torch.file-hosts[0]: 'https://files.example/whl' is not a scheme://host URL" in msg
    assert "torch.file-hosts[1]" in msg and "torch.file-hosts: needs torch.index" in msg


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


# --- stable recompiles -------------------------------------------------------------------------

def _versions(project: Path, platform: str = "linux-cpu") -> dict[str, str]:
    return {p["name"]: p["version"] for p in lock_of(project, platform)["packages"]}


def test_adding_a_requirement_moves_nothing_else(project, indexes):
    """The existing lock's versions are preferences (as in pip-compile and uv)."""
    assert compile_(project) == 0
    before = (project / "locks" / "pylock.linux-cpu.toml").read_text()
    indexes.default.add("numpy", "2.2.0", tag=LINUX)  # newer releases appear meanwhile
    indexes.default.add("filelock", "3.17.0")
    indexes.default.add("tqdm", "4.67.1")
    (project / "requirements.in").write_text("torch==2.5.1\nnumpy\ntqdm\n")
    assert compile_(project) == 0
    after = (project / "locks" / "pylock.linux-cpu.toml").read_text()
    assert _versions(project) == {"torch": "2.5.1+cpu", "numpy": "2.1.0", "filelock": "3.16.1",
                                  "tqdm": "4.67.1"}
    old = tomllib.loads(before)["packages"]
    new = [p for p in tomllib.loads(after)["packages"] if p["name"] != "tqdm"]
    assert new == old  # byte-for-byte the same entries, only tqdm added


def test_upgrade_package_lifts_one_and_upgrade_lifts_all(project, indexes):
    assert compile_(project) == 0
    indexes.default.add("numpy", "2.2.0", tag=LINUX)
    indexes.default.add("filelock", "3.17.0")
    assert compile_(project, "--upgrade-package", "numpy") == 0
    assert _versions(project)["numpy"] == "2.2.0" and _versions(project)["filelock"] == "3.16.1"
    assert compile_(project, "--upgrade") == 0
    assert _versions(project)["filelock"] == "3.17.0"


def test_exclude_newer_resolves_as_of_a_date(project, indexes):
    """The PyTorch index's pages carry data-upload-time; uv filters on it."""
    indexes.pt.add("rocm6.2", "pytorch-triton-rocm", "3.2.0", tag=LINUX,
                   upload_time="2025-01-29T17:00:00Z")  # the replica's others: 2024-10-29
    (project / "requirements.in").write_text("pytorch-triton-rocm\n")
    assert compile_(project, "--platform", "linux-rocm6", "--exclude-newer", "2025-01-01") == 0
    assert _versions(project, "linux-rocm6") == {"pytorch-triton-rocm": "3.1.0"}
    (project / "lockkit.toml").write_text(
        indexes.config(extra='exclude-newer = "2025-02-01T00:00:00Z"\n'))
    assert compile_(project, "--platform", "linux-rocm6", "--upgrade") == 0
    assert _versions(project, "linux-rocm6") == {"pytorch-triton-rocm": "3.2.0"}


@pytest.mark.parametrize("value", ['"yesterday"', '"2024-13-01"', '"2024-10-01T00:00:00"', "3"])
def test_bad_exclude_newer_is_a_config_error(project, indexes, capsys, value):
    (project / "lockkit.toml").write_text(indexes.config(extra=f"exclude-newer = {value}\n"))
    assert compile_(project) == 2
    assert "exclude-newer" in capsys.readouterr().err


@pytest.mark.parametrize("served", [False, True], ids=["no-index-there", "index-without-torch"])
def test_a_short_mirror_path_lacking_torch_never_falls_back(project, indexes, capsys, served):
    """A mirror of the CPU index at ``<host>/torch-cpu`` that has no torch: the guard names
    torch, the mirror that answered and the PyTorch index it stands for, and the torch
    planted on the default index stays unused."""
    indexes.default.add("torch", "2.5.1", requires=["filelock"], tag=LINUX)
    if served:
        indexes.server.index("/torch-cpu").add("filelock", "3.16.1")
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\n'
        f'[mirrors]\n"{OFFICIAL}/cpu" = "{indexes.url}/torch-cpu"\n')
    (project / "requirements.in").write_text("torch\n")
    indexes.forget_requests()
    assert compile_(project, "--platform", "linux-cpu") == 1
    msg = capsys.readouterr().err
    assert (f"torch must come from the mirror {indexes.url}/torch-cpu (for the PyTorch "
            f"index {OFFICIAL}/cpu)") in msg  # issue 42: the host that answered
    assert "never falls back" in msg
    assert not (project / "locks" / "pylock.linux-cpu.toml").exists()
    assert not [w for w in indexes.wheel_requests() if w.startswith("/simple/torch")]


def _imported_by_check(project: Path) -> set[str]:
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "lockkit", "compile",
                          "--check", "--project", str(project), "--platform", "linux-cpu"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in run.stderr.splitlines()
            if line.startswith("import time:")}


def test_the_gate_imports_no_resolver_nor_lock_writer(project):
    """--check reads the locks and the inputs, nothing more: no resolver (uv's wrapper, the
    routing index, its pages, httpx), no lock writer (tomli_w), no terminal UI (rich).
    (packaging and dataclasses it does import: the fast paths that avoided them are gone.)"""
    assert compile_(project, "--platform", "linux-cpu") == 0
    modules = _imported_by_check(project)
    assert "lockkit.config.reqfile" in modules  # every check normalises the inputs
    imported = {name.split(".")[0] for name in modules}
    assert "lockkit" in imported
    assert not imported & {"httpx", "rich", "tomli_w", "numpy"}, imported
    assert not modules & {"lockkit.index.resolve", "lockkit.index.routing",
                          "lockkit.index.pages"}, modules


def test_the_gate_sees_an_included_file_change(project, capsys):
    (project / "base.txt").write_text("numpy\n")
    (project / "requirements.in").write_text("torch==2.5.1\n-r base.txt\n")
    assert compile_(project, "--platform", "linux-cpu") == 0
    capsys.readouterr()
    assert check_line(project, capsys)[0] == 0
    (project / "base.txt").write_text("numpy>=2\n")
    code, line = check_line(project, capsys)
    assert code == 1 and "base.txt: changed numpy → numpy>=2" in line


def _reseal(text: str) -> str:
    """*text* with the seal line older locks end with, recomputed for its lines (what
    anyone who edits a lock can do)."""
    body = "".join(ln for ln in text.splitlines(keepends=True)
                   if not ln.startswith("# lockkit seal:"))
    return f"{body}# lockkit seal: sha256:{hashlib.sha256(body.encode()).hexdigest()}\n"


def test_a_lock_from_before_with_a_files_digest_and_a_seal_is_still_fresh(project, capsys):
    """Locks written while compile recorded its input files' digest and sealed the lock
    keep their verdict: the check reads neither."""
    assert compile_(project, "--platform", "linux-cpu") == 0
    path = project / "locks" / "pylock.linux-cpu.toml"
    text = path.read_text()
    assert "input-files-digest" not in text and "# lockkit seal:" not in text
    path.write_text(_reseal(text.replace("[tool.lockkit]\n", "[tool.lockkit]\n"
                                         f'input-files-digest = "sha256:{"0" * 64}"\n')))
    assert "input-files-digest" in path.read_text()
    capsys.readouterr()
    assert check_line(project, capsys) == (0, "linux-cpu: fresh (locks/pylock.linux-cpu.toml)")


def test_an_edited_lock_with_a_recomputed_seal_is_modified(project, capsys):
    """A seal anyone can recompute proves nothing: a lock whose packages were edited is
    modified, whatever its last line says."""
    assert compile_(project, "--platform", "linux-cpu") == 0
    path = project / "locks" / "pylock.linux-cpu.toml"
    text = path.read_text()
    edited = text.replace('version = "2.1.0"', 'version = "2.0.0"', 1)
    assert edited != text
    path.write_text(_reseal(edited))
    capsys.readouterr()
    code, line = check_line(project, capsys)
    assert code == 1 and line.startswith("linux-cpu: modified"), line


# --- accepted without a word, before issue 24 ---------------------------------------------------

@pytest.mark.parametrize("argv,flags", [
    (["--all", "--platform", "linux-cpu"], "--all and --platform"),
    (["--check", "--upgrade"], "--check and --upgrade"),
    (["--check", "--upgrade-package", "numpy"], "--check and --upgrade-package"),
    (["--check", "--force"], "--check and --force"),
])
def test_flags_that_contradict_each_other_are_refused_naming_both(tmp_path, capsys, argv, flags):
    """Before: --all --platform X compiled all 18 platforms; --check ignored --upgrade."""
    (tmp_path / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    (tmp_path / "requirements.in").write_text("torch\n")
    assert compile_(tmp_path, *argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"lockkit: error: {flags} cannot be given together: "
        + ("--all is every known platform" if "--all" in flags else "--check writes nothing, so "
           + ("no lock is taken as preferences" if "force" in flags else "nothing is upgraded")),
        "hint: see 'lockkit compile --help'"]
    assert not (tmp_path / "locks").exists()


def test_ci_github_refuses_all_with_platform_too(tmp_path, capsys):
    assert main(["ci", "github", "--all", "--platform", "linux-cpu",
                 "--project", str(tmp_path)]) == 2
    assert "--all and --platform cannot be given together" in capsys.readouterr().err


def test_an_empty_requirements_file_is_a_warning_naming_it(project, capsys):
    """Before: an empty lock, and not a word."""
    (project / "requirements.in").write_text("# nothing yet\n\n")
    assert compile_(project, "--platform", "linux-cpu") == 0
    err = capsys.readouterr().err
    assert "warning: requirements.in names no requirement: nothing from it is locked" in err
    assert lock_of(project, "linux-cpu")["packages"] == []
    (project / "requirements.in").write_text("numpy\n")
    assert compile_(project, "--platform", "linux-cpu") == 0
    assert "warning" not in capsys.readouterr().err


def test_a_lock_edited_by_hand_is_no_preference_without_upgrade_or_force(project, capsys):
    """Before: a lock --check reports modified was taken as preferences on recompile."""
    assert compile_(project, "--platform", "linux-cpu") == 0
    capsys.readouterr()
    _edit_lock(project, 'version = "2.1.0"', 'version = "2.0.0"')
    path = project / "locks" / "pylock.linux-cpu.toml"
    edited = path.read_bytes()
    assert compile_(project, "--platform", "linux-cpu") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"lockkit: error: {path}: modified (its packages table was edited after lockkit wrote "
        "it): compile will not take its versions as preferences",
        "hint: pass --upgrade to resolve afresh, or --force to keep the edited versions as "
        "preferences"]
    assert path.read_bytes() == edited  # refused before any work
    assert compile_(project, "--platform", "linux-cpu", "--force") == 0
    assert pkgs(lock_of(project, "linux-cpu"))["numpy"]["version"] == "2.1.0"  # 2.0.0: none
    _edit_lock(project, 'version = "2.1.0"', 'version = "2.0.0"')
    assert compile_(project, "--platform", "linux-cpu", "--upgrade") == 0
    assert check_line(project, capsys)[1].startswith("linux-cpu: fresh")


@pytest.mark.parametrize("typed,meant", [("torchh", "torch"), ("torch-vision", "torchvision"),
                                         ("torch_audio", "torchaudio"),
                                         ("torchvison", "torchvision")])
def test_a_near_miss_of_a_torch_family_name_is_a_warning_naming_the_name(project, indexes,
                                                                         capsys, typed, meant):
    """Before: the near miss was locked from the default index without a word. It still
    is (a warning, not an error): the name may be the one meant."""
    indexes.default.add(typed, "1.0")
    (project / "requirements.in").write_text(f"torch==2.5.1\n{typed}\n")
    assert compile_(project, "--platform", "linux-cpu") == 0
    name = typed.replace("_", "-")
    assert (f"warning: requirements.in: {name!r} is not a PyTorch package; did you mean "
            f"{meant!r}? ({name!r} is locked as written, from the default index)"
            ) in capsys.readouterr().err
    assert pkgs(lock_of(project, "linux-cpu"))[name]["index"] == f"{indexes.url}/simple"


def test_names_that_only_start_like_a_torch_family_name_are_no_near_miss():
    from lockkit.compile.slips import input_warnings
    from lockkit.platforms.definitions import load_platforms

    platforms = list(load_platforms().values())
    names = ["torchx", "torchrl", "torchdata", "torchao", "torchmetrics", "pytorch-triton",
             "torch", "torchvision", "triton", "numpy"]
    assert input_warnings(platforms, {"requirements.in": names}) == []
    assert input_warnings(platforms, {"requirements.in": ["torchh==1.0 --hash=sha256:00"]}) == [
        "requirements.in: 'torchh' is not a PyTorch package; did you mean 'torch'? ('torchh' "
        "is locked as written, from the default index)"]
