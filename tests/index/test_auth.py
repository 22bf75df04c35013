"""Credentials by host (lockkit.index.auth): attached to every request, written nowhere.

The default index here is private: it answers 401 to any request without the right Basic
header, so a request that went without credentials fails the run. The secret is a random
canary, looked for afterwards in every file lockkit wrote and everything it printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cache.store import Cache
from lockkit.cli import main
from lockkit.download.fetch import Fetcher, Want, http_client
from lockkit.errors import FetchError
from lockkit.index.auth import Credentials, read_netrc, realm, user_info
from tests.support.index_server import IndexServer
from tests.support.project import Loopback, fill
from tests.support.pytorch_index import PyTorchIndex

USER = "deploy"


def canary() -> str:
    return "canary-" + secrets.token_hex(12)


@pytest.fixture
def token(monkeypatch) -> str:
    """The secret, in ``$LK_TOKEN`` (lockkit.toml names the variable, never the value)."""
    value = canary()
    monkeypatch.setenv("LK_TOKEN", value)
    return value


@pytest.fixture
def private(tmp_path_factory, token):
    """The loopback indexes of conftest, the default one requiring ``deploy:<token>``."""
    pt = PyTorchIndex(tmp_path_factory.mktemp("pytorch"))
    server = IndexServer(tmp_path_factory.mktemp("index"), auth=(USER, token))
    default = server.index("/simple")
    fill(pt, default)
    with pt, server:
        yield Loopback(pt=pt, server=server, default=default)


def project_for(root: Path, loopback: Loopback, index_url: str, extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "requirements.in").write_text("torch==2.5.1\nnumpy\n")
    text = loopback.config().replace(f'index-url = "{loopback.url}/simple"',
                                     f'index-url = "{index_url}"')
    (root / "lockkit.toml").write_text(text + extra)
    return root


def with_token(url: str, secret: str = "${LK_TOKEN}") -> str:
    return url.replace("http://", f"http://{USER}:{secret}@", 1)


def compile_(root: Path, *extra: str) -> int:
    return main(["compile", "--project", str(root), "--platform", "linux-cpu", *extra])


def build(root: Path, cache: Path, *extra: str) -> int:
    return main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(cache), *extra])


def assert_all_authorized(server: IndexServer) -> None:
    """Every request that reached the private index carried the right header."""
    assert server.requests, "the private index was never asked"
    wrong = [path for path, header in server.requests if header != server.expected_header()]
    assert not wrong, f"requests without the right credentials: {wrong[:5]}"


def assert_nowhere(secret: str, *folders: Path, printed: str = "") -> None:
    """*secret* is in no file lockkit wrote under *folders* (wheels aside) nor its output."""
    assert secret not in printed
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix != ".whl" and path.name != "lockkit.toml":
                assert secret not in path.read_text(errors="replace"), path


def wheels_from(server: IndexServer) -> list[str]:
    return [path for path, _ in server.requests if path.endswith(".whl")]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("literal", [False, True], ids=["env-var", "literal"])
def test_private_index_compile_and_wheelhouse_send_credentials(private, tmp_path, token,
                                                                 capfd, literal):
    url = with_token(f"{private.url}/simple", token if literal else "${LK_TOKEN}")
    root = project_for(tmp_path / "proj", private, url)
    assert compile_(root) == 0
    assert build(root, tmp_path / "cache") == 0
    assert_all_authorized(private.server)
    assert wheels_from(private.server)  # numpy came from the private index, authenticated
    lock = (root / "locks" / "pylock.linux-cpu.toml").read_text()
    assert f"{private.url}/simple" in lock and USER not in lock
    assert_nowhere(token, root, printed="".join(capfd.readouterr()))


def test_netrc_credentials_with_a_plain_index_url(private, tmp_path, token, capfd,
                                                  monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1\n  login {USER}\n  password {token}\n")
    monkeypatch.setenv("NETRC", str(netrc))
    root = project_for(tmp_path / "proj", private, f"{private.url}/simple")
    # uv (0.13) asks anonymously first and answers the 401 with the netrc entry, so only
    # its success is checked; lockkit sends the credentials with the first request.
    assert compile_(root) == 0
    assert any(h == private.server.expected_header() for _, h in private.server.requests)
    private.forget_requests()
    assert build(root, tmp_path / "cache") == 0
    assert_all_authorized(private.server)
    assert wheels_from(private.server)
    assert_nowhere(token, root, printed="".join(capfd.readouterr()))


def test_mirror_with_credentials_serves_the_wheelhouse(private, indexes, tmp_path, token,
                                                       capfd):
    """The lock names a public index; the build goes to a private mirror of it only."""
    root = project_for(tmp_path / "proj", indexes, f"{indexes.url}/simple")
    assert compile_(root) == 0
    indexes.server.auth = ("nobody", canary())  # the lock's own host now refuses everyone
    indexes.forget_requests()
    mirror = f'"{indexes.url}/simple" = "{with_token(private.url)}/simple"\n'
    (root / "lockkit.toml").write_text((root / "lockkit.toml").read_text() + mirror)
    assert build(root, tmp_path / "cache") == 0
    assert_all_authorized(private.server)
    assert wheels_from(private.server) and not wheels_from(indexes.server)
    manifest = json.loads((root / "wheelhouse" / "linux-cpu" / "manifest.json").read_text())
    numpy, = [f for f in manifest["files"] if f.get("package") == "numpy"]
    assert numpy["source"].startswith(f"{indexes.url}/simple/")  # the lock's URL, as written
    assert "origin" not in numpy  # the mirror is the build log's, never the manifest's
    assert private.url.split("://")[1] not in json.dumps(manifest)
    assert_nowhere(token, root, printed="".join(capfd.readouterr()))


def test_mirror_credentials_cover_its_urls_without_user_info(private, tmp_path, token):
    """A mirror that links files absolutely (Artifactory, Nexus) drops the user info: the
    credentials still go with every request to the mirror's host."""
    wheel = next(private.default.root.glob("numpy/*.whl"))
    want = Want(filename=wheel.name, sha256=sha256(wheel), size=wheel.stat().st_size,
                urls=(f"{private.url}/simple/numpy/{wheel.name}",), source="x")
    mirror = {"https://files.example": f"{with_token(private.url)}/simple"}
    credentials = Credentials.from_urls(mirror.values(), netrc_file=tmp_path / "none")
    with http_client(credentials=credentials, backoff=0.01) as client:
        got = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c1")).fetch(want)
    assert got.downloaded == wheel.stat().st_size
    with http_client(backoff=0.01) as client, pytest.raises(FetchError) as refused:
        Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c2")).fetch(want)
    assert "HTTP 401" in str(refused.value) and "credentials" in (refused.value.hint or "")
    (_, first), (_, second) = private.server.requests
    assert first == private.server.expected_header() and second == ""


