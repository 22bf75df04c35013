"""The three forms of an index or file URL, in one place.

- *official*: what the platform file and the lock say (``https://download.pytorch.org/whl/cu126``);
  never carries credentials, never names a mirror.
- *effective*: what a request goes to: the official URL through ``[mirrors]`` / ``--mirror``
  (longest official prefix wins), with ``${VAR}`` placeholders filled from the environment.
  It may carry ``user:token@`` and exists only in memory.
- *printable*: the effective or official URL with any user info replaced by ``***``.

``official()`` is the way back from an effective URL: credentials dropped, the mirror
prefix mapped back to the official one. Writing only what ``official()`` returns is what
keeps secrets and mirror addresses out of locks.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping

from lockkit.redact import conceal, redact, remember, strip_credentials

__all__ = ["Mirrors", "apply_mirrors", "expand", "origin", "printable", "unapply_mirrors"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(url: str) -> str:
    """Fill ``${VAR}`` placeholders from the environment (for use, never for writing).

    Every value filled in is remembered (``lockkit.redact.remember``): whatever later
    prints or writes text holding it shows the placeholder instead.
    """
    def fill(m: re.Match[str]) -> str:
        value = os.environ.get(m.group(1), "")
        remember(m.group(0), value)
        return value

    return _VAR.sub(fill, url)


def printable(url: str) -> str:
    return redact(url)


def origin(url: str) -> str:
    """``scheme://host[:port]`` of *url*, without user info, lowercased."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1].lower()
    return f"{parts.scheme.lower()}://{host}"


def _under(url: str, prefix: str) -> bool:
    return url == prefix or url.startswith(prefix.rstrip("/") + "/")


def apply_mirrors(url: str, mirrors: Mapping[str, str]) -> str:
    """Rewrite *url* through the longest matching official prefix (placeholders kept)."""
    for official in sorted(mirrors, key=len, reverse=True):
        if _under(url, official):
            return mirrors[official].rstrip("/") + url[len(official.rstrip("/")):]
    return url


def unapply_mirrors(url: str, mirrors: Mapping[str, str]) -> str:
    """The official URL of an effective one: credentials dropped, the mirror mapped back,
    ``${VAR}`` values put back as placeholders (a default index whose path holds a token)."""
    bare = conceal(strip_credentials(url))
    targets = {official: conceal(strip_credentials(expand(m))).rstrip("/")
               for official, m in mirrors.items()}
    for official, mirror in sorted(targets.items(), key=lambda kv: len(kv[1]), reverse=True):
        if mirror and _under(bare, mirror):
            return official.rstrip("/") + bare[len(mirror):]
    return bare


class Mirrors:
    """The project's mirror table, with the three forms as single calls."""

    def __init__(self, table: Mapping[str, str] | None = None) -> None:
        self.table = {k.rstrip("/"): v.rstrip("/") for k, v in (table or {}).items()}

    def effective(self, official: str) -> str:
        return expand(apply_mirrors(official, self.table))

    def official(self, effective: str) -> str:
        return unapply_mirrors(effective, self.table)

    def covers(self, official: str) -> bool:
        """True when a mirror serves *official* (so the official host is never asked)."""
        return apply_mirrors(official, self.table) != official

    def hosts(self) -> set[str]:
        """The origins the mirrors live on (a link there that maps back to nothing is private)."""
        return {origin(expand(m)) for m in self.table.values()}
