"""Downloads identified by hash: a content-addressed cache, streaming checks, retries.

A file is known by its sha256; a URL is only a place where it was found. Sources
are tried in order — the cache (each hit hashed again), ``--find-links`` folders, then
each URL — and the bytes land in the cache under their hash only after the hash matched, through a
temp file and a rename, so an interrupted run, a crash or two builds sharing the
cache never leave a partial file under a final name.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockkit._internal.redact import redact
from lockkit.cache.store import CHUNK as _CHUNK
from lockkit.cache.store import Cache, copy_hashing, default_cache_dir
from lockkit.errors import FetchError, HashMismatch
from lockkit.index.auth import Credentials

__all__ = ["Cache", "FetchError", "Fetcher", "Got", "HashMismatch", "PageRef", "Stopped", "Want",
           "default_cache_dir", "http_client"]

_IDENTITY = {"Accept-Encoding": "identity"}  # the file's own bytes, as pip asks
# The cap on a body whose size the lock does not give: larger than any wheel published
# (the biggest CUDA wheels are a few GiB), small enough that an endless body ends.
MAX_UNKNOWN_SIZE = 20 << 30
_REFUSED = ("the server refused the credentials (or got none): check the user info of "
            "index-url and [mirrors] / --mirror, the ${VAR}s they use, or the netrc file")


class Stopped(Exception):
    """The fetcher was stopped (Ctrl-C or another file failed): not a fault of the source,
    so never tried elsewhere and never reported as one."""


@dataclass(frozen=True, kw_only=True)
class PageRef:
    """An index page (effective URL) to look the file up on by name, when its URL there is
    not known in advance: a mirror that rewrites links to itself (Artifactory, Nexus,
    devpi) keeps files under its own layout, never under the official one."""

    url: str


@dataclass(frozen=True, kw_only=True)
class Want:
    filename: str
    sha256: str
    size: int | None
    urls: tuple[str | PageRef, ...]  # effective URLs or pages, best first (may carry credentials)
    source: str            # the lock's URL, credential-free: what reports show


@dataclass(frozen=True, kw_only=True)
class Got:
    want: Want
    path: Path      # the verified file in the cache
    origin: str     # "cache", "find-links <dir>" or the (redacted) URL it came from
    downloaded: int  # bytes transferred over the network


class _Retry(Exception):
    """A transient fault: try the same URL again after a pause."""


class Fetcher:
    """Obtains wanted files into the cache; the HTTP client is passed in (testable)."""

    def __init__(self, client: Any, cache: Cache, *, find_links: Sequence[Path] = (),
                 attempts: int = 4, backoff: float = 0.5,
                 on_bytes: Callable[[int], None] | None = None,
                 max_unknown_size: int = MAX_UNKNOWN_SIZE) -> None:
        self.client, self.cache, self.find_links = client, cache, tuple(find_links)
        self.attempts, self.backoff = attempts, backoff
        self.on_bytes = on_bytes or (lambda n: None)
        self.max_unknown_size = max_unknown_size
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._open: dict[Path, Any] = {}  # partial file -> its response (None before headers)
        # sha256 -> the most bytes of it reported to on_bytes, over every attempt: a retry
        # reports only what passes that mark, and nothing is ever taken back, so a bar
        # never goes backwards (nor shows a negative speed) on a retry or a Ctrl-C
        self._shown: dict[str, int] = {}

    def stop(self) -> None:
        """Abort every download now, from any thread: queued work sees the flag, open
        bodies are cut off under their readers, and the partial files are removed here
        rather than by threads that may still be blocked on a stalled server."""
        self.stopped.set()
        with self._lock:
            open_now = list(self._open.items())
        for partial, resp in open_now:
            _cut(resp)
            partial.unlink(missing_ok=True)

    def fetch(self, want: Want) -> Got:
        hit = self.cache.get(want.sha256, want.size)
        if hit:
            return Got(want=want, path=hit, origin="cache", downloaded=0)
        for folder in self.find_links:
            got = self._from_folder(want, folder)
            if got:
                return got
        errors: list[FetchError] = []
        for url in want.urls:
            if self.stopped.is_set():
                raise Stopped(want.filename)
            try:
                if isinstance(url, PageRef):
                    url = self._lookup(want, url)
                return self._from_url(want, url)
            except FetchError as exc:
                if isinstance(exc, HashMismatch):
                    raise
                errors.append(exc)
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
        return Got(want=want, path=path, origin=f"find-links {folder}", downloaded=0)

    def _from_url(self, want: Want, url: str) -> Got:
        for attempt in range(1, self.attempts + 1):
            try:
                size = self._download(want, url)
                return Got(want=want, path=self.cache.path(want.sha256), origin=redact(url),
                           downloaded=size)
            except _Retry as exc:
                if attempt == self.attempts:
                    raise FetchError(f"{want.filename} from {redact(url)}: {exc} "
                                     f"(gave up after {attempt} attempts)") from None
                if self.stopped.wait(self.backoff * 2 ** (attempt - 1)):
                    raise Stopped(want.filename) from None
        raise AssertionError("unreachable")

    def _lookup(self, want: Want, page: PageRef) -> str:
        """The URL *page* lists for the wanted file (the file is still checked by hash)."""
        import httpx

        from lockkit.index.pages import parse_links

        try:
            with self.client.stream("GET", page.url, headers={"Accept": "text/html"}) as resp:
                status = resp.status_code
                text = resp.read().decode("utf-8", "replace") if status == 200 else ""
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise FetchError(f"{redact(page.url)}: {type(exc).__name__}") from None
        if status != 200:
            raise FetchError(f"{redact(page.url)}: HTTP {status}", hint=_refused(status))
        for link in parse_links(text):
            url, _, fragment = urllib.parse.urljoin(page.url, link["href"]).partition("#")
            name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
            if name == want.filename and fragment in ("", f"sha256={want.sha256}"):
                return url
        raise FetchError(f"{redact(page.url)} does not list {want.filename}")

    def _download(self, want: Want, url: str) -> int:
        import httpx

        out, partial = self.cache.new_partial()
        with self._lock:
            self._open[partial] = None
        received = 0
        try:
            if self.stopped.is_set():  # stopped while this file was being opened
                out.close()
                raise Stopped(want.filename)
            with out, self.client.stream("GET", url, headers=_IDENTITY) as resp:
                self._opened(partial, resp)
                if resp.status_code >= 500:
                    raise _Retry(f"HTTP {resp.status_code}")
                if resp.status_code != 200:
                    raise FetchError(f"{redact(url)}: HTTP {resp.status_code}",
                                     hint=_refused(resp.status_code))
                cap = self._cap(want, url, resp.headers.get("Content-Length"))
                digest = hashlib.sha256()
                # The raw body, as it came, in the transport's own reads: iter_bytes() copies
                # every chunk once more, and a chunk size makes httpx join reads into it
                # (measured on loopback: 423 MB/s as read, 352 MB/s re-chunked to 1 MiB).
                # The identity encoding was asked for; a server that compresses anyway is
                # decoded (the hash is of the file's own bytes).
                encoding = resp.headers.get("Content-Encoding", "").strip().lower()
                chunks = (_raw_body(resp) if encoding in ("", "identity")
                          else resp.iter_bytes(_CHUNK))
                for chunk in chunks:
                    if self.stopped.is_set():
                        raise Stopped(want.filename)
                    received += len(chunk)
                    if received > cap.limit:
                        raise cap.error(received)
                    out.write(chunk)
                    digest.update(chunk)
                    self._report(want.sha256, received)
            self._check(want, url, received, digest.hexdigest())
            if self.stopped.is_set():
                raise Stopped(want.filename)
            self.cache.commit(partial, want.sha256)
            return received
        except (httpx.TransportError, OSError) as exc:  # reset, timeout, truncated, cut off
            if self.stopped.is_set():
                raise Stopped(want.filename) from None
            if isinstance(exc, OSError):
                raise
            raise _Retry(f"{type(exc).__name__}: {redact(str(exc))}") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # too many redirects, a bad URL
            raise FetchError(f"{redact(url)}: {type(exc).__name__}: {redact(str(exc))}") from None
        finally:
            with self._lock:
                self._open.pop(partial, None)
            partial.unlink(missing_ok=True)

    def _report(self, sha256: str, received: int) -> None:
        """Tell on_bytes what this attempt brought past the file's mark (only ever > 0)."""
        shown = self._shown.get(sha256, 0)
        if received > shown:
            self._shown[sha256] = received
            self.on_bytes(received - shown)

    def _opened(self, partial: Path, resp: Any) -> None:
        """Register the response so that :meth:`stop` can cut it off; if stop came while
        the headers were awaited, cut it off now."""
        with self._lock:
            self._open[partial] = resp
        if self.stopped.is_set():
            raise Stopped(partial.name)

    def _cap(self, want: Want, url: str, length: str | None) -> _Cap:
        """The most bytes this body may have: the lock's size, else a generous limit."""
        if want.size is not None:
            cap = _Cap(want.size, lambda n: HashMismatch(
                f"{want.filename} from {redact(url)}: the body is longer than the lock's "
                f"size of {want.size} bytes (got {n} or more); the download was aborted and "
                "nothing was kept"))
        else:
            cap = _Cap(self.max_unknown_size, lambda n: FetchError(
                f"{want.filename} from {redact(url)}: the lock gives no size and the body "
                f"passed lockkit's limit of {self.max_unknown_size} bytes; aborted, nothing "
                "kept", hint="add the file's size to the lock, or check the server"))
        if length and length.isdigit() and int(length) > cap.limit:
            raise cap.error(int(length))  # refused before a byte is written
        return cap

    def _check(self, want: Want, url: str, received: int, digest: str) -> None:
        if want.size is not None and received < want.size:
            raise _Retry(f"truncated body: {received} of {want.size} bytes")
        if digest != want.sha256:
            raise HashMismatch(f"{want.filename} from {redact(url)}: sha256 {digest} does not "
                               f"match the lock's {want.sha256}; the file was discarded")


