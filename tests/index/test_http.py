"""lockkit.index.http: compile's pages and the wheelhouse's downloads go by one policy.

A real HTTP proxy on 127.0.0.1 (plain HTTP: requests come in absolute form) answers for
hosts that do not exist; it records what each request carried.
"""

from __future__ import annotations

import hashlib
import http.server
import threading
from collections.abc import Iterator

import pytest

from lockkit import __version__
from lockkit.cache.store import Cache
from lockkit.errors import ConfigError, FetchError, IndexError_
from lockkit.index.http import Client, Policy, unreachable
from lockkit.index.pages import Http
from lockkit.wheelhouse.fetch import Fetcher, Want, http_client

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
        assert Fetcher(client, Cache(tmp_path / "c")).fetch(want).downloaded == len(BODY)
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
    with http_client(timeout=5) as client, pytest.raises(FetchError, match="after 2 attempts"):
        Fetcher(client, Cache(tmp_path / "c"), attempts=2, backoff=0.01).fetch(want)


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
    with http_client() as client, pytest.raises(ConfigError) as err:
        Fetcher(client, Cache(tmp_path / "c"), backoff=0.01).fetch(want)
    assert str(err.value).startswith(f"SSL_CERT_FILE={bundle}: cannot load CA certificates")
    assert err.value.exit_code == 2
