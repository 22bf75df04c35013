"""The one subprocess wrapper: argument lists, a timeout, every command recorded.

Every command lockkit runs (uv, pip, git, the target interpreter, the probes, the
application) goes through :func:`call`. It runs in its own session so that at the timeout,
or when lockkit itself is interrupted, its whole process group is killed: an installer or
application that started children of its own leaves none running. A timeout is its own
outcome (``timed_out``, no return code), never a return code that could also be a signal.
:func:`check` raises :class:`~lockkit.errors.CommandError`, carrying stderr, instead of
returning a failure.

Ctrl-C reaches lockkit's main thread only, and a command in its own session does not get
the terminal's SIGINT at all (nor SIGTERM or SIGHUP, which lockkit's command line turns
into the same KeyboardInterrupt: :mod:`lockkit._internal.endings`). So a command
started by the main thread is killed, group and all, wherever the interrupt lands (an
interrupt during its start is held until it can be killed); commands started by worker
threads are killed by :func:`ending`, which the code that runs the workers enters on its
way out. A caller that learns elsewhere that a
command's work cannot succeed ends that one command with a :class:`Stop`.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from lockkit._internal.endings import interrupt_held
from lockkit._internal.redact import masked
from lockkit.errors import CommandError

__all__ = ["Recorder", "Result", "Stop", "call", "check", "ending", "finish", "isolated_env",
           "last_error_line", "outcome"]

# Variables that change how pip/uv behave behind the user's back. A rebuild must
# not depend on them, so every installer call drops them.
_HIDDEN_PREFIXES = ("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV", "CONDA_")
_KEEP = {"UV_CACHE_DIR"}
_GRACE = 5.0  # seconds to collect a killed group's last output
_STACKS_GRACE = 3.0  # seconds for an aborted group to print its stacks
_ONE_DUMP = 0.2  # seconds between two processes' SIGABRTs: one prints its stacks at a time
_ONE_BY_ONE = 16  # members aborted in turn; the rest of a large group at once


_ERROR_LINE = re.compile(r"(error|ERROR|×)")


def last_error_line(text: str, *, limit: int = 300) -> str:
    """The line of a command's output that says what went wrong: its first line that
    reads as an error, else its last line; redacted and at most *limit* characters."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if _ERROR_LINE.match(ln)]
    line = errors[0] if errors else (lines[-1] if lines else "no output")
    return masked(line[:limit])


@dataclass(frozen=True, kw_only=True)
class Result:
    argv: tuple[str, ...]
    returncode: int | None  # None: it passed its timeout and was killed with its group
    stdout: str
    stderr: str
    duration: float = 0.0
    timeout: float | None = None
    cwd: str | None = None

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def display(self) -> str:
        return masked(" ".join(self.argv))


Recorder = Callable[[Result], None]
_log = logging.getLogger(__name__)  # -vv: each command run, how it ended and its time


def isolated_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment minus pip/uv/Python configuration variables."""
    env = {
        k: v for k, v in os.environ.items() if k in _KEEP or not k.startswith(_HIDDEN_PREFIXES)
    }
    env["PIP_CONFIG_FILE"] = os.devnull  # pip: ignore global/user/site config files
    env["PIP_NO_INPUT"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra or {})
    return env


class Stop:
    """Ends one :func:`call` from another thread: :meth:`set` kills the command's process
    group at once (or as soon as it starts, when set before), and the call returns as for
    any killed command (a negative return code). compile sets one when the routing index
    cannot fetch a page uv waits for: uv's own retries of it could only fail, slowly."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._set = False

    def set(self) -> None:
        with self._lock:
            self._set = True
            if self._proc is not None and self._proc.returncode is None:
                _kill_now(self._proc)

    def is_set(self) -> bool:
        return self._set

    def _attach(self, proc: subprocess.Popen[bytes] | None) -> None:
        with self._lock:
            self._proc = proc
            if proc is not None and self._set:
                _kill_now(proc)


def call(argv: Sequence[str], *, timeout: float = 600, env: Mapping[str, str] | None = None,
         cwd: str | os.PathLike[str] | None = None, record: Recorder | None = None,
         stacks_on_timeout: bool = False, on_start: Callable[[], None] | None = None,
         stop: Stop | None = None) -> Result:
    """Run *argv* (default environment: :func:`isolated_env`); never raises for how the
    command ended. A command that cannot start at all is ``returncode`` 127 with the reason
    in stderr, as a shell reports it. *record* sees every result.

    *stacks_on_timeout* (POSIX): at the timeout, the process group first gets SIGABRT, so
    that Python processes started with ``PYTHONFAULTHANDLER=1`` (the caller sets it; child
    processes such as DataLoader workers inherit it) print every thread's stack to stderr
    before dying; then the group is killed as usual. The stacks end up in ``stderr``.

    *on_start* runs once the command has started, before its output is awaited: work
    that can overlap the command's own (compile imports its lock writer while uv runs).
    *stop* ends the command early from another thread (see :class:`Stop`)."""
    argv = tuple(str(a) for a in argv)
    start = time.perf_counter()
    shown_cwd = os.fspath(cwd) if cwd is not None else None
    try:
        with interrupt_held() as held:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=dict(env) if env is not None else isolated_env(),
                cwd=shown_cwd, start_new_session=os.name != "nt")
            _running.add(proc)
            if stop is not None:
                stop._attach(proc)
    except OSError as exc:
        held.reraise()
        result = Result(argv=argv, returncode=127, stdout="",
                        stderr=f"cannot run {argv[0]}: {exc.strerror or exc}",
                        duration=time.perf_counter() - start, timeout=timeout, cwd=shown_cwd)
    else:
        try:
            try:
                held.reraise()
                if on_start is not None:
                    on_start()
            except BaseException:
                _kill_group(proc)
                raise
            result = finish(proc, argv, start, timeout=timeout, cwd=shown_cwd,
                            stacks_on_timeout=stacks_on_timeout)
        finally:
            _running.discard(proc)
            if stop is not None:
                stop._attach(None)
    _log.debug("+ %s (%s, %.2f s)", result.display, "timed out" if result.timed_out
               else f"exit {result.returncode}", result.duration)
    if record is not None:
        record(result)
    return result