def test_compile_hashes_and_pages_go_with_credentials(private, tmp_path, token):
    """The files uv left unhashed and the PyTorch pages are fetched by lockkit itself."""
    from lockkit.config.project import load_project
    from lockkit.index.pages import Http as _Http

    root = project_for(tmp_path / "proj", private, with_token(f"{private.url}/simple"))
    wheel = next(private.default.root.glob("numpy/*.whl"))
    project = load_project(root)
    http = _Http(credentials=Credentials.for_indexes(project.index_url, project.mirrors))
    try:
        assert http.hash(f"{private.url}/simple/numpy/{wheel.name}") == sha256(wheel)
        status, text = http.page(f"{private.url}/simple/numpy/")
    finally:
        http.close()
    assert status == 200 and wheel.name in text
    assert_all_authorized(private.server)
    assert repr(http.credentials).count(token) == 0


def test_verify_without_a_wheelhouse_fetches_with_credentials(private, tmp_path, token,
                                                              capfd):
    root = project_for(tmp_path / "proj", private, with_token(f"{private.url}/simple"))
    assert compile_(root) == 0
    private.forget_requests()
    report = tmp_path / "report"
    main(["verify", "--project", str(root), "--platform", "linux-cpu", "--no-gpu",
          "--report-dir", str(report), "--cache-dir", str(tmp_path / "cache")])
    dossier = json.loads((report / "dossier.json").read_text())
    install = next(s for s in dossier["steps"] if s["name"] == "install")
    assert install["status"] == "passed", install  # the lock's files were fetched by hash
    assert wheels_from(private.server)
    assert_all_authorized(private.server)
    assert_nowhere(token, root, report, printed="".join(capfd.readouterr()))


