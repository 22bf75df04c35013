"""``lockkit platforms --check-index``: which variants a PyTorch index serves, and whether
the platform files keep up with it.

The PyTorch index has no listing of its variant folders. Its root page (``whl/``) is the
project list that pytorch/test-infra ``s3_management/manage_v2.py`` renders for the ``whl``
prefix (``to_simple_packages_html``), and its root ``torch/`` page lists every torch wheel
of every accepted folder (``gen_file_list`` of the prefix walks them all), each linked
under its folder: ``https://download-r2.pytorch.org/whl/cu132/torch-2.12.0%2Bcu132-...``.
So the variants are read from two pages: the root, which must list ``torch`` (else it is
not a PyTorch index root), then ``torch/``, whose links name the folders
(:func:`read_index`). A proxy that rewrites links to itself loses the folder: the wheel's
local version label (``+cu132``) names it then.

Both pages are asked for as PEP 691 says, JSON first (``application/vnd.pypi.simple.v1+json``)
and HTML after: the bucket behind the real index serves HTML whatever is asked, a mirror
or proxy may answer JSON, and the answer's Content-Type decides how it is read.

The index keeps every folder it ever had (``whl/cu118`` still serves torch 2.0), so a
variant is *current* when it serves a torch of the newest release line the index has
(:attr:`Listing.newest`). :func:`compare` then says what a platform author has to do:
a current variant no platform names (a file to add), a platform whose folder serves no
torch at all (gone), and a ``[torch] releases`` range that disagrees with the versions
its folder serves (cu128 stopped at 2.11: a range with no upper bound is stale).
"""

from __future__ import annotations

import json
import posixpath
import re
import urllib.parse
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from lockkit._internal.redact import masked
from lockkit.errors import IndexUnreadable

if TYPE_CHECKING:
    from packaging.version import Version

    from lockkit.index.http import Client
    from lockkit.platforms.definitions import Platform

__all__ = ["ACCEPT", "VARIANT", "Drift", "Listing", "Served", "compare", "index_base",
           "read_index", "variant_of", "variant_root"]

# PEP 691's content negotiation: the JSON form preferred, then HTML (the real index's only one)
ACCEPT = ("application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
          "text/html;q=0.01")
_JSON = "application/vnd.pypi.simple.v1+json"
# manage_v2.py's ACCEPTED_SUBDIR_PATTERNS, matched whole (it matches prefixes: rocm4.0.1)
VARIANT = re.compile(r"cu[0-9]+|rocm[0-9]+(?:\.[0-9]+)+|cpu|xpu")
Form = Literal["json", "html"]
# a wheel's platform tag -> (os, arch as the platform files spell it)
_TAG_ARCH = (("win_amd64", ("windows", "AMD64")), ("win_arm64", ("windows", "ARM64")),
             ("x86_64", ("linux", "x86_64")), ("aarch64", ("linux", "aarch64")),
             ("ppc64le", ("linux", "ppc64le")), ("s390x", ("linux", "s390x")))


@dataclass(frozen=True, kw_only=True)
class Served:
    """One variant folder: the torch versions it serves, and for which OS and CPU."""

    name: str  # "cu132", "rocm7.2"
    versions: tuple[Version, ...]  # sorted, oldest first
    systems: tuple[tuple[str, str], ...]  # (os, arch), e.g. ("linux", "aarch64")

    @property
    def newest(self) -> Version:
        return self.versions[-1]


@dataclass(frozen=True, kw_only=True)
class Listing:
    """What an index root serves: its variant folders, and the form its pages came in."""

    url: str  # the root read, as read: printed through the command's secrets
    form: Form
    variants: dict[str, Served]

    @property
    def newest(self) -> tuple[int, int]:
        """The newest torch release line (2.14) on the index: pre-releases left out."""
        final = [v for s in self.variants.values() for v in s.versions if not v.is_prerelease]
        return max(((v.major, v.minor) for v in final), default=(0, 0))

    def current(self, variant: str) -> bool:
        served = self.variants.get(variant)
        return served is not None and any(
            (v.major, v.minor) == self.newest for v in served.versions)


