"""The routing index's HTTP server: the standard library's ``ThreadingHTTPServer`` on
127.0.0.1, answering GETs with a function of the path.

lockkit had a server of its own here (no ``http.server`` import, less work per request).
Measured in issue 25 (2 cores, loopback index, httpx imported for the pages anyway): the
standard one costs ~0.05 ms more per request (0.10 -> 0.15 ms on one kept-alive
connection); a compile of 10 packages +5 ms first, +1 ms unchanged (31 pairs, 2 %, in the
noise), of 200 packages +24 ms and +14 ms (11 pairs, 4 % and 2 %).
"""

from __future__ import annotations

import http.server
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["BACKLOG", "MAX_BODY", "Loopback"]

# uv asks for every package at once: Python's default backlog of 5 overflows, the kernel
# drops connections and uv waits out its retry (0.2 to 1.6 s)
BACKLOG = 128
# a request body is read past, never kept; uv's GETs have none. A larger one (a prober's
# "Content-Length: 10**15" would be allocated whole by rfile.read) closes the connection.
MAX_BODY = 64 << 10


class Loopback:
    """Listens on 127.0.0.1, a free port, from its creation (a client started right
    after waits in the queue); serves from :meth:`start` until :meth:`close`. Every GET
    is answered ``answer(path) -> (status, body)`` as HTML; any other method 405; what
    is not an HTTP/1.x request is closed without an answer (nothing tells a prober more).
    """

    def __init__(self, answer: Callable[[str], tuple[int, bytes]]) -> None:
        self.answer = answer
        self.answered = 0  # requests answered, and when the last one was
        self.last_answer = 0.0
        self._server = _Server(self)
        self._closing = False

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        threading.Thread(target=self._accept, name="lockkit-routing", daemon=True).start()

    def close(self) -> None:
        self._closing = True
        try:
            self._server.socket.shutdown(socket.SHUT_RDWR)  # wakes accept() at once
        except OSError:
            pass
        self._server.server_close()

    def _accept(self) -> None:
        """Each connection to a thread of its own (``ThreadingMixIn.process_request``).
        Not ``serve_forever``: its ``shutdown`` waits for a poll of up to 0.5 s, which
        every compile would pay at its end; an ``accept`` blocked here ends at once."""
        while not self._closing:
            try:
                conn, address = self._server.get_request()
            except OSError:
                return
            self._server.process_request(conn, address)

    def _sent(self) -> None:
        self.answered += 1
        self.last_answer = time.monotonic()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = BACKLOG

    def __init__(self, loopback: Loopback) -> None:
        self.loopback = loopback
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        """Bind, without HTTPServer's reverse lookup of the address (``socket.getfqdn``: a
        resolver call each compile, for a ``server_name`` nothing here reads)."""
        socketserver.TCPServer.server_bind(self)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client that hung up: nothing
            super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # kept alive: uv asks many names on few connections
    disable_nagle_algorithm = True  # an answer is sent whole: no wait for a delayed ACK
    wbufsize = 1 << 16  # headers and body leave in one write

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if not self.request_version.startswith("HTTP/1."):
            self.close_connection = True
            return False
        length = self.headers.get("Content-Length", "0").strip()
        size = int(length) if length.isdigit() and len(length) <= 12 else MAX_BODY + 1
        if size > MAX_BODY:
            self.close_connection = True  # closed, nothing said (as send_error)
            return False
        self.rfile.read(size)  # a body: read past it
        if self.command != "GET":
            self._send(405, b"only GET")
            return False
        return True

    def do_GET(self) -> None:
        self._send(*self.server.loopback.answer(self.path))

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")  # a new port every compile
        self.send_header("Connection", "close" if self.close_connection else "keep-alive")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.server.loopback._sent()

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        self.close_connection = True  # not an HTTP/1.x request: closed, nothing said

    def log_message(self, format: str, *args: Any) -> None:
        pass
