"""The one HTTP client policy: every request lockkit makes goes through a client built here.

compile's PyTorch index pages and the hashes of files their page gave none
(:mod:`lockkit.index.pages`), the wheelhouse's and verify's downloads
(:mod:`lockkit.download.fetch`) are all sent by a :class:`Client`: one ``httpx.Client``
made from one :class:`Policy`, which decides, once for all of them:

- TLS: certifi's CA bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set (what pip,
  uv and httpx itself trust), through :func:`tls_context`;
- proxies: from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
  ``NO_PROXY``, as the standard library reads them: :func:`~lockkit.index.transport.
  proxy_for`);
- credentials: by host (:mod:`lockkit.index.auth`), as Basic auth; redirects are followed
  and the Authorization header is kept on the same origin only (httpx drops it for any
  other host);
- the user agent ``lockkit/<version>``;
- timeouts: *timeout* seconds for the connection and for each read (seconds without a
  byte), the connection bounded by *connect* when that is given;
- pages: read as a stream, at most ``max-page-size`` (:data:`MAX_PAGE`, 64 MiB by default)
  of them kept, the rest never read (:func:`read_page`, which decodes a gzip page itself,
  its output bounded): a mirror serving a 1.5 GB page took a compile to 4.6 GiB of memory;
- the wire: httpx's own, or with *bulk* (downloads) http.client's, read 1 MiB at a time
  (:mod:`lockkit.index.bulk`, for requests that go straight to their host);
- retries: *attempts* in all, ``backoff * 2 ** n`` seconds apart (:meth:`Policy.pause`),
  for a 5xx or a connection broken before the answer, by the client's transport
  (:class:`~lockkit.index.transport.Retrying`: the one rule, for pages, hashes and
  downloads alike). With *fail_fast* (compile), a host that :func:`unreachable` says a
  retry within seconds would only find again (its name does not resolve, it refuses, it
  does not answer in time, its certificate is not trusted) is not retried; downloads (no
  *fail_fast*) retry every transport failure. A body cut short after its headers is its
  reader's to fetch again.

httpx is imported, and the client built, on the first request only: a warm rebuild that
finds every file in the cache never pays for either.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lockkit import __version__
from lockkit._internal.log import VERBOSE
from lockkit._internal.redact import masked

if TYPE_CHECKING:
    import ssl

    import httpx

    from lockkit.index.auth import Credentials

_log = logging.getLogger(__name__)

__all__ = ["CONNECT_TIMEOUT", "MAX_PAGE", "PAGE_ENCODING", "PAGE_HINT", "PER_HOST", "STOP",
           "TIMEOUT", "USER_AGENT", "Client", "PageTooLarge", "Policy", "mib", "read_page",
           "timed_out",           "tls_context", "unreachable"]

USER_AGENT = f"lockkit/{__version__}"
TIMEOUT = 30.0  # seconds: compile --timeout's default (connect, and each read)
CONNECT_TIMEOUT = 15.0  # the longest a download waits for its connection
# Connections at once to one host, a download's files and ranged parts together
# (lockkit.download.transfer): browsers allow 6, aria2 up to 16; a CDN edge serves each
# connection at its own cap, so a few more than a browser's fill a fast link.
PER_HOST = 8
MAX_PAGE = 64 << 20  # bytes: the largest index page read (max-page-size's default, in MiB)
# A request extension (``extensions={STOP: event}``): the event that ends the pauses between
# the transport's attempts at once, none following (Ctrl-C, a failed build).
STOP = "lockkit.stop"
PAGE_HINT = ("if this index's pages are meant to be that large, raise the limit: "
             "--max-page-size MIB, or max-page-size = MIB in lockkit.toml ([tool.lockkit])")


@dataclass(frozen=True, kw_only=True)
class Policy:
    """How one command's requests are sent (see the module's docstring)."""

    timeout: float = TIMEOUT
    connect: float | None = None  # None: *timeout*
    attempts: int = 3
    backoff: float = 0.5
    fail_fast: bool = True
    connections: int | None = None  # the pool's size; None: httpx's default
    bulk: bool = False  # bodies of many MB (downloads): lockkit.index.bulk's wire

    def pause(self, attempt: int) -> float:
        """Seconds to wait after failed attempt *attempt* (counted from 0)."""
        return self.backoff * 2 ** attempt

    def retries(self, exc: BaseException) -> bool:
        """Whether a transport failure is worth another attempt under this policy."""
        return not (self.fail_fast and unreachable(exc))

    def why(self, exc: BaseException, url: str) -> str:
        """A transport failure as the end of "cannot fetch URL: ...", with no secret."""
        import httpx

        if isinstance(exc, httpx.ConnectTimeout):
            return f"no answer within {self.connect or self.timeout:g} s"
        if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
            return f"no answer within {self.timeout:g} s"
        resolve = next((e for e in _causes(exc) if isinstance(e, socket.gaierror)), None)
        if resolve is not None:
            import urllib.parse

            host = urllib.parse.urlsplit(url).hostname or ""
            return f"cannot resolve the host name {masked(host)}: {resolve.strerror}"
        return masked(str(exc)) or type(exc).__name__

    def build(self) -> httpx.Client:
        """A new ``httpx.Client`` that sends requests as this policy says."""
        import httpx

        from lockkit.index.transport import Retrying

        limits = (httpx.Limits(max_connections=max(1, self.connections))
                  if self.connections else httpx.Limits())
        return httpx.Client(
            transport=Retrying(self, verify=tls_context, limits=limits, stop=STOP,
                               bulk=self.bulk),
            trust_env=True, follow_redirects=True, headers={"User-Agent": USER_AGENT},
            timeout=httpx.Timeout(self.timeout, connect=self.connect or self.timeout))


def tls_context() -> ssl.SSLContext:
    """certifi's CA bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set; a bundle
    that cannot be loaded is a :class:`~lockkit.errors.ConfigError` naming the variable
    (not a network failure of whichever URL came first)."""
    import os
    import ssl

    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not cafile and not capath:
        import certifi

        cafile = certifi.where()
    try:
        return ssl.create_default_context(cafile=cafile or None, capath=capath or None)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        from lockkit.errors import ConfigError

        where = f"SSL_CERT_FILE={cafile}" if os.environ.get("SSL_CERT_FILE") else \
            f"SSL_CERT_DIR={capath}" if capath else f"certifi's bundle {cafile}"
        raise ConfigError(f"{where}: cannot load CA certificates: "
                          f"{getattr(exc, 'strerror', None) or exc}",
                          hint="name a PEM file of CA certificates, or unset it to use "
                               "certifi's") from None


def unreachable(exc: BaseException) -> bool:
    """A failure that a retry within seconds would only repeat: the name does not resolve,
    the host refuses or does not answer in time, its certificate is not trusted, the URL
    is not one httpx can send. (A 5xx, or a connection reset mid-exchange, is worth a
    retry.) A wait for a free connection of the pool is none of these: it says nothing of
    the host."""
    import ssl

    import httpx

    if isinstance(exc, httpx.PoolTimeout):
        return False
    if isinstance(exc, (httpx.TimeoutException, TimeoutError, httpx.InvalidURL,
                        httpx.UnsupportedProtocol)):
        return True
    return any(isinstance(e, (socket.gaierror, ConnectionRefusedError,
                              ssl.SSLCertVerificationError)) for e in _causes(exc))


def timed_out(exc: BaseException) -> bool:
    """The host sent nothing within the timeout (not a wait for a free connection of the
    pool, which says nothing of the host)."""
    import httpx

    return isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.PoolTimeout)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """*exc* and the exceptions it was raised from (httpx's from httpcore's from the
    socket's)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


class PageTooLarge(Exception):
    """An index page past its limit, which :func:`read_page` stopped reading. Its caller
    says it as a :class:`~lockkit.errors.LockkitError` of its own kind, hint
    :data:`PAGE_HINT` (the routing index records it on the page uv asked for)."""

    def __init__(self, url: str, limit: int) -> None:
        super().__init__(f"{masked(url)}: the page is larger than {mib(limit)}, the most "
                         "lockkit reads of an index page (max-page-size); not read further")
        self.url, self.limit = url, limit


def mib(size: int) -> str:
    """*size* bytes for a message: ``64 MiB``, or ``1000 bytes`` when not whole MiB."""
    return f"{size >> 20} MiB" if size and not size % (1 << 20) else f"{size} bytes"


# What an index page is asked in (PAGE_ENCODING) and read from by read_page itself, its
# output bounded; another coding a server sends unasked is httpx's to decode
PAGE_ENCODING = "gzip"


def read_page(resp: httpx.Response, url: str, limit: int = MAX_PAGE) -> bytes:
    """The body of the streamed response *resp* to *url* (decoded, as ``resp.read()``
    gives it), at most *limit* bytes, else :class:`PageTooLarge`: before any byte of it
    when its Content-Length says more; else as soon as the bytes read pass it, so what is
    held is the limit and one network read (up to 1 MiB on the bulk wire). A gzip body
    (:data:`PAGE_ENCODING`) is decoded here, never more than the limit allows past it
    (``zlib``'s *max_length*): a page that compresses a thousandfold is refused at the
    limit, not inflated a network read at a time; another coding a server sends unasked
    is decoded by httpx, a network read at a time."""
    length = resp.headers.get("Content-Length", "").strip()
    if length.isdigit() and int(length) > limit:
        raise PageTooLarge(url, limit)
    coding = resp.headers.get("Content-Encoding", "").strip().lower()
    if coding not in ("", "identity", PAGE_ENCODING):
        return _read_decoded(resp, url, limit)
    import zlib

    gzip = zlib.decompressobj(16 + zlib.MAX_WBITS) if coding == PAGE_ENCODING else None
    body = bytearray()
    try:
        for raw in resp.iter_raw():
            # past the limit by one byte at most: refused, whatever the rest would give
            body += gzip.decompress(raw, limit + 1 - len(body)) if gzip else raw
            if len(body) > limit:
                raise PageTooLarge(url, limit)
        body += gzip.flush() if gzip else b""
    except zlib.error as exc:
        import httpx

        raise httpx.DecodingError(f"{masked(url)}: not gzip as it says: {exc}",
                                  request=resp.request) from exc
    if len(body) > limit:
        raise PageTooLarge(url, limit)
    return bytes(body)


def _read_decoded(resp: httpx.Response, url: str, limit: int) -> bytes:
    """:func:`read_page` of a body in a coding httpx decodes (each network read whole)."""
    body = bytearray()
    for chunk in resp.iter_bytes():
        if len(body) + len(chunk) > limit:
            raise PageTooLarge(url, limit)
        body += chunk
    return bytes(body)


class Client:
    """One command's HTTP client: built from *policy* on its first request, shared by
    every thread, and sending each request with the *credentials* of its host."""

    def __init__(self, policy: Policy | None = None,
                 credentials: Credentials | None = None) -> None:
        from lockkit.index.auth import Credentials

        self.policy = policy or Policy()
        self.credentials = credentials if credentials is not None else Credentials()
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def open(self) -> httpx.Client:
        """The httpx client, built now if it is not yet (before download threads start,
        so that none waits on another's import)."""
        with self._lock:
            if self._client is None:
                self._client = self.policy.build()
            return self._client

    @contextlib.contextmanager
    def stream(self, method: str, url: str, **kw: Any) -> Iterator[httpx.Response]:
        """``httpx.Client.stream``, with the credentials of *url*'s host unless *auth* is
        given; with ``-v``, each URL fetched, its status and time (redacted by the log's
        handler, as every line is)."""
        kw.setdefault("auth", self.credentials.auth(url))
        start = time.perf_counter()
        with self.open().stream(method, url, **kw) as resp:
            try:
                yield resp
            finally:
                _log.log(VERBOSE, "%s %s: %s (%.2f s)", method, url, resp.status_code,
                         time.perf_counter() - start)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
