"""`lockkit wheelhouse build`: every wheel by hash, a folder that installs with no network."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from packaging.pylock import Pylock

from lockkit._internal.compat import tomllib
from lockkit.cache.store import Cache
from lockkit.cli import main
from lockkit.download.sources import FoundIn
from lockkit.errors import FetchError, HashMismatch
from tests.support.project import OFFICIAL
from tests.support.pytorch_index import R2
from tests.support.wheelhouse import (
    TORCH,
    build_cli,
    build_lib,
    compiled,
    leftovers,
    partials,
    served,
    wheel_requests,
    with_sdist,
)

TORCH_KEY = "whl/cpu/torch-2.5.1%2Bcpu-cp311-cp311-linux_x86_64.whl"  # as the index links it


def test_build_writes_a_complete_verified_folder(project, indexes, tmp_path):
    lock = compiled(project, indexes)
    assert build_cli(project, tmp_path / "cache") == 0
    out = project / "wheelhouse" / "linux-cpu"
    wheels = sorted(p.name for p in out.glob("*.whl"))
    assert wheels == ["filelock-3.16.1-py3-none-any.whl",
                      "numpy-2.1.0-cp311-cp311-linux_x86_64.whl", TORCH]

    local = tomllib.loads((out / "pylock.toml").read_text())
    Pylock.from_dict(local)  # valid PEP 751
    for pkg in local["packages"]:
        (wheel,) = pkg["wheels"]
        assert "url" not in wheel and (out / wheel["path"]).is_file()
        assert hashlib.sha256((out / wheel["path"]).read_bytes()).hexdigest() == \
            wheel["hashes"]["sha256"]
    assert local["tool"]["lockkit"]["wheelhouse-of"]["sha256"] == \
        hashlib.sha256(lock.read_bytes()).hexdigest()

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"] == "linux-cpu"
    assert manifest["lock_sha256"] == hashlib.sha256(lock.read_bytes()).hexdigest()
    listed = {f["path"]: f for f in manifest["files"]}
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*")
               if p.is_file() and p.name != "manifest.json"}
    assert set(listed) == on_disk
    for path, entry in listed.items():
        data = (out / path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"])
    torch = listed[TORCH]
    assert torch["source"] == f"{R2}/{TORCH_KEY}"  # the lock's URL, not the mirror's
    assert all("origin" not in f for f in listed.values())  # where it was found: the log's
    assert indexes.pt.r2 not in (out / "manifest.json").read_text()

    reqs = (out / "requirements.txt").read_text()
    assert f"torch==2.5.1+cpu --hash=sha256:{torch['sha256']}" in reqs
    page = (out / "simple" / "torch" / "index.html").read_text()
    href = f"../../torch-2.5.1%2Bcpu-cp311-cp311-linux_x86_64.whl#sha256={torch['sha256']}"
    assert f'href="{href}"' in page
    assert "torch" in (out / "simple" / "index.html").read_text()
    assert leftovers(out.parent, "linux-cpu") == []


def test_second_build_downloads_nothing(project, indexes, tmp_path, capsys):
    compiled(project, indexes)
    assert build_cli(project, tmp_path / "cache") == 0
    first = len(wheel_requests(indexes))
    assert first == 3
    assert build_cli(project, tmp_path / "cache", "--out", str(tmp_path / "again")) == 0
    assert len(wheel_requests(indexes)) == first
    from lockkit._internal.ui import human_size

    cached = sum(w.stat().st_size for w in (tmp_path / "again").glob("*.whl"))
    assert (f"3 wheels, 0 bytes downloaded, {human_size(cached)} from the cache (3 files)"
            in capsys.readouterr().err)
    first_manifest = project / "wheelhouse" / "linux-cpu" / "manifest.json"
    assert (tmp_path / "again" / "manifest.json").read_bytes() == first_manifest.read_bytes()


def test_the_largest_file_is_fetched_first(project, indexes, tmp_path):
    """An index that gives sizes (PEP 691) puts them in the lock: the largest file starts
    first, so the build does not end on a torch wheel started last."""
    import tomli_w

    lock = compiled(project, indexes)
    assert build_cli(project, tmp_path / "c1", "--out", str(tmp_path / "w1")) == 0
    sizes = {p.name: p.stat().st_size for p in (tmp_path / "w1").glob("*.whl")}
    data = tomllib.loads(lock.read_text())
    for pkg in data["packages"]:
        for wheel in pkg.get("wheels", []):
            if wheel["name"] in sizes:
                wheel["size"] = sizes[wheel["name"]]
    lock.write_text(tomli_w.dumps(data))
    order: list[str] = []
    build_lib(project, tmp_path / "c2", tmp_path / "w2", jobs=1,
              on_file=lambda got: order.append(got.want.filename))
    assert order == sorted(sizes, key=lambda f: -sizes[f])
    assert order != sorted(sizes)  # not merely the lock's order


def test_find_links_folder_is_used_by_hash(project, indexes, tmp_path):
    compiled(project, indexes)
    assert build_cli(project, tmp_path / "c1") == 0
    links = project / "wheelhouse" / "linux-cpu"
    before = len(wheel_requests(indexes))
    result = build_lib(project, tmp_path / "c2", tmp_path / "w2", find_links=(links,))
    assert len(wheel_requests(indexes)) == before
    assert {r.origin for r in result.files} == {FoundIn.folder(links)}


@pytest.mark.parametrize(("found", "said", "local"), [
    (FoundIn("cache"), "cache", True),
    (FoundIn.folder(Path("/srv/wheels")), "find-links /srv/wheels", True),
    (FoundIn("url", "https://mirror.test/a.whl"), "https://mirror.test/a.whl", False),
])
def test_where_a_file_was_found_is_typed_and_said_as_the_build_log_says_it(found, said, local):
    """The display counts the cache and --find-links by kind, never by parsing the text."""
    assert (str(found), found.local) == (said, local)


def test_find_links_file_with_wrong_bytes_is_refused(project, tmp_path, capsys):
    compiled(project)
    links = tmp_path / "links"
    links.mkdir()
    (links / TORCH).write_bytes(b"not the wheel the lock names")
    assert build_cli(project, tmp_path / "cache", "--find-links", str(links)) == 1
    err = capsys.readouterr().err
    assert f"{TORCH}: {links / TORCH} has sha256" in err and "not used" in err
    assert not (project / "wheelhouse" / "linux-cpu").exists()


@pytest.mark.parametrize("fault", ["500", "reset", "truncate", "slow"])
def test_transient_faults_are_retried(project, indexes, tmp_path, fault):
    compiled(project, indexes)
    indexes.pt.faults[TORCH] = [fault, fault]
    indexes.pt.stall = 3.0
    result = build_lib(project, tmp_path / "cache", tmp_path / "wh", timeout=1.0)
    torch = next(r for r in result.files if r.path == TORCH)
    assert torch.origin.kind == "url" and torch.origin.where.startswith(indexes.pt.r2)
    assert wheel_requests(indexes).count(f"/r2/whl/cpu/{TORCH}") == 3
    assert indexes.pt.faults[TORCH] == []
    assert (tmp_path / "wh" / TORCH).read_bytes() == served(indexes)


def test_persistent_fault_is_reported_with_file_and_url(project, indexes, tmp_path):
    compiled(project, indexes)
    indexes.pt.faults[TORCH] = ["500"] * 20
    with pytest.raises(FetchError) as err:
        build_lib(project, tmp_path / "cache", tmp_path / "wh", attempts=2)
    msg = str(err.value)
    assert TORCH in msg and f"{indexes.pt.r2}/{TORCH_KEY}" in msg and "HTTP 500" in msg
    assert "gave up after 2 attempts" in msg
    assert not (tmp_path / "wh").exists() and leftovers(tmp_path, "wh") == []


def test_hash_mismatch_is_never_retried_and_never_lands(project, indexes, tmp_path, capsys):
    lock = compiled(project, indexes)
    indexes.pt.faults[TORCH] = ["wrong"]
    cache = tmp_path / "cache"
    assert build_cli(project, cache) == 1
    err = capsys.readouterr().err
    assert f"{TORCH} from {indexes.pt.r2}/{TORCH_KEY}" in err and "does not match" in err
    assert wheel_requests(indexes).count(f"/r2/whl/cpu/{TORCH}") == 1
    want = next(w["hashes"]["sha256"] for p in tomllib.loads(lock.read_text())["packages"]
                if p["name"] == "torch" for w in p["wheels"])
    assert not Cache(cache).path(want).exists()
    assert partials(cache) == []
    assert not (project / "wheelhouse" / "linux-cpu").exists()
    with pytest.raises(HashMismatch):
        indexes.pt.faults[TORCH] = ["wrong"]
        build_lib(project, cache, tmp_path / "wh")


def test_interrupted_build_leaves_nothing_final_and_resumes(project, indexes, tmp_path):
    compiled(project, indexes)
    cache, out = tmp_path / "cache", tmp_path / "wh"
    seen: list[str] = []
    handled = threading.Event()

    def stop_after_first(got) -> None:
        seen.append(got.want.filename)
        if len(seen) == 1:
            raise KeyboardInterrupt
        # The worker took the next file before the waiting thread ran (a busy machine):
        # it is held here until the interrupt was handled, as a real Ctrl-C (raised in
        # the waiting thread itself) would have stopped it.
        handled.wait(10)

    with pytest.raises(KeyboardInterrupt):
        build_lib(project, cache, out, jobs=1, on_file=stop_after_first)
    handled.set()
    assert not out.exists() and leftovers(tmp_path, "wh") == []
    assert partials(cache) == []
    kept = [p for p in (cache / "sha256").rglob("*") if p.is_file()]
    assert 1 <= len(kept) < 3  # the first file finished; the queue was dropped
    before = len(wheel_requests(indexes))
    result = build_lib(project, cache, out)
    assert len(wheel_requests(indexes)) == before + 3 - len(kept)  # finished files not refetched
    assert [r.origin for r in result.files if r.path == seen[0]] == [FoundIn("cache")]
    assert sum(r.origin == FoundIn("cache") for r in result.files) == len(kept)


def test_killed_build_leaves_no_file_under_a_final_name(project, indexes, tmp_path):
    compiled(project, indexes)
    cache, out = tmp_path / "cache", tmp_path / "wh"
    indexes.pt.faults[TORCH] = ["slow"]
    indexes.pt.stall = 30.0
    argv = [sys.executable, "-m", "lockkit", "wheelhouse", "build", "--project", str(project),
            "--platform", "linux-cpu", "--cache-dir", str(cache), "--out", str(out),
            "--timeout", "60"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not any(TORCH in p for p in wheel_requests(indexes)):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    cached = {p.name for p in (cache / "sha256").rglob("*") if p.is_file()}
    torch_sha = hashlib.sha256(served(indexes)).hexdigest()
    assert torch_sha not in cached
    indexes.pt.stall = 0.0
    assert build_cli(project, cache, "--out", str(out)) == 0
    assert (out / TORCH).is_file() and leftovers(tmp_path, "wh") == []


def test_concurrent_builds_share_the_cache(project, tmp_path):
    compiled(project)
    cache = tmp_path / "cache"
    results, errors = [], []

    def run(i: int) -> None:
        try:
            results.append(build_lib(project, cache, tmp_path / f"wh{i}"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 3
    for blob in (cache / "sha256").rglob("*"):
        if blob.is_file():
            assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name


def test_credentials_are_used_but_never_written(project, indexes, tmp_path, capsys):
    compiled(project, indexes)
    secret_mirror = f"{R2}=http://lockkit:s3cret-token@{indexes.pt.r2.split('://')[1]}"
    assert build_cli(project, tmp_path / "cache", "--mirror", secret_mirror) == 0
    assert any(auth.startswith("Basic ") for path, auth in indexes.pt.authorizations
               if path.endswith(".whl") and "torch" in path)
    out = project / "wheelhouse" / "linux-cpu"
    for f in out.rglob("*"):
        if f.is_file() and f.suffix != ".whl":
            assert "s3cret" not in f.read_text(), f
    captured = capsys.readouterr()
    assert "s3cret" not in captured.out + captured.err


def test_unknown_platform_and_missing_lock_are_usage_errors(project, tmp_path, capsys):
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", "nope"]) == 2
    assert "unknown platform 'nope'" in capsys.readouterr().err
    assert build_cli(project, tmp_path / "cache") != 0
    err = capsys.readouterr().err
    assert "pylock.linux-cpu.toml" in err
    assert not (project / "wheelhouse").exists()


# --- offline installs from the folder --------------------------------------------------------

def _no_network() -> list[str]:
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare -rn (a private network namespace) is not available here")
    return ["unshare", "-rn"]


def _clean_env() -> dict[str, str]:
    """No pip or uv settings from the machine: the folder alone must be enough."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _lock_python_only(bin_dir: Path, folder: Path) -> dict[str, str]:
    """A clean environment whose PATH has the lock's Python only by its versioned name
    (``python3.11``), and uv, before the system's folders: no bare ``python``, as on a
    Debian machine, so a printed ``python -m venv`` fails and a ``python3.11`` one works."""
    import uv

    python = tomllib.loads((folder / "pylock.toml").read_text())["tool"]["lockkit"]["python"]
    bin_dir.mkdir()
    (bin_dir / f"python{python}").symlink_to(Path(sys.base_prefix) / "bin" / f"python{python}")
    (bin_dir / "uv").symlink_to(uv.find_uv_bin())
    env = _clean_env()
    env["PATH"] = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    return env


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def _installed(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-c",
                          "import importlib.metadata as m, json;"
                          "print(json.dumps({d.metadata['Name']: d.version"
                          " for d in m.distributions()}))"],
                         capture_output=True, text=True, check=True).stdout
    return {k: v for k, v in json.loads(out).items() if k not in ("pip", "setuptools")}


