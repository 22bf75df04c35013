"""compile's page fetcher (``lockkit.index.pages.Http.page``, through the one client policy
of ``lockkit.index.http``): credentials by host, the Authorization header kept across a
redirect on the same origin only, gzip decoded, 5xx retried (each attempt and pause said
under ``-v``), a dead host an error naming the URL without its credentials.

A real HTTP server on 127.0.0.1 answers; it records what each request carried.
"""

from __future__ import annotations

import base64
import gzip
import http.server
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lockkit._internal import log
from lockkit.config.project import load_project
from lockkit.errors import IndexError_
from lockkit.index.auth import Credentials
from lockkit.index.pages import Http as _Http
from tests.support.silent_server import Silent, dead_port
from tests.support.tls import loopback_certificate

PAGE = '<!DOCTYPE html><html><body><a href="/x/torch-2.5.1-py3-none-any.whl">t</a></body></html>'


class Recorder(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, str]] = []  # (path, Authorization)
        self.failures = 0  # 503s still to give
        self.redirect_to = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization", "")))
        if self.path.startswith("/moved/"):
            self._send(302, b"", Location=self.server.redirect_to)
        elif self.path.startswith("/flaky/") and self.server.failures:
            self.server.failures -= 1
            self._send(503, b"try later")
        elif self.path.startswith("/slow/"):
            time.sleep(0.3)
            self._send(200, PAGE.encode())
        elif self.path.startswith("/gz/"):
            assert "gzip" in self.headers.get("Accept-Encoding", "")
            self._send(200, gzip.compress(PAGE.encode()), **{"Content-Encoding": "gzip"})
        else:
            self._send(200, PAGE.encode())

    def _send(self, code: int, body: bytes, **headers: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def servers() -> Iterator[tuple[Recorder, Recorder]]:
    pair = (Recorder(), Recorder())
    for server in pair:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield pair
    for server in pair:
        server.shutdown()
        server.server_close()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def http_for(tmp_path: Path, index_url: str) -> _Http:
    (tmp_path / "requirements.in").write_text("torch\n")
    (tmp_path / "lockkit.toml").write_text(f'index-url = "{index_url}"\n')
    project = load_project(tmp_path)
    credentials = Credentials.for_indexes(project.index_url, project.mirrors)
    return _Http(credentials=credentials, backoff=0.01)


def test_credentials_follow_a_redirect_on_the_same_origin_only(servers, tmp_path):
    home, other = servers
    http = http_for(tmp_path, f"http://me:s3cret@{home.url[len('http://'):]}/simple")
    home.redirect_to = f"{home.url}/simple/torch/"
    assert http.page(f"{home.url}/moved/torch/") == (200, PAGE)
    assert home.seen == [("/moved/torch/", basic("me", "s3cret")),
                         ("/simple/torch/", basic("me", "s3cret"))]
    home.redirect_to = f"{other.url}/simple/torch/"
    http = http_for(tmp_path, f"http://me:s3cret@{home.url[len('http://'):]}/simple")  # a new run
    assert http.page(f"{home.url}/moved/torch/") == (200, PAGE)
    assert other.seen == [("/simple/torch/", "")]  # another origin: no Authorization


def test_user_info_in_the_url_is_sent_as_basic_auth_not_in_the_request(servers, tmp_path):
    home, _ = servers
    http = http_for(tmp_path, f"{home.url}/simple")
    host = home.url[len("http://"):]
    assert http.page(f"http://tok%40en:p%3Ass@{host}/simple/torch/")[0] == 200
    assert home.seen == [("/simple/torch/", basic("tok@en", "p:ss"))]


def test_gzip_is_decoded_and_5xx_retried(servers, tmp_path):
    home, _ = servers
    http = http_for(tmp_path, f"{home.url}/simple")
    assert http.page(f"{home.url}/gz/torch/") == (200, PAGE)
    home.failures = 2
    assert http.page(f"{home.url}/flaky/torch/") == (200, PAGE)
    home.failures = 5
    http = http_for(tmp_path, f"{home.url}/simple")  # a new run: the 200 above is this one's
    assert http.page(f"{home.url}/flaky/torch/") == (503, "try later")  # after 3 attempts
    assert len([p for p, _ in home.seen if p.startswith("/flaky/")]) == 3 + 3


def test_a_page_is_fetched_once_per_run_but_a_5xx_is_asked_again(servers, tmp_path):
    """compile --all: the platforms on one PyTorch index share its pages' answers, as
    fetched in this run; a 5xx (after the transport's attempts) is not kept."""
    home, _ = servers
    http = http_for(tmp_path, f"{home.url}/simple")
    assert http.page(f"{home.url}/simple/torch/") == http.page(f"{home.url}/simple/torch/") \
        == (200, PAGE)
    assert home.seen == [("/simple/torch/", "")]
    home.failures = 3
    assert http.page(f"{home.url}/flaky/torch/") == (503, "try later")
    assert http.page(f"{home.url}/flaky/torch/") == (200, PAGE)  # asked again: 4th attempt
    assert http.page(f"{home.url}/flaky/torch/") == (200, PAGE)
    assert len([p for p, _ in home.seen if p.startswith("/flaky/")]) == 3 + 1
    assert http_for(tmp_path, f"{home.url}/simple").page(f"{home.url}/simple/torch/") == \
        (200, PAGE)  # another run asks for itself
    assert home.seen.count(("/simple/torch/", "")) == 2


def test_askers_of_a_page_being_fetched_wait_for_that_answer(servers, tmp_path):
    home, _ = servers
    http = http_for(tmp_path, f"{home.url}/simple")
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(http.page, [f"{home.url}/slow/torch/"] * 4))
    assert answers == [(200, PAGE)] * 4
    assert home.seen == [("/slow/torch/", "")]


