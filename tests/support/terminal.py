"""lockkit in a pseudo-terminal of a given width (stdout and stderr both on it): rich
decides from the terminal, as a user's shell gives it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

__all__ = ["run"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


def run(*argv: str, columns: int = 80, timeout: float = 300) -> tuple[int, str]:
    """``python -m lockkit *argv`` in a pseudo-terminal *columns* wide (stdout and stderr
    both on it); its exit code and what the terminal received, control codes removed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "lockkit", *argv], stdin=slave,
                            stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child's side is closed
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, _ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))
