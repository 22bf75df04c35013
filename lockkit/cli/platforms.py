"""``lockkit platforms``: the known platforms as a table, JSON or Markdown, or the ones this
machine runs (``--host``), or how they compare with what the PyTorch index serves
(``--check-index``: :mod:`lockkit.index.variants`, exit 1 when they have fallen behind, 3
when the index cannot be read).
The result goes to stdout. A malformed platform file does not hide the others: they are
listed, then its error is raised (exit 2), naming the file and key."""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import tables, ui
from lockkit._internal.redact import NO_SECRETS  # platform files: no project secrets
from lockkit.cli.common import project_root
from lockkit.cli.flags import project_flag
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from lockkit._internal.redact import Secrets
    from lockkit.index.variants import Drift, Listing
    from lockkit.platforms.definitions import Catalog, Platform

__all__ = ["DESCRIPTION", "HELP", "PlatformsOptions", "add_arguments", "handle"]

HELP = "list the known platforms"
DESCRIPTION = ("List shipped platforms and the project's own. With --check-index, compare "
               "them with what the PyTorch index serves: exit 0 when they are up to date, 1 "
               "when a variant is missing, an index has gone or a releases range is stale, 2 "
               "for a usage error, 3 when the index cannot be read (unreachable, a page past "
               "max-page-size, not an index page).")


def add_arguments(plat: argparse.ArgumentParser) -> None:
    project_flag(plat)
    plat.add_argument("--json", action="store_true", help="print a JSON list (a CI matrix input)")
    plat.add_argument("--markdown", action="store_true",
                      help="print the docs' platform table (Markdown), from the files")
    plat.add_argument("--host", action="store_true",
                      help="the platforms this machine can run, best first, and why not the others")
    plat.add_argument("--check-index", action="store_true",
                      help="read the PyTorch index's root listing (network; pages or the "
                           "PEP 691 JSON API) and report the variants of its newest torch "
                           "release that no platform names, each with the platform file to "
                           "add, the platforms whose index serves no torch any more, and the "
                           "releases ranges the index contradicts; exit 1 if any")
    plat.add_argument("--index-url", metavar="URL",
                      help="with --check-index: the index root to read (default: the root "
                           "the platform files' torch indexes sit under, through the "
                           "project's [mirrors]: https://download.pytorch.org/whl); a mirror "
                           "of it is read the same way (user:token@ is used, never shown)")
    plat.set_defaults(options=PlatformsOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class PlatformsOptions:
    """``lockkit platforms``'s flags, typed."""

    project: Path | None
    json: bool
    markdown: bool
    host: bool
    check_index: bool
    index_url: str | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> PlatformsOptions:
        return cls(project=ns.project, json=ns.json, markdown=ns.markdown, host=ns.host,
                   check_index=ns.check_index, index_url=ns.index_url)


def handle(options: PlatformsOptions) -> int:
    from lockkit.platforms.definitions import load_catalog

    _check_flags(options)
    if options.check_index:
        return _check_index(options)
    catalog = load_catalog(project_root(options.project))
    _show(catalog.platforms, options)
    _raise_broken(catalog)
    return 0


def _raise_broken(catalog: Catalog) -> None:
    error = catalog.error()
    if error is not None:
        raise error


def _check_flags(options: PlatformsOptions) -> None:
    import urllib.parse

    if options.check_index and (options.host or options.markdown):
        flag = "--host" if options.host else "--markdown"
        raise UsageError(f"--check-index and {flag} cannot be given together",
                         hint="see 'lockkit platforms --help'")
    if options.index_url is None:
        return
    if not options.check_index:
        raise UsageError("--index-url: only with --check-index (the index root it reads)",
                         hint="see 'lockkit platforms --help'")
    from lockkit.index.urls import expand, secrets_of
    from lockkit.index.variants import variant_root

    secrets = secrets_of([options.index_url])
    parts = urllib.parse.urlsplit(expand(options.index_url))  # ${VAR} filled
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--index-url {secrets.redact(options.index_url)}: not an http:// or "
                         "https:// URL", hint="give the index root, such as "
                                              "https://download.pytorch.org/whl")
    if (root := variant_root(expand(options.index_url))) is not None:
        raise UsageError(f"--index-url {secrets.redact(options.index_url)}: one variant's index, "
                         f"not the index root",
                         hint=f"give the root: --index-url {secrets.redact(root)}")


