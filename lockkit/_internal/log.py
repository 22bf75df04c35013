"""``-v`` and ``-q``: every line lockkit prints on stderr goes through the ``lockkit`` logger.

As pip and uv do it: the command line counts ``-v`` and ``-q`` and sets one level, and each
module logs to its own child logger (``logging.getLogger(__name__)``: ``lockkit.index.routing``,
``lockkit.compile.compiler``...). The levels:

- ``-q``: errors only (:data:`logging.ERROR`): no status line, warning or progress bar; what
  a command prints on stdout (its answer: a table, JSON, a digest) is not a log line and stays;
- default: status lines, warnings and errors (:data:`logging.INFO`), the text as it always was;
- ``-v``: also :data:`VERBOSE` lines: the URLs fetched, the decisions taken (which index a
  package was routed to, cache hits and misses, the lock's Python and why) and each step's
  time;
- ``-vv``: also :data:`logging.DEBUG` lines.

One handler writes the message alone (no ``INFO:``), redacted (no ``user:token@``, and no
``${VAR}`` value of the command's project: :func:`hide` hands it the project's
:class:`~lockkit._internal.redact.Secrets`, which the command line takes back at the start
of the next command), to the ``sys.stderr`` of the moment it writes: a rich progress bar
that holds stderr, or a test that captures it, gets it. A failing write (a closed stderr)
raises as ``print`` would, for the command line to end on, instead of logging's "--- Logging
error ---".

This module is imported when a command runs, never for ``--version`` (logging and what it
imports cost a few ms there).
"""

from __future__ import annotations

import logging
import sys
import threading

from lockkit._internal.redact import NO_SECRETS, Secrets

__all__ = ["VERBOSE", "configure", "hidden", "hide", "level_of", "logger", "quiet"]

VERBOSE = 15  # pip's VERBOSE: between DEBUG and INFO
logging.addLevelName(VERBOSE, "VERBOSE")

_ROOT = "lockkit"
_CONFIGURING = threading.Lock()  # two threads' first lines add one handler, not two


class _Stderr(logging.Handler):
    """The message alone, redacted with the command's *secrets*, one write per line
    (threads never interleave: the handler's lock is held around :meth:`emit`)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets = NO_SECRETS

    def emit(self, record: logging.LogRecord) -> None:
        out = sys.stderr
        out.write(self.secrets.redact(record.getMessage()) + "\n")
        out.flush()


def level_of(verbosity: int) -> int:
    """The level of ``-v`` counted positive and ``-q`` negative: -1 (or less) errors only,
    0 lockkit's usual lines, 1 :data:`VERBOSE`, 2 (or more) :data:`logging.DEBUG`."""
    if verbosity < 0:
        return logging.ERROR
    return (logging.INFO, VERBOSE)[verbosity] if verbosity < 2 else logging.DEBUG


def configure(verbosity: int = 0) -> logging.Logger:
    """Set the ``lockkit`` logger's level, with its one stderr handler (added once: the
    command line configures it on every run, tests run it many times in one process)."""
    root = logging.getLogger(_ROOT)
    _handler(root)
    root.propagate = False  # the command line owns stderr: no second copy through root
    root.setLevel(level_of(verbosity))
    return root


def hide(secrets: Secrets) -> None:
    """Conceal *secrets* (the command's project's) in every line said from now on, the
    error the command ends on included, until the next command hands its own
    (:data:`~lockkit._internal.redact.NO_SECRETS` as it starts)."""
    _handler(logger()).secrets = secrets


def hidden() -> Secrets:
    """The secrets the command's stderr lines conceal (what :func:`hide` was handed): a
    progress bar, which rich draws on stderr beside the log lines, conceals them too."""
    return _handler(logger()).secrets


def _handler(root: logging.Logger) -> _Stderr:
    with _CONFIGURING:
        for h in root.handlers:
            if isinstance(h, _Stderr):
                return h
        handler = _Stderr()
        root.addHandler(handler)
        return handler


def logger() -> logging.Logger:
    """The ``lockkit`` logger, configured at the default level if nothing did it yet (a
    usage error met before the command line read ``-v``/``-q``; a test calling a command's
    ``handle``)."""
    root = logging.getLogger(_ROOT)
    if not any(isinstance(h, _Stderr) for h in root.handlers):
        return configure(0)
    return root


def quiet() -> bool:
    """Whether status lines are off (``-q``): progress bars are too."""
    return not logger().isEnabledFor(logging.INFO)