class _Running:
    """The commands :func:`call` is waiting for, in any thread (a lock guards the set)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._ending = 0  # > 0 inside ending(): a command that starts is killed at once

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)
            ending = self._ending > 0
        if ending:
            _kill_now(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    @contextmanager
    def ending(self) -> Iterator[None]:
        with self._lock:
            self._ending += 1
            procs = list(self._procs)
        try:
            for proc in procs:
                _kill_now(proc)
            yield
        finally:
            with self._lock:
                self._ending -= 1


_running = _Running()


def ending() -> AbstractContextManager[None]:
    """A context: every command :func:`call` runs now is killed with its group, and every
    one that starts inside the block too. For the main thread's way out of a Ctrl-C while
    worker threads wait for their commands: it then waits for the workers inside it."""
    return _running.ending()


def _kill_now(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to *proc*'s group (Windows: to *proc*); its waiting thread reaps it."""
    if os.name == "nt":
        try:
            proc.kill()
        except OSError:
            pass
    else:
        _signal_group(proc, signal.SIGKILL)


def finish(proc: subprocess.Popen[bytes], argv: tuple[str, ...], start: float, *,
           timeout: float, cwd: str | None = None, stacks_on_timeout: bool = False) -> Result:
    """:func:`call`'s end for a process already started (in its own session, its output
    piped): its output and how it ended, its group killed past *timeout* or on Ctrl-C."""
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        out, err = (_abort_then_kill(proc) if stacks_on_timeout and os.name != "nt"
                    else _kill_group(proc))
        code = None
    except BaseException:  # Ctrl-C: the group is not in the terminal's foreground
        _kill_group(proc)
        raise
    return Result(argv=argv, returncode=code, stdout=_text(out), stderr=_text(err),
                  duration=time.perf_counter() - start, timeout=timeout, cwd=cwd)


def check(argv: Sequence[str], *, what: str, **kwargs: object) -> Result:
    """:func:`call`, raising :class:`CommandError` (with stderr) unless it exited 0."""
    result = call(argv, **kwargs)  # type: ignore[arg-type]
    if not result.ok:
        raise CommandError(f"{what} {outcome(result)}", argv=result.argv,
                           returncode=result.returncode, stderr=result.stderr,
                           timed_out=result.timed_out)
    return result


def outcome(result: Result) -> str:
    """How a command ended, in words: ``timed out after 3s``, ``killed by SIGSEGV: …``,
    ``exited 1: <the error line of its output>``."""
    if result.timed_out:
        return f"timed out after {result.timeout:g}s"
    last = last_error_line(result.stderr or result.stdout) if (result.stderr or
                                                                 result.stdout).strip() else ""
    code = result.returncode
    assert code is not None
    if code < 0:  # POSIX: killed by a signal
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (f": {last}" if last else "")
    if os.name == "nt" and code >= 0xC0000000:  # NTSTATUS, e.g. an access violation
        return f"crashed with status 0x{code:08X}" + (f": {last}" if last else "")
    return f"exited {code}" + (f": {last}" if last else "")


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


def _abort_then_kill(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """SIGABRT to the group (faulthandler prints the stacks), a moment to print them,
    then SIGKILL to whatever is left: a process that ignores the abort, a grandchild.

    faulthandler writes a dump in many small pieces, so processes aborted at once (a
    DataLoader's workers) interleave theirs mid-line. Where the group's members can be
    listed (Linux), each gets its SIGABRT in turn, the leader first, so the dumps come
    one after the other; elsewhere the group is signalled at once."""
    members = _group_members(proc.pid)
    if members is None:
        _signal_group(proc, signal.SIGABRT)
    else:
        for pid in [proc.pid, *sorted(m for m in members if m != proc.pid)][:_ONE_BY_ONE]:
            try:
                os.kill(pid, signal.SIGABRT)
            except (ProcessLookupError, PermissionError):
                continue
            time.sleep(_ONE_DUMP)
        _signal_group(proc, signal.SIGABRT)  # any beyond the first few, or started since
    try:
        out, err = proc.communicate(timeout=_STACKS_GRACE)
    except subprocess.TimeoutExpired:
        return _kill_group(proc)
    _signal_group(proc, signal.SIGKILL)  # children that outlived their parent's abort
    return out, err


def _group_members(pgid: int) -> list[int] | None:
    """The processes of group *pgid*, from /proc; None where there is no /proc."""
    proc_dir = Path("/proc")
    if not (proc_dir / "self" / "stat").is_file():
        return None
    members = []
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp
        if len(fields) > 2 and fields[2] == str(pgid):
            members.append(int(entry.name))
    return members


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Kill *proc* and everything in its process group; reap it; return what it printed."""
    if os.name == "nt":
        proc.kill()  # Windows: no process groups to signal; the child alone
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        return proc.communicate(timeout=_GRACE)
    except subprocess.TimeoutExpired:  # a grandchild left the group and holds a pipe
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return b"", b""
