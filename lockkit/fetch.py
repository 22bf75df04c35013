"""Downloads identified by hash: a content-addressed cache, streaming checks, retries.

A file is known by its sha256; a URL is only a place where it was found. Sources
are tried in order — the cache, ``--find-links`` folders, then each URL — and the
bytes land in the cache under their hash only after the hash matched, through a
temp file and a rename, so an interrupted run, a crash or two builds sharing the
cache never leave a partial file under a final name.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockkit.auth import Credentials
from lockkit.errors import LockkitError
from lockkit.redact import redact

__all__ = ["Cache", "FetchError", "Fetcher", "Got", "HashMismatch", "PageRef", "Stopped", "Want",
           "default_cache_dir", "http_client", "link_or_copy"]

_CHUNK = 1 << 20
_IDENTITY = {"Accept-Encoding": "identity"}  # the file's own bytes, as pip asks
_PARTIAL_MAX_AGE = 24 * 3600
# The cap on a body whose size the lock does not give: larger than any wheel published
# (the biggest CUDA wheels are a few GiB), small enough that an endless body ends.
MAX_UNKNOWN_SIZE = 20 << 30  # partial downloads older than this are debris of dead runs
_REFUSED = ("the server refused the credentials (or got none): check the user info of "
            "index-url and [mirrors] / --mirror, the ${VAR}s they use, or the netrc file")


class FetchError(LockkitError):
    """A file could not be obtained from any source."""


class HashMismatch(FetchError):
    """Bytes did not match the lock: never retried into success, never kept."""


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


def default_cache_dir() -> Path:
    """The user cache folder (``LOCKKIT_CACHE_DIR`` overrides)."""
    if os.environ.get("LOCKKIT_CACHE_DIR"):
        return Path(os.environ["LOCKKIT_CACHE_DIR"])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return base / "lockkit" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "lockkit"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lockkit"


class Cache:
    """One copy per sha256, shared by every platform and project."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.partial = root / "partial"

    def path(self, sha256: str) -> Path:
        return self.root / "sha256" / sha256[:2] / sha256

    def get(self, sha256: str, size: int | None) -> Path | None:
        """The blob for *sha256*, re-hashed: the cache is shared by every project and
        writable by its owner, so a hit is checked, never trusted. A blob whose bytes no
        longer hash to its name is evicted (removed) and the caller fetches it again."""
        path = self.path(sha256)
        try:
            found = path.stat().st_size
        except FileNotFoundError:
            return None
        if (size is not None and found != size) or _sha256_of(path) != sha256:
            self.evict(path)
            return None
        _read_only(path)  # a blob from an older lockkit, or one someone made writable
        return path

    def evict(self, path: Path) -> None:
        try:
            os.chmod(path, 0o644)  # Windows refuses to remove a read-only file
            path.unlink()
        except FileNotFoundError:
            pass

    def new_partial(self) -> tuple[Any, Path]:
        self.partial.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.partial, suffix=".part")
        return os.fdopen(fd, "wb"), Path(name)

    def commit(self, partial: Path, sha256: str) -> Path:
        final = self.path(sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        _read_only(partial)  # blobs are read-only from the moment they have their name
        try:
            os.replace(partial, final)  # same content under the same name: a race is harmless
        except PermissionError:  # Windows: a read-only file cannot be replaced
            self.evict(final)
            os.replace(partial, final)
        return final

    def sweep(self) -> None:
        """Remove partial files left by runs that died long ago."""
        if not self.partial.is_dir():
            return
        now = time.time()
        for part in self.partial.glob("*.part"):
            try:
                if now - part.stat().st_mtime > _PARTIAL_MAX_AGE:
                    part.unlink()
            except OSError:
                pass


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
            digest = _copy(src, out, lambda n: None)
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

        from lockkit.routing import parse_links

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
                for chunk in resp.iter_bytes(_CHUNK):
                    if self.stopped.is_set():
                        raise Stopped(want.filename)
                    received += len(chunk)
                    if received > cap.limit:
                        raise cap.error(received)
                    out.write(chunk)
                    digest.update(chunk)
                    self.on_bytes(len(chunk))
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
            if received and partial.exists():
                self.on_bytes(-received)  # this attempt's bytes did not count
            partial.unlink(missing_ok=True)

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


def _copy(src: Any, dst: Any, on_bytes: Callable[[int], None]) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: src.read(_CHUNK), b""):
        dst.write(block)
        digest.update(block)
        on_bytes(len(block))
    return digest.hexdigest()


def link_or_copy(src: Path, dst: Path, sha256: str) -> str:
    """Place the cache blob *src*, whose hash is *sha256*, at *dst*; return the sha256 of
    the bytes now at *dst* (what a manifest may record).

    A hard link shares the blob's inode: writing through the linked file (``cp x.whl
    wheelhouse/...``) would rewrite the blob for every later build of every project that
    shares the cache. So a link is made only to a blob this process cannot write: the
    cache commits blobs with mode 0444, and the caller has just checked its hash
    (``Cache.get`` re-hashes a hit, a download is hashed as it streams), so the linked
    bytes are those checked bytes and *sha256* is returned. Read-only is not a barrier
    for root (``os.access`` says so) or where links are refused: then the blob is copied
    and hashed while copying, and the copy's own digest is returned.
    """
    if not os.access(src, os.W_OK):
        try:
            os.link(src, dst)
            return sha256
        except OSError:
            pass
    with src.open("rb") as fin, dst.open("xb") as fout:
        return _copy(fin, fout, lambda n: None)


def _read_only(path: Path) -> None:
    try:
        os.chmod(path, 0o444)
    except OSError:  # a blob another user committed: it is still re-hashed on every hit
        pass


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


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

    def stream(self, method: str, url: str, **kw: Any) -> Any:
        kw.setdefault("auth", self.credentials.auth(url))
        with self._lock:
            if self._client is None:
                import httpx

                connections, timeout = self._args
                self._client = httpx.Client(
                    timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)),
                    follow_redirects=True, limits=httpx.Limits(max_connections=connections))
        return self._client.stream(method, url, **kw)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> _LazyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
