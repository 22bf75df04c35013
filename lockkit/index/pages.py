"""compile's HTTP side: the PyTorch index pages the routing index serves, and the hashes
of files whose page gave none (:class:`Http`). Imports nothing heavy: a compile builds it
before uv starts, and the routing index answers uv's first question from its pages."""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from lockkit import __version__
from lockkit._internal.redact import redact
from lockkit.errors import IndexError_

if TYPE_CHECKING:
    from lockkit.config.project import Project
    from lockkit.index.auth import Credentials

__all__ = ["TIMEOUT", "Http", "parse_links"]

TIMEOUT = 30.0  # seconds: compile --timeout's default (connect, and each read)


class Http:
    """The compile's HTTP side: PyTorch index pages for the routing index, and hashes of
    files whose index page gave none.

    Pages are fetched with the standard library's ``urllib.request``: uv asks the routing
    index for a page about 20 ms after it starts, and the page is on its critical path;
    httpx takes ~40 ms to import, ``urllib.request`` (http.client, email) ~12 ms. It
    behaves as the httpx client of the other commands does:
    proxies from the environment, certifi's CA bundle (or ``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR``), redirects followed with the Authorization header kept on the same
    origin only, gzip accepted. Hashing a file (rare: the page had no hash) uses httpx.
    Requests go with the project's credentials by host (``lockkit.index.auth``): a page or file
    URL without user info of its own may still be on a host that needs them.

    Failing fast: *timeout* bounds the connection and each read (seconds without an
    answer). A host that cannot be resolved, refuses, or does not answer in time is not
    asked again: not in this fetch (retries are for a 5xx or a connection broken mid-way)
    and not for the rest of this run, which shares this object (``compile --all``: 16
    platforms on 7 index URLs pay for an unreachable host once). What is remembered is
    only that the host failed, in this process's memory, never on disk.
    """

    def __init__(self, project: Project | None = None, attempts: int = 3,
                 backoff: float = 0.5, credentials: Credentials | None = None,
                 timeout: float = TIMEOUT) -> None:
        from lockkit.index.auth import Credentials

        self._client: Any = None
        self._opener: Any = None
        self._lock = threading.Lock()
        self.attempts, self.backoff, self.timeout = attempts, backoff, timeout
        self.failed: dict[str, str] = {}  # origin -> why it failed, in this run
        if credentials is None:
            credentials = Credentials.for_project(project) if project else Credentials()
        self.credentials = credentials

    def _get(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.timeout, follow_redirects=True,
                                            headers={"User-Agent": f"lockkit/{__version__}"})
        return self._client

    def _open(self) -> Any:
        with self._lock:
            if self._opener is None:
                self._opener = _page_opener()
        return self._opener

    def page(self, url: str) -> tuple[int, str]:
        """GET a PEP 503 page (HTML: the PyTorch index has no JSON API); retry 5xx/resets."""
        import base64
        import http.client
        import urllib.error
        import urllib.request

        from lockkit._internal.redact import strip_credentials
        from lockkit.index.urls import origin

        host = origin(url)
        with self._lock:
            known = self.failed.get(host)
        if known is not None:
            raise IndexError_(f"cannot fetch {redact(url)}: not asked again, its host failed "
                              f"earlier in this run: {known}")
        pair = self.credentials.lookup(url)
        for attempt in range(self.attempts):
            last = attempt + 1 == self.attempts
            request = urllib.request.Request(strip_credentials(url), headers={
                "Accept": "text/html", "Accept-Encoding": "gzip",
                "User-Agent": f"lockkit/{__version__}"})
            if pair is not None:
                token = base64.b64encode(f"{pair[0]}:{pair[1]}".encode()).decode()
                request.add_unredirected_header("Authorization", f"Basic {token}")
            try:
                with self._open().open(request, timeout=self.timeout) as resp:
                    return resp.status, _text(resp.headers, resp.read())
            except urllib.error.HTTPError as err:
                if err.code < 500 or last:
                    return err.code, _text(err.headers, err.read())
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                reason = getattr(exc, "reason", None) or exc
                if last or _unreachable(reason):
                    why = self._why(reason, url)
                    with self._lock:
                        self.failed.setdefault(host, why)
                    raise IndexError_(f"cannot fetch {redact(url)}: {why}") from exc
            time.sleep(self.backoff * 2 ** attempt)
        raise AssertionError("unreachable")

    def hash(self, url: str) -> str:
        import httpx

        digest = hashlib.sha256()
        try:
            with self._get().stream("GET", url, auth=self.credentials.auth(url)) as resp:
                resp.raise_for_status()
                for chunk in resp.iter_bytes():
                    digest.update(chunk)
        except httpx.HTTPError as exc:
            raise IndexError_(f"cannot hash {redact(url)}: {redact(str(exc))}") from exc
        return digest.hexdigest()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _why(self, reason: object, url: str) -> str:
        if isinstance(reason, TimeoutError):
            return f"no answer within {self.timeout:g} s"
        if isinstance(reason, socket.gaierror):
            import urllib.parse

            host = urllib.parse.urlsplit(url).hostname or ""
            return f"cannot resolve the host name {redact(host)}: {reason.strerror}"
        return redact(str(reason)) or type(reason).__name__


def _unreachable(reason: object) -> bool:
    """A failure that a retry within seconds would only repeat: the name does not resolve,
    the host refuses or does not answer in time, its certificate is not trusted. (A 5xx,
    or a connection reset mid-exchange, is retried.)"""
    import ssl

    return isinstance(reason, (socket.gaierror, ConnectionRefusedError, TimeoutError,
                               ssl.SSLCertVerificationError))


def _page_opener() -> Any:
    """A urllib opener as httpx's client is set up (see :class:`Http`)."""
    import urllib.request

    from lockkit.index.urls import origin

    class Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                             newurl: str) -> Any:
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            auth = req.unredirected_hdrs.get("Authorization")
            if new is not None and auth and origin(newurl) == origin(req.full_url):
                new.add_unredirected_header("Authorization", auth)
            return new

    class Https(urllib.request.HTTPSHandler):
        """Builds its TLS context (ssl, the CA bundle: ~15 ms) on the first https URL."""

        def __init__(self) -> None:
            super().__init__()
            self._made = False

        def https_open(self, req: Any) -> Any:
            if not self._made:
                self._context = _tls_context()
                self._made = True
            return super().https_open(req)

    return urllib.request.build_opener(Redirects, Https)


def _tls_context() -> Any:
    """httpx's default: certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set."""
    import os
    import ssl

    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not cafile and not capath:
        import certifi

        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile or None, capath=capath or None)


def _text(headers: Any, body: bytes) -> str:
    if (headers.get("Content-Encoding") or "").lower() == "gzip":
        import zlib

        body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
    return body.decode(headers.get_content_charset() or "utf-8", "replace")


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