@dataclass(frozen=True, kw_only=True)
class Drift:
    """What :func:`compare` found: each a list of (subject, why)."""

    missing: list[Served]  # current variants no platform names
    gone: list[tuple[Platform, str]]  # platforms whose folder serves no torch
    ranges: list[tuple[Platform, str]]  # platforms whose ``releases`` disagree with the index
    named: dict[str, list[str]]  # variant -> the platforms that name it

    @property
    def up_to_date(self) -> bool:
        return not (self.missing or self.gone or self.ranges)


def read_index(client: Client, url: str, max_page: int | None = None) -> Listing:
    """The variants the index root *url* serves, from its root page and its ``torch/``
    page (see the module's docstring), each read up to *max_page* bytes (None: the
    default); :class:`~lockkit.errors.IndexUnreadable` when either cannot be fetched, is
    larger, or is not what a PyTorch index serves: an index that cannot be read is not
    one the platforms are behind."""
    root = url.rstrip("/") + "/"
    form, body = _get(client, root, max_page)
    names = _projects(form, body, root)
    if "torch" not in names:
        raise IndexUnreadable(f"{masked(root)}: its root listing names no torch project: "
                              "not a PyTorch index root (such as https://download.pytorch.org/whl)")
    page = urllib.parse.urljoin(root, "torch/")
    form, body = _get(client, page, max_page)
    return Listing(url=root, form=form, variants=_variants(_files(form, body, page)))


def _get(client: Client, url: str, max_page: int | None) -> tuple[Form, str]:
    import httpx

    from lockkit.index.http import MAX_PAGE, PAGE_HINT, PageTooLarge, read_page

    try:
        with client.stream("GET", url, headers={"Accept": ACCEPT}) as resp:
            body = read_page(resp, url, max_page or MAX_PAGE)
    except PageTooLarge as exc:
        raise IndexUnreadable(str(exc), hint=PAGE_HINT) from None
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        raise IndexUnreadable(f"cannot fetch {masked(url)}: "
                              f"{client.policy.why(exc, url)}") from None
    if resp.status_code != 200:
        raise IndexUnreadable(f"{masked(url)}: HTTP {resp.status_code}: not a page of a "
                              "PyTorch index root")
    ctype = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
    try:
        text = body.decode(resp.encoding or "utf-8", "replace")
    except LookupError:  # a charset no codec has: the bytes as UTF-8
        text = body.decode("utf-8", "replace")
    return ("json" if ctype == _JSON else "html"), text


def _json(body: str, url: str, key: str) -> list[dict[str, Any]]:
    """PEP 691's list under *key* (``projects``, ``files``), each entry an object."""
    try:
        items = json.loads(body).get(key)
    except (ValueError, AttributeError):
        items = None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise IndexUnreadable(f"{masked(url)}: not a PEP 691 page: no list of {key!r}")
    return items


def _projects(form: Form, body: str, url: str) -> set[str]:
    """The normalized project names a root page lists."""
    from packaging.utils import canonicalize_name

    from lockkit.index.pages import parse_links

    if form == "json":
        return {canonicalize_name(str(p.get("name", ""))) for p in _json(body, url, "projects")}
    return {canonicalize_name(link["#text"].strip() or link["href"].strip("/").split("/")[-1])
            for link in parse_links(body)}


def _files(form: Form, body: str, url: str) -> Iterable[tuple[str, str]]:
    """(file name, absolute URL) of each file a project page links."""
    from lockkit.index.pages import parse_links

    if form == "json":
        entries = [(str(f.get("filename", "")), str(f.get("url", "")))
                   for f in _json(body, url, "files")]
    else:
        entries = [(link["#text"].strip(), link["href"]) for link in parse_links(body)]
    for name, href in entries:
        absolute = urllib.parse.urljoin(url, href).split("#", 1)[0]
        yield name or urllib.parse.unquote(posixpath.basename(absolute)), absolute


def variant_root(url: str) -> str | None:
    """The index root above *url* when *url* is one variant's index (``.../whl/cu126``,
    what a platform file names), else None: the check reads the root, never a variant."""
    path = urllib.parse.urlsplit(url).path.rstrip("/")
    if not VARIANT.fullmatch(posixpath.basename(path)):
        return None
    return urllib.parse.urljoin(url.rstrip("/") + "/", "..").rstrip("/")


