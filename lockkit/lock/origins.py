"""Where a lock's files may come from: the offline half of "a forged lock is never fresh".

compile writes every file's *official* URL (:mod:`lockkit.index.urls`): a torch-family
package's on the platform's PyTorch index hosts (the index's own host and its file hosts),
every other package's on the project's ``index-url``. The packages digest is an unkeyed
hash anyone can recompute, so it proves no more than that the table was not edited by
mistake; a file URL on another host was not written by compile, whatever the digest says.
``compile --check`` refuses such a lock here, without the network.

Origins (``scheme://host[:port]``) are compared, not paths: an index may link its files
anywhere on its host. A configured mirror of one of these hosts (``[mirrors]``,
``--mirror``) counts as that host. A lock never holds a path, a VCS, directory or archive
source (lockkit refuses such inputs), so one that does was not written by compile either.

What this leaves to ``compile --locked`` (a fresh resolution, compared file by file): a
file swapped for another one on the same host, and, when the project sets no
``index-url``, where the default index's files are: lockkit does not name uv's built-in
default index, so those URLs are checked only not to be on a PyTorch host (non-family
packages never come from there). :attr:`Origins.unchecked` says so in the verdict.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lockkit._internal.redact import masked
from lockkit.index.urls import Mirrors, expand, origin

if TYPE_CHECKING:
    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform

__all__ = ["Origins", "shown"]

_SOURCES = ("vcs", "directory", "archive")  # package sources compile never writes
_SHOWN = 5  # strays named in a verdict; the rest are counted


def shown(value: Any, limit: int = 200) -> str:
    """A value read from a lock (anyone's text), fit for one line of a message: secrets
    redacted, control characters escaped, cut at *limit* characters."""
    if value is None:
        return "(none)"
    text = masked(value if isinstance(value, str) else repr(value))
    text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def _entries(pkg: dict[str, Any]) -> list[Any]:
    """A package's file entries (its wheels and sdist) as the lock holds them."""
    wheels = pkg.get("wheels", [])
    found = list(wheels) if isinstance(wheels, list) else [wheels]
    return found + ([pkg["sdist"]] if "sdist" in pkg else [])


def _origins(url: str) -> set[str]:
    """The origins *url* stands for: as written and with its ``${VAR}``s filled in
    (``https://${INDEX_URL}/...`` is the variable's host). An origin without a host (a
    variable not set here) stands for nothing."""
    found = set()
    for form in (url, expand(url)) if "${" in url else (url,):
        try:
            said = origin(form)
        except ValueError:  # http://[not-an-address
            continue
        if urllib.parse.urlsplit(said).netloc:
            found.add(said)
    return found


def _with_mirrors(officials: Iterable[str], mirrors: Mirrors) -> frozenset[str]:
    """The origins of *officials* and of every configured mirror of one of them."""
    found: set[str] = set()
    for url in officials:
        found |= _origins(url)
    for official, mirror in mirrors.table.items():
        if _origins(official) & found:
            found |= _origins(mirror)
    return frozenset(found)


@dataclass(frozen=True, kw_only=True)
class Origins:
    """The hosts a platform's lock may name files on, from the project and the platform
    (never from the lock, which anyone can edit)."""

    family: frozenset[str]   # the names served by the PyTorch index (none without one)
    torch: frozenset[str]    # the PyTorch index's hosts and their mirrors
    default: frozenset[str] | None  # the index-url's host and its mirror; None: uv's own

    @classmethod
    def of(cls, project: Project, platform: Platform) -> Origins:
        from packaging.utils import canonicalize_name

        mirrors = Mirrors(project.mirrors, project.secrets)
        torch = platform.torch_index
        family = frozenset(canonicalize_name(n) for n in platform.torch_packages) \
            if torch else frozenset()
        hosts = [torch, *platform.torch_file_hosts] if torch else []
        index = project.index_url
        default = _with_mirrors([index, mirrors.official(index)], mirrors) if index else None
        return cls(family=family, torch=_with_mirrors(hosts, mirrors), default=default)

    @property
    def unchecked(self) -> str:
        """What a clean :meth:`strays` takes on its word, in words ("" when nothing)."""
        if self.default is not None:
            return ""
        return ("the default index's file URLs were checked only not to be on a PyTorch "
                "host: the project sets no index-url, and lockkit does not name uv's "
                "built-in one ('lockkit compile --locked' compares them with a resolution)")

    def strays(self, data: Mapping[str, Any]) -> list[str]:
        """Every file of the lock *data* that is on none of its hosts, named with its
        package, or a source compile never writes; [] for a lock compile could have written."""
        from packaging.utils import canonicalize_name

        said = []
        for pkg in data.get("packages", []):
            if not isinstance(pkg, dict):
                continue
            name = canonicalize_name(str(pkg.get("name")))
            why = [f"a {key} source, which compile never writes" for key in _SOURCES
                   if key in pkg]
            why += [w for entry in _entries(pkg) for w in self._stray(name, entry)]
            if why:
                who = shown(f"{name} {pkg.get('version')}")
                said += [f"{who}: {w}" for w in why]
        return said

    def _stray(self, name: str, entry: Any) -> list[str]:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            what = entry.get("name", entry) if isinstance(entry, dict) else entry
            return [f"a file without a URL ({shown(what)}), which compile never writes"]
        url = entry["url"]
        where = _origins(url)
        if name in self.family:
            return [] if where & self.torch else \
                [f"{shown(url)} is not on the PyTorch index's hosts or their mirrors"]
        if self.default is not None and where & self.default:
            return []
        if where & self.torch:
            return [f"{shown(url)} is on a PyTorch host, where only the torch-family "
                    "packages come from"]
        if self.default is None:
            return []
        return [f"{shown(url)} is not on the index-url's host or its mirror"]

    def detail(self, strays: list[str]) -> str:
        """A verdict's detail for *strays* (the first few, the rest counted)."""
        more = f"; and {len(strays) - _SHOWN} more" if len(strays) > _SHOWN else ""
        return ("files on hosts compile does not take them from (the packages table was "
                "edited and its digest recomputed): " + "; ".join(strays[:_SHOWN]) + more)
