"""compile's HTTP side: the PyTorch index pages the routing index serves, and the hashes
of files whose page gave none (:class:`Http`), sent as :mod:`lockkit.index.http` says."""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import TYPE_CHECKING

from lockkit._internal.log import VERBOSE
from lockkit._internal.redact import masked
from lockkit.errors import IndexError_
from lockkit.index.http import MAX_PAGE, PAGE_ENCODING, TIMEOUT, Client, Policy, read_page

if TYPE_CHECKING:
    from lockkit.index.auth import Credentials

__all__ = ["Http", "parse_links"]

_log = logging.getLogger(__name__)


class Http:
    """The compile's HTTP side: PyTorch index pages for the routing index, and hashes of
    files whose index page gave none, through one :class:`~lockkit.index.http.Client`
    (TLS, proxies, redirects, credentials by host, user agent: the one policy). Requests
    go with *credentials*, the project's by host (``lockkit.index.auth``): a page or file
    URL without user info of its own may still be on a host that needs them.

    Pages go through the one client as every other request does, on the policy's *bulk*
    wire (:mod:`lockkit.index.bulk`: http.client, which the routing index's server has
    loaded already) when they go straight to their host, as downloads do: the page uv
    waits on first comes ~12 ms sooner than on httpx's own wire, which imports httpcore
    and h11 for it (issue 35; the CA bundle is loaded at the first ``https://``
    connection on either). They are asked in gzip (:data:`~lockkit.index.http.
    PAGE_ENCODING`), which :func:`~lockkit.index.http.read_page` decodes within the page
    limit. Measured in issue 25 against the standard library's urllib, httpx cost ~15-25
    ms more per compile on a loopback index: the price of one library.

    Failing fast: *timeout* bounds the connection and each read (seconds without an
    answer). A host that cannot be resolved, refuses, or does not answer in time is not
    asked again: not in this fetch (the client's transport retries a 5xx or a connection
    broken before the answer: :mod:`lockkit.index.transport`) and not for the rest of this
    run, which shares this object (``compile --all``: 20 platforms on 9 index URLs pay for
    an unreachable host once). What is remembered is only that the host failed, in this
    process's memory, never on disk.

    A page is fetched once per run: a platform asking for a URL another platform of this
    run has fetched (``compile --all``: 20 platforms on 9 PyTorch indexes) gets the same
    answer, and one asking while it comes waits for it. A 5xx answer is not kept (the
    next asker tries again), nor is a failure; nothing is kept beyond this object.

    A page is read as a stream, at most *max_page* bytes (the project's ``max-page-size``,
    64 MiB unless it says more) and refused past that (``lockkit.index.http.read_page``:
    :class:`~lockkit.index.http.PageTooLarge`, which the routing index reports for the
    page uv asked for); the largest real PyTorch index page is a few MB.
    """

    def __init__(self, *, attempts: int = 3, backoff: float = 0.5,
                 credentials: Credentials | None = None, timeout: float = TIMEOUT,
                 max_page: int | None = None) -> None:
        from lockkit.index.auth import Credentials

        if credentials is None:
            credentials = Credentials()
        self.client = Client(Policy(timeout=timeout, attempts=attempts, backoff=backoff,
                                    fail_fast=True, bulk=True), credentials)
        self.policy = self.client.policy
        self.credentials = credentials
        self.timeout = timeout
        self.max_page = max_page or MAX_PAGE
        self._lock = threading.Lock()
        self.failed: dict[str, str] = {}  # origin -> why it failed, in this run
        self._pages: dict[str, tuple[int, str]] = {}  # URL -> its answer, in this run
        self._loading: dict[str, threading.Event] = {}  # URLs being fetched now

    def page(self, url: str) -> tuple[int, str]:
        """GET a PEP 503 page (HTML: the PyTorch index has no JSON API); 5xx and resets
        are retried by the client's transport, whose last answer this is. A page past
        :attr:`max_page` bytes is :class:`~lockkit.index.http.PageTooLarge`. Once per run
        (see the class's docstring)."""
        with self._lock:
            known = self._pages.get(url)
            loading = self._loading.get(url) if known is None else None
            mine = known is None and loading is None
            if mine:
                loading = self._loading[url] = threading.Event()
        if known is not None:
            _log.log(VERBOSE, "GET %s: %s, as fetched earlier in this run", url, known[0])
            return known
        if not mine:
            assert loading is not None
            loading.wait()  # the first asker's answer, or its failure: then ask anew
            with self._lock:
                known = self._pages.get(url)
            return known if known is not None else self._get(url)
        try:
            answer = self._get(url)
            if answer[0] < 500:
                with self._lock:
                    self._pages[url] = answer
            return answer
        finally:
            with self._lock:
                self._loading.pop(url, None)
            assert loading is not None
            loading.set()

    def _get(self, url: str) -> tuple[int, str]:
        import httpx

        from lockkit.index.urls import origin

        host = origin(url)
        with self._lock:
            known = self.failed.get(host)
        if known is not None:
            raise IndexError_(f"cannot fetch {masked(url)}: not asked again, its host failed "
                              f"earlier in this run: {known}")
        try:
            with self.client.stream("GET", url, headers=_PAGE_HEADERS) as resp:
                body = read_page(resp, url, self.max_page)
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            why = self.policy.why(exc, url)
            with self._lock:
                self.failed.setdefault(host, why)
            raise IndexError_(f"cannot fetch {masked(url)}: {why}") from exc
        return resp.status_code, body.decode(resp.encoding or "utf-8", "replace")

    def hash(self, url: str) -> str:
        import httpx

        digest = hashlib.sha256()
        try:
            with self.client.stream("GET", url) as resp:
                resp.raise_for_status()
                for chunk in resp.iter_bytes():
                    digest.update(chunk)
        except httpx.HTTPError as exc:
            raise IndexError_(f"cannot hash {masked(url)}: {masked(str(exc))}") from exc
        return digest.hexdigest()

    def close(self) -> None:
        self.client.close()


_PAGE_HEADERS = {"Accept": "text/html", "Accept-Encoding": PAGE_ENCODING}


def parse_links(text: str) -> list[dict[str, str]]:
    """The ``<a>`` elements of a PEP 503 page: attributes (unescaped) plus ``#text``.
    (html.parser is imported here: compile starts uv before it fetches any page.)"""
    import html.parser

    class _Links(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.links: list[dict[str, str]] = []
            self._open: dict[str, str] | None = None

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "a":
                self._open = {k: v or "" for k, v in attrs}
                self._open.setdefault("#text", "")

        def handle_data(self, data: str) -> None:
            if self._open is not None:
                self._open["#text"] += data

        def handle_endtag(self, tag: str) -> None:
            if tag == "a" and self._open is not None:
                if self._open.get("href"):
                    self.links.append(self._open)
                self._open = None

    parser = _Links()
    parser.feed(text)
    parser.close()
    return parser.links