EXPECTED = {"torch": "2.5.1+cpu", "numpy": "2.1.0", "filelock": "3.16.1"}


@pytest.fixture
def built(project, tmp_path) -> Path:
    compiled(project)
    assert build_cli(project, tmp_path / "cache") == 0
    return project / "wheelhouse" / "linux-cpu"


@pytest.mark.slow
def test_offline_install_with_requirements_and_hashes(built, tmp_path):
    python = _venv(tmp_path / "venv")
    subprocess.run([*_no_network(), str(python), "-m", "pip", "install", "--isolated", "-q",
                    "--no-index", "--find-links", str(built), "--require-hashes",
                    "-r", str(built / "requirements.txt")], check=True, env=_clean_env())
    assert _installed(python) == EXPECTED


@pytest.mark.slow
def test_printed_hint_installs_with_a_fresh_venvs_pip(built, tmp_path):
    """What unpack prints, run as printed with no network on a machine with no bare
    ``python`` (the lock's ``python3.11`` only): the first route works with the pip a fresh
    venv brings; that pip cannot read pylock.toml, which is why the hint does not lead
    with it."""
    from lockkit.wheelhouse.offline import install_hint

    lines = install_hint(built).splitlines()
    env = _lock_python_only(tmp_path / "bin", built)
    subprocess.run([*_no_network(), "sh", "-c", lines[1].strip()], cwd=tmp_path, check=True,
                   env=env)  # no pip config: the folder alone is enough
    assert _installed(tmp_path / "v" / "bin" / "python") == EXPECTED
    pip = subprocess.run([str(tmp_path / "v" / "bin" / "pip"), "--version"],
                         capture_output=True, text=True, check=True).stdout.split()[1]
    if int(pip.split(".")[0]) < 26:  # the venv's bundled pip (23.2 with Python 3.11)
        old = subprocess.run([*_no_network(), "sh", "-c", lines[3].strip()], cwd=tmp_path,
                             capture_output=True, text=True, env=env)
        assert old.returncode != 0 and "Invalid requirement: 'lock-version" in old.stderr