def test_a_dead_host_is_an_error_naming_the_url_without_credentials(tmp_path):
    http = http_for(tmp_path, "http://127.0.0.1:9/simple")
    with pytest.raises(IndexError_) as dead:
        http.page("http://me:s3cret@127.0.0.1:9/whl/cpu/torch/")
    assert "127.0.0.1:9/whl/cpu/torch/" in str(dead.value)
    assert "s3cret" not in str(dead.value)


def test_a_mirror_that_never_answers_times_out_once_and_is_not_asked_again(servers):
    """--timeout bounds the wait; a timeout is not retried (three of them would triple it),
    and the host is not asked again in this run: other pages on it fail at once, naming
    why. Another host is still asked."""
    home, _ = servers
    http = _Http(backoff=30, timeout=0.5)
    with Silent() as silent:
        start = time.monotonic()
        with pytest.raises(IndexError_, match=r"no answer within 0\.5 s"):
            http.page(f"{silent.url}/whl/cpu/torch/")
        with pytest.raises(IndexError_, match="not asked again") as again:
            http.page(f"{silent.url}/whl/cu128/torch/")
        assert time.monotonic() - start < 15  # one retry would have slept 30 s
        assert silent.accepted == 1
    assert "no answer within 0.5 s" in str(again.value)
    assert http.page(f"{home.url}/simple/torch/") == (200, PAGE)


@pytest.mark.parametrize("host", ["nonexistent.invalid", "127.0.0.1:{dead}"])
def test_an_unresolvable_or_refusing_host_fails_at_once_without_retries(host):
    """A name that does not resolve, a port that refuses: a retry within seconds would
    only repeat the answer (the retries, 30 s of back-off here, are for 5xx and resets)."""
    host = host.format(dead=dead_port())
    http = _Http(backoff=30, timeout=5)
    start = time.monotonic()
    with pytest.raises(IndexError_) as err:
        http.page(f"http://{host}/whl/cpu/torch/")
    assert time.monotonic() - start < 15
    if host == "nonexistent.invalid":
        assert "cannot resolve the host name nonexistent.invalid" in str(err.value)
    assert set(http.failed) == {f"http://{host}"}


