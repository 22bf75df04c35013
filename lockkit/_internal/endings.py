"""Every ending is Ctrl-C's ending: SIGTERM and SIGHUP raise :class:`Terminated`.

``timeout``, ``docker stop``, systemd, Kubernetes and a cancelled CI job end a run with
SIGTERM; a closed terminal or SSH session with SIGHUP. Python's default for both is to die
on the spot, which cleans up nothing: the temp folders (one holds the mirrors' netrc), the
partial downloads and stage folders stay, and the installers lockkit started, each in a
session of its own, run on. Ctrl-C's KeyboardInterrupt already runs every cleanup path
(``finally``, ``except KeyboardInterrupt``, the process groups killed), so :func:`raising`
makes these two signals raise a subclass of it, which carries the signal: the command line
then exits ``128 + signal``, as a shell reports a process the signal killed.

The first such signal ends the run; a second one (SIGHUP then SIGTERM, a second
``docker stop``) is swallowed, so that it cannot cut the cleanup of the first in two. A
signal the process inherited as ignored (``nohup``) stays ignored, and Python runs signal
handlers in the main thread only: elsewhere nothing changes.

A step that must not be cut in two (making a temp folder or a child process, and arranging
for its removal) holds all three endings (:class:`interrupt_held`) and raises the one that
came once it can clean up.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["Terminated", "interrupt_held", "raise_for", "raising", "raising_now"]

_NAMES = ("SIGTERM", "SIGHUP")  # SIGHUP: POSIX only


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C raises KeyboardInterrupt (*signum*: which)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _signals() -> list[int]:
    return [getattr(signal, n) for n in _NAMES if hasattr(signal, n)]


def _swallow(signum: int, frame: object) -> None:
    """A second ending signal, while the first one's cleanup runs: already ending."""


def _raise(signum: int, frame: object) -> None:
    raise_for(signum)


def raise_for(signum: int) -> None:
    """Raise what *signum* raises in a running command: KeyboardInterrupt for SIGINT,
    :class:`Terminated` for SIGTERM and SIGHUP (from then on, further ones are swallowed)."""
    if signum not in _signals():
        raise KeyboardInterrupt
    if threading.current_thread() is threading.main_thread():
        for sig in _signals():
            if signal.getsignal(sig) is _raise:
                signal.signal(sig, _swallow)
    raise Terminated(signum)


def raising_now() -> list[int]:
    """The signals that raise now in this thread: SIGINT at Python's default handler,
    SIGTERM and SIGHUP under :func:`raising` (for a step that holds them a moment)."""
    if threading.current_thread() is not threading.main_thread():
        return []
    held = [signal.SIGINT] if signal.getsignal(signal.SIGINT) is signal.default_int_handler \
        else []
    return held + [sig for sig in _signals() if signal.getsignal(sig) is _raise]


class raising:  # noqa: N801 - used as a context manager, named as one
    """Inside the block (main thread), SIGTERM and SIGHUP raise :class:`Terminated`; the
    handlers found (a library caller's own) are put back on the way out. A signal found
    ignored, or handled by someone else, is left as it is. (A class, as
    :class:`interrupt_held` is.)"""

    def __init__(self) -> None:
        self._old: dict[int, object] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in _signals():
                if signal.getsignal(sig) is signal.SIG_DFL:
                    self._old[sig] = signal.signal(sig, _raise)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


class interrupt_held:  # noqa: N801 - used as a context manager, named as one
    """Ctrl-C (and SIGTERM and SIGHUP, which end a run the same way) held over a step that
    must not be cut in two: between making something (a child process, a temp folder) and
    arranging for it to be removed.
    An interrupt that arrives meanwhile is only noted; :meth:`reraise` raises it once the
    caller can clean up. Python runs signal handlers in the main thread only, so elsewhere
    (and for a signal that does not raise there now) nothing changes."""

    def __init__(self) -> None:
        self.caught: int | None = None
        self._old: dict[int, object] = {}

    def __enter__(self) -> interrupt_held:
        for sig in raising_now():
            self._old[sig] = signal.signal(sig, self._note)
        return self

    def _note(self, signum: int, frame: object) -> None:
        if self.caught is None:
            self.caught = signum

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def reraise(self) -> None:
        if self.caught is not None:
            raise_for(self.caught)