def test_wrong_password_names_the_url_never_the_secret(private, tmp_path, token, capfd,
                                                       monkeypatch):
    root = project_for(tmp_path / "proj", private, with_token(f"{private.url}/simple"))
    assert compile_(root) == 0
    capfd.readouterr()
    wrong = canary()
    monkeypatch.setenv("LK_TOKEN", wrong)
    assert build(root, tmp_path / "cache") == 1
    err = capfd.readouterr().err
    assert f"{private.url}/simple/" in err and "HTTP 401" in err
    assert "hint:" in err and "credentials" in err
    (root / "requirements.in").write_text("torch==2.5.1\nnumpy\nfilelock\n")
    assert compile_(root) == 1
    err += capfd.readouterr().err
    assert "refused access" in err
    for secret in (wrong, token):
        assert_nowhere(secret, root, printed=err)


def test_missing_or_unreadable_netrc_is_no_error(project, indexes, tmp_path, monkeypatch):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    malformed = tmp_path / "malformed"
    malformed.write_text("machine 127.0.0.1 login a password b\nnot-a-keyword\n")
    locked = tmp_path / "locked"
    locked.write_text("machine 127.0.0.1 login a password b\n")
    locked.chmod(0)
    for path in (tmp_path / "absent", folder, malformed):
        assert read_netrc(path) == {}
    if not os.access(locked, os.R_OK):  # root reads it anyway
        assert read_netrc(locked) == {}
    monkeypatch.setenv("NETRC", str(tmp_path / "absent"))
    assert compile_(project) == 0
    assert build(project, tmp_path / "cache") == 0
    assert not any(header for _, header in indexes.server.requests)


def test_lookup_order_url_then_project_then_netrc(tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine idx.test login n password from-netrc\n"
                     "default login d password from-default\n")
    creds = Credentials.from_urls(["https://u:from-url@idx.test/simple", "http://other.test/x",
                                   "https://v:second@idx.test:443/mirror"], netrc_file=netrc)
    assert creds.lookup("https://me:mine@idx.test/f.whl") == ("me", "mine")
    assert creds.lookup("https://idx.test:443/packages/f.whl") == ("u", "from-url")
    assert creds.lookup("http://idx.test/f.whl") == ("n", "from-netrc")  # another realm
    assert creds.lookup("https://else.test/f.whl") == ("d", "from-default")
    assert creds.auth("https://me:mine@idx.test/f.whl") is None  # httpx sends the URL's own
    assert user_info("https://tok%40en@h.test/") == ("tok@en", "")
    assert realm("HTTPS://IDX.test/x") == realm("https://idx.test:443/") == "https://idx.test:443"


def test_repr_never_shows_a_secret(tmp_path, monkeypatch):
    secret = canary()
    monkeypatch.setenv("LK_TOKEN", secret)
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine h.test login someone password {secret}\n")
    creds = Credentials.from_urls(["https://deploy:${LK_TOKEN}@idx.test/simple"], netrc)
    assert creds.lookup("https://idx.test/x") == ("deploy", secret)
    for text in (repr(creds), str(creds)):
        assert secret not in text and "someone" not in text and "deploy" not in text
    assert "https://idx.test:443" in repr(creds)


def test_lock_stays_free_of_credentials_from_every_source(private, tmp_path, token):
    root = project_for(tmp_path / "proj", private, with_token(f"{private.url}/simple"))
    assert compile_(root) == 0
    lock = tomllib.loads((root / "locks" / "pylock.linux-cpu.toml").read_text())
    urls = [f["url"] for p in lock["packages"] for f in p.get("wheels", [])]
    assert urls and all(user_info(u) is None for u in urls)


@pytest.fixture
def path_token(tmp_path_factory, token):
    """The loopback indexes of conftest, the default one served under ``/<token>/simple``:
    a secret in the URL's path, not in its user info."""
    pt = PyTorchIndex(tmp_path_factory.mktemp("pytorch"))
    server = IndexServer(tmp_path_factory.mktemp("index"))
    default = server.index(f"/{token}/simple")
    fill(pt, default)
    with pt, server:
        yield Loopback(pt=pt, server=server, default=default)


def test_a_token_in_the_index_path_is_used_and_never_shown(path_token, tmp_path, token, capfd):
    root = project_for(tmp_path / "proj", path_token, f"{path_token.url}/${{LK_TOKEN}}/simple")
    assert compile_(root) == 0
    assert build(root, tmp_path / "cache") == 0
    assert wheels_from(path_token.server)
    lock = (root / "locks" / "pylock.linux-cpu.toml").read_text()
    assert "${LK_TOKEN}" in lock  # the literal text of the config, or nothing
    manifest = (root / "wheelhouse" / "linux-cpu" / "manifest.json").read_text()
    assert_nowhere(token, root, tmp_path / "cache", printed="".join(capfd.readouterr()))
    assert token not in manifest


