"""The processes a test started, as ps would list them, waiting on one with a deadline, and
whether one has ended."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def processes(where: str = "") -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, process group, command line) of every live process whose command line
    holds *where* (all with ``""``), read from /proc; a zombie is dead, only not yet
    reaped, and is left out."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # state ppid pgrp ...
        if fields[0] != "Z" and where in cmd:
            found[int(entry.name)] = (int(fields[1]), int(fields[2]), cmd)
    return found


def wait_for(condition: Callable[[], T], what: str, proc: subprocess.Popen[str],
             limit: float = 120) -> T:
    """*condition*'s first true value, polled; fails naming *what* if *proc* ends first or
    *limit* seconds pass."""
    deadline = time.monotonic() + limit
    while not (found := condition()):
        assert proc.poll() is None, f"lockkit ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within {limit}s"
        time.sleep(0.005)
    return found


def gone(pid: int, within: float = 10.0) -> bool:
    """True once *pid* has ended (a zombie counts: killed, reparented, not yet reaped by
    init), polled for up to *within* seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def pid_written(path: Path, limit: float = 30) -> int:
    """The pid a child wrote into *path* (its grandchild's), waited for up to *limit* s."""
    deadline = time.monotonic() + limit
    while not path.is_file() or not path.read_text().strip():
        assert time.monotonic() < deadline, "the child never wrote its grandchild's pid"
        time.sleep(0.05)
    return int(path.read_text())
