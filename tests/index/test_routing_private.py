"""The routing index is private to its compile (lockkit.index.routing,
lockkit.index.resolve, lockkit.index.auth).

Another local account can connect to 127.0.0.1 and find the port in /proc/net/tcp. These
tests make such an account (``useradd``, removed after) and probe a serving routing index
as that account; they look at what uv really got (a recording stand-in that then runs
the real uv); and the mirrors really refuse a request without the credentials, so a
compile that works proves uv found them.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit._internal.redact import NO_SECRETS
from lockkit._internal.uv import uv_bin
from lockkit.errors import ConfigError, LockkitError
from lockkit.index.auth import Credentials, uv_netrc
from lockkit.index.pages import Http
from lockkit.index.resolve import resolve
from lockkit.index.routing import RoutingIndex
from lockkit.index.urls import Indexes, Mirrors
from lockkit.platforms.definitions import load_platforms
from tests.support.pytorch_index import basic

OFFICIAL = "https://download.pytorch.org"


@pytest.fixture
def token(monkeypatch) -> str:
    """The mirrors' password, a random canary in ``$LK_PT_TOKEN``."""
    value = "canary-" + secrets.token_hex(12)
    monkeypatch.setenv("LK_PT_TOKEN", value)
    return value


@pytest.fixture(autouse=True)
def _no_user_netrc(tmp_path, monkeypatch):
    """No netrc of this machine's user joins the one uv gets."""
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


def credentialed(indexes, token: str) -> dict[str, str]:
    """The loopback PyTorch hosts as private mirrors: ``bob:${LK_PT_TOKEN}@`` in each URL,
    and the server refusing (401) every request without that Basic header."""
    indexes.pt.auth = ("bob", token)
    return {k: v.replace("http://", "http://bob:${LK_PT_TOKEN}@")
            for k, v in indexes.pt.mirrors().items()}


# --- another local account ------------------------------------------------------------------

PROBE = r"""
import http.client, json, sys
port, netrc, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
got = []
for path in paths:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    resp = conn.getresponse()
    got.append([path, resp.status, resp.read().decode("utf-8", "replace")])
    conn.close()
try:
    with open(netrc) as f:
        read = f.read()
except OSError as exc:
    read = type(exc).__name__
print(json.dumps({"pages": got, "netrc": read}))
"""


