"""The one retry loop (:func:`attempts`) and what it asks of a policy (:class:`RetryRule`;
:class:`lockkit.index.http.Policy` is the one): the client's transport sends each request
through it (:class:`lockkit.index.transport.Retrying`), and a download resumes a body cut
short after its headers through it (:mod:`lockkit.download.transfer`), given the same
policy object. No httpx here: a warm build that downloads nothing never imports it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from lockkit._internal.log import VERBOSE

__all__ = ["Again", "RetryRule", "attempts"]

_log = logging.getLogger("lockkit.index.transport")  # one trail for every retry at -v
T = TypeVar("T")


class RetryRule(Protocol):
    """What the transport asks of a policy (:class:`lockkit.index.http.Policy` is the one)."""

    @property
    def attempts(self) -> int: ...

    def pause(self, attempt: int) -> float: ...

    def retries(self, exc: BaseException) -> bool: ...

    def why(self, exc: BaseException, url: str) -> str: ...


class Again(Exception):
    """An attempt that failed in a way worth another (raised inside :func:`attempts`):
    *why* is said at ``-v``; when no attempt follows (the last failed, or the stop event
    was set during the pause) the caller gets ``settle(tries, stopped)``, which returns
    or raises what the caller should see; *discard* runs before another attempt."""

    def __init__(self, why: str, *, settle: Callable[[int, bool], Any],
                 discard: Callable[[], object] | None = None) -> None:
        super().__init__(why)
        self.settle, self.discard = settle, discard


def attempts(policy: RetryRule, stop: threading.Event | None, what: str,
             once: Callable[[int], T]) -> T:
    """The one retry loop: ``once(attempt)`` up to ``policy.attempts`` times while it
    raises :class:`Again`, ``policy.pause(attempt)`` seconds apart, each pause said at
    ``-v`` and ended at once by *stop*. The transport sends requests through it, and a
    download resumes a body cut short after its headers through it
    (:mod:`lockkit.download.transfer`), with the same policy object."""
    for attempt in range(policy.attempts):
        try:
            return once(attempt)
        except Again as again:
            if attempt + 1 == policy.attempts:
                return again.settle(attempt + 1, False)
            pause = policy.pause(attempt)
            _log.log(VERBOSE, "%s: %s", what, again)
            _log.log(VERBOSE, "%s: retrying in %.1f s", what, pause)
            if stop is None:
                time.sleep(pause)
            elif stop.wait(pause):
                return again.settle(attempt + 1, True)
            if again.discard is not None:
                again.discard()
    raise AssertionError("unreachable")


