"""The routing index: a platform's torch-family names from its PyTorch index, nothing else.

uv looks up every package name, direct or transitive, in its indexes in order, and with
the ``first-index`` strategy it takes every version of a name from the first index that
knows that name. During a compile lockkit serves an index of its own on 127.0.0.1 and
puts it first:

- for a torch-family name (``torch``, ``triton``, ``pytorch-triton-rocm``, ...) it serves
  the PyTorch index's page for that name, fetched through the mirrors, every link made
  absolute (root-relative links resolve on the official host, then through its mirror);
- for every other name it answers 404, so uv goes on to the default index.

So a family package is taken only from the PyTorch index, also when it arrives
transitively (``triton`` pulled in by ``torch``), and a higher planted ``torch`` on the
default index is never seen; every other package comes only from the default index, even
when the PyTorch index hosts a stale copy of it (MarkupSafe, numpy, setuptools, ...).
A family name the PyTorch index does not serve gets an empty page: uv stops there, it
never falls back. uv's per-package ``sources`` apply to direct dependencies only (measured
with uv 0.13.9), which is why the routing is done by the index and not by sources.

Every page served is recorded with the files it listed: the family guard identifies a
file by the page that listed it, and the lock writer finds each file's official URL there.
A page is read up to ``max-page-size`` (``lockkit.index.http.read_page``); one larger is
not served: uv gets a 502, and the compile stops naming the page and the limit.

The index is private to its compile. Any local account can connect to 127.0.0.1 and find
the port in ``/proc/net/tcp``, so the index answers only under a random path prefix of
256 bits made for this compile (``http://127.0.0.1:<port>/<prefix>/simple``); every other
request gets the same bare 404. uv learns that URL from its environment
(``lockkit.index.resolve.uv_environment``), which only its own user can read, never from its
command line, which ``ps`` shows to everyone.

Its pages carry no credentials either: a mirror's ``user:token@`` is stripped from every
link, and uv finds the credentials for the mirror hosts in a netrc file that lockkit
writes 0600 into the compile's private temp folder and names in ``NETRC`` for uv alone
(``lockkit.index.auth.uv_netrc``); the folder is removed when the compile ends, however it ends.
Why not proxy the files through this index: uv keeps fetching metadata and files itself,
with its own range requests, retries, authentication and cache, and this server stays a
server of small pages. The cost: a netrc holds one login per host name, so two mirrors on
one host with different credentials are refused with a message. A ``${VAR}`` in a
mirror's *path* is part of the address, not user info: it stays in the links, which only
the prefix's holder can read.

The server is the standard library's (:mod:`lockkit.index.loopback`), with a listen
backlog (``BACKLOG``) for uv's bursts of connections.
"""

from __future__ import annotations

import hmac
import html
import logging
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name as canonical_name

