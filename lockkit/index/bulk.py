"""The wire under downloads: an httpx transport (:class:`Bulk`) that sends requests with the
standard library's :mod:`http.client` and reads a body 1 MiB at a time.

Why: httpx's own transport (httpcore and h11) reads a body 64 KiB at a time, through about
fifteen Python calls and two releases of the GIL per read (``settimeout``, ``recv``). On
loopback (``benchmarks/download.py``, one file of 200 MiB, one run) that cost 0.54 CPU-s
and 1.09 s against ``curl -Z``'s 0.73 s; read by http.client's buffered reader, which fills
one bytes object of 1 MiB in place with a ``recv_into`` per socket read, it cost 0.25 CPU-s
and 0.56 s. No dependency is added: http.client is the wire urllib3, and so pip's and
requests', is built on.

Only the wire changes: the :class:`~lockkit.index.http.Client` above it (credentials,
redirects, the user agent, timeouts) and the retry rule around it
(:class:`~lockkit.index.transport.Retrying`, which routes only requests that go straight to
their host here; a proxied one keeps httpx's transport) are the same for every request.
What httpx's transport gave a download, this one gives too:

- a pool of kept-alive connections per origin, at most ``max_connections`` in use at once
  (a longer wait than the pool timeout is ``httpx.PoolTimeout``); an idle connection the
  server has closed (readable while idle) is dropped, never sent a request;
- TLS through the client's context, made by *verify* at the first ``https://`` connection
  (certificate and host name checked);
- the connect timeout, then the read timeout for each read;
- failures as httpx's exceptions, raised from the socket's (``ConnectError`` from a refused
  connection, an unknown host, an untrusted certificate; ``ConnectTimeout``,
  ``ReadTimeout``; ``RemoteProtocolError`` for a body cut short of its Content-Length or
  an answer that is not HTTP; ``ReadError``), so that the retry rule and the
  :class:`~lockkit.download.fetch.Fetcher` judge them as before;
- the ``network_stream`` response extension with ``get_extra_info("socket")``, as httpcore
  documents it: a stop shuts the socket down under its reader.

Imported when a download client is built (it imports httpx).
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    import ssl

__all__ = ["READ", "Bulk"]

READ = 1 << 20  # bytes asked of each read of a body

_Origin = tuple[str, str, int]


class Bulk(httpx.BaseTransport):
    """Sends requests over pooled http.client connections (see the module's docstring)."""

    def __init__(self, *, verify: Callable[[], ssl.SSLContext], limits: httpx.Limits) -> None:
        self._verify = verify
        self._slots = threading.BoundedSemaphore(limits.max_connections or 100)
        self._idle: dict[_Origin, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        if not self._slots.acquire(timeout=timeout.get("pool")):
            raise httpx.PoolTimeout("no connection of the pool came free", request=request)
        try:
            origin = _origin(request.url)
            conn = self._connection(origin, request, timeout)
            resp = _send(conn, request)
        except BaseException:
            self._slots.release()
            raise
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in resp.getheaders()]
        return httpx.Response(
            resp.status, headers=headers, stream=_Body(self, origin, conn, resp, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": resp.reason.encode(
                "latin-1", "replace"), "network_stream": _Stream(conn.sock)})

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [conn for conns in self._idle.values() for conn in conns]
            self._idle.clear()
        for conn in idle:
            conn.close()

    def _connection(self, origin: _Origin, request: httpx.Request,
                    timeout: dict[str, float | None]) -> http.client.HTTPConnection:
        """A kept-alive connection to *origin* that the server has not closed, or a new one."""
        while True:
            with self._lock:
                idle = self._idle.get(origin)
                conn = idle.pop() if idle else None
            if conn is None:
                break
            if conn.sock is not None and not _readable(conn.sock):
                return conn
            conn.close()  # closed by the server while idle (or it sent what was not asked)
        scheme, host, port = origin
        if scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=timeout.get("connect"),
                                               context=self._verify())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout.get("connect"))
        try:
            conn.connect()
        except TimeoutError as exc:
            conn.close()
            raise httpx.ConnectTimeout(str(exc) or "timed out", request=request) from exc
        except OSError as exc:  # refused, unknown host, untrusted certificate (ssl.SSLError)
            conn.close()
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        assert conn.sock is not None
        conn.sock.settimeout(timeout.get("read"))
        return conn

    def give_back(self, origin: _Origin, conn: http.client.HTTPConnection, keep: bool) -> None:
        """*conn*'s response is closed: keep the connection for the next request or close it."""
        with self._lock:
            keep = keep and not self._closed
            if keep:
                self._idle.setdefault(origin, []).append(conn)
        if not keep:
            conn.close()
        self._slots.release()


class _Body(httpx.SyncByteStream):
    """A response's body in reads of ``READ`` bytes; closing it gives the connection back."""

    def __init__(self, pool: Bulk, origin: _Origin, conn: http.client.HTTPConnection,
                 resp: http.client.HTTPResponse, request: httpx.Request) -> None:
        self._pool, self._origin, self._conn = pool, origin, conn
        self._resp, self._request = resp, request
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        with _mapped(self._request, httpx.ReadTimeout, httpx.ReadError):
            while chunk := self._resp.read(READ):
                yield chunk
        if self._resp.length:  # http.client leaves this check to its caller
            raise httpx.RemoteProtocolError(
                f"peer closed connection without sending complete message body "
                f"({self._resp.length} bytes short of its Content-Length)",
                request=self._request)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        keep = self._resp.isclosed() and not self._resp.will_close  # read to its end
        if not keep:
            self._resp.close()
        self._pool.give_back(self._origin, self._conn, keep)


class _Stream:
    """The ``network_stream`` response extension, as httpcore documents it."""

    def __init__(self, sock: socket.socket | None) -> None:
        self._sock = sock

    def get_extra_info(self, info: str) -> Any:
        return self._sock if info == "socket" else None


def _readable(sock: socket.socket) -> bool:
    """Whether *sock* has something to read (an idle connection: the server closed it)."""
    if hasattr(select, "poll"):  # no FD_SETSIZE limit
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


def _origin(url: httpx.URL) -> _Origin:
    if url.scheme not in ("http", "https"):
        raise httpx.UnsupportedProtocol(f"the URL's scheme is {url.scheme!r}, not http(s)")
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def _send(conn: http.client.HTTPConnection, request: httpx.Request) -> http.client.HTTPResponse:
    """Send *request* as httpx built it (its Host header included); the answer's headers."""
    try:
        with _mapped(request, httpx.ReadTimeout, httpx.ReadError):
            conn.putrequest(request.method, request.url.raw_path.decode("ascii"),
                            skip_host=True, skip_accept_encoding=True)
            for name, value in request.headers.raw:
                conn.putheader(name, value)
            conn.endheaders(request.read() or None)
            return conn.getresponse()
    except BaseException:
        conn.close()
        raise


@contextlib.contextmanager
def _mapped(request: httpx.Request, timeout: type[httpx.TimeoutException],
            other: type[httpx.TransportError]) -> Iterator[None]:
    """The socket's and http.client's failures inside the block as httpx's, raised from
    them: a timeout as *timeout*, an answer that is not HTTP or is cut short as
    ``RemoteProtocolError``, another OSError as *other*."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out", request=request) from exc
    except http.client.HTTPException as exc:  # not HTTP, closed before an answer, cut short
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__,
                                        request=request) from exc
    except OSError as exc:
        raise other(str(exc) or type(exc).__name__, request=request) from exc
