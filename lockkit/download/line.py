"""What a download (:class:`~lockkit.download.transfer.Transfer`) uses of its
:class:`~lockkit.download.fetch.Fetcher` (:class:`Line`), the slots that keep the
connections to one host at ``PER_HOST`` (:class:`HostSlots`), the two ways a download
ends that are not its file's fault (:class:`Stopped`, :class:`Unserved`), and the small
rules of ranges: the range a 206 says it holds (:func:`served`), what ``If-Range`` may
carry (:func:`validator`), a file's size from an answer (:func:`learned_size`), and
bytes of the partial file hashed in place (:func:`hash_range`)."""

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
           "follow", "learned_size", "prefix", "served", "upto", "validator"]

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

    def take(self, url: str, needless: Callable[[], bool]) -> Callable[[], None] | None:
        """A slot of *url*'s host, waited for (its release); None once the line is
        stopped or *needless* says the slot is no longer wanted."""
        slot = self._of(url)
        while not slot.acquire(timeout=0.05):
            if self._stopped.is_set() or needless():
                return None
        if needless():
            slot.release()
            return None
        return slot.release


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


def learned_size(resp: Any) -> int | None:
    """A file's size from an answer: a 206's ``Content-Range`` total, a 200's
    ``Content-Length``; None where the body is encoded (its length is not the file's)."""
    if resp.headers.get("Content-Encoding", "").strip().lower() not in ("", "identity"):
        return None
    if resp.status_code == 206:
        total = resp.headers.get("Content-Range", "").rpartition("/")[2].strip()
    else:
        total = resp.headers.get("Content-Length", "").strip()
    return int(total) if total.isdigit() else None


def upto(batch: list[bytes], room: int) -> list[bytes]:
    """The first *room* bytes of *batch* (pieces, not copied but the last one cut)."""
    kept: list[bytes] = []
    for piece in batch:
        if room <= 0:
            break
        kept.append(piece[:room] if len(piece) > room else piece)
        room -= len(kept[-1])
    return kept


def prefix(done: int, head_end: int | None, spans: dict[int, list[int]]) -> int:
    """The bytes from byte 0 that are in the file, no gap among them: the first stream's
    *done*, then each part (*spans*: start -> [end, bytes written]) that follows on."""
    end = done
    if head_end is not None and end < head_end:
        return end
    for start in sorted(spans):
        stop, got = spans[start]
        if start != end:
            break
        end = start + got
        if end < stop:
            break
    return end


def follow(spans: dict[int, list[int]], head_end: int, moved: threading.Condition,
           going: Callable[[], bool], fd: int, digest: Any) -> int:
    """Hash the parts' bytes in order while they land, read back from the file *fd* (the
    page cache): little is left to hash after the last byte. *moved* is notified as bytes
    land; *going*: whether a part may still land. Returns the end of the bytes hashed
    (short of the file's end when a part failed)."""
    pos = head_end
    for start in sorted(spans):
        end = spans[start][0]
        while pos < end:
            with moved:
                while start + spans[start][1] <= pos and going():
                    moved.wait(0.5)
                reached = start + spans[start][1]
            if reached <= pos:
                return pos  # the part failed, or no one fetches it any more
            hash_range(fd, pos, reached, digest)
            pos = reached
    return pos
