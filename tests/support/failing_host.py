"""A loopback host that fails every request: what a CDN outage looks like to a client
(tests of the twin-host fallback, :mod:`lockkit.download.sources`)."""

from __future__ import annotations

import http.server
import socket
import threading
import urllib.parse

__all__ = ["FailingHost"]


class FailingHost:
    """A loopback stand-in for download-r2.pytorch.org (or a broken mirror) that fails every
    request: *mode* an HTTP status ("503", "404", "500") answers it over HTTP; "tls" is an
    https:// URL whose server reads the ClientHello and closes the connection (a handshake
    that never completes)."""

    def __init__(self, mode: str) -> None:
        self.mode, self.connections = mode, 0
        self.requests: list[str] = []
        if mode == "tls":
            self._sock = socket.create_server(("127.0.0.1", 0))
            self.url = f"https://127.0.0.1:{self._sock.getsockname()[1]}"
            threading.Thread(target=self._cut_handshakes, daemon=True).start()
            return
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(urllib.parse.unquote(self.path))
                self.send_response(int(mode))
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def _cut_handshakes(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            self.connections += 1
            with conn:
                conn.recv(4096)  # the ClientHello; no ServerHello follows

    def close(self) -> None:
        if self.mode == "tls":
            self._sock.close()
        else:
            self._httpd.shutdown()
            self._httpd.server_close()