@pytest.fixture
def stranger():
    """A second local account (name, uid, gid, an interpreter it can run), removed after."""
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("making a second local account (useradd) needs root")
    useradd, userdel = shutil.which("useradd"), shutil.which("userdel")
    if not useradd or not userdel:
        pytest.skip("useradd/userdel are not installed: no second account to probe with")
    name = "lkprobe" + secrets.token_hex(4)
    made = subprocess.run([useradd, "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                          capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        pytest.skip(f"useradd {name} failed: {made.stderr.strip()}")
    try:
        entry = pwd.getpwnam(name)
        account = (name, entry.pw_uid, entry.pw_gid)
        found = [p for p in dict.fromkeys([getattr(sys, "_base_executable", ""), "/usr/bin/python3",
                                           "/usr/local/bin/python3"]) if runs(account, p)]
        if not found:
            pytest.skip(f"no Python interpreter that {name} may run (the test's own may "
                        "be in a folder only root can enter)")
        yield (*account, found[0])
    finally:
        subprocess.run([userdel, name], capture_output=True, timeout=60)


def runs(account: tuple[str, int, int], python: str) -> bool:
    try:
        return as_user(account, [python, "-c", "pass"]).returncode == 0
    except OSError:  # not even allowed to start it
        return False


def as_user(account: tuple[str, int, int], argv: list[str]) -> subprocess.CompletedProcess:
    """*argv* as that account alone: its uid, its group, no supplementary groups."""
    _, uid, gid = account
    return subprocess.run(argv, user=uid, group=gid, extra_groups=[], cwd="/",
                           env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                           timeout=120)


def test_another_local_user_who_knows_the_port_reads_no_page_and_no_credential(
        indexes, token, stranger, tmp_path):
    name, uid, gid, python = stranger
    mirrors = credentialed(indexes, token)
    http = Http(credentials=Credentials.from_urls(mirrors.values(),
                                                  netrc_file=tmp_path / "none"))
    folder = Path(tempfile.mkdtemp(prefix="lockkit-"))  # as resolve() makes it
    try:
        netrc = uv_netrc(mirrors.values(), folder)
        assert netrc is not None and token in netrc.read_text()  # there, for uv alone
        with RoutingIndex(family=("torch", "triton"), official_index=f"{OFFICIAL}/whl/cu126",
                          mirrors=Mirrors(mirrors, NO_SECRETS), file_hosts=("https://download-r2.pytorch.org",),
                          fetch=http.page) as routing:
            url = urllib.parse.urlsplit(routing.url)
            guessed = "/" + secrets.token_urlsafe(32) + "/simple/torch/"
            paths = ["/simple/torch/", "/", "/simple/", guessed, url.path + "/torch/"]
            run = as_user((name, uid, gid), [python, "-c", PROBE, str(url.port), str(netrc),
                                             *paths])
    finally:
        shutil.rmtree(folder)
        http.close()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    *probed, (_, status, page) = seen["pages"]
    assert [(path, code, body) for path, code, body in probed] == \
        [(path, 404, "not found") for path in paths[:-1]]  # the port alone: nothing
    assert seen["netrc"] == "PermissionError"
    # the page itself (had the prefix leaked) lists the files, without any credential
    assert status == 200 and "torch-2.5.1%2Bcu126" in page
    assert token not in page and "bob" not in page and "@" not in page


def test_uv_gets_the_routing_url_and_credentials_through_its_environment_never_its_argv(
        indexes, token, tmp_path):
    """What lockkit passes to the uv process: a recording stand-in writes down its argv and
    environment, then runs the real uv. The private default index and the mirrors refuse
    anonymous requests, so the resolution proves uv used what its environment gave it."""
    record = tmp_path / "seen.jsonl"
    shim = recording_uv(tmp_path, record)
    mirrors = credentialed(indexes, token)
    indexes.server.auth = ("deploy", token)
    index_url = indexes.url.replace("http://", "http://deploy:${LK_PT_TOKEN}@") + "/simple"
    resolution, seen = resolve_cu126(tmp_path, shim, record, mirrors, index_url)

    argv = " ".join(seen["argv"])
    routing_url = seen["env"]["UV_INDEX"]
    prefix = urllib.parse.urlsplit(routing_url).path.split("/")[1]
    assert len(prefix) >= 22  # >= 128 bits, base64: 22 characters
    assert routing_url.startswith("http://127.0.0.1:") and "torch" in resolution.routing.asked
    assert prefix not in argv and token not in argv and "://" not in argv  # no URL at all
    assert seen["env"]["UV_DEFAULT_INDEX"] == index_url.replace("${LK_PT_TOKEN}", token)
    assert seen["netrc_mode"] == 0o600 and seen["folder_mode"] == 0o700
    assert f"login bob password {token}" in seen["netrc"]
    assert not Path(seen["env"]["NETRC"]).parent.exists()  # removed with the compile
    names = {p["name"] for p in tomllib.loads(resolution.text)["packages"]}
    assert {"torch", "numpy"} <= names
    r2 = [p for p, auth in indexes.pt.authorizations
          if p.startswith("/r2/") and auth == basic("bob", token)]
    assert r2  # uv's own requests to the mirror, with the netrc's credentials


def test_the_private_temp_folder_is_removed_when_uv_fails_or_on_ctrl_c(indexes, token,
                                                                       tmp_path):
    mirrors = credentialed(indexes, token)
    index_url = f"{indexes.url}/simple"
    record = tmp_path / "seen.jsonl"
    shim = recording_uv(tmp_path, record)
    with pytest.raises(LockkitError):
        resolve_cu126(tmp_path, shim, record, mirrors, index_url, wanted="torch==9.9")
    seen = json.loads(record.read_text().splitlines()[0])
    assert not Path(seen["env"]["NETRC"]).parent.exists()

    record.unlink()
    shim = recording_uv(tmp_path, record, then="interrupt")
    start = time.monotonic()
    # SIGINT as at a terminal: a suite started in the background (``cmd &``) inherits it
    # ignored, and the stand-in's SIGINT would then never reach this process
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            resolve_cu126(tmp_path, shim, record, mirrors, index_url)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 20  # the stand-in sleeps 60 s: its group was killed
    seen = json.loads(record.read_text().splitlines()[0])
    assert not Path(seen["env"]["NETRC"]).parent.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(seen["pid"], 0)


def test_two_mirrors_on_one_host_with_different_credentials_are_refused(tmp_path):
    same = ["http://a:s3cret-1@m.test/pt", "http://b:s3cret-2@m.test:8080/r2"]
    with pytest.raises(ConfigError, match=r"\[mirrors\]: two mirrors on m.test") as refused:
        uv_netrc(same, tmp_path)
    assert "s3cret" not in str(refused.value) + str(refused.value.hint)
    assert uv_netrc(["http://m.test/pt"], tmp_path) is None  # none: uv reads the user's own


def test_the_users_own_netrc_entries_reach_uv_after_the_mirrors(tmp_path, monkeypatch):
    own = tmp_path / "own-netrc"
    own.write_text("machine m.test login old password stale\n"
                   "machine other.test login me password mine\n"
                   "default login anon password guest\n")
    monkeypatch.setenv("NETRC", str(own))
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    path = uv_netrc(["http://bob:fresh@m.test/pt"], folder)
    assert path is not None and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().splitlines() == ["machine m.test login bob password fresh",
                                             "machine other.test login me password mine",
                                             "default login anon password guest"]


# --- helpers ------------------------------------------------------------------------------

def recording_uv(folder: Path, record: Path, then: str = "uv") -> Path:
    """A stand-in for uv that appends its argv, pid and index environment to *record*, then
    runs the real uv (``then="uv"``) or interrupts its caller and sleeps (``"interrupt"``)."""
    shim = folder / f"uv-{then}"
    shim.write_text(f"""#!{sys.executable}
import json, os, signal, stat, sys, time
env = {{k: os.environ.get(k) for k in ("UV_INDEX", "UV_DEFAULT_INDEX", "NETRC")}}
seen = {{"argv": sys.argv, "env": env, "pid": os.getpid()}}
if env["NETRC"]:
    seen["netrc_mode"] = stat.S_IMODE(os.stat(env["NETRC"]).st_mode)
    seen["folder_mode"] = stat.S_IMODE(os.stat(os.path.dirname(env["NETRC"])).st_mode)
    seen["netrc"] = open(env["NETRC"]).read()
with open({str(record)!r}, "a") as f:
    f.write(json.dumps(seen) + "\\n")
if {then!r} == "interrupt":
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(60)
os.execv({uv_bin()!r}, [{uv_bin()!r}, *sys.argv[1:]])
""")
    shim.chmod(0o755)
    return shim


def resolve_cu126(folder: Path, shim: Path, record: Path, mirrors: dict[str, str],
                  index_url: str, wanted: str = "torch==2.5.1"):
    platform = load_platforms()["linux-cu126"]
    requirements = folder / "requirements.in"
    requirements.write_text(f"{wanted}\nnumpy\n")
    http = Http(credentials=Credentials.from_urls([index_url, *mirrors.values()],
                                                  netrc_file=folder / "none"))
    try:
        resolution = resolve([requirements], platform, "3.11",
                             Indexes.for_platform(platform, mirrors, index_url, NO_SECRETS),
                             binary=str(shim), fetch_page=http.page)
    finally:
        http.close()
    return resolution, json.loads(record.read_text().splitlines()[0])

