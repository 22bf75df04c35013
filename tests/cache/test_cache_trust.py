"""The cache is re-checked as the network is: planted memos, rewritten blobs, shared caches.

The hostile cases of issue 23. Another local account is made with ``useradd`` (and
removed with ``userdel -r``) and plants files as that uid in a group-writable shared
cache (umask 002, a shared ``LOCKKIT_CACHE_DIR``); the same plants in a private cache are
written by the owner. Whatever was planted, the victim's ``wheelhouse build`` writes the
wheelhouse its lock gives (compared with a build from a fresh cache), no file leaves the
folder, and nothing planted is pinned, linked or run.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockkit import __version__
from lockkit.cache.memo import MemoStore
from lockkit.cache.store import Cache
from lockkit.cli import main
from lockkit.config.project import load_project
from lockkit.env.install import shared_root
from lockkit.errors import HashMismatch
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import load_platforms
from lockkit.wheelhouse import archive, ownwheel
from tests.support.files import rewrite_in_place
from tests.support.project import lockkit
from tests.support.tools import compiled_with_tools, tool_wheels  # noqa: F401 - the download

PLATFORM = "linux-cpu"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and modes")
PAYLOAD = b"import os; open(os.path.expanduser('~/owned'), 'w').write('owned')\n"


# --- the other account ------------------------------------------------------------------------

@dataclass(frozen=True)
class Intruder:
    name: str
    uid: int
    gid: int
    base: Path  # a folder of /tmp both accounts reach (pytest's own is 0700)

    def write(self, files: dict[Path, bytes], fifos: tuple[Path, ...] = ()) -> None:
        """Write *files* (and make *fifos*) as this account, with umask 002."""
        python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
        if python is None:
            pytest.skip("no system python3 the other account can run to plant files")
        script = ("import json, os, sys\n"
                  "doc = json.load(sys.stdin)\n"
                  "for p, h in doc['files'].items():\n"
                  "    os.makedirs(os.path.dirname(p), exist_ok=True)\n"
                  "    open(p, 'wb').write(bytes.fromhex(h))\n"
                  "for p in doc['fifos']:\n"
                  "    os.makedirs(os.path.dirname(p), exist_ok=True)\n"
                  "    os.mkfifo(p)\n")
        doc = {"files": {str(p): d.hex() for p, d in files.items()},
               "fifos": [str(p) for p in fifos]}
        subprocess.run([python, "-c", script], input=json.dumps(doc), text=True, check=True,
                       user=self.uid, group=self.gid, umask=0o002, cwd="/",
                       env={"PATH": "/usr/bin:/bin"}, timeout=60)


@pytest.fixture
def intruder() -> Iterator[Intruder]:
    """Another local account, made for this test and removed after."""
    if sys.platform == "win32" or os.geteuid() != 0:
        pytest.skip("only root can add the second local account (useradd) these tests need")
    if not (shutil.which("useradd") and shutil.which("userdel")):
        pytest.skip("useradd/userdel are not installed: no second account can be made")
    base = Path(tempfile.mkdtemp(prefix="lockkit-shared-", dir="/tmp"))
    os.chmod(base, 0o755)
    name = f"lkt{secrets.token_hex(6)}"
    made = subprocess.run(["useradd", "--create-home", "--home-dir", str(base / "home"),
                           "--user-group", name], capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"useradd refused to add an account: {made.stderr.strip()}")
    try:
        entry = pwd.getpwnam(name)
        yield Intruder(name=name, uid=entry.pw_uid, gid=entry.pw_gid, base=base)
    finally:
        subprocess.run(["userdel", "-r", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def shared_cache(intruder: Intruder) -> Path:
    """A cache shared with the other account's group: setgid, group-writable."""
    cache = intruder.base / "cache"
    cache.mkdir()
    os.chown(cache, os.geteuid(), intruder.gid)
    os.chmod(cache, 0o2775)
    return cache


class umask:  # noqa: N801 - used as ``with umask(0o002):``
    def __init__(self, mask: int) -> None:
        self.mask = mask

    def __enter__(self) -> None:
        self.old = os.umask(self.mask)

    def __exit__(self, *exc: object) -> None:
        os.umask(self.old)


# --- helpers --------------------------------------------------------------------------------

def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compiled(project: Path) -> Path:
    assert main(["compile", "--project", str(project), "--platform", PLATFORM]) == 0
    return project / "locks" / f"pylock.{PLATFORM}.toml"


