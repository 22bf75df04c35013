"""The routing index's server (``lockkit.index.loopback``) holds no more of a request than
a small body: any local account can reach its port, and a ``Content-Length`` of a
petabyte was handed to ``rfile.read`` whole (a MemoryError, its traceback printed into the
compile's output; a length of 5000 digits a ValueError, the same); and it takes uv's
bursts whole."""

from __future__ import annotations

import socket

import pytest

from lockkit._internal.redact import NO_SECRETS
from lockkit.index.loopback import Loopback


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("length", ["1000000000000000", "9" * 5000])
def test_a_request_body_too_large_to_hold_closes_the_connection_and_says_nothing(
        length, capfd):
    server = Loopback(lambda path: (200, b"page"))
    server.start()
    try:
        bad = f"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: {length}\r\n\r\nabc".encode()
        assert _exchange(server.port, bad) == b""
        good = _exchange(server.port, b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    finally:
        server.close()
    assert good.startswith(b"HTTP/1.1 200 ") and good.endswith(b"\r\n\r\npage")
    assert capfd.readouterr().err == ""


def test_a_small_request_body_is_read_past_and_the_get_answered():
    server = Loopback(lambda path: (200, path.encode()))
    server.start()
    try:
        answer = _exchange(server.port, b"GET /y HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                                        b"Connection: close\r\n\r\nabc")
    finally:
        server.close()
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"\r\n\r\n/y")


def test_routing_server_takes_uvs_bursts():
    """uv asks the routing index for every package at once: its listen backlog is raised
    above the default 5, and a burst of 64 connections is answered in full."""
    import concurrent.futures
    import http.server
    import urllib.error
    import urllib.request

    from lockkit.index.loopback import BACKLOG
    from lockkit.index.routing import RoutingIndex
    from lockkit.index.urls import Mirrors

    def never(url: str) -> tuple[int, str]:
        raise AssertionError("no family page is asked for in this test")

    def ask(name: str) -> int:
        try:
            with urllib.request.urlopen(f"{routing.url}/{name}/", timeout=30) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as err:
            return err.code

    assert BACKLOG > http.server.ThreadingHTTPServer.request_queue_size
    with RoutingIndex(family=("torch",), official_index="https://download.pytorch.org/whl/cpu",
                      mirrors=Mirrors({}, NO_SECRETS), file_hosts=(), fetch=never) as routing:
        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            codes = list(pool.map(ask, [f"pkg{i}" for i in range(64)]))
    assert codes == [404] * 64  # not a family name: the next index answers
