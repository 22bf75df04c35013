"""Credentials by host, attached again to every request lockkit makes.

A lock keeps only credential-free URLs (``lockkit.index.urls``), so whatever fetches its
files later must find the credentials again. As pip and uv do, they are keyed by
*realm* — scheme, host and port — and looked up in this order:

1. the request URL's own user info (httpx sends it itself);
2. the user info of the project's ``index-url`` and of every mirror URL, ``${VAR}``
   placeholders filled in: it covers every request to that realm (a default index's
   files usually live beside its pages, under another path);
3. ``$NETRC`` or ``~/.netrc``, by host name, then its ``default`` entry; a missing,
   unreadable or malformed file counts as empty, as it does for pip.

A secret lives only in memory: ``repr()`` names realms, never a user or a password.
The one exception is :func:`uv_netrc`: uv, which resolves behind lockkit's routing index,
needs the mirrors' credentials too, and gets them in a netrc file only its user can read,
inside the compile's private temp folder, removed with it.
"""

from __future__ import annotations

import netrc
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit.errors import ConfigError
from lockkit.index.urls import expand

if TYPE_CHECKING:
    import httpx

__all__ = ["Credentials", "netrc_path", "read_netrc", "realm", "user_info", "uv_netrc"]

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


def uv_netrc(mirrors: Iterable[str], folder: Path) -> Path | None:
    """The netrc uv resolves with, written 0600 into *folder* (private to one compile).

    The routing index's pages link the mirrors without user info (other processes must
    never read a credential there), so uv finds them here, by host name: the user info of
    the *mirrors* (``${VAR}``s filled in) first, then every entry of the user's own netrc,
    which uv no longer reads once ``NETRC`` names this file. uv asks a host anonymously
    and sends these on a 401, 403 or 404. None when no mirror carries credentials: uv
    then reads the user's netrc itself.
    """
    entries: dict[str, Pair] = {}
    for url in map(expand, mirrors):
        pair, host = user_info(url), urllib.parse.urlsplit(url).hostname or ""
        if pair is None:
            continue
        if entries.setdefault(host, pair) != pair:
            raise ConfigError(f"[mirrors]: two mirrors on {host} carry different credentials; "
                              "uv's netrc holds one login per host",
                              hint="use one user and token for every mirror on that host")
    if not entries:
        return None
    for host, pair in read_netrc(netrc_path()).items():
        entries.setdefault(host, pair)
    path = folder / "netrc"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(_netrc_text(entries))
    return path


def _netrc_text(entries: Mapping[str, Pair]) -> str:
    """``machine HOST login USER password SECRET`` lines, ``default`` last (as netrc wants).
    A netrc token ends at whitespace and quotes are read differently by each parser: a
    value holding either cannot be handed on, and is refused by host name."""
    lines = []
    for host in sorted(entries, key=lambda h: (h == "default", h)):
        login, password = entries[host]
        if any(c.isspace() or c == '"' for c in host + login + password) or not host:
            raise ConfigError(f"credentials for {host or 'a mirror'}: a user or token holding "
                              "whitespace or a quote cannot be given to uv (netrc)")
        words = ["default" if host == "default" else f"machine {host}"]
        words += [f"login {login}"] if login else []
        words += [f"password {password}"] if password else []
        lines.append(" ".join(words))
    return "\n".join(lines) + "\n"


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
    def for_indexes(cls, index_url: str | None, mirrors: Mapping[str, str]) -> Credentials:
        """A project's ``index-url`` first, then its mirror URLs (``official = mirror``),
        then the netrc file."""
        return cls.from_urls([index_url or "", *mirrors.values()])

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
