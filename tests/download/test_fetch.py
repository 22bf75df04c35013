"""Downloads of large files: read through the download client's wire a MiB at a time,
hashed and written on a second thread, checked and retried as any other; a body with no
length capped as it arrives, and one a server gzips anyway decoded before it is hashed."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lockkit.cache.store import Cache
from lockkit.download.fetch import Fetcher, Item, Want, http_client
from lockkit.download.line import Stopped
from lockkit.download.pool import fetch_items
from lockkit.errors import FetchError, HashMismatch
from lockkit.index.bulk import READ
from lockkit.index.http import Policy
from tests.support.tls import loopback_certificate
from tests.support.wheelhouse import partials

BIG = 24 << 20  # many pieces of fetch's CHUNK, several of them queued for the sink


class BodyServer:
    """Serves one body at /f.whl; each request takes the next fault queued, then serves it
    whole: "truncate" (part of it, then the connection closes), "stall" (part of it, then
    nothing for *stall* seconds), "wrong" (one byte changed), "hold" (part, then waits for
    the client to hang up), "close" (whole, then the connection closes, though the headers
    said nothing of it)."""

    def __init__(self, body: bytes, tls: ssl.SSLContext | None = None) -> None:
        self.body, self.requests, self.stall = body, 0, 3.0
        self.faults: list[str] = []
        self.held = threading.Event()
        self.clients: set[tuple[str, int]] = set()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server.requests += 1
                server.clients.add(self.client_address)
                fault = server.faults.pop(0) if server.faults else None
                body = server.body
                if fault == "wrong":
                    body = body[:-1] + bytes([body[-1] ^ 0xFF])
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                part = body if fault in (None, "wrong", "close") else body[: len(body) * 3 // 5]
                try:
                    self.wfile.write(part)
                    self.wfile.flush()
                    if fault == "stall":
                        time.sleep(server.stall)
                    if fault == "hold":
                        server.held.set()
                        self.connection.recv(1)  # returns when the client hangs up
                    if fault in ("truncate", "stall", "hold", "close"):
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}/f.whl"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served() -> Iterator[BodyServer]:
    server = BodyServer(os.urandom(BIG))
    yield server
    server.close()


def want(server: BodyServer) -> Want:
    return Want(filename="f.whl", sha256=hashlib.sha256(server.body).hexdigest(),
                size=len(server.body), urls=(server.url,), source=server.url)


def fetch_one(server: BodyServer, cache: Path, **kw: object) -> Path:
    with http_client(timeout=1.0, backoff=0.01) as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(cache), **kw)  # type: ignore[arg-type]
        return fetcher.fetch(want(server)).path


def test_a_large_body_lands_whole_and_checked(served, tmp_path):
    moved: list[int] = []
    path = fetch_one(served, tmp_path / "c", on_bytes=moved.append)
    assert path.read_bytes() == served.body
    assert sum(moved) == BIG
    assert partials(tmp_path / "c") == []


@pytest.mark.parametrize("fault", ["truncate", "stall"])
def test_a_large_body_cut_short_is_retried(served, tmp_path, fault):
    served.faults = [fault]
    assert fetch_one(served, tmp_path / "c").read_bytes() == served.body
    assert served.requests == 2


def test_a_large_body_with_wrong_bytes_never_lands(served, tmp_path):
    served.faults = ["wrong"]
    with pytest.raises(HashMismatch):
        fetch_one(served, tmp_path / "c")
    assert served.requests == 1
    assert not (tmp_path / "c" / "sha256").exists()
    assert partials(tmp_path / "c") == []


def test_stop_cuts_a_large_body_off(served, tmp_path):
    served.faults = ["hold"]
    with http_client(timeout=30.0) as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))
        errors: list[BaseException] = []

        def run() -> None:
            try:
                fetcher.fetch(want(served))
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert served.held.wait(10)
        time.sleep(0.2)  # the worker is now blocked reading the connection
        started = time.monotonic()
        fetcher.stop()
        worker.join(10)
    assert not worker.is_alive() and time.monotonic() - started < 5
    assert len(errors) == 1 and isinstance(errors[0], Stopped)
    # what came is kept for the next build (a private cache), never under the blob's name
    sha = want(served).sha256
    kept = list((tmp_path / "c" / "partial").iterdir())
    assert [p.name.split("-", 1)[1] for p in kept] == [f"{sha}.part"]
    assert 0 < kept[0].stat().st_size < BIG and served.body.startswith(kept[0].read_bytes())
    assert not Cache(tmp_path / "c").path(sha).exists()


@pytest.mark.parametrize("size", [2 << 20, BIG])
def test_bodies_keep_the_connection(tmp_path, size):
    """Every body is read through httpx to its end: one connection serves every file (a
    TLS handshake per file would cost more than the copies)."""
    server = BodyServer(b"")
    try:
        with http_client(timeout=5.0) as client:
            fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))
            for _ in range(3):
                server.body = os.urandom(size)
                assert fetcher.fetch(want(server)).path.read_bytes() == server.body
    finally:
        server.close()
    assert server.requests == 3 and len(server.clients) == 1


def test_progress_never_sees_a_negative_advance_on_an_interrupted_download(served, tmp_path):
    """Ctrl-C mid-body: the bytes already shown stay shown (the bar went from 0.7 GB back
    to 0 with a speed of minus 5 GB/s when a stopped file's bytes were taken back)."""
    served.faults = ["hold"]
    moved: list[int] = []
    with http_client(timeout=30.0) as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"),
                          on_bytes=moved.append)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                fetcher.fetch(want(served))
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert served.held.wait(10)
        time.sleep(0.2)
        fetcher.stop()
        worker.join(10)
    assert not worker.is_alive() and len(errors) == 1 and isinstance(errors[0], Stopped)
    assert moved and min(moved) > 0
    assert 0 < sum(moved) <= BIG * 3 // 5  # what came, once, and never taken back