def build(project: Path, cache: Path, out: Path, *extra: str) -> int:
    return main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--cache-dir", str(cache), "--out", str(out), *extra])


def contents(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def pth_files(*roots: Path) -> list[Path]:
    return [p for r in roots if r.exists() for p in r.rglob("*.pth")]


def site_pth() -> set[str]:
    import sysconfig

    return {p.name for p in Path(sysconfig.get_paths()["purelib"]).glob("*.pth")}


def lock_wheels(lock: Path) -> dict[str, tuple[str, int]]:
    """File name -> (sha256, size) of every wheel the lock lists."""
    import urllib.parse

    from lockkit._internal.compat import tomllib

    data = tomllib.loads(lock.read_text())
    return {w.get("name") or urllib.parse.unquote(w["url"].rsplit("/", 1)[-1]):
            (w["hashes"]["sha256"], w.get("size", 0))
            for p in data["packages"] for w in p.get("wheels", [])}


def placed(folder: Path, prefix: str) -> str:
    """The name of *folder*'s wheel of a package (the lock may list others for other
    platforms)."""
    return next(p.name for p in folder.glob(f"{prefix}-*.whl"))


def memo_doc(store: MemoStore, kind: str, key: str, value: object) -> bytes:
    return json.dumps({"format": 1, "key": key, "value": value}).encode()


def old_sbom_key(reference: Path, lock: Path) -> str:
    """The name an older lockkit read its SBOM memo of *reference*'s build under (the text
    was then used as it was)."""
    import importlib.util

    from lockkit._internal.compat import tomllib
    from lockkit.wheelhouse import sbom

    manifest = json.loads((reference / "manifest.json").read_text())
    files = sorted(sbom.files_of_manifest(manifest, tomllib.loads(lock.read_text()), reference),
                   key=lambda f: f.path)
    spec = importlib.util.find_spec("cyclonedx")
    site = Path(str(spec.origin if spec else "")).parent.parent
    names = sorted(p.name for p in site.glob("cyclonedx_python_lib-*.dist-info"))
    return sha(json.dumps(
        [[repr(f), dict(f.built_from or {})] for f in files]
        + [PLATFORM, sha(lock.read_bytes()), os.environ.get("SOURCE_DATE_EPOCH", "").strip(),
           __version__, names[-1] if len(names) == 1 else ""]).encode())


def plants(cache: Path, lock: Path, project: Path,
           reference: Path | None = None) -> dict[Path, bytes]:
    """Every memo an older lockkit read, and the memo store's folders, filled with what an
    attacker would put there: a `../` name, a blob of their own under a hash the lock does
    not have, a plan that drops a wheel and adds an index line and an unhashed entry, an
    SBOM of their own."""
    raw = lock.read_bytes()
    lock_sha = sha(raw)
    evil = b"PK planted wheel " + PAYLOAD
    evil_sha = sha(evil)
    wheels = lock_wheels(lock)
    kept = sorted(wheels)[1:]  # one wheel dropped
    texts = {
        "requirements.txt": "--extra-index-url http://127.0.0.1:9/simple\n" + "".join(
            f"{n.split('-')[0]}=={n.split('-')[1]} --hash=sha256:{wheels[n][0]}\n" for n in kept),
        "pylock.toml": 'lock-version = "1.0"\ncreated-by = "lockkit"\n[[packages]]\n'
                       'name = "evil"\n[packages.directory]\npath = "/tmp"\n',
        "../escaped.txt": "outside",
        "sbom.cdx.json": '{"planted": true}\n'}
    plan = {"schema": 1, "lockkit": __version__, "root": str(project), "lock": str(lock),
            "platform": PLATFORM, "wheels": [[n, wheels[n][0], wheels[n][1], "x", "1"]
                                             for n in kept] + [["../escaped.whl", evil_sha,
                                                                len(evil), "evil", "1"]],
            "texts": texts}
    where = sha(f"{lock}\0{PLATFORM}".encode())[:16]
    own = {"filename": "../../planted.pth", "sha256": evil_sha, "source": "planted"}
    rows = [{"package": "evil", "version": "1", "filename": "../../../planted.pth",
             "sha256": evil_sha, "size": len(evil), "urls": [], "source": "planted"}]
    store = MemoStore(cache)
    files = {cache / "sha256" / evil_sha[:2] / evil_sha: evil,
             cache / "checked" / evil_sha: b"0 0 0 0\n",
             cache / "plan" / f"{lock_sha}-{where}.json": json.dumps(plan).encode(),
             cache / "sbom" / f"{lock_sha}.json": b'{"planted": true}\n',
             cache / "tools" / f"{lock_sha}.json": json.dumps(rows).encode()}
    if reference is not None:
        files[cache / "sbom" / f"{old_sbom_key(reference, lock)}.json"] = b'{"planted": true}\n'
    root = ownwheel.source_tree()
    if root is not None:
        files[cache / "tools" / f"own-{ownwheel.tree_digest(root)}.json"] = \
            json.dumps(own).encode()
    for kind, value in (("plan", plan), ("sbom", texts["sbom.cdx.json"]), ("tools", rows)):
        key = store.key(kind, lock_sha)
        files[store.root / kind / f"{key}.json"] = memo_doc(store, kind, key, value)
    return files


def assert_the_locks_wheelhouse(out: Path, reference: Path, lock: Path,
                                project: Path) -> None:
    """*out* is, byte for byte, the wheelhouse a fresh cache gives; it packs against the
    lock; nothing planted escaped; every wheel in it is this user's."""
    assert contents(out) == contents(reference)
    assert archive.pack(out, out.parent / "check.tar", lock=Lock.read(lock),
                        project_dir=project)
    (out.parent / "check.tar").unlink()
    assert not pth_files(out.parent) and not list(out.parent.rglob("escaped*"))
    assert all(p.stat().st_uid == os.geteuid() for p in out.rglob("*"))


# --- planted memos ----------------------------------------------------------------------------

@posix_only
def test_memos_planted_by_another_uid_in_a_shared_cache_change_nothing(project, intruder,
                                                                       tmp_path):
    """The other account plants every memo an older lockkit trusted (tools/, own-*.json,
    plan/, sbom/, checked/ stamps) and the memo store's own folders, a wrong blob under the
    torch wheel's hash, the right bytes under numpy's (its own inode), and a FIFO where
    filelock's blob goes. The victim's build (umask 002) exits 0 with the lock's
    wheelhouse: the wrong blob is evicted and fetched again, the other account's numpy is
    copied (never linked), the FIFO is removed without being read."""
    lock = compiled(project)
    assert build(project, tmp_path / "fresh", tmp_path / "reference") == 0
    cache = shared_cache(intruder)
    wheels, reference = lock_wheels(lock), tmp_path / "reference"
    torch, numpy = placed(reference, "torch"), placed(reference, "numpy")
    filelock = placed(reference, "filelock")
    blob = Cache(cache).path
    files = plants(cache, lock, project, reference)
    files[blob(wheels[torch][0])] = b"\0" * wheels[torch][1]
    files[blob(wheels[numpy][0])] = (tmp_path / "reference" / numpy).read_bytes()
    intruder.write(files, fifos=(blob(wheels[filelock][0]),))
    assert blob(wheels[numpy][0]).stat().st_uid == intruder.uid != os.geteuid()
    assert MemoStore(cache).trusted is False
    before = site_pth()
    done: list[int] = []
    with umask(0o002):
        worker = threading.Thread(target=lambda: done.append(
            build(project, cache, tmp_path / "out")), daemon=True)
        worker.start()
        worker.join(120)
    assert done == [0], "the build hung or failed"
    assert_the_locks_wheelhouse(tmp_path / "out", tmp_path / "reference", lock, project)
    assert (tmp_path / "out" / numpy).stat().st_ino != blob(wheels[numpy][0]).stat().st_ino
    assert site_pth() == before and not pth_files(intruder.base)
    assert not (cache / "memo").exists() or not any(
        p.stat().st_uid == os.geteuid() for p in (cache / "memo").rglob("*"))


@posix_only
def test_memos_with_escaping_names_or_foreign_hashes_in_a_private_cache_change_nothing(
        project, tmp_path):
    """The same plants, by the owner, in a private cache (0700, files 0600): still none is
    taken, since none holds more than the lock gives."""
    lock = compiled(project)
    assert build(project, tmp_path / "fresh", tmp_path / "reference") == 0
    cache = tmp_path / "cache"
    assert build(project, cache, tmp_path / "first") == 0
    assert MemoStore(cache).trusted
    for path, data in plants(cache, lock, project, tmp_path / "reference").items():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.unlink(missing_ok=True)
        path.write_bytes(data)
        path.chmod(0o600)
    assert build(project, cache, tmp_path / "out") == 0
    assert_the_locks_wheelhouse(tmp_path / "out", tmp_path / "reference", lock, project)


# --- blobs ------------------------------------------------------------------------------------

def test_a_blob_rewritten_in_place_with_its_mtime_put_back_is_fetched_again(project, indexes,
                                                                            tmp_path):
    lock = compiled(project)
    cache = tmp_path / "cache"
    assert build(project, cache, tmp_path / "first") == 0
    wheels = lock_wheels(lock)
    torch = placed(tmp_path / "first", "torch")
    good = (tmp_path / "first" / torch).read_bytes()
    shutil.rmtree(tmp_path / "first")  # moves the blob's ctime: the next build hashes it
    time.sleep(0.1)  # past that clock tick (lockkit.cache.identity)
    assert build(project, cache, tmp_path / "known") == 0
    blob = Cache(cache).path(wheels[torch][0])
    record = MemoStore(cache).get("blob", wheels[torch][0])
    assert record["ctime_ns"] == blob.stat().st_ctime_ns  # known by its identity now
    time.sleep(0.1)
    rewrite_in_place(blob, b"\0" * len(good))
    assert blob.stat().st_ctime_ns != record["ctime_ns"]  # what gives the rewrite away
    indexes.forget_requests()
    assert build(project, cache, tmp_path / "again") == 0
    assert (tmp_path / "again" / torch).read_bytes() == good
    assert [r for r in indexes.wheel_requests() if "torch" in r]  # fetched again
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert manifest["lock_sha256"] == sha(lock.read_bytes())


def test_a_blob_changed_between_its_hash_and_its_placing_is_never_placed(tmp_path):
    """The inode hashed is the one linked: a blob swapped for another file after its hash
    is copied and hashed as copied; other bytes are refused, named, and evicted."""
    cache = Cache(tmp_path / "cache")
    out, partial = cache.new_partial()
    with out:
        out.write(b"wheel bytes")
    blob = cache.commit(partial, sha(b"wheel bytes"))
    assert cache.get(sha(b"wheel bytes"), None) == blob
    cache.place(blob, tmp_path / "linked.whl", sha(b"wheel bytes"))
    assert (tmp_path / "linked.whl").stat().st_ino == blob.stat().st_ino
    (tmp_path / "same").write_bytes(b"wheel bytes")
    os.replace(tmp_path / "same", blob)  # same bytes, another inode: copied
    cache.place(blob, tmp_path / "copied.whl", sha(b"wheel bytes"))
    assert (tmp_path / "copied.whl").stat().st_ino != blob.stat().st_ino
    assert (tmp_path / "copied.whl").read_bytes() == b"wheel bytes"
    (tmp_path / "evil").write_bytes(b"evil bytes!")
    os.replace(tmp_path / "evil", blob)
    with pytest.raises(HashMismatch, match="evil.whl: the cache's copy changed"):
        cache.place(blob, tmp_path / "evil.whl", sha(b"wheel bytes"))
    assert not (tmp_path / "evil.whl").exists() and not blob.exists()


@posix_only
@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_fifo_or_link_in_place_of_a_blob_is_removed_never_read(tmp_path, kind):
    cache = Cache(tmp_path / "cache")
    data = b"wheel bytes"
    path = cache.path(sha(data))
    path.parent.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_bytes(data)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(target)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(cache.get(sha(data), None)),
                              daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading the blob blocked"
    assert got == [None] and not os.path.lexists(path)
    assert target.read_bytes() == data


@posix_only
def test_a_new_cache_folder_is_0700_whatever_the_umask(project, tmp_path):
    """Under umask 002: the cache folder 0700, the wheelhouse's own files 0664 as the
    umask says (its wheels hard-linked from read-only blobs: 0444)."""
    compiled(project)
    cache = tmp_path / "made" / "cache"
    with umask(0o002):
        assert build(project, cache, tmp_path / "out") == 0
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o775  # not the cache's own
    assert stat.S_IMODE((tmp_path / "out" / "manifest.json").stat().st_mode) == 0o664
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "out").glob("*.whl")} == \
        {0o444}
    assert MemoStore(cache).trusted


