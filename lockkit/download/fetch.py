"""Downloads identified by hash: a content-addressed cache, streaming checks, a body cut
short fetched again.

A file is known by its sha256; a URL is only a place where it was found. Sources
are tried in order — the cache (each hit hashed again), ``--find-links`` folders, then
each URL — and the bytes land in the cache under their hash only after the hash matched,
through a temp file and a rename: an interrupted run, a crash or two builds sharing the
cache never leave a partial file under a final name.

A :class:`~lockkit.download.sources.Twin` is tried only after its host's failure.

Retries are the HTTP client's (:mod:`lockkit.index.transport`: a connect failure, a
timeout or a 5xx before the body); a body cut short after its headers is resumed by
:mod:`lockkit.download.transfer` through the same loop and the same policy, which the
caller passes in. At most ``per_host`` connections go to one host at once.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lockkit._internal.log import VERBOSE
from lockkit._internal.redact import masked
from lockkit.cache.store import Cache, copy_hashing
from lockkit.download.line import HostSlots, Line, Stopped, Unserved
from lockkit.download.sources import FoundIn, PageRef, Source, Twin
from lockkit.download.transfer import MAX_PARTS, PART_MIN, Transfer
from lockkit.errors import FetchError, HashMismatch
from lockkit.index.auth import Credentials
from lockkit.index.http import CONNECT_TIMEOUT, MAX_PAGE, PER_HOST, STOP, Client, Policy
from lockkit.index.urls import Mirrors, origin

if TYPE_CHECKING:
    from lockkit.index.retry import RetryRule

__all__ = ["FileKind", "Fetcher", "Got", "Item", "Want", "http_client"]

FileKind = Literal["wheel", "sdist"]  # what a lock selects: a wheel, or an sdist to build

_log = logging.getLogger(__name__)
# The cap on a body whose size the lock does not give: larger than any wheel published
# (the biggest CUDA wheels are a few GiB), small enough that an endless body ends.
MAX_UNKNOWN_SIZE = 20 << 30
_REFUSED = ("the server refused the credentials (or got none): check the user info of "
            "index-url and [mirrors] / --mirror, the ${VAR}s they use, or the netrc file")


@dataclass(frozen=True, kw_only=True)
class Want:
    filename: str
    sha256: str
    size: int | None
    urls: tuple[Source, ...]  # lockkit.download.sources's, best first
    source: str            # the lock's URL, credential-free: what reports show


@dataclass(frozen=True, kw_only=True)
class Item:
    """One file the platform needs, as the lock names it: what ``wheelhouse build`` plans
    and the download loop (:mod:`lockkit.download.pool`) fetches."""

    package: str
    version: str
    kind: FileKind
    want: Want
    entry: dict[str, Any]  # the package's table in the source lock
    official_skipped: bool = False  # a mirror covers the file; the lock's URL is not tried


@dataclass(frozen=True, kw_only=True)
class Got:
    want: Want
    path: Path      # the verified file in the cache
    origin: FoundIn  # the cache, a --find-links folder or the (redacted) URL
    downloaded: int  # bytes transferred over the network
    instead: str = ""  # from a Twin: "https://download-r2.pytorch.org failed: HTTP 503"


class Fetcher:
    """Obtains wanted files into the cache; the HTTP client is passed in (testable): a
    :class:`~lockkit.index.http.Client` (:func:`http_client`) or any ``httpx.Client``.
    The client's transport retries what fails before a body (a download's policy has no
    ``fail_fast``: a build of gigabytes is worth a few seconds of patience with a stalled
    host); a body cut short is resumed through the same retry loop with *policy*, the one
    the client's transport was built with (``client.policy`` of a
    :class:`~lockkit.index.http.Client`), passed in. *per_host*: connections at once to
    one host; *part_min*: the least size of a ranged part (:mod:`lockkit.download.transfer`)."""

    def __init__(self, client: Any, cache: Cache, *, policy: RetryRule,
                 find_links: Sequence[Path] = (),
                 on_bytes: Callable[[int], None] | None = None,
                 max_unknown_size: int = MAX_UNKNOWN_SIZE, max_page: int = MAX_PAGE,
                 mirrors: Mirrors | None = None, per_host: int = PER_HOST,
                 part_min: int = PART_MIN) -> None:
        self.client, self.cache, self.find_links = client, cache, tuple(find_links)
        self.mirrors = mirrors  # a link found on a page (PageRef) to an official host goes here
        self.policy = policy
        self.on_bytes = on_bytes or (lambda n: None)
        self.max_unknown_size, self.max_page = max_unknown_size, max_page  # page: _lookup's
        self.stopped = threading.Event()
        self.hosts = HostSlots(per_host, self.stopped)
        self.part_min = part_min
        self._lock = threading.Lock()
        # a transfer's requests -> their responses (None before headers), and each
        # Transfer under way -> None
        self._open: dict[object, Any] = {}
        # sha256 -> the most bytes of it reported to on_bytes, over every attempt: a retry
        # reports only what passes that mark, so a bar never goes back on a retry or Ctrl-C
        self._shown: dict[str, int] = {}

    def stop(self) -> None:
        """Abort every download now, from any thread: queued work sees the flag, open
        bodies are cut off under their readers, and the partial files with nothing to
        keep are removed here rather than by threads that may still be blocked on a
        stalled server; under a private cache, a transfer with bytes keeps them for the
        next build as it unwinds."""
        self.stopped.set()
        with self._lock:
            open_now = list(self._open.items())
        for token, resp in open_now:
            _cut(resp)
            if isinstance(token, Transfer):
                token.abandon()

    def reap(self) -> None:
        """After a stop's grace: the partial file of every transfer that has not unwound
        yet (a worker still blocked) is removed now, never left half-written at exit."""
        with self._lock:
            left = [t for t in self._open if isinstance(t, Transfer)]
        for transfer in left:
            transfer.end(keep=False)

    def fetch(self, want: Want) -> Got:
        hit = self.cache.get(want.sha256, want.size)
        _log.log(VERBOSE, "%s: cache %s (sha256 %s)", want.filename, "hit" if hit else "miss",
                 want.sha256[:16])
        if hit:
            return Got(want=want, path=hit, origin=FoundIn("cache"), downloaded=0)
        for folder in self.find_links:
            got = self._from_folder(want, folder)
            if got:
                _log.log(VERBOSE, "%s: taken from --find-links %s", want.filename, folder)
                return got
        errors: list[FetchError] = []
        silent: set[str] = set()  # hosts that timed out at each try: not asked again (lazily)
        for source in want.urls:
            url = source if isinstance(source, str) else source.url
            if origin(url) in silent or (isinstance(source, Twin) and not (
                    errors and isinstance(errors[-1].__cause__, Unserved))):
                continue  # a Twin: only after its host's failure, never after a 404
            if self.stopped.is_set():
                raise Stopped(want.filename)
            try:
                if isinstance(source, PageRef):
                    url = self._lookup(want, source)
                got = self._from_url(want, url)
            except FetchError as exc:
                if isinstance(exc, HashMismatch):
                    raise
                if isinstance(exc.__cause__, Unserved) and exc.__cause__.silent:
                    silent.add(origin(url))
                errors.append(exc)
                continue
            if isinstance(source, Twin):
                cause: Any = errors[-1].__cause__  # an Unserved, or the Twin was skipped
                _log.warning("%s: %s failed: %s; fetched from %s instead, sha256 checked",
                             want.filename, source.instead, cause, masked(url))
                return replace(got, instead=f"{source.instead} failed: {cause.short}")
            return got
        tried = "; ".join(map(str, errors)) or "no URL and not in any --find-links folder"
        hint = next((e.hint for e in errors if e.hint),
                    "check --mirror / --find-links, or the network")
        raise FetchError(f"{want.filename}: could not be fetched ({tried})", hint=hint)

    def _from_folder(self, want: Want, folder: Path) -> Got | None:
        candidate = folder / want.filename
        if not candidate.is_file():
            return None
        out, partial = self.cache.new_partial()
        with out, candidate.open("rb") as src:
            digest = copy_hashing(src, out, lambda n: None)
        if digest != want.sha256:
            partial.unlink(missing_ok=True)
            raise HashMismatch(f"{want.filename}: {candidate} has sha256 {digest}, "
                               f"the lock says {want.sha256}; not used")
        path = self.cache.commit(partial, want.sha256)
        return Got(want=want, path=path, origin=FoundIn.folder(folder), downloaded=0)

    def _from_url(self, want: Want, url: str) -> Got:
        """*url*'s body (:class:`~lockkit.download.transfer.Transfer`: resumed when cut
        short, in ranged parts when large), within a slot of its host."""
        with self.hosts.held(url, want.filename):
            if self.stopped.is_set():
                raise Stopped(want.filename)
            moved = Transfer(self._line(), self.cache, want, url).run()
        return Got(want=want, path=self.cache.path(want.sha256), origin=FoundIn("url", masked(url)),
                   downloaded=moved)

    def _lookup(self, want: Want, page: PageRef) -> str:
        """The URL *page* lists for the wanted file (the file is still checked by hash)."""
        import httpx

        from lockkit.index.http import PageTooLarge, read_page
        from lockkit.index.pages import parse_links

        try:
            with self.client.stream("GET", page.url, headers={"Accept": "text/html"},
                                    extensions={STOP: self.stopped}) as resp:
                status = resp.status_code
                text = read_page(resp, page.url, self.max_page).decode("utf-8", "replace") \
                    if status == 200 else ""
        except PageTooLarge as exc:
            raise FetchError(str(exc), hint="if this index's pages are meant to be that "
                             "large, raise max-page-size (MiB) in lockkit.toml") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise FetchError(f"{masked(page.url)}: {type(exc).__name__}") from None
        if status != 200:
            raise FetchError(f"{masked(page.url)}: HTTP {status}", hint=_refused(status))
        for link in parse_links(text):
            url, _, fragment = urllib.parse.urljoin(page.url, link["href"]).partition("#")
            name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
            if name == want.filename and fragment in ("", f"sha256={want.sha256}"):
                # an official host's link (the PyTorch pages' R2 links): to its mirror
                return self.mirrors.effective(url) if self.mirrors and self.mirrors.covers(url) \
                    else url
        raise FetchError(f"{masked(page.url)} does not list {want.filename}")

    def _report(self, sha256: str, received: int) -> None:
        """Tell on_bytes what this attempt brought past the file's mark (only ever > 0)."""
        shown = self._shown.get(sha256, 0)
        if received > shown:
            self._shown[sha256] = received
            self.on_bytes(received - shown)

    def _line(self) -> Line:
        """What a transfer uses of this fetcher (made per transfer: a Line kept here would
        hold this fetcher in a cycle, and its cache's hold on the blobs past its use)."""
        return Line(client=self.client, policy=self.policy, stopped=self.stopped,
                    hosts=self.hosts, watch=self._watch, unwatch=self._unwatch,
                    report=self._report, cap=self._cap, part_min=self.part_min)

    def _watch(self, token: object, resp: Any) -> None:
        """Register a transfer's request (its response once it came) so that :meth:`stop`
        can cut it off; if stop came while the headers were awaited, stop now."""
        with self._lock:
            self._open[token] = resp
        if resp is not None and self.stopped.is_set():
            raise Stopped("stopped")

    def _unwatch(self, token: object) -> None:
        with self._lock:
            self._open.pop(token, None)

    def _cap(self, want: Any, url: str, length: str | None) -> _Cap:
        """The most bytes this body may have: the lock's size, else a generous limit."""
        if want.size is not None:
            cap = _Cap(want.size, lambda n: HashMismatch(
                f"{want.filename} from {masked(url)}: the body is longer than the lock's "
                f"size of {want.size} bytes (got {n} or more); the download was aborted and "
                "nothing was kept"))
        else:
            cap = _Cap(self.max_unknown_size, lambda n: FetchError(
                f"{want.filename} from {masked(url)}: the lock gives no size and the body "
                f"passed lockkit's limit of {self.max_unknown_size} bytes; aborted, nothing "
                "kept", hint="add the file's size to the lock, or check the server"))
        if length and length.isdigit() and int(length) > cap.limit:
            raise cap.error(int(length))  # refused before a byte is written
        return cap