from lockkit._internal.log import VERBOSE
from lockkit._internal.redact import masked, strip_credentials
from lockkit.index.http import PageTooLarge
from lockkit.index.loopback import Loopback
from lockkit.index.pages import parse_links
from lockkit.index.urls import Mirrors, origin

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = ["Listed", "Page", "RoutingIndex", "resolve_href", "served_versions"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Listed:
    """One file link of a PyTorch index page."""

    filename: str  # decoded: ``torch-2.5.1+cu126-...whl``
    url: str       # effective, absolute, without fragment, without credentials
    official: str  # the URL written to the lock: official host and layout


@dataclass(frozen=True, kw_only=True)
class Page:
    """What the PyTorch index answered for one family name."""

    name: str
    status: int | None = None  # the upstream HTTP status; None: unreachable
    error: str = ""
    files: dict[str, Listed] = field(default_factory=dict)
    html: str = ""  # the page as served to uv: every link absolute, effective, no user info
    too_large: PageTooLarge | None = None  # past max-page-size: said as that, not unreachable


def served_versions(text: str, name: str) -> list[Version]:
    """The versions of *name* a PEP 503 page lists, newest first: what "no such torch"
    shows, so a user sees what the index does serve instead of uv's derivation tree."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
    from packaging.version import InvalidVersion

    found: set[Version] = set()
    for link in parse_links(text):
        path = urllib.parse.urlsplit(link["href"].split("#", 1)[0]).path
        filename = urllib.parse.unquote(path.rsplit("/", 1)[-1])
        try:
            got, version, *_ = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if got == canonicalize_name(name):
            found.add(version)
    return sorted(found, reverse=True)


def resolve_href(href: str, official_page: str, effective_page: str, mirrors: Mirrors) -> str:
    """The effective absolute URL of a link on a page fetched from *effective_page*,
    without user info: the page is served to uv, which finds a mirror's credentials in
    the netrc lockkit gives it.

    A root-relative link on the real index means "on the official host"; a static mirror
    served under a path (``https://mirror/pytorch/``) copies the page unchanged, so the link
    is resolved on the official host and then sent through the mirror. Relative links and
    links a rewriting mirror points at itself resolve against the page actually fetched.
    """
    if href.startswith("/") and not href.startswith("//"):
        official = urllib.parse.urljoin(official_page, href)
        if mirrors.covers(official):
            return strip_credentials(mirrors.effective(official))
    url = urllib.parse.urljoin(effective_page, href)
    return strip_credentials(mirrors.effective(url))


class RoutingIndex:
    """A loopback PEP 503 index serving only the platform's torch-family pages.

    *fetch* is ``(url) -> (status, text)``; lockkit passes :meth:`lockkit.index.pages.Http.page`,
    tests can pass their own. Use as a context manager; ``url`` is what uv gets as its first
    index, through its environment only: it holds the random prefix without which every
    request is answered 404.

    A page uv asks for that could not be fetched (the index or its mirror unreachable) is
    recorded as :attr:`failed` and reported to *on_failure* before uv gets its 502: uv
    would retry the 502 for seconds and then name this loopback address, so the caller
    stops uv at once and names the index instead.
    """

    def __init__(self, *, family: tuple[str, ...], official_index: str, mirrors: Mirrors,
                 file_hosts: tuple[str, ...], fetch: Callable[[str], tuple[int, str]],
                 on_failure: Callable[[Page], None] | None = None) -> None:
        self.family = {canonical_name(n) for n in family}
        self.spec = (tuple(family), official_index, mirrors.table, tuple(file_hosts))
        self.official_index = official_index.rstrip("/")
        self.effective_index = mirrors.effective(self.official_index).rstrip("/")
        self.mirrors = mirrors
        self.official_hosts = {origin(self.official_index)} | {origin(h) for h in file_hosts}
        files_base = file_hosts[0].rstrip("/") if file_hosts else origin(self.official_index)
        self.files_base = files_base + urllib.parse.urlsplit(self.official_index).path
        mirror_hosts = mirrors.hosts() | {origin(self.effective_index)}
        self.private_hosts = mirror_hosts - self.official_hosts
        self._fetch = fetch
        self._on_failure = on_failure
        self.failed: Page | None = None  # the first page uv asked for that was unreachable
        self._lock = threading.Lock()
        self.pages: dict[str, Page] = {}
        self.asked: set[str] = set()  # the family names uv asked for (not only prefetched)
        self._routed: set[str] = set()  # the names whose routing -v has said
        self._loading: dict[str, threading.Event] = {}
        self._server: Loopback | None = None
        # 256 random bits, new for every compile: what makes the port useless to others
        self._prefix = secrets.token_urlsafe(32)

    # -- pages -----------------------------------------------------------------------------
    def page(self, name: str) -> Page:
        """Fetch (once: a second asker waits for the first) and record the PyTorch index's
        page for a family *name*."""
        name = canonical_name(name)
        with self._lock:
            if name in self.pages:
                return self.pages[name]
            loading = self._loading.get(name)
            mine = loading is None
            if loading is None:
                loading = self._loading[name] = threading.Event()
        if not mine:
            loading.wait()
            return self.pages[name]
        try:
            page = self._load(name)
        except BaseException as exc:  # a bug, not a transport failure: no waiter hangs on it
            page = Page(name=name, error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            with self._lock:
                self.pages.setdefault(name, page)
            loading.set()
        return page

    def prefetch(self, names: Iterable[str], then: Callable[[], None] | None = None,
                 wait: bool = False) -> None:
        """Fetch the family pages among *names* in the background, before uv asks (uv
        starts in ~20 ms; the page is the first thing its resolution waits for), then run
        *then* (more work to overlap with uv's); *wait*: in this thread, returning after."""
        wanted = [n for n in dict.fromkeys(map(canonical_name, names)) if n in self.family]

        def run() -> None:
            for name in wanted:
                try:
                    self.page(name)
                except Exception:  # noqa: BLE001, S110 - uv asks again and gets the error
                    pass
            if then is not None:
                then()

        if wait:  # in this thread, now: nothing else is as urgent
            run()
        else:
            threading.Thread(target=run, name="lockkit-prefetch", daemon=True).start()

    def _load(self, name: str) -> Page:
        effective = f"{self.effective_index}/{name}/"  # without the slash: 403 on the real index
        official = f"{self.official_index}/{name}/"
        try:
            status, text = self._fetch(effective)
        except PageTooLarge as exc:  # read up to the limit only; uv gets a 502 (failed)
            return Page(name=name, error=str(exc), too_large=exc)
        except Exception as exc:  # noqa: BLE001 - any transport failure is "unreachable"
            return Page(name=name, error=masked(str(exc)) or type(exc).__name__)
        if status != 200:
            return Page(name=name, status=status)
        links = parse_links(text)
        files: dict[str, Listed] = {}
        for link in links:
            link["href"] = resolve_href(link["href"], official, effective, self.mirrors)
            bare = link["href"].split("#", 1)[0]
            filename = urllib.parse.unquote(urllib.parse.urlsplit(bare).path.rsplit("/", 1)[-1])
            files[filename] = Listed(filename=filename, url=bare,
                                     official=self._official(bare, filename))
        return Page(name=name, status=status, files=files, html=_render(name, links))

    def _official(self, url: str, filename: str) -> str:
        """The lock's URL for a listed file: official host, official layout."""
        official = self.mirrors.official(url)
        if official != strip_credentials(url) or origin(official) not in self.private_hosts:
            return official
        # A mirror that rewrites links to itself (Artifactory, Nexus, devpi): its layout
        # is private; the official one is <files host>/<index path>/<file, + as %2B>.
        return f"{self.files_base}/{urllib.parse.quote(filename, safe='')}"

    def listed(self, name: str, url: str) -> Listed | None:
        """The recorded link of family *name* for a file URL uv chose (None: not on its page)."""
        page = self.pages.get(canonical_name(name))
        if page is None:
            return None
        bare = strip_credentials(url.split("#", 1)[0])
        filename = urllib.parse.unquote(urllib.parse.urlsplit(bare).path.rsplit("/", 1)[-1])
        hit = page.files.get(filename)
        if hit and urllib.parse.unquote(strip_credentials(hit.url)) == urllib.parse.unquote(bare):
            return hit
        return None

    # -- the server ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "RoutingIndex used outside its 'with' block"
        return f"http://127.0.0.1:{self._server.port}/{self._prefix}/simple"

    def answer(self, path: str) -> tuple[int, bytes]:
        """The answer to a GET of *path*: a family page under the prefix, else 404 (the
        same for a wrong prefix as for any other path: nothing tells a prober more)."""
        parts = [p for p in urllib.parse.unquote(path.split("?", 1)[0]).split("/") if p]
        if len(parts) != 3 or parts[1] != "simple" or not hmac.compare_digest(
                parts[0].encode("utf-8", "surrogateescape"), self._prefix.encode()):
            return 404, b"not found"
        name = canonical_name(parts[2])
        self._say_route(name)
        if name not in self.family:
            return 404, b"not a torch-family package: ask the next index"
        with self._lock:
            self.asked.add(name)
        page = self.page(name)
        if page.status is None:
            with self._lock:
                first = self.failed is None
                self.failed = self.failed or page
            if first and self._on_failure is not None:
                self._on_failure(page)
            return 502, f"the PyTorch index is unreachable: {page.error}".encode()
        # Not served (403/404) or refused (401): an empty page, so uv stops here instead
        # of looking for the name on the default index.
        return 200, (page.html or _EMPTY).encode()

    def _say_route(self, name: str) -> None:
        """``-v``: which index uv gets *name* from, once per name (uv asks again)."""
        with self._lock:
            if name in self._routed:
                return
            self._routed.add(name)
        if name in self.family:
            _log.log(VERBOSE, "routing: %s -> the PyTorch index %s/", name,
                     self.effective_index)
        else:
            _log.log(VERBOSE, "routing: %s -> the default index (not a torch-family name)",
                     name)

    def __enter__(self) -> RoutingIndex:
        """Listen at once: uv starts right after, its first connections wait in the queue."""
        if self._server is None:
            self._server = Loopback(self.answer)
        self._server.start()
        return self

    @property
    def answered(self) -> int:
        """Requests answered so far (any, under the prefix or not)."""
        return self._server.answered if self._server is not None else 0

    @property
    def last_answer(self) -> float:
        """When the last request was answered (``time.monotonic()``; 0: none yet)."""
        return self._server.last_answer if self._server is not None else 0.0

    def quiet(self, *, idle: float, limit: float) -> None:
        """Return once uv has asked something and then nothing for *idle* seconds (its
        burst of names is over), or after *limit* seconds: the caller's own work then no
        longer holds the interpreter lock while these threads answer uv."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if self.answered and time.monotonic() - self.last_answer >= idle:
                return
            time.sleep(idle / 4)

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()


_EMPTY = "<!DOCTYPE html>\n<html><body></body></html>\n"


def _render(name: str, links: list[dict[str, str]]) -> str:
    """A PEP 503 page of already-absolute links; every other attribute kept as listed."""
    out = ["<!DOCTYPE html>", "<html>", "  <body>", f"    <h1>Links for {html.escape(name)}</h1>"]
    for link in links:
        href = link["href"]
        attrs = "".join(f' {k}="{html.escape(v)}"' for k, v in link.items()
                        if k not in ("href", "#text"))
        text = html.escape(link["#text"])
        out.append(f'    <a href="{html.escape(href)}"{attrs}>{text}</a><br/>')
    return "\n".join(out + ["  </body>", "</html>", ""])