def count_hashes(monkeypatch) -> list[int]:
    """The blobs the cache hashes from now on."""
    from lockkit.cache import store as cache_mod

    hashed: list[int] = []
    real = cache_mod._hash_fd

    def counted(fd: int) -> str:
        hashed.append(fd)
        return real(fd)

    monkeypatch.setattr(cache_mod, "_hash_fd", counted)
    return hashed


def test_a_rebuild_into_the_same_folder_reads_no_blob_again(project, tmp_path, monkeypatch):
    """Its own links and the old folder's removal are taken into the blobs' identities."""
    compiled(project)
    assert build(project, tmp_path / "cache", tmp_path / "out") == 0
    hashed = count_hashes(monkeypatch)
    for _ in range(2):
        assert build(project, tmp_path / "cache", tmp_path / "out") == 0
    assert hashed == []


@posix_only
def test_every_cache_hit_of_a_group_writable_cache_is_hashed_again(project, tmp_path,
                                                                   monkeypatch):
    compiled(project)
    assert build(project, tmp_path / "cache", tmp_path / "out") == 0
    os.chmod(tmp_path / "cache", 0o770)
    hashed = count_hashes(monkeypatch)
    assert build(project, tmp_path / "cache", tmp_path / "out") == 0
    assert len(hashed) == 3  # filelock, numpy, torch: no identity spares one