def variant_of(url: str, local: str | None) -> str | None:
    """The folder a torch wheel sits in (``.../whl/cu132/torch-...``), else its local
    version label (``+cu132``, behind a proxy that rewrote the link); None for neither."""
    folder = posixpath.basename(posixpath.dirname(urllib.parse.urlsplit(url).path))
    for candidate in (folder, local or ""):
        if VARIANT.fullmatch(candidate):
            return candidate
    return None


def _variants(files: Iterable[tuple[str, str]]) -> dict[str, Served]:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    versions: dict[str, set[Version]] = {}
    systems: dict[str, set[tuple[str, str]]] = {}
    for name, url in files:
        try:
            _, version, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue  # an sdist, or not a wheel
        variant = variant_of(url, version.local)
        if variant is None:
            continue
        versions.setdefault(variant, set()).add(_public(version))
        systems.setdefault(variant, set()).update(
            found for tag in tags if (found := _system(tag.platform)))
    return {v: Served(name=v, versions=tuple(sorted(versions[v])),
                      systems=tuple(sorted(systems[v]))) for v in sorted(versions, key=_order)}


def _order(variant: str) -> tuple[str, tuple[int, ...]]:
    """cpu, cu126, cu132, rocm7.2, rocm7.14, xpu: by kind, then by version as numbers."""
    return re.sub(r"[0-9.]", "", variant), tuple(int(n) for n in re.findall(r"[0-9]+", variant))


def _public(version: Version) -> Version:
    from packaging.version import Version

    return Version(version.public)


def _system(platform_tag: str) -> tuple[str, str] | None:
    if platform_tag.startswith("macosx_"):
        return ("macos", "arm64" if platform_tag.endswith("arm64") else "x86_64")
    return next((found for suffix, found in _TAG_ARCH if platform_tag.endswith(suffix)), None)


def index_base(platforms: Iterable[Platform]) -> str | None:
    """The index root most platform files' torch indexes sit under (``.../whl`` of
    ``.../whl/cu126``): what ``--check-index`` reads without ``--index-url``."""
    parents = Counter(p.torch_index.rsplit("/", 1)[0] for p in platforms
                      if p.torch_index and not p.alias_of)
    return parents.most_common(1)[0][0] if parents else None


def compare(platforms: Iterable[Platform], listing: Listing, bases: Iterable[str]) -> Drift:
    """The platforms (aliases included: they name a folder too) against *listing*; a
    platform is on this index when its torch index is ``<base>/<variant>`` for one of
    *bases* (the official root and the URL read, which may be a mirror of it)."""
    roots = {b.rstrip("/") for b in bases}
    named: dict[str, list[str]] = {}
    gone, ranges = [], []
    for plat in platforms:
        parent, _, variant = (plat.torch_index or "").rpartition("/")
        if parent not in roots:
            continue  # torch from the default index, or from another index altogether
        named.setdefault(variant, []).append(plat.name)
        served = listing.variants.get(variant)
        if served is None:
            gone.append((plat, f"{parent}/{variant}: the index serves no torch there"))
        elif not plat.alias_of and (why := _range_problem(plat, served, listing)):
            ranges.append((plat, why))
    missing = [s for v, s in listing.variants.items() if v not in named and listing.current(v)]
    return Drift(missing=missing, gone=gone, ranges=ranges, named=named)


def _range_problem(plat: Platform, served: Served, listing: Listing) -> str | None:
    """Why *plat*'s ``releases`` disagrees with what its folder serves, or None: it must
    admit the newest torch there, and, where the folder stopped before the index's newest
    release line, not the next line."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    spec = SpecifierSet(plat.torch_releases)
    where = f"releases {plat.torch_releases or 'any'!r}"
    if served.newest not in spec:
        return f"{where} leaves out torch {served.newest}, which whl/{served.name} serves"
    line = (served.newest.major, served.newest.minor)
    if listing.current(served.name) or line >= listing.newest:
        return None
    after = Version(f"{line[0]}.{line[1] + 1}.0")
    if after in spec:
        return (f"{where} admits torch {after}, but whl/{served.name} stopped at torch "
                f"{served.newest} (add '<{after.major}.{after.minor}')")
    return None
