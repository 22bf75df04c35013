"""lockkit.index.http: compile's pages and the wheelhouse's downloads go by one policy,
retried by one transport (lockkit.index.transport).

A real HTTP proxy on 127.0.0.1 (plain HTTP: requests come in absolute form) answers for
hosts that do not exist; it records what each request carried.
"""

from __future__ import annotations

import hashlib
import http.server
import re
import threading
import time
from collections.abc import Iterator

import pytest

from lockkit import __version__
from lockkit.cache.store import Cache
from lockkit.download.fetch import Fetcher, Want, http_client
from lockkit.download.line import Stopped
from lockkit.errors import ConfigError, FetchError, IndexError_
from lockkit.index.http import Client, Policy, unreachable
from lockkit.index.pages import Http

BODY = b"PK" + bytes(range(256)) * 64
PAGE = b'<a href="http://files.invalid/w-1.0-py3-none-any.whl">w</a>'


class Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, str]] = []  # (request target, User-Agent)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Proxy

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("User-Agent", "")))
        body = BODY if self.path.endswith(".whl") else PAGE
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def proxy(monkeypatch) -> Iterator[Proxy]:
    server = Proxy()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.url)
    yield server
    server.shutdown()
    server.server_close()


def test_pages_and_downloads_go_through_the_environments_proxy_as_lockkit(proxy, tmp_path):
    http = Http()
    try:
        assert http.page("http://pages.invalid/whl/cpu/torch/") == (200, PAGE.decode())
    finally:
        http.close()
    url = "http://files.invalid/w-1.0-py3-none-any.whl"
    want = Want(filename="w-1.0-py3-none-any.whl", sha256=hashlib.sha256(BODY).hexdigest(),
                size=len(BODY), urls=(url,), source=url)
    with http_client() as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))
        assert fetcher.fetch(want).downloaded == len(BODY)
    assert proxy.seen == [("http://pages.invalid/whl/cpu/torch/", f"lockkit/{__version__}"),
                          (url, f"lockkit/{__version__}")]


def test_compile_fails_fast_on_a_refusing_host_and_a_download_retries_it(tmp_path):
    """One rule says what a refusal is (:func:`unreachable`); compile does not ask such a
    host again in the run, a download retries it (a build of gigabytes is worth the
    seconds, as for a stall)."""
    import httpx

    from tests.support.silent_server import dead_port

    url = f"http://127.0.0.1:{dead_port()}/w-1.0-py3-none-any.whl"
    with Client(Policy(timeout=5)) as client, pytest.raises(httpx.ConnectError) as refused:
        client.open().get(url)
    assert unreachable(refused.value)
    assert not Policy(fail_fast=True).retries(refused.value)
    assert Policy(fail_fast=False).retries(refused.value)
    http = Http(backoff=0.01, timeout=5)
    with pytest.raises(IndexError_, match="Connection refused"):
        http.page(url)
    assert list(http.failed) == [url.rsplit("/", 1)[0]]
    want = Want(filename="w-1.0-py3-none-any.whl", sha256="0" * 64, size=1, urls=(url,),
                source=url)
    with http_client(timeout=5, attempts=2, backoff=0.01) as client, \
            pytest.raises(FetchError, match="after 2 attempts"):
        Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c")).fetch(want)


def test_a_ca_bundle_that_cannot_be_loaded_is_a_config_error_naming_it(tmp_path,
                                                                       monkeypatch):
    """A wrong SSL_CERT_FILE is the user's setting, not a failure of the first URL asked
    (a download used to report it as a cache that cannot be written)."""
    bundle = tmp_path / "ca.pem"
    bundle.write_text("not a certificate\n")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    url = "https://127.0.0.1:9/w-1.0-py3-none-any.whl"
    want = Want(filename="w-1.0-py3-none-any.whl", sha256="0" * 64, size=1, urls=(url,),
                source=url)
    with http_client(backoff=0.01) as client, pytest.raises(ConfigError) as err:
        Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c")).fetch(want)
    assert str(err.value).startswith(f"SSL_CERT_FILE={bundle}: cannot load CA certificates")
    assert err.value.exit_code == 2


# --- the one retry rule: lockkit.index.transport --------------------------------------

