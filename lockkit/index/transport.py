"""The one retry rule of lockkit's HTTP client: an httpx transport (:class:`Retrying`) that
sends each request up to :attr:`Policy.attempts <lockkit.index.http.Policy>` times, as
pip mounts ``urllib3.Retry`` on its session's adapters and pdm mounts an
``httpx.HTTPTransport(retries=...)`` per source (httpx's own ``retries=`` covers connect
failures only). Every caller of a :class:`~lockkit.index.http.Client`, pages, hashes and
downloads alike, gets the same rule:

- a connect failure is retried (nothing was sent);
- any other transport failure (a timeout, a connection reset or closed before the answer)
  is retried for a GET or HEAD only, which are safe to send again;
- with *fail_fast* (compile), what :func:`~lockkit.index.http.unreachable` says a retry
  within seconds would only repeat is not retried;
- a 5xx answer to a GET or HEAD is retried; after the last attempt it is returned, for the
  caller to say;
- the attempts are ``Policy.pause`` seconds apart (0.5, 1, 2... s), said at ``-v``; a pause
  ends at once when the request's stop event (the extension named
  :data:`~lockkit.index.http.STOP`, given as *stop*) is set (Ctrl-C, a failed build), and
  no attempt follows.

What the transport sees ends with the headers: a body cut short after them is its
reader's to fetch again (:class:`~lockkit.wheelhouse.fetch.Fetcher`).

With *bulk* (downloads), a request that goes straight to its host is sent on
:mod:`lockkit.index.bulk`'s wire (http.client, 1 MiB reads); a proxied one on httpx's.

Proxies come from the environment as the standard library reads them
(``urllib.request.getproxies``: ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, and
``NO_PROXY`` through ``proxy_bypass``, as requests does), once per client: a client given its
own transport no longer applies httpx's. Each proxy gets its own ``httpx.HTTPTransport``
(its own pool), as httpx's mounts give it.

Imported when the first client is built (it imports httpx).
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import httpx

from lockkit._internal.log import VERBOSE

if TYPE_CHECKING:
    import ssl

__all__ = ["SAFE", "Retrying", "RetryRule", "proxy_for"]

_log = logging.getLogger(__name__)

SAFE = frozenset({"GET", "HEAD"})  # sent again after any failure, and after a 5xx


class RetryRule(Protocol):
    """What the transport asks of a policy (:class:`lockkit.index.http.Policy` is the one)."""

    @property
    def attempts(self) -> int: ...

    def pause(self, attempt: int) -> float: ...

    def retries(self, exc: BaseException) -> bool: ...

    def why(self, exc: BaseException, url: str) -> str: ...


class Retrying(httpx.BaseTransport):
    """Sends each request as *policy* says (see the module's docstring) through a
    transport per proxy (``httpx.HTTPTransport``, or with *bulk* a
    :class:`~lockkit.index.bulk.Bulk` for requests straight to their host), made with
    *limits* on first use and the TLS context *verify* makes (called once, when the first
    transport that needs it is made: a page or download from ``http://`` URLs never loads
    a CA bundle); the request extension *stop* holds the event that ends the pauses."""

    def __init__(self, policy: RetryRule, *, verify: Callable[[], ssl.SSLContext],
                 limits: httpx.Limits, stop: str, bulk: bool = False) -> None:
        self.policy, self._stop, self._bulk = policy, stop, bulk
        self._verify, self._limits = verify, limits
        self._context: ssl.SSLContext | None = None
        self._context_lock = threading.Lock()
        self._proxies = urllib.request.getproxies()
        self._routes: dict[tuple[str | None, bool], httpx.BaseTransport] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._route(request.url)
        stop = request.extensions.get(self._stop)
        for attempt in range(self.policy.attempts):
            last = attempt + 1 == self.policy.attempts
            start = time.perf_counter()
            try:
                resp = inner.handle_request(request)
            except httpx.TransportError as exc:
                if last or not self._retries(request, exc):
                    if attempt == 0:
                        raise
                    raise type(exc)(f"{exc} (gave up after {attempt + 1} attempts)",
                                    request=request) from exc
                _log.log(VERBOSE, "%s %s: %s", request.method, request.url,
                         self.policy.why(exc, str(request.url)))
                if self._paused(request, attempt, stop):
                    raise
                continue
            if resp.status_code < 500 or request.method not in SAFE or last:
                return resp
            _log.log(VERBOSE, "%s %s: %s (%.2f s)", request.method, request.url,
                     resp.status_code, time.perf_counter() - start)
            if self._paused(request, attempt, stop):
                return resp  # stopped: the last answer is the caller's to say
            resp.close()
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            for transport in self._routes.values():
                transport.close()
            self._routes.clear()

    def _retries(self, request: httpx.Request, exc: httpx.TransportError) -> bool:
        """Whether a failed attempt is worth another: nothing was sent (a connect
        failure), or the request is safe to send again; and the policy allows it."""
        sent_nothing = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
        return (sent_nothing or request.method in SAFE) and self.policy.retries(exc)

    def _paused(self, request: httpx.Request, attempt: int,
                stop: threading.Event | None) -> bool:
        """Wait before the next attempt, said at ``-v``; True when *stop* was set."""
        pause = self.policy.pause(attempt)
        _log.log(VERBOSE, "%s %s: retrying in %.1f s", request.method, request.url, pause)
        if stop is None:
            time.sleep(pause)
            return False
        return stop.wait(pause)

    def _route(self, url: httpx.URL) -> httpx.BaseTransport:
        proxy = proxy_for(url, self._proxies)
        # httpx's wire takes its TLS context when it is made: requests straight to an
        # http:// host get one of their own that never makes a TLS connection, so that
        # an http:// mirror's pages load no CA bundle (~20 ms, on the path of the page
        # uv waits for); a redirect to https:// takes the other route
        plain = proxy is None and url.scheme == "http" and not self._bulk
        with self._lock:
            transport = self._routes.get((proxy, plain))
            if transport is None:
                transport = self._routes[proxy, plain] = self._transport(proxy, plain)
            return transport

    def _transport(self, proxy: str | None, plain: bool = False) -> httpx.BaseTransport:
        """The wire for requests through *proxy* (None: straight to their host); *plain*:
        for ``http://`` URLs straight to their host only, with a TLS context that trusts
        no certificate (it is never used: no CA bundle is loaded for it)."""
        if self._bulk and proxy is None:
            from lockkit.index.bulk import Bulk

            return Bulk(verify=self._tls, limits=self._limits)
        if plain:
            import ssl

            verify = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # no CA: refuses every peer
            return httpx.HTTPTransport(verify=verify, limits=self._limits)
        return httpx.HTTPTransport(verify=self._tls(), limits=self._limits, proxy=proxy)

    def _tls(self) -> ssl.SSLContext:
        """The TLS context, made by *verify* on first use."""
        with self._context_lock:
            if self._context is None:
                self._context = self._verify()
            return self._context


def proxy_for(url: httpx.URL, proxies: dict[str, str]) -> str | None:
    """The proxy *url* goes through, of *proxies* (``urllib.request.getproxies()``'s);
    None: straight to its host (none set, or ``NO_PROXY`` names the host)."""
    proxy = proxies.get(url.scheme) or proxies.get("all")
    host = url.host if url.port is None else f"{url.host}:{url.port}"
    if not proxy or urllib.request.proxy_bypass(host):  # NO_PROXY, as requests reads it
        return None
    return proxy if "://" in proxy else f"http://{proxy}"