def test_verify_s_and_sync_s_fetch_hashes_every_cache_hit(project, tmp_path, monkeypatch):
    from lockkit.cli.common import lock_fetcher
    from lockkit.wheelhouse.build import read_lock

    compiled(project)
    assert build(project, tmp_path / "cache", tmp_path / "out") == 0
    hashed = count_hashes(monkeypatch)
    loaded, platform = load_project(project), load_platforms()[PLATFORM]
    fetch = lock_fetcher(loaded, platform, tmp_path / "cache")
    fetch(tmp_path / "fetched", read_lock(loaded, platform))
    assert len(hashed) == 3


def test_cache_get_evicts_a_changed_blob(tmp_path):
    """Cache.get hashes a blob again: one changed since it was committed is removed."""
    cache = Cache(tmp_path / "cache")
    out, partial = cache.new_partial()
    with out:
        out.write(b"wheel bytes")
    digest = sha(b"wheel bytes")
    blob = cache.commit(partial, digest)
    assert cache.get(digest, 11) == blob
    os.chmod(blob, 0o644)
    blob.write_bytes(b"trojan byte")
    assert cache.get(digest, 11) is None and not blob.exists()


# --- verify -----------------------------------------------------------------------------------

@posix_only
def test_verify_keeps_its_installs_in_the_cache_only_when_the_cache_is_private(tmp_path):
    cache = tmp_path / "cache"
    assert shared_root(cache) == cache / "verify"  # made private: 0700 both
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache / "verify").stat().st_mode) == 0o700
    os.chmod(cache, 0o775)
    assert shared_root(cache) is None
    os.chmod(cache, 0o755)
    os.chmod(cache / "verify", 0o777)
    assert shared_root(cache) is None
    assert shared_root(None) is None