# Below this many bytes left after the first read, the body goes through h11 to its end
# and the connection is kept for the next file (a TLS handshake costs more than the copies).
_DIRECT_MIN = 8 << 20


def _raw_body(resp: Any) -> Iterator[bytes]:
    """The body of a large HTTP/1.1 response with a Content-Length, read from the
    connection itself once the first chunk has come through httpx.

    Through h11, every byte is copied three times more under the GIL (into its receive
    buffer, out as the event's data, into bytes for httpcore): measured on loopback, one
    150 MB wheel took 0.16 CPU-s through iter_raw() and 0.06 read from the socket, and two
    downloads at once contend for that GIL. The connection is httpcore's documented
    ``network_stream`` extension (a plain socket, TLS, or TLS through a proxy alike).
    h11 hands out everything it holds of a Content-Length body as one event
    (``h11/_readers.py``, ``ContentLengthReader``: ``maybe_extract_at_most(remaining)``),
    so after the first chunk its buffer is empty and the rest of the body is the next
    bytes on the connection. h11 never sees the end of that body: httpcore closes the
    connection when the response closes (``_response_closed``), and the pool opens a new
    one. The bytes are hash-checked and counted as always; a short body is a retry."""
    raw = resp.iter_raw()
    stream = resp.extensions.get("network_stream")
    length = resp.headers.get("Content-Length", "")
    first = next(raw, b"")
    yield first
    left = int(length) - len(first) if length.isdigit() else 0
    if (stream is None or resp.http_version != "HTTP/1.1" or left < _DIRECT_MIN
            or "Transfer-Encoding" in resp.headers):
        yield from raw
        return
    import httpcore
    import httpx

    timeout = resp.request.extensions.get("timeout", {}).get("read")
    while left > 0:
        try:
            data = stream.read(min(left, _CHUNK), timeout)
        except httpcore.TimeoutException as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out", request=resp.request) from None
        except httpcore.NetworkError as exc:
            raise httpx.ReadError(str(exc) or "connection lost", request=resp.request) from None
        if not data:
            raise httpx.RemoteProtocolError("the server closed the connection before the "
                                            "end of the body", request=resp.request)
        left -= len(data)
        yield data


