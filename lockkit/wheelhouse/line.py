"""What a download (:class:`~lockkit.wheelhouse.transfer.Transfer`) uses of its
:class:`~lockkit.wheelhouse.fetch.Fetcher` (:class:`Line`), the slots that keep the
connections to one host at ``PER_HOST`` (:class:`HostSlots`), the two ways a download
ends that are not its file's fault (:class:`Stopped`, :class:`Unserved`), and the small
rules of ranges: the range a 206 says it holds (:func:`served`), what ``If-Range`` may
carry (:func:`validator`), and bytes of the partial file hashed in place
(:func:`hash_range`)."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lockkit.cache.store import CHUNK
from lockkit.index.retry import RetryRule

__all__ = ["POSITIONAL", "HostSlots", "Line", "Stopped", "Unserved", "gave_up", "hash_range",
           "served", "validator"]

POSITIONAL = hasattr(os, "pwrite")  # not on Windows: one stream there
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class Stopped(Exception):
    """The fetcher was stopped (Ctrl-C or another file failed): not a fault of the source,
    so never tried elsewhere and never reported as one."""


class Unserved(Exception):
    """The cause of a :class:`FetchError` that is the host's failure (a connect or TLS
    error, a timeout, a 5xx, a body cut short at every try): the URL's Twin is tried
    next. *silent*: it timed out, so the host is not asked again for this file."""

    def __init__(self, why: str, *, silent: bool = False) -> None:
        super().__init__(why)
        self.silent = silent
        self.short = why.split(":", 1)[0]  # for a table: "HTTP 503", "ConnectError"


class HostSlots:
    """At most *per_host* connections at once to each host (scheme, name and port)."""

    def __init__(self, per_host: int, stopped: threading.Event) -> None:
        self._per_host, self._stopped = max(1, per_host), stopped
        self._slots: dict[str, threading.Semaphore] = {}
        self._lock = threading.Lock()

    def _of(self, url: str) -> threading.Semaphore:
        parts = urllib.parse.urlsplit(url)
        key = f"{parts.scheme}://{parts.hostname}:{parts.port}"
        with self._lock:
            return self._slots.setdefault(key, threading.Semaphore(self._per_host))

    @contextlib.contextmanager
    def held(self, url: str, what: str) -> Iterator[None]:
        """One slot of *url*'s host for the block, waited for (a stop ends the wait)."""
        slot = self._of(url)
        while not slot.acquire(timeout=0.1):
            if self._stopped.is_set():
                raise Stopped(what)
        try:
            yield
        finally:
            slot.release()

    def spare(self, url: str) -> Callable[[], None] | None:
        """A slot of *url*'s host if one is free now (its release), else None."""
        slot = self._of(url)
        return slot.release if slot.acquire(blocking=False) else None


@dataclass(frozen=True, kw_only=True)
class Line:
    """What a :class:`Transfer` uses of its fetcher: the client, the transport's retry
    policy, the stop event, the host slots, and where it says its responses (for a stop
    to cut them off) and its bytes (for the progress display)."""

    client: Any
    policy: RetryRule
    stopped: threading.Event
    hosts: HostSlots
    watch: Callable[[object, Any], None]  # (token, the response; None before it)
    unwatch: Callable[[object], None]
    report: Callable[[str, int], None]  # (sha256, bytes of the file in hand)
    part_min: int  # bytes: a file is split only into parts at least this large
    cap: Callable[[Any, str, str | None], Any]  # (want, url, Content-Length) -> .limit, .error


def gave_up(attempts: int) -> str:
    """The end of a message about a URL tried *attempts* times (nothing for once)."""
    return f" (gave up after {attempts} attempts)" if attempts > 1 else ""


def hash_range(fd: int, start: int, end: int, digest: Any) -> None:
    """Add the bytes [start, end) of the open file *fd* to *digest* (positional reads:
    hashlib releases the GIL on these blocks)."""
    if not POSITIONAL:
        os.lseek(fd, start, os.SEEK_SET)
    while start < end:
        block = os.pread(fd, min(CHUNK, end - start), start) if POSITIONAL else \
            os.read(fd, min(CHUNK, end - start))
        if not block:
            raise OSError(f"the partial file ended at byte {start} of {end}")
        digest.update(block)
        start += len(block)


def served(resp: Any, start: int, end: int | None, size: int | None) -> bool:
    """Whether a 206's Content-Range is the range asked: from *start* to *end* (None: to
    the file's end), of a file of *size* bytes when that is known."""
    found = _CONTENT_RANGE.fullmatch(resp.headers.get("Content-Range", "").strip())
    if found is None or int(found[1]) != start:
        return False
    total = None if found[3] == "*" else int(found[3])
    if size is not None and total != size:
        return False
    last = (end if end is not None else (total or 0)) - 1
    return int(found[2]) == last


def validator(resp: Any) -> str | None:
    """What If-Range may carry: a strong ETag, else the Last-Modified date."""
    etag = resp.headers.get("ETag", "").strip()
    if etag and not etag.startswith("W/"):
        return etag
    return resp.headers.get("Last-Modified") or None