def test_a_host_that_hangs_up_mid_request_is_retried():
    """A connection closed before the answer (a restarting proxy) is worth the retries."""
    http = _Http(backoff=0.01, timeout=5)
    with Silent(hang_up=True) as server, pytest.raises(IndexError_):
        http.page(f"{server.url}/whl/cpu/torch/")
    assert server.accepted == 3


@pytest.fixture
def tls_server(tmp_path) -> Iterator[tuple[Recorder, Path]]:
    """The recorder behind TLS, with a certificate for 127.0.0.1 made by the openssl CLI."""
    import ssl

    cert, key = loopback_certificate(tmp_path)
    server = Recorder()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, cert
    server.shutdown()
    server.server_close()


def test_https_pages_trust_ssl_cert_file_and_refuse_an_unknown_certificate(
        tls_server, tmp_path, monkeypatch):
    server, cert = tls_server
    url = f"https://127.0.0.1:{server.server_address[1]}/simple/torch/"
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert http_for(tmp_path, "https://127.0.0.1/simple").page(url) == (200, PAGE)
    monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle does not know this certificate
    with pytest.raises(IndexError_, match="CERTIFICATE_VERIFY_FAILED"):
        http_for(tmp_path, "https://127.0.0.1/simple").page(url)


def test_an_http_page_loads_no_ca_bundle(servers, tmp_path, monkeypatch):
    """A page from an http:// host never makes a TLS connection: it is fetched with a CA
    bundle that cannot be loaded (loading one cost the page uv waits on ~20 ms)."""
    home, _ = servers
    bundle = tmp_path / "ca.pem"
    bundle.write_text("not a certificate\n")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert http_for(tmp_path, f"{home.url}/simple").page(f"{home.url}/simple/torch/") == \
        (200, PAGE)


def test_a_redirect_from_http_to_https_verifies_the_certificate(tls_server, servers,
                                                                  tmp_path, monkeypatch):
    """The http:// page's route trusts no certificate: a redirect to https:// goes by the
    route with the CA bundle, which trusts SSL_CERT_FILE's and refuses any other."""
    tls, cert = tls_server
    home, _ = servers
    home.redirect_to = f"https://127.0.0.1:{tls.server_address[1]}/simple/torch/"
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    http = http_for(tmp_path, f"{home.url}/simple")
    assert http.page(f"{home.url}/simple/torch/") == (200, PAGE)  # a plain page first
    assert http.page(f"{home.url}/moved/torch/") == (200, PAGE)
    assert tls.seen == [("/simple/torch/", "")]
    monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle does not know this certificate
    with pytest.raises(IndexError_, match="CERTIFICATE_VERIFY_FAILED"):
        http_for(tmp_path, f"{home.url}/simple").page(f"{home.url}/moved/torch/")


def test_verbose_says_each_attempt_of_a_retried_page_and_the_pause(tmp_path, capsys):
    home = Recorder()
    threading.Thread(target=home.serve_forever, daemon=True).start()
    try:
        http = http_for(tmp_path, f"{home.url}/simple")
        home.failures = 2
        log.configure(1)
        try:
            assert http.page(f"{home.url}/flaky/torch/")[0] == 200
        finally:
            log.configure(0)
    finally:
        home.shutdown()
    lines = capsys.readouterr().err.splitlines()
    page = f"GET {home.url}/flaky/torch/"
    assert [re.sub(r"\d+\.\d+ s", "T s", ln) for ln in lines] == [
        f"{page}: 503 (T s)", f"{page}: retrying in T s",
        f"{page}: 503 (T s)", f"{page}: retrying in T s",
        f"{page}: 200 (T s)"], lines