@pytest.mark.slow
def test_every_command_unpack_prints_runs_as_printed(built, project, tmp_path, capsys):
    """pack, unpack, then each command line unpack printed, in order, in the folder it was
    printed in, with no network and only the lock's ``python3.11`` on PATH: each succeeds
    (the pip-only pylock line where the venv's pip is 26.1 or later, as its line says), and
    the venv is the lock's Python with the lock's packages."""
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", "linux-cpu"]) == 0
    capsys.readouterr()
    here = tmp_path / "here"
    here.mkdir()
    archive = project / "wheelhouse" / "linux-cpu.wheelhouse.tar"
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(here / "offline")]) == 0
    printed = [ln.strip() for ln in capsys.readouterr().err.splitlines() if ln.startswith("  ")]
    assert printed and printed[0].startswith("python3.11 -m venv v ")
    env = _lock_python_only(tmp_path / "bin", here / "offline")
    for line in printed:
        if line.startswith("v/bin/pip install --no-index -r ") and _pip_major(here) < 26:
            continue  # "with pip >= 26.1 or uv": this venv's pip is older
        run = subprocess.run([*_no_network(), "sh", "-c", line], cwd=here, env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, (line, run.stderr)
    version = subprocess.run([str(here / "v" / "bin" / "python"), "-c",
                              "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == "3.11" and _installed(here / "v" / "bin" / "python") == EXPECTED


def _pip_major(here: Path) -> int:
    out = subprocess.run([str(here / "v" / "bin" / "pip"), "--version"], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[1].split(".")[0])


def test_the_requirements_header_names_os_arch_and_python(built):
    """The wheelhouse's requirements.txt says which machine it is for, so pip's "from
    versions: none" elsewhere reads as the wrong machine, and names the lock's Python in
    its venv command."""
    head = (built / "requirements.txt").read_text().splitlines()
    assert head[0] == ("# linux-cpu (linux x86_64, Python 3.11), with no network and any "
                       "pip, in this folder:")
    assert head[1].startswith("#   python3.11 -m venv v && v/bin/pip install --no-index")


@pytest.mark.slow
def test_offline_install_from_pylock_with_pip26(built, tmp_path, modern_pip):
    python = _venv(tmp_path / "venv")
    subprocess.run([*_no_network(), str(python), f"{modern_pip}/pip", "install", "--isolated",
                    "-q", "--no-index", "-r", str(built / "pylock.toml")],
                   check=True, env=_clean_env())
    assert _installed(python) == EXPECTED


@pytest.mark.slow
def test_offline_install_from_pylock_with_uv(built, tmp_path):
    import uv

    python = _venv(tmp_path / "venv")
    subprocess.run([*_no_network(), uv.find_uv_bin(), "pip", "install", "--no-config",
                    "--offline", "--no-index", "--python", str(python), "--cache-dir",
                    str(tmp_path / "uvcache"), "-r", str(built / "pylock.toml")],
                   check=True, env=_clean_env())
    assert _installed(python) == EXPECTED


@pytest.mark.slow
def test_pip26_dry_run_report_selects_the_lock(built, tmp_path, modern_pip):
    """Conformance: pip >= 26.1 reads the wheelhouse's pylock.toml as PEP 751 says."""
    python = _venv(tmp_path / "venv")
    run = subprocess.run([*_no_network(), str(python), f"{modern_pip}/pip", "install",
                          "--isolated", "--quiet", "--dry-run", "--no-index", "--report", "-",
                          "-r", str(built / "pylock.toml")],
                         capture_output=True, text=True, env=_clean_env())
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    chosen = {i["metadata"]["name"]: i["metadata"]["version"] for i in report["install"]}
    assert chosen == EXPECTED


@pytest.mark.slow
def test_uv_dry_run_selects_the_lock(built, tmp_path):
    import uv

    python = _venv(tmp_path / "venv")
    run = subprocess.run([*_no_network(), uv.find_uv_bin(), "pip", "install", "--no-config",
                          "--dry-run", "--offline", "--no-index", "--python", str(python),
                          "--cache-dir", str(tmp_path / "uvcache"), "-r",
                          str(built / "pylock.toml")],
                         capture_output=True, text=True, env=_clean_env())
    assert run.returncode == 0, run.stderr
    chosen = dict(line.strip()[2:].split("==") for line in run.stderr.splitlines()
                  if line.strip().startswith("+ "))
    assert chosen == EXPECTED


def test_wheelhouse_through_a_link_rewriting_mirror(project, indexes, tmp_path):
    """A mirror that keeps files under its own layout (Artifactory, Nexus, devpi): the
    lock's official URL does not exist there, so the file is looked up on the mirrored
    index page by name, and kept only if its hash matches the lock."""
    compiled(project, indexes)
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\n'
        f'[mirrors]\n"{OFFICIAL}/cpu" = "{indexes.pt.rewriting("cpu")}"\n')
    result = build_lib(project, tmp_path / "cache", tmp_path / "wh")
    torch = next(r for r in result.files if r.path == TORCH)
    assert torch.origin.where.startswith(f"{indexes.pt.url}/rw/cpu/packages/")
    assert not [p for p in indexes.pt.requests if p.startswith(("/pt/", "/r2/"))]
    assert (tmp_path / "wh" / TORCH).read_bytes() == served(indexes)


@pytest.mark.slow
def test_simple_tree_serves_as_an_index(built, tmp_path):
    """The folder under any static web server is a PEP 503 index pip installs from."""
    import functools
    import http.server

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        python = _venv(tmp_path / "venv")
        url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
        subprocess.run([str(python), "-m", "pip", "install", "--isolated", "-q",
                        "--index-url", url, "--require-hashes",
                        "-r", str(built / "requirements.txt")], check=True, env=_clean_env())
    finally:
        server.shutdown()
        server.server_close()
    assert _installed(python) == EXPECTED


def test_pure_python_sdist_is_built_into_a_wheel(project, indexes, tmp_path):
    with_sdist(project, indexes, "purepkg", "py3-none-any")
    lock = compiled(project, indexes)
    (entry,) = [p for p in tomllib.loads(lock.read_text())["packages"] if p["name"] == "purepkg"]
    assert "sdist" in entry and "wheels" not in entry
    assert build_cli(project, tmp_path / "cache") == 0
    out = project / "wheelhouse" / "linux-cpu"
    manifest = {f["path"]: f for f in json.loads((out / "manifest.json").read_text())["files"]}
    built = manifest["purepkg-1.0-py3-none-any.whl"]
    assert built["built_from"] == {"sdist": "purepkg-1.0.tar.gz",
                                   "sha256": entry["sdist"]["hashes"]["sha256"]}
    assert built["sha256"] == hashlib.sha256((out / built["path"]).read_bytes()).hexdigest()
    local = tomllib.loads((out / "pylock.toml").read_text())
    Pylock.from_dict(local)
    assert [w["path"] for p in local["packages"] if p["name"] == "purepkg"
            for w in p["wheels"]] == ["purepkg-1.0-py3-none-any.whl"]


def test_platform_specific_sdist_is_refused_naming_the_package(project, indexes, tmp_path,
                                                              capsys):
    with_sdist(project, indexes, "cpkg", "cp311-cp311-linux_x86_64")
    compiled(project, indexes)
    assert build_cli(project, tmp_path / "cache") == 1
    err = capsys.readouterr().err
    assert "cpkg 1.0: has no wheel for this platform" in err and "build" in err
    assert not (project / "wheelhouse" / "linux-cpu").exists()


def test_pack_and_unpack_from_the_command_line(built, project, tmp_path, capsys):
    archive = project / "wheelhouse" / "linux-cpu.wheelhouse.tar"
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", "linux-cpu"]) == 0
    first = archive.read_bytes()
    other = tmp_path / "again.tar"
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", "linux-cpu",
                 "-o", str(other)]) == 0
    assert other.read_bytes() == first
    dest = tmp_path / "offline"
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(dest)]) == 0
    assert "--no-index" in capsys.readouterr().err
    for f in built.rglob("*"):
        if f.is_file():
            assert (dest / f.relative_to(built)).read_bytes() == f.read_bytes()
    assert main(["wheelhouse", "unpack", str(tmp_path / "nope.tar")]) == 2