class Flaky(http.server.ThreadingHTTPServer):
    """Answers each path with the 5xx queued for it (``fail[path]``), then 200 and BODY;
    ``/missing/...`` is a 404. Counts the requests of each path."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _FlakyHandler)
        self.fail: dict[str, int] = {}
        self.asked: dict[str, int] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _FlakyHandler(http.server.BaseHTTPRequestHandler):
    server: Flaky

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.asked[self.path] = self.server.asked.get(self.path, 0) + 1
        if self.server.fail.get(self.path):
            self.server.fail[self.path] -= 1
            code, body = 503, b"try later"
        elif self.path.startswith("/missing/"):
            code, body = 404, b"no such file"
        else:
            code, body = 200, BODY
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


@pytest.fixture
def flaky() -> Iterator[Flaky]:
    server = Flaky()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_transport_retries_a_5xx_then_succeeds(flaky):
    flaky.fail["/f.whl"] = 2
    with Client(Policy(attempts=3, backoff=0.01)) as client:
        resp = client.open().get(f"{flaky.url}/f.whl")
    assert (resp.status_code, resp.content) == (200, BODY)
    assert flaky.asked == {"/f.whl": 3}


def test_the_transport_gives_up_after_its_attempts_naming_them(flaky):
    """A 5xx on every attempt: the last answer is the caller's to say; a host that hangs
    up on every attempt: its error names the attempts made."""
    import httpx

    from tests.support.silent_server import Silent

    flaky.fail["/f.whl"] = 9
    with Client(Policy(attempts=3, backoff=0.01)) as client:
        assert client.open().get(f"{flaky.url}/f.whl").status_code == 503
    assert flaky.asked == {"/f.whl": 3}
    with Silent(hang_up=True) as server, \
            Client(Policy(attempts=2, backoff=0.01, fail_fast=False)) as client, \
            pytest.raises(httpx.TransportError, match=r"\(gave up after 2 attempts\)$"):
        client.open().get(f"{server.url}/f.whl")
    assert server.accepted == 2


def test_the_transport_does_not_retry_a_404_nor_a_5xx_to_a_post(flaky):
    flaky.fail["/post"] = 9
    with Client(Policy(attempts=3, backoff=0.01)) as client:
        assert client.open().get(f"{flaky.url}/missing/f.whl").status_code == 404
        assert client.open().post(f"{flaky.url}/post").status_code == 503
    assert flaky.asked == {"/missing/f.whl": 1, "/post": 1}


def test_a_page_and_a_file_go_by_the_one_rule(flaky, tmp_path, caplog):
    """compile's page GET and the wheelhouse's file GET are retried by the same transport:
    the same attempts, the same -v lines, from the same logger (no loop of their own)."""
    from lockkit._internal.log import VERBOSE

    flaky.fail = {"/whl/cpu/torch/": 2, "/w-1.0-py3-none-any.whl": 2}
    page, file = f"{flaky.url}/whl/cpu/torch/", f"{flaky.url}/w-1.0-py3-none-any.whl"
    want = Want(filename="w-1.0-py3-none-any.whl", sha256=hashlib.sha256(BODY).hexdigest(),
                size=len(BODY), urls=(file,), source=file)
    caplog.set_level(VERBOSE, logger="lockkit")
    http = Http(backoff=0.01)
    try:
        assert http.page(page)[0] == 200
    finally:
        http.close()
    with http_client(attempts=3, backoff=0.01) as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))
        assert fetcher.fetch(want).downloaded == len(BODY)
    assert flaky.asked == {"/whl/cpu/torch/": 3, "/w-1.0-py3-none-any.whl": 3}
    said = [re.sub(r"\d+\.\d+ s", "T s", r.getMessage()) for r in caplog.records
            if r.name == "lockkit.index.transport"]
    assert said == [f"GET {url}: {line}" for url in (page, file)
                    for line in ("503 (T s)", "retrying in T s") * 2]


def test_stop_ends_the_pause_between_attempts(flaky, tmp_path):
    """Ctrl-C (``Fetcher.stop``) during a 30 s pause after a 5xx: the download ends now,
    stopped, and no attempt follows."""
    flaky.fail["/w-1.0-py3-none-any.whl"] = 9
    url = f"{flaky.url}/w-1.0-py3-none-any.whl"
    want = Want(filename="w-1.0-py3-none-any.whl", sha256="0" * 64, size=1, urls=(url,),
                source=url)
    errors: list[BaseException] = []
    with http_client(attempts=3, backoff=30) as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))

        def run() -> None:
            try:
                fetcher.fetch(want)
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        while not flaky.asked:
            time.sleep(0.01)
        time.sleep(0.2)  # in the pause now
        started = time.monotonic()
        fetcher.stop()
        worker.join(10)
    assert not worker.is_alive() and time.monotonic() - started < 1
    assert len(errors) == 1 and isinstance(errors[0], Stopped)
    assert flaky.asked == {"/w-1.0-py3-none-any.whl": 1}


def test_proxies_and_no_proxy_come_from_the_environment(monkeypatch):
    import httpx

    from lockkit.index.transport import proxy_for

    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "ALL_PROXY",
                 "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "127.0.0.1:3128")
    monkeypatch.setenv("NO_PROXY", "direct.invalid")
    import urllib.request

    proxies = urllib.request.getproxies()
    assert proxy_for(httpx.URL("http://pages.invalid/x/"), proxies) == "http://127.0.0.1:3128"
    assert proxy_for(httpx.URL("http://files.direct.invalid/x/"), proxies) is None
    assert proxy_for(httpx.URL("https://pages.invalid/x/"), proxies) is None  # http only