@dataclass(frozen=True)
class _Cap:
    limit: int
    error: Callable[[int], FetchError]


def _cut(resp: Any) -> None:
    """Wake a thread blocked reading *resp*: shut its socket down (``close`` alone does not
    interrupt a ``recv`` in another thread). The socket is found through httpcore's
    documented ``network_stream`` response extension; nothing is read from it here."""
    if resp is None:
        return
    stream = getattr(resp, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _refused(status: int) -> str | None:
    """A 401/403 is about credentials, not the network: say where they come from."""
    return _REFUSED if status in (401, 403) else None


def http_client(*, connections: int = 8, timeout: float = 60.0, attempts: int = 4,
                backoff: float = 0.5, credentials: Credentials | None = None) -> Client:
    """The client downloads share (:mod:`lockkit.index.http`'s policy): *connections*
    files at once (the pool holds ``MAX_PARTS`` connections for each, so that no ranged
    part waits for the pool), *timeout* seconds for each read, the connection within
    ``CONNECT_TIMEOUT``,
    *attempts* in all ``backoff * 2 ** n`` seconds apart, after any failure (no
    ``fail_fast``), and *credentials* (the project's, by host) for URLs without user info:
    a lock's URLs never carry any; bodies read 1 MiB at a time (the policy's *bulk*:
    :mod:`lockkit.index.bulk`). Built on the first request only."""
    return Client(Policy(timeout=timeout, connect=min(timeout, CONNECT_TIMEOUT),
                         connections=connections * MAX_PARTS, attempts=attempts, backoff=backoff,
                         fail_fast=False, bulk=True),
                  credentials or Credentials())


