"""The routing index's server (``lockkit.index.loopback``) holds no more of a request than
a small body: any local account can reach its port, and a ``Content-Length`` of a
petabyte was handed to ``rfile.read`` whole (a MemoryError, its traceback printed into the
compile's output; a length of 5000 digits a ValueError, the same)."""

from __future__ import annotations

import socket

import pytest

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