def _check_index(options: PlatformsOptions) -> int:
    """``--check-index``: the index's root listing against the platforms (see the module's
    docstring); 0 when up to date, 1 when something is missing, gone or stale; an index
    that cannot be read is :class:`~lockkit.errors.IndexUnreadable` (exit 3)."""
    from lockkit._internal import log
    from lockkit.cli.common import load
    from lockkit.index.auth import Credentials
    from lockkit.index.http import Client, Policy
    from lockkit.index.urls import Mirrors, expand, values_of
    from lockkit.index.variants import compare, index_base, read_index
    from lockkit.platforms.definitions import load_catalog

    project = load(options.project)
    secrets = project.secrets.plus(values_of([options.index_url or ""]))
    log.hide(secrets)  # the --index-url's ${VAR} values too, from here on
    catalog = load_catalog(project.root)
    official = index_base(catalog.platforms.values())
    if options.index_url is None and official is None:
        raise UsageError("--check-index: no platform names a PyTorch index to read",
                         hint="give the index root: --index-url URL")
    url = (expand(options.index_url) if options.index_url
           else Mirrors(project.mirrors, secrets).effective(str(official)))
    ui.say(f"reading the PyTorch index at {url}")
    credentials = Credentials.from_urls([url, *project.mirrors.values()])
    with Client(Policy(attempts=2), credentials) as client:
        listing = read_index(client, url, project.max_page_size << 20)
    # printed and written (the drafted files) as the config spells it: ${VAR}s put back
    listing = dataclasses.replace(listing, url=secrets.redact(listing.url))
    bases = [b for b in (official, url, options.index_url) if b]
    drift = compare(catalog.platforms.values(), listing, bases)
    if options.json:
        print(json.dumps(_drift_json(listing, drift, catalog.platforms), indent=2))
    else:
        _drift_text(listing, drift, catalog.platforms, secrets)
    _raise_broken(catalog)
    return 0 if drift.up_to_date else 1


def _show(platforms: dict[str, Platform], options: PlatformsOptions) -> None:
    from lockkit.platforms.definitions import markdown_table

    if options.host:
        _host(platforms, options.json)
    elif options.json:
        print(json.dumps([p.summary() for p in platforms.values()], indent=2))
    elif options.markdown:
        print(markdown_table(platforms), end="")
    else:
        rows = [(p.name, p.os, p.arch, p.python, p.backend_label, _torch_from(p),
                 p.torch_releases) for p in platforms.values()]
        tables.print_table("lockkit platforms", ("name", "os", "arch", "python", "backend",
                                                 "torch index", "torch releases"), rows,
                           stream=sys.stdout, secrets=NO_SECRETS, whole=("name",),
                           detail=("torch index",))


def _torch_from(p: Platform) -> str:
    if p.alias_of:
        return f"alias of {p.alias_of}"
    return p.torch_index or ("(default index)" if p.has_torch else "(no torch)")


def _host(platforms: Mapping[str, Platform], as_json: bool) -> None:
    from lockkit.platforms import host

    fits, out = host.rank(platforms.values(), host.detect())
    if as_json:
        print(json.dumps({"runs": [{"name": r.platform.name, "reason": r.reason} for r in fits],
                          "ruled_out": [{"name": r.platform.name, "reason": r.reason}
                                        for r in out]}, indent=2))
        return
    rows: list[tuple[int | str, str, str, str]] = [
        (i, r.platform.name, "runs here", r.reason) for i, r in enumerate(fits, 1)]
    rows += [("", r.platform.name, "ruled out", r.reason) for r in out]
    tables.print_table("lockkit platforms --host", ("#", "platform", "verdict", "why"), rows,
                       stream=sys.stdout, secrets=NO_SECRETS, whole=("platform",))