def test_the_install_text_names_tools_only_when_the_wheelhouse_has_them(tmp_path):
    from lockkit.wheelhouse.offline import install_hint, requirements_header

    (tmp_path / "requirements.txt").write_text("x==1 --hash=sha256:" + "0" * 64 + "\n")
    assert "tools" not in install_hint(tmp_path)
    data = {"environments": ["sys_platform == 'linux' and platform_machine == 'x86_64'"],
            "requires-python": "==3.12.*"}
    assert not [ln for ln in requirements_header("linux-cpu", data) if "tools" in ln]
    (tmp_path / "tools").mkdir()
    hint = install_hint(tmp_path).splitlines()
    assert hint[0] == "install with any pip, into a new venv:"  # the any-pip route first
    assert any(f"--find-links {tmp_path / 'tools'} lockkit" in ln for ln in hint)
    assert any("lockkit verify --wheelhouse" in ln for ln in hint)
    assert [ln for ln in requirements_header("linux-cpu", data, tools=True)
            if "python3.12 -m venv lk && lk/bin/pip install --no-index --find-links tools "
               "lockkit" in ln]


def test_every_wheelhouse_command_finds_the_project_from_a_sub_folder(project, tmp_path,
                                                                    monkeypatch, capsys):
    """build, sbom, pack and platforms find the project the same way (the nearest
    lockkit.toml upward), so a command that follows build from a sub-folder works too."""
    compiled(project)
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    out = project / "wheelhouse" / "linux-cpu"
    assert main(["wheelhouse", "build", "--platform", "linux-cpu",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert out.is_dir() and not (sub / "wheelhouse").exists()
    capsys.readouterr()
    assert main(["wheelhouse", "sbom", "--platform", "linux-cpu"]) == 0
    assert capsys.readouterr().out.strip() == str(out / "sbom.cdx.json")
    assert main(["wheelhouse", "pack", "--platform", "linux-cpu"]) == 0
    assert (project / "wheelhouse" / "linux-cpu.wheelhouse.tar").is_file()
    assert main(["platforms", "--json"]) == 0  # the project's own platform is listed
    assert "linux-rocm6" in capsys.readouterr().out and list(sub.iterdir()) == []


def test_unpack_extracts_into_the_current_folder_as_tar_xf_does(built, project, tmp_path,
                                                                monkeypatch, capsys):
    """From another folder, unpack of the project's archive makes ./linux-cpu there and
    never touches the source project's wheelhouse/linux-cpu beside the archive."""
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform",
                 "linux-cpu"]) == 0
    archive = project / "wheelhouse" / "linux-cpu.wheelhouse.tar"
    before = {p: p.read_bytes() for p in built.rglob("*") if p.is_file()}
    elsewhere = tmp_path / "offline"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(archive)]) == 0, capsys.readouterr().err
    assert (elsewhere / "linux-cpu" / "manifest.json").is_file()
    assert {p: p.read_bytes() for p in built.rglob("*") if p.is_file()} == before


