"""One file's bytes from one URL into one partial file of the cache (:class:`Transfer`),
as aria2 and ``curl -C`` fetch them: the :class:`~lockkit.download.fetch.Fetcher`
decides which URL; this decides how its bytes come.

- A body cut short is resumed where it stopped (``Range``, and ``If-Range`` with the first
  answer's strong ETag, else its Last-Modified) through the transport's retry policy
  (:func:`lockkit.index.retry.attempts`); a 200 to a Range starts again from byte 0.
- A file of at least ``2 * PART_MIN`` bytes is asked for its first part only; a 206
  starts the others, up to ``MAX_PARTS`` in all, each taking a slot of the host
  (:class:`~lockkit.download.line.HostSlots`) and writing at its own offset of the one
  partial file (``os.pwrite``); a 200 is read whole, as one stream. A size the lock does
  not give (the PyTorch index's pages) is learned from the first answer.
- Trust: the bytes are hashed in order as they come (:class:`~lockkit.download.sink.Sink`;
  the parts past the first read back from the page cache as they land), and the whole
  file's sha256 is checked against the lock before it gets its name in the cache.
- An interrupted or failed transfer keeps its bytes in order from byte 0 under a cache
  private to its user (:meth:`~lockkit.cache.store.Cache.keep`), as it unwinds; one still
  blocked when a stop's grace ends keeps nothing. The next build hashes them again and
  resumes after them (said at ``-v``); should the whole file then not match, it is
  fetched once more from byte 0. A shared (group-writable) cache keeps nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from lockkit._internal.log import VERBOSE
from lockkit._internal.redact import masked
from lockkit.cache.store import CHUNK, Cache
from lockkit.download.line import (
    POSITIONAL,
    Line,
    Stopped,
    Unserved,
    follow,
    gave_up,
    hash_range,
    learned_size,
    prefix,
    served,
    upto,
    validator,
)
from lockkit.download.sink import Sink, batches
from lockkit.errors import FetchError, HashMismatch
from lockkit.index.http import STOP, timed_out
from lockkit.index.retry import Again, attempts

__all__ = ["MAX_PARTS", "PART_MIN", "Transfer"]

_log = logging.getLogger(__name__)
PART_MIN = 16 << 20  # bytes: a file is split only into parts at least this large (aria2: 20M)
MAX_PARTS = 4  # connections one file may use at once
_IDENTITY = {"Accept-Encoding": "identity"}  # the file's own bytes, as pip asks
_REFUSED = ("the server refused the credentials (or got none): check the user info of "
            "index-url and [mirrors] / --mirror, the ${VAR}s they use, or the netrc file")


class _NoRanges(Exception):
    """A part was answered with the whole file, or another range: one stream instead."""


class Transfer:
    """*want*'s bytes (a :class:`~lockkit.download.fetch.Want`) from *url* into the
    cache (see the module's docstring); :meth:`run` returns the bytes moved over the
    network."""

    def __init__(self, line: Line, cache: Cache, want: Any, url: str) -> None:
        self.line, self.cache, self.want, self.url = line, cache, want, url
        self.what = f"{want.filename} from {masked(url)}"
        self.size: int | None = want.size
        self.done = 0  # bytes [0, done) are in the file and in self.digest
        self.digest = hashlib.sha256()
        self.head_end: int | None = None  # where the first stream stops (None: the end)
        self.spans: dict[int, list[int]] = {}  # part start -> [end, bytes written]
        self.validator: str | None = None
        self.moved, self.resumed = 0, False  # network bytes; taken over from a stopped build
        self._lock = threading.Lock()
        self._moved = threading.Condition(self._lock)  # a part's bytes landed, or it ended
        self._todo: list[int] = []  # starts of the parts no one took yet
        self._errors: list[BaseException] = []  # a part's failure: no part started after
        self._helpers: list[threading.Thread] = []
        self._ending, self._ended = threading.Lock(), False  # see end()

    def run(self) -> int:
        kept = self.cache.resume(self.want.sha256)
        out, self.partial, have = kept or (*self.cache.new_partial(), 0)
        self.out: Any = out
        self.line.watch(self, None)  # a stop may remove the partial file (abandon)
        try:
            with out:
                if have:
                    self._take_over(have)
                try:
                    self._fetch()
                except HashMismatch:
                    if not self.resumed:
                        raise
                    _log.warning("%s: the bytes an interrupted build left did not make the "
                                 "file; fetched again from byte 0", self.want.filename)
                    self.resumed = False
                    self._restart()
                    self._fetch()
            self.cache.commit(self.partial, self.want.sha256)
            return self.moved
        except BaseException as exc:
            self.end(keep=not isinstance(exc, HashMismatch) and bool(self.size))
            raise
        finally:
            self.line.unwatch(self)

    def abandon(self) -> None:
        """A stop, from another thread, while this may be blocked: remove the partial file
        now unless it holds bytes the cache may keep for the next build as it unwinds."""
        if not (self.cache.private() and self.size and (self.done or self.moved)):
            self.end(keep=False)

    def end(self, *, keep: bool) -> None:
        """The partial file kept (if *keep* and the cache keeps it) or removed, once, by
        the first of: this transfer unwinding, a stop, the end of a stop's grace."""
        with self._ending:
            if self._ended:
                return
            self._ended = True
            if not keep or not self.cache.keep(
                    self.partial, self.want.sha256, prefix(self.done, self.head_end, self.spans)):
                self.partial.unlink(missing_ok=True)

    def _take_over(self, have: int) -> None:
        """Hash the bytes an interrupted build left (never taken on their word)."""
        if self.size is not None and have > self.size:
            return  # not this file's beginning: fetched from byte 0, over it
        hash_range(self.out.fileno(), 0, have, self.digest)
        self.done, self.resumed = have, True
        _log.log(VERBOSE, "%s: resuming the file an interrupted build left, from byte %d "
                 "of %s", self.want.filename, have, self.size or "an unknown size")

    def _fetch(self) -> None:
        """The file from self.done to its end: one stream, then the parts if any."""
        if self.size is not None and self.done >= self.size:
            self._check()  # an interrupted build had every byte already
            return
        self._plan()
        try:
            attempts(self.line.policy, self.line.stopped, self.what, self._stream)
            if self.spans:
                self._parts()
        except _NoRanges:
            self._halt(_NoRanges())
            _log.log(VERBOSE, "%s: a part was answered with the whole file: one stream "
                     "from byte 0", self.what)
            self._restart()
            attempts(self.line.policy, self.line.stopped, self.what, self._stream)
        finally:
            self._halt(Stopped(self.want.filename))  # no helper writes after this
        self._check()

    def _plan(self) -> None:
        """The parts of [self.done, self.size), where the file is large enough: the first
        stream stops at ``head_end``, the parts past it are ``spans``."""
        least = self.line.part_min
        if POSITIONAL and self.size and self.size - self.done >= 2 * least:
            step = max(least, -(-(self.size - self.done) // MAX_PARTS))
            self.head_end = self.done + step
            self.spans = {s: [min(s + step, self.size), 0]
                          for s in range(self.head_end, self.size, step)}

    def _learn(self, resp: Any) -> None:
        """The size the lock did not give, from the first answer (split where ranges are)."""
        if self.size is not None:
            return
        self.size = learned_size(resp)
        if self.size is not None and (resp.status_code == 206 or resp.headers.get(
                "Accept-Ranges", "").strip().lower() == "bytes"):
            self._plan()

    def _restart(self) -> None:
        self.out.seek(0)
        self.out.truncate()
        self.done, self.digest, self.head_end, self.spans = 0, hashlib.sha256(), None, {}
        self._todo, self._errors = [], []  # the helpers, if any, were halted

    def _stream(self, attempt: int) -> None:
        """One attempt at the stream from self.done to self.head_end (None: the end)."""
        import httpx

        end = self.head_end
        headers = dict(_IDENTITY)
        if self.done or end is not None:
            headers["Range"] = f"bytes={self.done}-{'' if end is None else end - 1}"
            if self.done and self.validator:
                headers["If-Range"] = self.validator
            if self.done:
                _log.log(VERBOSE, "%s: asking from byte %d", self.what, self.done)
        answered: list[bool] = []
        try:
            with self._request(headers, answered) as resp:
                if resp.status_code == 200:
                    if self._helpers:
                        raise _NoRanges()  # the parts under way stop first
                    if self.done:
                        _log.log(VERBOSE, "%s: the server sent the whole file: from byte 0",
                                 self.what)
                    self._restart()
                elif resp.status_code != 206 or not served(resp, self.done, end, self.size):
                    raise self._refused(resp)
                self.validator = self.validator or validator(resp)
                self._learn(resp)
                self.out.seek(self.done)
                if not self._helpers:  # nothing past these bytes is anyone's yet
                    self.out.truncate()
                self._launch()
                self._read(resp)
        except (httpx.TransportError, OSError) as exc:
            self._fail(exc, bool(answered))
        want = self.head_end if self.head_end is not None else self.size
        if want is not None and self.done < want:
            raise Again(f"truncated body: {self.done} of {want} bytes",
                        settle=self._settle(f"truncated body: {self.done} of {want} bytes"))

    @contextlib.contextmanager
    def _request(self, headers: dict[str, str], answered: list[bool]) -> Iterator[Any]:
        """The streamed response, watched (a stop cuts it off); a 5xx is the host's."""
        token = object()
        self.line.watch(token, None)
        try:
            with self.line.client.stream("GET", self.url, headers=headers,
                                         extensions={STOP: self.line.stopped}) as resp:
                self.line.watch(token, resp)
                answered.append(True)
                if self.line.stopped.is_set():
                    raise Stopped(self.want.filename)
                if resp.status_code >= 500:  # the transport's last answer
                    tries = self.line.policy.attempts
                    raise FetchError(f"{self.what}: HTTP {resp.status_code}"
                                     f"{gave_up(tries)}") from Unserved(
                                         f"HTTP {resp.status_code}")
                yield resp
        finally:
            self.line.unwatch(token)

    def _refused(self, resp: Any) -> Exception:
        if resp.status_code in (200, 206) or (resp.status_code == 416 and self.done):
            return _NoRanges()  # 416: kept bytes of a file of unknown size were all of it
        return FetchError(f"{masked(self.url)}: HTTP {resp.status_code}",
                          hint=_REFUSED if resp.status_code in (401, 403) else None)

    def _fail(self, exc: BaseException, answered: bool) -> NoReturn:
        """A transport failure: before an answer, the transport gave up already (the
        host's failure); during a body, the retry loop's to resume."""
        if self.line.stopped.is_set():
            raise Stopped(self.want.filename) from None
        if isinstance(exc, OSError):
            raise exc  # the cache's disk: the caller names it
        why = f"{type(exc).__name__}: {masked(str(exc))}"
        if not answered:
            raise FetchError(f"{self.what}: {why}") from Unserved(why, silent=timed_out(exc))
        raise Again(why, settle=self._settle(why, silent=timed_out(exc))) from None

    def _settle(self, why: str, *, silent: bool = False) -> Callable[[int, bool], Any]:
        def settle(tries: int, stopped: bool) -> Any:
            if stopped:
                raise Stopped(self.want.filename)
            raise FetchError(f"{self.what}: {why}{gave_up(tries)}") \
                from Unserved(why, silent=silent)
        return settle

    def _read(self, resp: Any) -> None:
        """The body, written and hashed in order from self.done (which follows it)."""
        cap = self.line.cap(self.want, self.url, resp.headers.get("Content-Length"))
        encoding = resp.headers.get("Content-Encoding", "").strip().lower()
        pieces = resp.iter_raw() if encoding in ("", "identity") else resp.iter_bytes()
        start, stop = self.done, self.head_end  # a 200 split once read goes on past stop
        sink = Sink(self.out, self.digest)
        try:
            with sink:
                for batch in batches(pieces, CHUNK):
                    if self.line.stopped.is_set():
                        raise Stopped(self.want.filename)
                    if stop is not None:
                        batch = upto(batch, stop - start - sink.queued)
                    n = sum(map(len, batch))
                    if start + sink.queued + n > cap.limit:
                        raise cap.error(start + sink.queued + n)
                    sink.put(batch)
                    self.moved += n
                    self.line.report(self.want.sha256, start + sink.queued)
                    if stop is not None and start + sink.queued >= stop:
                        break  # the parts fetch the rest
        finally:
            self.done = start + sink.written

    def _launch(self) -> None:
        """The parts past the first stream, on helpers, once the first answer says ranges
        are served: each waits for a host's slot in turn with the files, so a large file's
        parts take the connections small files leave, and the end is not one stream."""
        if self._helpers or not self.spans:
            return
        self._todo = sorted(self.spans)
        for _ in range(min(MAX_PARTS - 1, len(self._todo))):
            self._helpers.append(threading.Thread(target=self._helper, daemon=True,
                                                  name="lockkit-part"))
            self._helpers[-1].start()

    def _helper(self) -> None:
        release = self.line.hosts.take(self.url, lambda: bool(self._errors or not self._todo))
        if release is None:  # a stop, a failure, or no part left for it
            with self._moved:
                self._moved.notify_all()
            return
        self._runner(release)

    def _halt(self, why: BaseException) -> None:
        """No part starts after this; every helper has ended."""
        if self._helpers:
            self._errors.append(why)
        for helper in self._helpers:
            helper.join()
        self._helpers = []

    def _parts(self) -> None:
        """The parts no helper took, on this thread, once the first stream is in; their
        bytes hashed in order as they land (:func:`~lockkit.download.line.follow`)."""
        self.out.flush()
        self._launch()  # none started yet (the first answer was cut): start them now
        self._runner(None)
        going = lambda: not self._errors and any(h.is_alive() for h in self._helpers)  # noqa: E731
        hashed = follow(self.spans, self.head_end or 0, self._moved, going, self.out.fileno(),
                        self.digest)
        for helper in self._helpers:
            helper.join()
        if self._errors:
            raise next((e for e in self._errors if not isinstance(e, Stopped)),
                       self._errors[0])
        if hashed != self.size:
            raise FetchError(f"{self.what}: the parts ended at byte {hashed}")
        self.done = hashed

    def _runner(self, release: Callable[[], None] | None) -> None:
        try:
            while not self._errors:
                with self._lock:
                    if not self._todo:
                        return
                    start = self._todo.pop(0)
                attempts(self.line.policy, self.line.stopped, f"{self.what} (part at byte "
                         f"{start})", lambda attempt, s=start: self._part(s))  # type: ignore[misc]
        except BaseException as exc:  # noqa: BLE001 - raised on the file's thread
            self._errors.append(exc)
        finally:
            if release is not None:
                release()
            with self._moved:
                self._moved.notify_all()

    def _part(self, start: int) -> None:
        """One attempt at the span from *start*: from its byte reached to its end."""
        import httpx

        end, got = self.spans[start]
        headers = {**_IDENTITY, "Range": f"bytes={start + got}-{end - 1}"}
        if self.validator:
            headers["If-Range"] = self.validator
        answered: list[bool] = []
        try:
            with self._request(headers, answered) as resp:
                if resp.status_code != 206 or not served(resp, start + got, end, self.size):
                    raise self._refused(resp)
                for piece in resp.iter_raw():
                    if self.line.stopped.is_set():
                        raise Stopped(self.want.filename)
                    if start + got + len(piece) > end:
                        raise _NoRanges()
                    os.pwrite(self.out.fileno(), piece, start + got)
                    with self._moved:
                        got = self.spans[start][1] = got + len(piece)
                        self.moved += len(piece)
                        have = self.done + sum(g for _, g in self.spans.values())
                        self._moved.notify_all()
                    self.line.report(self.want.sha256, have)
        except (httpx.TransportError, OSError) as exc:
            self._fail(exc, bool(answered))
        if got < end - start:
            why = f"truncated part: {got} of {end - start} bytes"
            raise Again(why, settle=self._settle(why))

    def _check(self) -> None:
        if self.size is not None and self.done < self.size:
            raise FetchError(f"{self.what}: truncated body: {self.done} of {self.size} bytes")
        digest = self.digest.hexdigest()
        if digest != self.want.sha256:
            raise HashMismatch(f"{self.what}: sha256 {digest} does not match the lock's "
                               f"{self.want.sha256}; the file was discarded")

