"""The three forms of an index or file URL, in one place.

- *official*: what the platform file and the lock say (``https://download.pytorch.org/whl/cu126``);
  never carries credentials, never names a mirror.
- *effective*: what a request goes to: the official URL through ``[mirrors]`` / ``--mirror``
  (longest official prefix wins), with ``${VAR}`` placeholders filled from the environment.
  It may carry ``user:token@`` and exists only in memory.
- *printable*: the effective or official URL with any user info replaced by ``***``.

Two official file hosts serve the same bytes under the same paths (:data:`TWIN_HOSTS`):
the PyTorch index's pages have linked its torch-family wheels on download-r2.pytorch.org
since January 2026, so locks pin that host, and download.pytorch.org serves every one of
those files too. :func:`twin` gives a file URL on the other host; it applies to the
official URL, before ``[mirrors]``, so a mirror of either host serves its twin's files too.

``official()`` is the way back from an effective URL: credentials dropped, the mirror
prefix mapped back to the official one. Writing only what ``official()`` returns is what
keeps secrets and mirror addresses out of locks.

A placeholder may stand for a whole URL (``index-url = "${INDEX_URL}"``). Its official
form cannot be the bare ``${INDEX_URL}/numpy/numpy-2.1.0-...whl``: PEP 751 wants a URL
there, and uv refuses to read such a lock at all (the next compile hands it the lock as
preferences). So the placeholder takes the host's place, ``https://${INDEX_URL}/numpy/
numpy-2.1.0-...whl``: a URL every parser accepts, that reaches no host, and that
:func:`expand` reads back as the variable's URL followed by the path.
:func:`requirement_form` gives the bare form back where the tools themselves expand a
``${VAR}`` (a requirements file, for pip and uv).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockkit._internal.redact import Secrets, masked, strip_credentials

if TYPE_CHECKING:
    from lockkit.platforms.definitions import Platform

__all__ = ["TWIN_HOSTS", "Indexes", "Mirrors", "apply_mirrors", "expand", "is_index_url",
           "origin", "placeholders", "printable", "requirement_form", "secrets_of", "twin",
           "unapply_mirrors", "values_of"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_LEADING = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}(?=[/?#]|$)")
_AS_HOST = "https://"  # the scheme a whole-URL placeholder is written under (see above)


def expand(url: str) -> str:
    """Fill ``${VAR}`` placeholders from the environment (for use, never for writing).

    ``https://${VAR}/path``, a whole-URL placeholder as the lock writes it, is the URL
    the variable holds followed by the path. What prints or writes text holding a value
    shows the placeholder instead through the project's :func:`secrets_of` its URLs.
    """
    def fill(m: re.Match[str]) -> str:
        return os.environ.get(m.group(1), "")

    whole = _whole_url(url[len(_AS_HOST):]) if url.startswith(_AS_HOST) else None
    if whole is not None:
        return fill(whole).rstrip("/") + _VAR.sub(fill, url[len(_AS_HOST) + whole.end():])
    return _VAR.sub(fill, url)


def secrets_of(texts: Iterable[str]) -> Secrets:
    """The secrets of *texts* (index URLs, mirrors): each ``${VAR}`` in them with the value
    the environment holds for it, as :func:`expand` fills it in."""
    return Secrets.of(values_of(texts))


def values_of(texts: Iterable[str]) -> dict[str, str]:
    """Each ``${VAR}`` of *texts* -> the value the environment holds for it (for
    :meth:`Secrets.plus <lockkit._internal.redact.Secrets.plus>`)."""
    return {p: os.environ.get(p[2:-1], "") for text in texts for p in placeholders(text)}


def placeholders(text: str) -> list[str]:
    """The ``${VAR}`` placeholders in *text*, as written, each once, in order."""
    return list(dict.fromkeys(m.group(0) for m in _VAR.finditer(text)))


def _whole_url(text: str) -> re.Match[str] | None:
    """The placeholder *text* starts with, when the variable holds a whole URL."""
    m = _LEADING.match(text)
    return m if m and "://" in os.environ.get(m.group(1), "") else None


def is_index_url(text: str) -> bool:
    """Whether *text* can name an index: an ``http(s)://host...`` URL (``${VAR}``s inside
    it allowed), or a placeholder for a whole URL, alone or before a path
    (``${INDEX_URL}``, ``${MIRROR}/simple``)."""
    if _LEADING.match(text):
        return True
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:  # http://[not-an-address
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc.rsplit("@", 1)[-1])


def requirement_form(url: str) -> str:
    """``https://${VAR}/path`` (a whole-URL placeholder as a lock holds it) as
    ``${VAR}/path``: what pip and uv expand in a requirements file. Other URLs as they are."""
    if url.startswith(_AS_HOST) and _LEADING.match(url[len(_AS_HOST):]):
        return url[len(_AS_HOST):]
    return url


def printable(url: str) -> str:
    """*url* with its user info made ``***`` (its ``${VAR}`` values are concealed where the
    message is printed, by the project's secrets)."""
    return masked(url)


def origin(url: str) -> str:
    """``scheme://host[:port]`` of *url*, without user info, lowercased."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1].lower()
    return f"{parts.scheme.lower()}://{host}"


# Official file hosts -> the host that serves the same files under the same paths (one
# outage of download-r2.pytorch.org, a TLS failure on 2026-07-06, broke frozen installs
# that pinned it while download.pytorch.org served the same bytes): the rule the download
# fallback (lockkit.download.fetch) follows, here alone.
TWIN_HOSTS = {"https://download-r2.pytorch.org": "https://download.pytorch.org",
              "https://download.pytorch.org": "https://download-r2.pytorch.org"}


def twin(official: str) -> str | None:
    """*official* (a file's URL as the lock says it) on its host's twin
    (:data:`TWIN_HOSTS`), the path unchanged; None when its host has no twin."""
    host = origin(official)
    other = TWIN_HOSTS.get(host)
    if other is None or official[:len(host)].lower() != host:
        return None
    return other + official[len(host):]


def _under(url: str, prefix: str) -> bool:
    return url == prefix or url.startswith(prefix.rstrip("/") + "/")


def apply_mirrors(url: str, mirrors: Mapping[str, str]) -> str:
    """Rewrite *url* through the longest matching official prefix (placeholders kept)."""
    for official in sorted(mirrors, key=len, reverse=True):
        if _under(url, official):
            return mirrors[official].rstrip("/") + url[len(official.rstrip("/")):]
    return url


def unapply_mirrors(url: str, mirrors: Mapping[str, str], secrets: Secrets) -> str:
    """The official URL of an effective one: credentials dropped, the mirror mapped back,
    ``${VAR}`` values put back as placeholders (a default index whose path holds a token;
    one that holds the whole URL is written where the host goes)."""
    bare = secrets.conceal(strip_credentials(url))
    targets = {official: secrets.conceal(strip_credentials(expand(m))).rstrip("/")
               for official, m in mirrors.items()}
    for official, mirror in sorted(targets.items(), key=lambda kv: len(kv[1]), reverse=True):
        if mirror and _under(bare, mirror):
            return official.rstrip("/") + bare[len(mirror):]
    return _AS_HOST + bare if _whole_url(bare) else bare


class Mirrors:
    """The project's mirror table, with the three forms as single calls; *secrets* (the
    project's) turn an effective URL's ``${VAR}`` values back into placeholders."""

    def __init__(self, table: Mapping[str, str] | None, secrets: Secrets) -> None:
        self.table = {k.rstrip("/"): v.rstrip("/") for k, v in (table or {}).items()}
        self.secrets = secrets

    def effective(self, official: str) -> str:
        return expand(apply_mirrors(official, self.table))

    def official(self, effective: str) -> str:
        return unapply_mirrors(effective, self.table, self.secrets)

    def covers(self, official: str) -> bool:
        """True when a mirror serves *official* (so the official host is never asked)."""
        return apply_mirrors(official, self.table) != official

    def hosts(self) -> set[str]:
        """The origins the mirrors live on (a link there that maps back to nothing is private)."""
        return {origin(expand(m)) for m in self.table.values()}


@dataclass(frozen=True, kw_only=True)
class Indexes:
    """The indexes of one resolution, as the user wrote them and as actually used."""

    torch_official: str | None
    torch_effective: str | None
    default_effective: str | None  # None: uv's own default index
    default_official: str | None = None  # as written to the lock: no credentials, no mirror
    mirrors: Mirrors

    @property
    def torch_answering(self) -> str:
        """The PyTorch index as the host that answers for it, printable: its mirror, with
        the official URL the mirror stands for, or the official URL where no mirror covers
        it. A message about an answer (a 404, a 401) names who gave it."""
        official = f"the PyTorch index {printable(self.torch_official or '')}"
        if self.torch_official and self.mirrors.covers(self.torch_official):
            return f"the mirror {printable(self.torch_effective or '')} (for {official})"
        return official

    @classmethod
    def for_platform(cls, platform: Platform, mirrors: dict[str, str],
                     index_url: str | None, secrets: Secrets) -> Indexes:
        table = Mirrors(mirrors, secrets)
        torch = platform.torch_index
        return cls(
            torch_official=torch,
            torch_effective=table.effective(torch) if torch else None,
            default_effective=table.effective(index_url) if index_url else None,
            default_official=table.official(index_url) if index_url else None,
            mirrors=table,
        )
