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
- the attempts are ``Policy.pause`` seconds apart (0.5, 1, 2... s), said at ``-v``, by the
  one retry loop (:func:`lockkit.index.retry.attempts`); a pause
  ends at once when the request's stop event (the extension named
  :data:`~lockkit.index.http.STOP`, given as *stop*) is set (Ctrl-C, a failed build), and
  no attempt follows.

What the transport sees ends with the headers: a body cut short after them is its
reader's to resume (:mod:`lockkit.download.transfer`), through the same loop and the
same policy object.

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
from typing import TYPE_CHECKING

import httpx

from lockkit.index.retry import Again, RetryRule, attempts

if TYPE_CHECKING:
    import ssl

__all__ = ["SAFE", "Retrying", "proxy_for"]

_log = logging.getLogger(__name__)

SAFE = frozenset({"GET", "HEAD"})  # sent again after any failure, and after a 5xx


def _gave_up(exc: httpx.TransportError, request: httpx.Request, tries: int,
             stopped: bool) -> httpx.Response:
    """Raise *exc*, the last of *tries* attempts, saying so when it was not the only one."""
    if stopped or tries == 1:
        raise exc
    raise type(exc)(f"{exc} (gave up after {tries} attempts)", request=request) from exc


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

        def once(attempt: int) -> httpx.Response:
            start = time.perf_counter()
            try:
                resp = inner.handle_request(request)
            except httpx.TransportError as exc:
                if not self._retries(request, exc):
                    raise
                failed = exc  # the name *exc* is gone after this block
                raise Again(self.policy.why(exc, str(request.url)),
                            settle=lambda tries, stopped: _gave_up(failed, request, tries,
                                                                    stopped)) from exc
            if resp.status_code < 500 or request.method not in SAFE:
                return resp
            raise Again(f"{resp.status_code} ({time.perf_counter() - start:.2f} s)",
                        settle=lambda tries, stopped: resp, discard=resp.close)

        return attempts(self.policy, request.extensions.get(self._stop),
                        f"{request.method} {request.url}", once)

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
