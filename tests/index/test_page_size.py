"""Index pages are capped and streamed: 64 MiB unless ``max-page-size`` (lockkit.toml)
or ``compile --max-page-size`` says more; past it, the read stops and one line names the
page's URL (without credentials) and the limit.

A mirror serving a 1.5 GB page for ``/whl/cpu/torch/`` took a compile to 4.6 GiB of
memory: lockkit read every page whole. Here a loopback server serves a page larger than
the limit and counts the bytes it got out; a client that stops at the limit leaves most of
them unsent (what a socket's buffers hold is all that gets past it).
"""

from __future__ import annotations

import http.server
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockkit.config.project import load_project
from lockkit.errors import ConfigError, IndexError_, UsageError
from lockkit.index.http import PageTooLarge
from lockkit.index.pages import Http
from tests.support.project import lockkit

MIB = 1 << 20
CHUNK = b"<!-- " + b"x" * (64 * 1024 - 9) + b" -->"  # 64 KiB of valid HTML


class BigPages(http.server.ThreadingHTTPServer):
    """``/.../torch/``: a page of *size* bytes, sent 64 KiB at a time and counted in
    ``sent``; with ``length``, a Content-Length header saying so, and the body held back
    until the server closes (a client that reads it waits). Any other path: 404."""

    daemon_threads = True

    def __init__(self, size: int, *, length: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.size, self.length = size, length
        self.sent = 0
        self.asked: list[str] = []
        self.closing = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client hung up: what it was meant to do


class _Handler(http.server.BaseHTTPRequestHandler):
    server: BigPages

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.asked.append(self.path)
        if not self.path.endswith("/torch/"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        if self.server.length:
            self.send_header("Content-Length", str(self.server.size))
        self.end_headers()
        self.wfile.flush()
        if self.server.length:
            self.server.closing.wait(60)
        while self.server.sent < self.server.size and not self.server.closing.is_set():
            self.wfile.write(CHUNK)
            self.server.sent += len(CHUNK)


@pytest.fixture(params=[False, True], ids=["streamed", "content-length"])
def big(request) -> Iterator[BigPages]:
    server = BigPages(64 * MIB, length=request.param)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.closing.set()
    server.shutdown()
    server.server_close()


def _project(root: Path, extra: str = "") -> Path:
    (root / "requirements.in").write_text("torch\n")
    (root / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n' + extra)
    return root


def _max_page(root: Path, extra: str = "") -> int:
    """The largest page, in bytes, compile reads for the project *extra* configures."""
    return load_project(_project(root, extra)).max_page_size << 20


def test_a_page_past_max_page_size_stops_the_read_and_names_url_and_limit(big, tmp_path):
    http = Http(max_page=_max_page(tmp_path, "max-page-size = 1\n"), timeout=10)
    url = f"http://me:s3cret@{big.url[len('http://'):]}/whl/cpu/torch/"
    start = time.monotonic()
    with pytest.raises(PageTooLarge) as caught:
        http.page(url)
    message = str(caught.value)
    assert message.startswith(f"http://***@{big.url[len('http://'):]}/whl/cpu/torch/: ")
    assert "larger than 1 MiB" in message and "s3cret" not in message
    assert time.monotonic() - start < 5  # a Content-Length past it: not a byte waited for
    if big.length:
        assert big.sent == 0
    else:  # the limit, a chunk, and what the sockets' buffers held: far from 64 MiB
        assert big.sent < 24 * MIB
    assert len(big.asked) == 1  # refused, not retried


def test_a_page_within_the_limit_is_read_whole(tmp_path):
    server = BigPages(3 * MIB, length=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status, text = Http(max_page=_max_page(tmp_path, "max-page-size = 4\n"),
                            timeout=10).page(f"{server.url}/whl/cpu/torch/")
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200 and len(text) == server.sent >= 3 * MIB


def test_without_max_page_size_a_page_past_64_mib_is_refused(tmp_path):
    server = BigPages(96 * MIB, length=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(PageTooLarge, match="larger than 64 MiB"):
            Http(max_page=_max_page(tmp_path), timeout=10).page(f"{server.url}/x/torch/")
    finally:
        server.closing.set()
        server.shutdown()
        server.server_close()
    assert server.sent < 88 * MIB


class GzipPages(http.server.ThreadingHTTPServer):
    """Every path: ``body`` as a gzip page (Content-Encoding: gzip, its Content-Length);
    the Accept-Encoding of each request in ``asked``."""

    daemon_threads = True

    def __init__(self, body: bytes) -> None:
        super().__init__(("127.0.0.1", 0), _GzipHandler)
        self.body = body
        self.asked: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _GzipHandler(http.server.BaseHTTPRequestHandler):
    server: GzipPages

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.asked.append(self.headers.get("Accept-Encoding", ""))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)


def _gzipped(pieces: Iterator[bytes]) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join([*(packer.compress(p) for p in pieces), packer.flush()])


@pytest.fixture
def gzip_pages(request) -> Iterator[GzipPages]:
    server = GzipPages(request.param)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("gzip_pages", [_gzipped(CHUNK for _ in range(64 * 16))],
                         indirect=True)  # 64 MiB of HTML in ~70 KiB
def test_a_gzip_page_is_refused_at_the_limit_not_inflated_first(gzip_pages, tmp_path):
    """A page that compresses a thousandfold is one network read: decoded whole, it would
    be its 64 MiB in memory before the limit is looked at. It is refused at the limit."""
    http = Http(max_page=_max_page(tmp_path, "max-page-size = 1\n"), timeout=10)
    tracemalloc.start()
    try:
        with pytest.raises(PageTooLarge, match="larger than 1 MiB"):
            http.page(f"{gzip_pages.url}/whl/cpu/torch/")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB
    assert gzip_pages.asked == ["gzip"]


@pytest.mark.parametrize("gzip_pages", [_gzipped(CHUNK for _ in range(40))], indirect=True)
def test_a_gzip_page_within_the_limit_is_read_whole(gzip_pages, tmp_path):
    status, text = Http(max_page=_max_page(tmp_path, "max-page-size = 4\n"),
                        timeout=10).page(f"{gzip_pages.url}/whl/cpu/torch/")
    assert (status, text) == (200, (CHUNK * 40).decode())


@pytest.mark.parametrize("gzip_pages", [b"\x1f\x8b not gzip at all"], indirect=True)
def test_a_page_that_is_not_the_gzip_it_says_is_an_index_error(gzip_pages, tmp_path):
    with pytest.raises(IndexError_, match=r"cannot fetch http://127\.0\.0\.1:\d+/x/: .*"
                                          "not gzip as it says"):
        Http(timeout=10).page(f"{gzip_pages.url}/x/")


def test_max_page_size_is_a_whole_number_of_mib_from_the_file_or_the_flag(tmp_path):
    assert load_project(tmp_path, max_page_size=128).max_page_size == 128
    for bad in ("0", "1.5", '"64MB"'):
        (tmp_path / "lockkit.toml").write_text(f"max-page-size = {bad}\n")
        with pytest.raises(ConfigError, match=r"max-page-size: expected a whole number of MiB"):
            load_project(tmp_path)
    (tmp_path / "lockkit.toml").write_text("")
    with pytest.raises(UsageError, match=r"--max-page-size 0: expected a whole number"):
        load_project(tmp_path, max_page_size=0)


def test_compile_with_a_mirror_serving_a_page_past_the_flag_fails_in_one_line(big, tmp_path):
    _project(tmp_path, f'index-url = "{big.url}/simple"\n'
                       f'[mirrors]\n"https://download.pytorch.org/whl" = "{big.url}/whl"\n')
    result = lockkit("compile", "--project", str(tmp_path), "--max-page-size", "1",
                     "--timeout", "10")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    error = [ln for ln in result.stderr.splitlines() if ln.startswith("lockkit: error:")]
    assert error == [f"lockkit: error: linux-cpu: {big.url}/whl/cpu/torch/: the page is larger "
                     "than 1 MiB, the most lockkit reads of an index page (max-page-size); "
                     "not read further"], result.stderr
    assert "--max-page-size" in result.stderr.splitlines()[-1]  # the hint
    assert big.sent < 24 * MIB
    assert not (tmp_path / "locks").exists()


def test_a_wheelhouse_lookup_page_past_the_limit_is_a_fetch_error_naming_it(tmp_path):
    from lockkit.cache.store import Cache
    from lockkit.download.fetch import Fetcher, Want, http_client
    from lockkit.download.sources import PageRef
    from lockkit.errors import FetchError

    server = BigPages(64 * MIB, length=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = f"{server.url}/mirror/torch/"
    want = Want(filename="torch-2.5.1-py3-none-any.whl", sha256="0" * 64, size=None,
                urls=(PageRef(url=page),), source="https://official.invalid/torch.whl")
    try:
        with http_client(timeout=10) as client:
            fetcher = Fetcher(client, policy=client.policy, cache=Cache(tmp_path / "cache"),
                              max_page=MIB)
            with pytest.raises(FetchError, match=f"{page}: the page is larger than 1 MiB"):
                fetcher.fetch(want)
    finally:
        server.closing.set()
        server.shutdown()
        server.server_close()
    assert server.sent < 24 * MIB