@posix_only
def test_verify_under_a_group_writable_cache_uses_no_uv_cache_or_bytecode_there(copy_of,
                                                                               tmp_path):
    """A cache another user can write: uv's cache, the bytecode prefix and the venv are the
    run's own (a temp folder, removed after); nothing of verify's is kept in the cache."""
    project = copy_of()
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    os.chmod(cache, 0o2775)
    (cache / "verify" / "pyc").mkdir(parents=True)
    (cache / "verify" / "uv").mkdir()
    planted = {p: sorted(p.rglob("*")) for p in (cache / "verify" / "pyc", cache / "verify" / "uv")}
    reports = project / "report"
    run = lockkit("verify", "--project", str(project), "--platform", PLATFORM, "--no-gpu",
                  "--report-dir", str(reports), "--cache-dir", str(cache), "--absolute-paths",
                  network=False)
    doc = json.loads((reports / "dossier.json").read_text())
    steps = {s["name"]: s for s in doc["steps"]}
    assert steps["install"]["status"] == "passed", doc["first_error"]
    assert not Path(steps["venv"]["detail"]["path"]).is_relative_to(cache)
    install = next(c for c in doc["commands"] if c["step"] == "install")
    assert not [a for a in install["argv"] if a.startswith(str(cache))]
    assert {p: sorted(p.rglob("*")) for p in planted} == planted  # nothing written there
    assert not (cache / "verify" / "venvs").exists() and not (cache / "verify" / "wheels").exists()
    assert steps["inventory"]["status"] == "passed", (run.stderr, doc["first_error"])