def test_a_retried_body_is_reported_once_never_taken_back(served, tmp_path):
    served.faults = ["truncate"]
    moved: list[int] = []
    assert fetch_one(served, tmp_path / "c", on_bytes=moved.append).read_bytes() == served.body
    assert served.requests == 2 and min(moved) > 0 and sum(moved) == BIG


def test_a_body_comes_in_pieces_of_a_mib(served):
    """The download client's wire reads 1 MiB at a time (httpx's own read 64 KiB, at
    about fifteen Python calls each: half of a download's CPU time)."""
    with http_client(timeout=5.0) as client, client.stream("GET", served.url) as resp:
        sizes = [len(piece) for piece in resp.iter_raw()]
    assert sum(sizes) == BIG and max(sizes) == READ
    assert len(sizes) <= BIG // READ + 1


def test_a_connection_the_server_closed_while_idle_is_not_used_again(tmp_path):
    """The server hung up after a whole body: the next file opens a new connection rather
    than failing on the old one (one attempt only: no retry hides it)."""
    server = BodyServer(os.urandom(1 << 20))
    try:
        with http_client(timeout=5.0, attempts=1) as client:
            fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))
            server.faults = ["close"]
            assert fetcher.fetch(want(server)).path.read_bytes() == server.body
            time.sleep(0.2)  # the server's close has reached the idle connection
            server.body = os.urandom(1 << 20)
            assert fetcher.fetch(want(server)).path.read_bytes() == server.body
    finally:
        server.close()
    assert server.requests == 2 and len(server.clients) == 2