def test_off_a_terminal_build_pack_and_unpack_print_one_line_per_phase(project, tmp_path):
    """Piped (a CI log), long work says what it is doing, as pip does, on stderr."""
    from tests.support.project import lockkit

    compiled(project)
    base = ("--project", str(project), "--platform", "linux-cpu")
    run = lockkit("wheelhouse", "build", *base, "--cache-dir", str(tmp_path / "cache"))
    assert run.returncode == 0, run.stderr
    assert "linux-cpu: fetching 3 files" in run.stderr and "\r" not in run.stderr
    run = lockkit("wheelhouse", "pack", *base)
    assert run.returncode == 0 and "linux-cpu: packing " in run.stderr, run.stderr
    archive = project / "wheelhouse" / "linux-cpu.wheelhouse.tar"
    run = lockkit("wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "off"))
    assert run.returncode == 0 and "linux-cpu: unpacking " in run.stderr, run.stderr
    assert run.stdout == ""  # status on stderr, never on stdout


def test_stale_stage_folders_are_swept_fresh_ones_kept(project, indexes, tmp_path):
    compiled(project, indexes)
    old = time.time() - 2 * 24 * 3600
    stale = [tmp_path / ".wh.tmp-dead1", tmp_path / ".wh.old-dead2"]
    fresh = [tmp_path / ".wh.tmp-running", tmp_path / ".wh.old-running"]
    other = tmp_path / ".wh.partial-unpack"  # an archive unpack's: not the build's to sweep
    for folder in stale + fresh + [other]:
        (folder / "x").mkdir(parents=True)
        (folder / "x" / "torch.whl").write_bytes(b"debris")
    for folder in stale + [other]:
        os.utime(folder, (old, old))
    build_lib(project, tmp_path / "cache", tmp_path / "wh")
    assert [f for f in stale if f.exists()] == []
    assert all(f.is_dir() for f in fresh) and other.is_dir()
    assert (tmp_path / "wh" / TORCH).is_file()



def test_the_fetching_line_counts_only_what_the_cache_does_not_hold(project, tmp_path):
    """Issue 42: "fetching 10 files (10.5 MB...)" then "0 bytes downloaded, 202.2 MB from
    the cache". Warm, the line says the cache and nothing to download; with one blob gone,
    it counts that one file to fetch and the others from the cache, as the summary does."""
    from lockkit._internal.ui import human_size
    from tests.support.project import lockkit

    lock = compiled(project)
    base = ("wheelhouse", "build", "--project", str(project), "--platform", "linux-cpu",
            "--cache-dir", str(tmp_path / "cache"))
    cold = lockkit(*base, "--out", str(tmp_path / "cold"))
    assert cold.returncode == 0 and "linux-cpu: fetching 3 files (" in cold.stderr, cold.stderr
    warm = lockkit(*base, "--out", str(tmp_path / "warm"))
    assert warm.returncode == 0, warm.stderr
    assert "linux-cpu: fetching" not in warm.stderr, warm.stderr
    assert "linux-cpu: 3 files (" in warm.stderr and "from the cache, nothing to download" \
        in warm.stderr and "0 bytes downloaded" in warm.stderr, warm.stderr
    gone = next(p for p in Pylock.from_dict(tomllib.loads(lock.read_text())).packages
                if p.name == "filelock").wheels[0]
    blob = Cache(tmp_path / "cache").path(gone.hashes["sha256"])
    size = blob.stat().st_size
    blob.unlink()
    one = lockkit(*base, "--out", str(tmp_path / "one"))
    assert one.returncode == 0, one.stderr
    assert "linux-cpu: fetching 1 files (" in one.stderr and ", 2 files (" in one.stderr \
        and "from the cache..." in one.stderr, one.stderr
    assert f"{human_size(size)} downloaded, " in one.stderr, one.stderr