def _drafts(listing: Listing, drift: Drift,
            platforms: dict[str, Platform]) -> dict[str, dict[str, str]]:
    """Each missing variant's platform files: platforms/<name>.toml text for each OS and
    CPU it serves, by variant."""
    from lockkit.platforms.draft import draft

    base = listing.url.rstrip("/")
    official = {p.torch_index.rsplit("/", 1)[0] for p in platforms.values() if p.torch_index}
    if len(official) == 1:  # write the official index, as the platform files do
        base = official.pop()
    found: dict[str, dict[str, str]] = {}
    for served in drift.missing:
        for os_, arch in served.systems:
            made = draft(served.name, f"{base}/{served.name}", os_, arch,
                         str(served.versions[0]), platforms.values())
            found.setdefault(served.name, {})[made.name] = made.text
    return found


def _drift_json(listing: Listing, drift: Drift,
                platforms: dict[str, Platform]) -> dict[str, object]:
    return {
        "index": listing.url, "form": listing.form,
        "newest": ".".join(map(str, listing.newest)),
        "variants": [{"name": s.name, "torch": [str(v) for v in s.versions],
                      "systems": [f"{o} {a}" for o, a in s.systems],
                      "current": listing.current(s.name),
                      "platforms": drift.named.get(s.name, [])}
                     for s in listing.variants.values()],
        "missing": [s.name for s in drift.missing],
        "gone": [{"platform": p.name, "why": why} for p, why in drift.gone],
        "stale_releases": [{"platform": p.name, "why": why} for p, why in drift.ranges],
        "files": _drafts(listing, drift, platforms),
        "up_to_date": drift.up_to_date,
    }


def _drift_text(listing: Listing, drift: Drift, platforms: dict[str, Platform],
                secrets: Secrets) -> None:
    newest = ".".join(map(str, listing.newest))
    shown = [s for s in listing.variants.values()
             if listing.current(s.name) or s.name in drift.named]
    rows = [(s.name, f"{s.versions[0]} to {s.newest}",
             "current" if listing.current(s.name) else f"stopped at {s.newest}",
             ", ".join(f"{o} {a}" for o, a in s.systems) or "-",
             ", ".join(drift.named.get(s.name, [])) or "none") for s in shown]
    tables.print_table(f"lockkit platforms --check-index {listing.url} (newest torch "
                       f"{newest}, read as {listing.form})",
                       ("variant", "torch", "status", "wheels for", "platforms"), rows,
                       stream=sys.stdout, secrets=secrets, whole=("variant",))
    older = len(listing.variants) - len(shown)
    if older:
        print(f"{older} older variant folders serve no torch {newest} and no platform names "
              "them (not shown)")
    for plat, why in drift.gone:
        print(f"gone: {plat.name}: {why}")
    for plat, why in drift.ranges:
        print(f"stale releases: {plat.name} ({plat.source}): {why}")
    drafts = _drafts(listing, drift, platforms)
    for served in drift.missing:
        print(f"missing: {served.name} serves torch {served.versions[0]} to {served.newest} "
              "and no platform names it; add:\n")
        for name, text in drafts.get(served.name, {}).items():
            print(f"# platforms/{name}.toml\n{text}")
    print(_summary(drift))


def _summary(drift: Drift) -> str:
    if drift.up_to_date:
        return ("up to date: every current variant has a platform, and every platform's "
                "index serves torch within its releases range")
    parts = [f"{len(drift.missing)} variant(s) no platform names: "
             + ", ".join(s.name for s in drift.missing)] if drift.missing else []
    if drift.gone:
        parts.append(f"{len(drift.gone)} platform(s) whose index has gone: "
                     + ", ".join(p.name for p, _ in drift.gone))
    if drift.ranges:
        parts.append(f"{len(drift.ranges)} stale releases range(s): "
                     + ", ".join(p.name for p, _ in drift.ranges))
    return "behind the index: " + "; ".join(parts)
