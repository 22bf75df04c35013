"""Where a locked file is looked for, in order: its mirror, the mirrored index's page, the
lock's own URL, and after each URL on a host with a twin the same path there.

The lock's URL is official (:mod:`lockkit.index.urls`). A mirror that covers it comes
first; a mirrored index's page (:class:`PageRef`) next, for mirrors that keep files under
their own layout; the lock's own URL last, and only when no mirror covers the file or
``--fallback-to-official`` allows it: an air-gapped site's build must not reach for the
official host behind its back.

Two official hosts serve the same files under the same paths
(:func:`lockkit.index.urls.twin`: download-r2.pytorch.org, which the PyTorch index's pages
link and locks pin, and download.pytorch.org). After a URL on one of them comes a
:class:`Twin`: the same path on the other, through ``[mirrors]`` as any official URL. The
fetcher (:class:`lockkit.download.fetch.Fetcher`) tries it only when the URL before it
failed on its host's side (a connect or TLS error, a timeout, a 5xx, a body cut short at
every try); never after a 404 or a refusal (the twin has the same paths), never after wrong
bytes (those are refused, not looked for elsewhere). Its bytes pass the same sha256 check.
A twin the mirrors do not cover is the official host itself, so it is planned only where
the lock's own URL is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lockkit.index.urls import Mirrors, expand, origin, twin

__all__ = ["FoundIn", "PageRef", "Source", "Twin", "sources"]


@dataclass(frozen=True, kw_only=True)
class PageRef:
    """An index page (effective URL) to look the file up on by name, when its URL there is
    not known in advance: a mirror that rewrites links to itself (Artifactory, Nexus,
    devpi) keeps files under its own layout, never under the official one."""

    url: str


@dataclass(frozen=True, kw_only=True)
class Twin:
    """The URL before it on its host's twin (:func:`lockkit.index.urls.twin`; effective,
    through ``[mirrors]``): tried only when that URL failed on its host's side."""

    url: str
    instead: str  # what it stands in for, credential-free: "https://download-r2.pytorch.org"


Source = str | PageRef | Twin  # an effective URL (may carry credentials), a page, a twin


@dataclass(frozen=True)
class FoundIn:
    """Where a fetched file was found: the cache, a ``--find-links`` folder, or a URL
    (credential-free). The build log's (the display counts the local ones by *kind*), never
    the manifest's: a file is identified by its hash, not by where it was found."""

    kind: Literal["cache", "find-links", "url"]
    where: str = ""  # the --find-links folder, or the URL; "" for the cache

    @classmethod
    def folder(cls, path: Path) -> FoundIn:
        return cls("find-links", str(path))

    @property
    def local(self) -> bool:
        """Found on this machine: nothing was downloaded."""
        return self.kind != "url"

    def __str__(self) -> str:
        """As the build log says it: ``cache``, ``find-links <dir>``, or the URL."""
        return " ".join(part for part in (self.kind, self.where) if part) \
            if self.local else self.where


def sources(url: str, index: str | None, name: str, mirrors: Mirrors, *,
            fallback_to_official: bool = False) -> tuple[tuple[Source, ...], bool]:
    """Where the file the lock lists at *url* (official) is looked for, best first, and
    whether the lock's own URL was left out (a mirror covers it). *index*: the package's
    index in the lock (official), *name* its canonical name."""
    found: list[Source] = []
    alternate = twin(url)
    both_mirrored = mirrors.covers(url) and alternate is not None and mirrors.covers(alternate)
    if mirrors.covers(url):  # the mirror first (its twin's mirror if it fails) ...
        found.append(mirrors.effective(url))
        if alternate and both_mirrored:
            found.append(Twin(url=mirrors.effective(alternate),
                              instead=f"the mirror of {origin(url)}"))
    if index and mirrors.covers(index):
        # ... then the mirrored index's page, for mirrors that rewrite links to themselves ...
        found.append(PageRef(url=f"{mirrors.effective(index).rstrip('/')}/{name}/"))
    skipped = bool(found) and not fallback_to_official
    if not skipped:  # ... then the lock's URL, then its twin host
        found.append(expand(url))
        if alternate and not both_mirrored:  # (that twin's mirror was tried already)
            found.append(Twin(url=mirrors.effective(alternate), instead=origin(url)))
    return tuple(dict.fromkeys(found)), skipped