# --- tools/ (lockkit's real dependencies on a loopback index: network) ----------------------

@pytest.fixture
def tools_project(tmp_path, tool_wheels):  # noqa: F811 - the fixture imported above
    with compiled_with_tools(tmp_path, tool_wheels) as (root, server, _):
        yield root, server


def tool_pins(out: Path) -> set[str]:
    text = (out / "tools" / "requirements.txt").read_text()
    return {ln.rsplit(":", 1)[1] for ln in text.splitlines() if "--hash=sha256:" in ln}


@pytest.mark.slow
@pytest.mark.network
@posix_only
def test_planted_tools_memos_in_a_shared_cache_pin_nothing_planted(tools_project, intruder,
                                                                   tmp_path):
    """The tools/ resolution and lockkit's own wheel as the other account plants them
    (`../` names, their own wheel's hash): the victim's build resolves and builds tools/
    itself, pins none of it, and no `.pth` appears anywhere."""
    root, _ = tools_project
    lock = root / "locks" / f"pylock.{PLATFORM}.toml"
    cache = shared_cache(intruder)
    files = plants(cache, lock, root)
    project = load_project(root)
    platform = load_platforms(project.root)[PLATFORM]
    python = Lock.read(lock).python
    from lockkit._internal.redact import strip_credentials

    old_key = hashlib.sha256(json.dumps(  # the name an older lockkit read its memo under
        [__version__, ownwheel.runtime_requirements(), platform.fingerprint, python,
         strip_credentials(project.index_url or ""),
         sorted((k, strip_credentials(v)) for k, v in project.mirrors.items()),
         project.exclude_newer or ""]).encode()).hexdigest()
    evil_sha = next(p.name for p in files if p.parent.parent.name == "sha256")
    files[cache / "tools" / f"{old_key}.json"] = \
        files[cache / "tools" / f"{sha(lock.read_bytes())}.json"]
    intruder.write(files)
    before = site_pth()
    with umask(0o002), pytest.MonkeyPatch.context() as mp:
        mp.delenv("LOCKKIT_NO_TOOLS", raising=False)
        assert build(root, cache, tmp_path / "out") == 0
    pins = tool_pins(tmp_path / "out")
    assert pins and evil_sha not in pins
    assert site_pth() == before and not pth_files(tmp_path, intruder.base)
    assert archive.pack(tmp_path / "out", tmp_path / "wh.tar", lock=Lock.read(lock),
                        project_dir=root)


@pytest.mark.slow
@pytest.mark.network
@posix_only
def test_tools_pins_kept_in_the_folder_are_read_back_only_when_they_hold(tools_project,
                                                                        tmp_path):
    """A rebuild of the folder takes its tools/requirements.txt pins (no index asked); the
    same folder with a `../` name in its manifest, or its files writable by the group, is
    resolved again, and the build's tools/ is the same."""
    (root, server), cache, out = tools_project, tmp_path / "cache", tmp_path / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("LOCKKIT_NO_TOOLS", raising=False)
        assert build(root, cache, out) == 0
        first = contents(out / "tools")
        asked = len(server.requests)
        assert build(root, cache, out) == 0  # the folder's pins: no index asked
        assert len(server.requests) == asked and contents(out / "tools") == first
        manifest = json.loads((out / "manifest.json").read_text())
        tool = next(f for f in manifest["files"] if f.get("package") == "lockkit")
        # a planted entry beside the real one: the folder still holds only what its
        # manifest lists (the --out rule takes it), and the pins are not read back
        manifest["files"].append({**tool, "path": "tools/../../planted.pth"})
        (out / "manifest.json").unlink()
        (out / "manifest.json").write_text(json.dumps(manifest))
        assert build(root, cache, out) == 0  # the manifest's name is refused: resolved again
        assert len(server.requests) > asked and contents(out / "tools") == first
        assert not pth_files(tmp_path)
        asked = len(server.requests)
        os.chmod(out / "tools" / "requirements.txt", 0o664)  # the group could have written it
        assert build(root, cache, out) == 0
        assert len(server.requests) > asked and contents(out / "tools") == first