def test_a_wrong_token_in_the_index_path_is_never_shown(path_token, tmp_path, token, capfd,
                                                        monkeypatch):
    root = project_for(tmp_path / "proj", path_token, f"{path_token.url}/${{LK_TOKEN}}/simple")
    assert compile_(root) == 0
    capfd.readouterr()
    wrong = canary()
    monkeypatch.setenv("LK_TOKEN", wrong)
    assert build(root, tmp_path / "cache") == 1
    err = capfd.readouterr().err
    assert "${LK_TOKEN}" in err and "404" in err
    (root / "requirements.in").write_text("torch==2.5.1\nnumpy\nfilelock\n")
    assert compile_(root) == 1
    out, more = capfd.readouterr()
    err += out + more
    assert "${LK_TOKEN}" in err
    for secret in (wrong, token):
        assert_nowhere(secret, root, tmp_path / "cache", printed=err)


@pytest.mark.slow
def test_a_whole_url_variable_as_index_url_is_read_back_installed_and_never_written(
        indexes, tmp_path, capfd, monkeypatch):
    """``index-url = "${INDEX_URL}"``: the lock holds ``https://${INDEX_URL}/...`` (a URL
    uv and packaging parse, reaching no host), never the value. The next compile reads it
    back (uv gets it as preferences), uv installs from it (a dry run: no stock installer
    expands a variable in a pylock), lockkit's wheelhouse fetches through it, and the
    export's requirements file installs for real with uv and pip, which fill it in."""
    import subprocess
    import sys

    import uv

    value = f"{indexes.url}/simple"
    monkeypatch.setenv("INDEX_URL", value)
    root = project_for(tmp_path / "proj", indexes, "${INDEX_URL}")
    lock = root / "locks" / "pylock.linux-cpu.toml"
    assert compile_(root) == 0
    assert compile_(root) == 0  # uv read the lock back as its preferences
    (root / "requirements.in").write_text("torch==2.5.1\nnumpy\njinja2\n")
    assert compile_(root) == 0
    text = lock.read_text()
    assert "127.0.0.1" not in text  # neither the value nor the mirrors
    numpy, = [p for p in tomllib.loads(text)["packages"] if p["name"] == "numpy"]
    assert numpy["index"] == "https://${INDEX_URL}"
    assert numpy["wheels"][0]["url"].startswith("https://${INDEX_URL}/numpy/numpy-2.1.0-")

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull

    def run(*argv: str) -> subprocess.CompletedProcess:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        return done

    venv = tmp_path / "venv"
    run(uv.find_uv_bin(), "venv", "--no-config", "--quiet", "--python", sys.executable,
        str(venv))
    uv_pip = [uv.find_uv_bin(), "pip", "install", "--no-config", "--python",
              str(venv / "bin" / "python"), "--cache-dir", str(tmp_path / "uv-cache")]
    dry = run(*uv_pip, "--dry-run", "-r", str(lock))
    assert "numpy==2.1.0" in dry.stderr and "jinja2==3.1.6" in dry.stderr

    assert build(root, tmp_path / "cache") == 0  # lockkit fills it in
    assert any("/simple/numpy/" in p for p in wheels_from(indexes.server))
    exported = tmp_path / "requirements.txt"
    assert main(["export", "--project", str(root), "--platform", "linux-cpu",
                 "-o", str(exported)]) == 0
    assert "--index-url ${INDEX_URL}\n" in exported.read_text()
    run(*uv_pip, "--require-hashes", "-r", str(exported))
    pip_venv = tmp_path / "pip-venv"
    run(sys.executable, "-m", "venv", str(pip_venv))
    run(str(pip_venv / "bin" / "python"), "-m", "pip", "install", "--isolated", "--quiet",
        "--require-hashes", "-r", str(exported))
    for python in (venv / "bin" / "python", pip_venv / "bin" / "python"):
        got = run(str(python), "-c", "import jinja2, numpy; print(numpy.__version__)")
        assert got.stdout.strip() == "2.1.0"
    assert_nowhere(value, root, tmp_path / "cache", printed="".join(capfd.readouterr()))
