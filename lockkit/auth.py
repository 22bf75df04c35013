"""Credentials by host, attached again to every request lockkit makes.

A lock keeps only credential-free URLs (``lockkit.urls``), so whatever fetches its
files later must find the credentials again. As pip and uv do, they are keyed by
*realm* — scheme, host and port — and looked up in this order:

1. the request URL's own user info (httpx sends it itself);
2. the user info of the project's ``index-url`` and of every mirror URL, ``${VAR}``
   placeholders filled in: it covers every request to that realm (a default index's
   files usually live beside its pages, under another path);
3. ``$NETRC`` or ``~/.netrc``, by host name, then its ``default`` entry; a missing,
   unreadable or malformed file counts as empty, as it does for pip.

A secret lives only in memory: ``repr()`` names realms, never a user or a password.
"""

from __future__ import annotations

import netrc
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit.urls import expand

if TYPE_CHECKING:
    import httpx

    from lockkit.config import Project

__all__ = ["Credentials", "netrc_path", "read_netrc", "realm", "user_info"]

Pair = tuple[str, str]  # (username, password); a token alone is a username with no password
_DEFAULT_PORTS = {"http": 80, "https": 443}


def realm(url: str) -> str:
    """``scheme://host:port`` of *url*: the key pip and uv file credentials under.

    The default port is filled in, so ``https://h`` and ``https://h:443`` share one realm.
    """
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number: the URL fails later, with its own error
        port = None
    return f"{scheme}://{parts.hostname or ''}:{port or ''}"


def user_info(url: str) -> Pair | None:
    """The percent-decoded ``(user, password)`` *url* carries, or None when it has none."""
    netloc = urllib.parse.urlsplit(url).netloc
    if "@" not in netloc:
        return None
    user, _, password = netloc.rsplit("@", 1)[0].partition(":")
    if not user and not password:
        return None
    return urllib.parse.unquote(user), urllib.parse.unquote(password)


def netrc_path() -> Path:
    """``$NETRC`` when set, else ``~/.netrc``: the file uv and pip (through requests) read."""
    return Path(os.environ.get("NETRC") or os.path.expanduser("~/.netrc"))


def read_netrc(path: Path) -> dict[str, Pair]:
    """Host name (or ``default``) -> credentials; empty when the file cannot be used.

    A missing or unreadable netrc is the usual case, not an error: pip ignores it too.
    """
    try:
        hosts = netrc.netrc(os.fspath(path)).hosts
    except (OSError, netrc.NetrcParseError, UnicodeDecodeError):
        return {}
    return {host: (login or "", password or "") for host, (login, _, password) in hosts.items()}


class Credentials:
    """Who lockkit is on each host: built once per command, asked once per request."""

    def __init__(self, by_realm: Mapping[str, Pair] | None = None,
                 by_host: Mapping[str, Pair] | None = None) -> None:
        self._by_realm = dict(by_realm or {})
        self._by_host = dict(by_host or {})  # from the netrc file

    @classmethod
    def from_urls(cls, urls: Iterable[str], netrc_file: Path | None = None) -> Credentials:
        """The user info of *urls* by realm (the first URL of a realm wins), plus netrc."""
        found: dict[str, Pair] = {}
        for url in map(expand, urls):
            pair = user_info(url)
            if pair:
                found.setdefault(realm(url), pair)
        return cls(found, read_netrc(netrc_file or netrc_path()))

    @classmethod
    def for_project(cls, project: Project) -> Credentials:
        """The project's ``index-url`` first, then its mirrors, then the netrc file."""
        return cls.from_urls([project.index_url or "", *project.mirrors.values()])

    def lookup(self, url: str) -> Pair | None:
        """The credentials a request to *url* goes with, or None (an anonymous request)."""
        own = user_info(url)
        if own:
            return own
        known = self._by_realm.get(realm(url))
        if known:
            return known
        host = urllib.parse.urlsplit(url).hostname or ""
        return self._by_host.get(host) or self._by_host.get("default")

    def auth(self, url: str) -> httpx.BasicAuth | None:
        """The ``auth=`` of a request to *url*.

        None when the URL carries its own user info: an explicit ``auth`` would override
        it, and httpx already sends it as Basic auth. The Authorization header follows a
        redirect on the same origin only; httpx drops it for any other host.
        """
        if user_info(url):
            return None
        pair = self.lookup(url)
        if pair is None:
            return None
        import httpx  # only when a request is made: a warm rebuild never imports it

        return httpx.BasicAuth(*pair)

    def __repr__(self) -> str:
        return f"Credentials(realms={sorted(self._by_realm)!r}, netrc_hosts={len(self._by_host)})"