@pytest.fixture
def certificate(tmp_path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by the openssl CLI."""
    return loopback_certificate(tmp_path)


def test_https_downloads_trust_ssl_cert_file_and_refuse_an_unknown_certificate(
        certificate, tmp_path, monkeypatch):
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = BodyServer(os.urandom(3 << 20), tls=context)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    try:
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        assert fetch_one(server, tmp_path / "c").read_bytes() == server.body
        monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle does not know this certificate
        with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED"):
            fetch_one(server, tmp_path / "d")
    finally:
        server.close()
    assert server.requests == 1


def test_meanwhile_runs_on_the_calling_thread_while_the_files_come(served, tmp_path):
    """wheelhouse build loads its SBOM writer while the bytes arrive: *meanwhile* runs on
    the caller's thread with the downloads already under way."""
    served.faults = ["hold"]
    seen: list[object] = []

    def meanwhile() -> None:
        seen.append(threading.current_thread())
        seen.append(served.held.wait(10))  # the body is coming, on another thread
        fetcher.stop()  # ends the held download: its connection is cut off

    with http_client(timeout=30.0) as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))
        item = Item(package="f", version="1", kind="wheel", want=want(served), entry={})
        with pytest.raises(Stopped):
            fetch_items(fetcher, [item], 2, meanwhile=meanwhile)
    assert seen == [threading.current_thread(), True]
    assert partials(tmp_path / "c") == []


def test_a_failure_meanwhile_stops_the_downloads(served, tmp_path):
    served.faults = ["hold"]

    def meanwhile() -> None:
        assert served.held.wait(10)
        raise RuntimeError("meanwhile failed")

    with http_client(timeout=30.0) as client:
        fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "c"))
        item = Item(package="f", version="1", kind="wheel", want=want(served), entry={})
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="meanwhile failed"):
            fetch_items(fetcher, [item], 2, meanwhile=meanwhile)
    assert time.monotonic() - started < 5 and fetcher.stopped.is_set()
    assert partials(tmp_path / "c") == []


# --- size caps and encodings ---------------------------------------------------------------

def _endless(chunks: int) -> Iterator[bytes]:
    for _ in range(chunks):
        yield b"x" * 1000


@pytest.mark.parametrize("size", [None, 5000])
def test_streamed_body_without_a_length_is_capped(tmp_path, size):
    """No Content-Length (chunked): the cap is applied while the bytes arrive."""
    transport = httpx.MockTransport(lambda req: httpx.Response(200, content=_endless(100)))
    cache = Cache(tmp_path / "cache")
    fetcher = Fetcher(httpx.Client(transport=transport), cache, policy=Policy(attempts=1),
                      max_unknown_size=8000)
    want = Want(filename="big-1.0-py3-none-any.whl", sha256="0" * 64, size=size,
                urls=("http://127.0.0.1:9/big-1.0-py3-none-any.whl",), source="x")
    with pytest.raises(FetchError) as err:
        fetcher.fetch(want)
    msg = str(err.value)
    assert "big-1.0-py3-none-any.whl" in msg and "http://127.0.0.1:9/" in msg
    if size is None:
        assert "no size" in msg and "limit of 8000 bytes" in msg
    else:
        assert isinstance(err.value, HashMismatch) and "size of 5000 bytes" in msg
    assert partials(tmp_path / "cache") == []
    assert not (tmp_path / "cache" / "sha256").exists()


def test_a_server_that_compresses_anyway_is_decoded_before_hashing(tmp_path):
    """Downloads stream the raw body (no second copy), asking for the identity encoding;
    a server that gzips the wheel anyway is decoded: the hash is of the file's bytes."""
    body = b"PK" + bytes(range(256)) * 400  # the wheel's own bytes
    sent = gzip.compress(body)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(sent)))
            self.end_headers()
            self.wfile.write(sent)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cache = Cache(tmp_path / "cache")
        fetcher = Fetcher(httpx.Client(), cache, policy=Policy(attempts=1))
        url = f"http://127.0.0.1:{server.server_address[1]}/w-1.0-py3-none-any.whl"
        want = Want(filename="w-1.0-py3-none-any.whl", sha256=hashlib.sha256(body).hexdigest(),
                    size=len(body), urls=(url,), source=url)
        got = fetcher.fetch(want)
    finally:
        server.shutdown()
    assert got.path.read_bytes() == body

