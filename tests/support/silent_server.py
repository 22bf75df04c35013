"""Loopback servers that fail the way real mirrors do: one that accepts connections and
never answers (a stalled mirror, a proxy that lost its upstream), one that hangs up on
every request, and a port nobody listens on."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

__all__ = ["Silent", "dead_port", "silent_index_project"]


class Silent:
    """Accepts every connection on 127.0.0.1 and counts it; never sends a byte
    (``hang_up``: closes each connection at once instead). A context manager."""

    def __init__(self, *, hang_up: bool = False) -> None:
        self.hang_up = hang_up
        self.accepted = 0
        self._sock = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._closed = False

    def __enter__(self) -> Silent:
        threading.Thread(target=self._accept, name="silent-server", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        for conn in self._held:
            conn.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.accepted += 1
            if self.hang_up:
                conn.close()
            else:
                self._held.append(conn)


def dead_port() -> int:
    """A loopback port nobody listens on (bound, then released: a connection is refused)."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


def silent_index_project(root: Path, url: str) -> Path:
    """A project at *root* locking filelock for macos-arm64 (a platform whose torch index
    plays no part) from the default index *url* (a :class:`Silent` one)."""
    root.mkdir()
    (root / "requirements.in").write_text("filelock\n")
    (root / "lockkit.toml").write_text(
        f'index-url = "{url}/simple"\nplatforms = ["macos-arm64"]\n')
    return root