@dataclass(frozen=True)
class _Cap:
    limit: int
    error: Callable[[int], FetchError]


def _cut(resp: Any) -> None:
    """Wake a thread blocked reading *resp*: shut its socket down (``close`` alone does not
    interrupt a ``recv`` in another thread)."""
    if resp is None:
        return
    stream = getattr(resp, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _refused(status: int) -> str | None:
    """A 401/403 is about credentials, not the network: say where they come from."""
    return _REFUSED if status in (401, 403) else None


def http_client(*, connections: int = 8, timeout: float = 60.0,
                credentials: Credentials | None = None) -> _LazyClient:
    """The client downloads share: redirects followed, URL user info sent as Basic auth,
    and *credentials* (the project's, by host) for URLs without user info: a lock's URLs
    never carry any.

    httpx is imported and the client built on the first request only, so a build that
    finds every file in the cache (the warm rebuild) never pays for either.
    """
    return _LazyClient(connections, timeout, credentials or Credentials())


class _LazyClient:
    def __init__(self, connections: int, timeout: float, credentials: Credentials) -> None:
        self._args = (max(1, connections), timeout)
        self._client: Any = None
        self._lock = threading.Lock()
        self.credentials = credentials

    def open(self) -> None:
        """Import httpx and build the client now (before download threads start, so none
        waits on another's import); a no-op once built."""
        with self._lock:
            if self._client is None:
                import httpx

                connections, timeout = self._args
                self._client = httpx.Client(
                    timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)),
                    follow_redirects=True, limits=httpx.Limits(max_connections=connections))

    def stream(self, method: str, url: str, **kw: Any) -> Any:
        kw.setdefault("auth", self.credentials.auth(url))
        self.open()
        return self._client.stream(method, url, **kw)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> _LazyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
