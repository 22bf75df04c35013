"""A loopback server that serves files as a CDN edge does: one ``Range`` per request
(a 206 with its ``Content-Range``), ``If-Range`` against the file's ETag (the whole file,
200, when it differs), a cap of bytes per second on each connection, and connections cut
after a given number of body bytes. A context manager."""

from __future__ import annotations

import hashlib
import http.server
import re
import socket
import threading
import time

__all__ = ["Edge"]

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class Edge:
    """Serves *files* (path -> bytes) at ``/<path>`` on 127.0.0.1.

    - ``ranges``: whether Range is served (False: every answer is the whole file, 200);
    - ``rate``: bytes per second per connection (None: as fast as it goes);
    - ``cuts``: for the next answers in turn, the body bytes sent before the connection
      is cut;
    - ``rotate``: each answer carries a new ETag (a fleet of edges, each its own);
    - ``flips``: offsets in the file whose byte every answer that covers them sends
      inverted (a bad disk or a proxy that corrupts, under the same ETag);
    - ``asked``: (path, Range, If-Range) of every request; ``most``: the most requests
      served at once."""

    def __init__(self, files: dict[str, bytes], *, ranges: bool = True,
                 rate: int | None = None) -> None:
        self.files, self.ranges, self.rate = dict(files), ranges, rate
        self.cuts: list[int] = []
        self.rotate = False
        self.flips: set[int] = set()
        self.asked: list[tuple[str, str | None, str | None]] = []
        self.busy = self.most = 0
        self.etags = {name: f'"{hashlib.sha256(body).hexdigest()[:16]}"'
                      for name, body in files.items()}
        self._lock = threading.Lock()
        edge = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                edge._serve(self)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 64

            def handle_error(self, request: object, client_address: object) -> None:
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Edge:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _serve(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        name = handler.path.lstrip("/")
        asked = handler.headers.get("Range"), handler.headers.get("If-Range")
        with self._lock:
            self.asked.append((name, *asked))
            cut = self.cuts.pop(0) if self.cuts else None
            self.busy += 1
            self.most = max(self.most, self.busy)
        try:
            body = self.files.get(name)
            if body is None:
                handler.send_error(404)
                return
            if self.rotate:
                self.etags[name] = f'"{self.etags[name].strip(chr(34))}x"'
            start, end = self._range(name, body, *asked)
            if (start, end) == (0, len(body)):
                handler.send_response(200)
            else:
                handler.send_response(206)
                handler.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(body)}")
            handler.send_header("Content-Length", str(end - start))
            handler.send_header("ETag", self.etags[name])
            handler.send_header("Accept-Ranges", "bytes" if self.ranges else "none")
            handler.end_headers()
            self._send(handler, self._corrupt(body, start, end), cut)
        finally:
            with self._lock:
                self.busy -= 1

    def _corrupt(self, body: bytes, start: int, end: int) -> bytes:
        data = bytearray(body[start:end])
        for at in self.flips:
            if start <= at < end:
                data[at - start] ^= 0xFF
        return bytes(data)

    def _range(self, name: str, body: bytes, asked: str | None,
               validator: str | None) -> tuple[int, int]:
        found = _RANGE.fullmatch(asked or "")
        if not (self.ranges and found) or (validator and validator != self.etags[name]):
            return 0, len(body)
        return int(found[1]), min(len(body), int(found[2]) + 1 if found[2] else len(body))

    def _send(self, handler: http.server.BaseHTTPRequestHandler, data: bytes,
              cut: int | None) -> None:
        sent, step = 0, 1 << 16
        began = time.monotonic()
        try:
            while sent < len(data):
                if cut is not None and sent >= cut:
                    handler.close_connection = True
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    return
                piece = data[sent:sent + min(step, (cut - sent) if cut is not None else step)]
                handler.wfile.write(piece)
                sent += len(piece)
                if self.rate:
                    ahead = sent / self.rate - (time.monotonic() - began)
                    if ahead > 0:
                        time.sleep(ahead)
            handler.wfile.flush()
        except OSError:
            pass
