"""The uv wrapper: constraints + platform -> a raw PEP 751 resolution.

uv resolves for the platform's target (``--python-platform``) and Python without the
target machine. Its first index is lockkit's routing index (``lockkit.index.routing``), which
knows only the platform's torch-family names and serves their PyTorch index pages; with
uv's ``first-index`` strategy every other name, direct or transitive, falls through to the
default index (or ``--index-url``). So torch-family packages come only from the PyTorch
index, everything else only from the default index.
"""

from __future__ import annotations

import logging
import re
import shutil
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockkit._internal import proc
from lockkit._internal.compat import tomllib
from lockkit._internal.fs import temp_folder
from lockkit._internal.log import VERBOSE
from lockkit._internal.redact import masked
from lockkit._internal.uv import UV_TIMEOUT, uv_bin
from lockkit.errors import IndexError_, ResolutionError
from lockkit.index.http import PAGE_HINT, TIMEOUT
from lockkit.index.routing import Page, RoutingIndex
from lockkit.index.urls import Indexes, origin, printable
from lockkit.platforms.definitions import Platform

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from packaging.requirements import Requirement

__all__ = ["UV_RETRIES", "Resolution", "ResolveOptions", "no_such_torch", "resolve",
           "silent_bound", "uv_command", "uv_environment"]


@dataclass(frozen=True, kw_only=True)
class ResolveOptions:
    """How much of an existing lock to keep, and as of when to resolve.

    *preferences* is the platform's current lock: uv reads an existing output file as
    preferred versions (as pip-compile does), so a recompile moves only what the change
    needs. ``upgrade`` drops all of them, ``upgrade_packages`` lifts those names only.
    """

    preferences: Path | None = None
    upgrade: bool = False
    upgrade_packages: tuple[str, ...] = ()
    exclude_newer: str | None = None  # RFC 3339 date or timestamp, passed to uv
    # every OS and Python from the given one up (uv --universal, markers in the output)
    # rather than the platform's target: the CI workflow's pins for its runners
    universal: bool = False


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """uv's pylock output (its text; the document parsed on first use) and the pages the
    routing index served for it."""

    text: str
    routing: RoutingIndex | None

    @property
    def doc(self) -> dict[str, Any]:
        return tomllib.loads(self.text)


def uv_command(binary: str, requirements: list[Path], platform: Platform, python: str,
               output: Path, options: ResolveOptions | None = None,
               input_options: tuple[str, ...] = ()) -> list[str]:
    """uv's command line: no index URL on it (``ps`` shows it to every user), they go
    through :func:`uv_environment`. ``input_options`` select from pyproject.toml inputs
    (``--extra``, ``--group``, ...)."""
    options = options or ResolveOptions()
    target = (["--universal"] if options.universal
              else ["--python-platform", platform.python_platform])
    argv = [binary, "pip", "compile", "--no-config", "--quiet", "--format", "pylock.toml",
            "--generate-hashes", "--no-header", *target, "--python-version", python,
            "--index-strategy", "first-index", "-o", str(output),
            # An explicit interpreter (used only for sdist builds) spares uv its interpreter
            # discovery, which costs ~0.2 s per call through shims such as pyenv's.
            "--python", sys.executable]
    for name in options.upgrade_packages:
        argv += ["--upgrade-package", name]
    if options.exclude_newer:
        argv += ["--exclude-newer", options.exclude_newer]
    return argv + list(input_options) + [str(r) for r in requirements]


def uv_environment(indexes: Indexes, routing_url: str | None, folder: Path,
                   timeout: float = TIMEOUT) -> dict[str, str]:
    """The variables that give uv its indexes, added to its isolated environment: the
    default index (``UV_DEFAULT_INDEX``, credentials and all) and the routing index ahead
    of it (``UV_INDEX``: uv asks ``--index`` indexes before the default one). A process's
    environment is readable by its own user only, unlike its command line. When a mirror
    carries credentials, ``NETRC`` names the netrc :func:`lockkit.index.auth.uv_netrc` writes
    into *folder* (the routing index's pages carry none).

    *timeout* (compile ``--timeout``) bounds uv's own reads, as it bounds lockkit's page
    fetches, and its connections when shorter than uv's default of 10 s. uv retries a
    failed request :data:`UV_RETRIES` times, paused up to 2, 4 and 8 s: an index that
    never answers fails within ``4 * timeout + 14`` seconds (:func:`silent_bound`; 18 s
    was measured at --timeout 3, where the docs once said about 12)."""
    from lockkit.index.auth import uv_netrc

    env: dict[str, str] = {"UV_HTTP_TIMEOUT": f"{timeout:g}",
                           "UV_HTTP_RETRIES": str(UV_RETRIES)}
    if timeout < _UV_CONNECT_TIMEOUT:
        env["UV_HTTP_CONNECT_TIMEOUT"] = f"{timeout:g}"
    if indexes.default_effective:
        env["UV_DEFAULT_INDEX"] = indexes.default_effective
    if routing_url:
        env["UV_INDEX"] = routing_url
    netrc = uv_netrc(indexes.mirrors.table.values(), folder)
    if netrc is not None:
        env["NETRC"] = str(netrc)
    return env


_UV_CONNECT_TIMEOUT = 10.0  # uv's own default (UV_HTTP_CONNECT_TIMEOUT), in seconds
# uv's own default, set so that the bound does not move with uv's version: a 5xx, a reset
# or a silence is tried again 3 times, which a flaky network needs more than a quick
# failure. uv pauses a random 1 to 2**(n+1) seconds before its retry n (its log says
# "Sleeping ..."), so R retries add at most 2**(R+1) - 2 seconds: an index that never
# answers costs 4 timeouts and up to 14 s of pauses.
UV_RETRIES = 3


def silent_bound(timeout: float) -> float:
    """The longest, in seconds, uv waits on an index that never answers before it fails
    (uv's start and lockkit's not counted): each try's *timeout*, and uv's pauses."""
    return (UV_RETRIES + 1) * timeout + 2 ** (UV_RETRIES + 1) - 2


def _explain(stderr: str) -> str:
    text = masked(stderr.strip())
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " ".join(ln.strip() for ln in lines[:6])[:600] or "uv failed without a message"


def resolve(requirements: list[Path], platform: Platform, python: str, indexes: Indexes,
            binary: str | None = None,
            fetch_page: Callable[[str], tuple[int, str]] | None = None,
            options: ResolveOptions | None = None,
            input_options: tuple[str, ...] = (),
            prefetch: tuple[str, ...] = (),
            meanwhile: Callable[[], None] | None = None,
            pages_out: dict[str, tuple[int, str]] | None = None,
            timeout: float = TIMEOUT) -> Resolution:
    """Run uv (behind the routing index when the platform has a PyTorch index).

    Overlapping uv's own time: the routing index fetches the family pages among
    *prefetch* (the names the inputs ask for) before uv asks for them, then *meanwhile*
    runs in that thread (or in a thread of its own once uv has started, without a routing
    index): what the caller needs only after uv, such as imports. *pages_out* gets the
    PyTorch index pages the routing index fetched when uv fails (what "no such torch" is
    explained by). *timeout*: see :func:`uv_environment`.

    A family page uv asks for that cannot be fetched stops uv at once (``proc.Stop``):
    the error names the PyTorch index and its mirror, not the routing index uv saw."""
    options = options or ResolveOptions()
    binary = binary or uv_bin()
    extra = {"MACOSX_DEPLOYMENT_TARGET": platform.macos_target} if platform.macos_target else {}
    given = (options.preferences if options.preferences and options.preferences.is_file()
             and not options.upgrade else None)
    if platform.torch_index and fetch_page is None:
        raise ValueError("a platform with a PyTorch index needs fetch_page")
    stop = proc.Stop()
    with ExitStack() as stack:
        routing = None
        if platform.torch_index:
            assert fetch_page is not None
            routing = stack.enter_context(RoutingIndex(
                family=platform.torch_packages, official_index=platform.torch_index,
                mirrors=indexes.mirrors, file_hosts=platform.torch_file_hosts,
                fetch=fetch_page, on_failure=lambda page: stop.set()))
        tmp = stack.enter_context(temp_folder("lockkit-"))
        out = Path(tmp) / "pylock.toml"
        if given is not None:
            shutil.copyfile(given, out)  # uv prefers what its output file pins
        argv = uv_command(binary, requirements, platform, python, out, options, input_options)
        env = proc.isolated_env({**extra, **uv_environment(
            indexes, routing.url if routing else None, Path(tmp), timeout)})
        _say_indexes(platform, indexes, routing)
        if routing is not None:
            routing.prefetch(prefetch, then=meanwhile)
            result = proc.call(argv, timeout=UV_TIMEOUT, env=env, stop=stop)
        else:
            result = proc.call(argv, timeout=UV_TIMEOUT, env=env, on_start=_in_thread(meanwhile))
        if routing is not None and routing.failed is not None:  # uv was stopped for it
            raise _unreachable_error(platform, indexes, routing.failed)
        if result.returncode != 0:
            if routing is not None and pages_out is not None:  # for "no such torch"
                pages_out.update({f"{routing.effective_index}/{name}/": (page.status or 0,
                                                                         page.html)
                                  for name, page in routing.pages.items()})
            _raise_for(result.stderr, platform, indexes, routing)
        return Resolution(text=out.read_text(encoding="utf-8"), routing=routing)


def _say_indexes(platform: Platform, indexes: Indexes, routing: RoutingIndex | None) -> None:
    """``-v``: every index uv is pointed at, and the mirrors, printable (user info
    ``***``; the log conceals ``${VAR}`` values), even where every package comes from the
    default index and no routing line would name one."""
    name = platform.name
    _log.log(VERBOSE, "%s: uv's default index: %s", name,
             printable(indexes.default_effective) if indexes.default_effective
             else "uv's own (no index-url configured)")
    if routing is not None:
        _log.log(VERBOSE, "%s: uv's first index: lockkit's routing index on %s, which serves "
                 "%s from %s and sends uv on to the default index for every other name",
                 name, origin(routing.url), ", ".join(sorted(routing.family)),
                 indexes.torch_answering)  # its path is private to this run: not shown
    for official, mirror in indexes.mirrors.table.items():
        _log.log(VERBOSE, "%s: mirror: %s -> %s", name, official, printable(mirror))


def _in_thread(work: Callable[[], None] | None) -> Callable[[], None] | None:
    if work is None:
        return None
    return lambda: threading.Thread(target=work, name="lockkit-meanwhile", daemon=True).start()


def _unreachable_error(platform: Platform, indexes: Indexes, page: Page) -> IndexError_:
    """The PyTorch index (official URL) and the mirror it was asked through, in printable
    form: never the routing index's loopback address, which is all uv saw."""
    if page.too_large is not None:  # reached, and refused by lockkit: not unreachable
        return IndexError_(f"{platform.name}: {page.too_large}", hint=PAGE_HINT)
    official = printable(indexes.torch_official or "")
    effective = indexes.torch_effective or ""
    via = (f" through the mirror {printable(effective)}"
           if effective and indexes.mirrors.covers(indexes.torch_official or "") else "")
    return IndexError_(f"{platform.name}: the PyTorch index {official} is unreachable{via} "
                       f"({page.error})",
                       hint="check the [mirrors] table or --mirror, and the network "
                            "(--timeout S: how long an index may take to answer)")


def _raise_for(stderr: str, platform: Platform, indexes: Indexes,
               routing: RoutingIndex | None) -> None:
    if routing is not None:  # uv names the routing index where the PyTorch index is meant
        stderr = stderr.replace(routing.url, routing.official_index)
    why = _explain(stderr)
    torch = indexes.torch_answering  # the mirror that answered, with the official URL
    asked = [p for name, p in routing.pages.items() if name in routing.asked] if routing else []
    for page in asked:  # a page only prefetched is not what uv failed on
        if page.status is None:
            raise _unreachable_error(platform, indexes, page)
        if page.status == 401:
            raise IndexError_(
                f"{platform.name}: {torch} refused access ({page.status}); "
                "lockkit never falls back to the default index",
                hint="check the credentials (user:${VAR}@ in [mirrors], or ~/.netrc) "
                     "or the --mirror for that index")
        if page.status != 200 or not page.files:
            raise IndexError_(
                f"{platform.name}: {page.name} must come from {torch}, which "
                f"does not serve it (HTTP {page.status}, {len(page.files)} files); "
                "lockkit never falls back to the default index",
                hint="check the platform's torch.index and --mirror, or the version asked for")
    if re.search(r"\b(401|403)\b", stderr):
        raise IndexError_(f"{platform.name}: an index refused access: {why}",
                          hint="check the credentials: index-url or [mirrors] "
                               "(user:${VAR}@), or ~/.netrc")
    if re.search(r"(Connection refused|dns error|connect error|timed out|Failed to fetch)",
                 stderr, re.I):
        raise IndexError_(f"{platform.name}: an index is unreachable: {why}",
                          hint="check --index-url / --mirror, or the network")
    raise ResolutionError(f"{platform.name}: no resolution: {why}")


def no_such_torch(platform: Platform, requirements: dict[str, list[str]],
                   pages: dict[str, tuple[int, str]]) -> None:
    """Raise the plain answer when the platform's index serves no torch the inputs accept:
    the platform, the index and its newest torch versions (uv's derivation tree says the
    same in many lines, and never which index it was)."""
    from lockkit.index.routing import served_versions

    page = next((v for k, v in pages.items() if k.rstrip("/").endswith("/torch")), None)
    if not platform.torch_index or page is None or page[0] != 200:
        return
    served = served_versions(page[1], "torch")
    asked = [r for reqs in requirements.values() for r in map(_requirement, reqs)
             if r is not None and r.name == "torch" and r.specifier]
    if not served or not asked:
        return
    if any(all(r.specifier.contains(v, prereleases=True) for r in asked) for v in served):
        return
    shown = ", ".join(str(v) for v in served[:5]) + (", ..." if len(served) > 5 else "")
    wanted = " and ".join(f"torch{r.specifier}" for r in asked)
    raise ResolutionError(
        f"{platform.name}: no resolution: no torch matching {wanted} on the PyTorch index "
        f"{masked(platform.torch_index)}; it serves torch {shown}",
        hint="change the torch requirement, or choose a platform whose torch releases "
             "include it ('lockkit platforms')")


def _requirement(text: str) -> Requirement | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    req.name = canonicalize_name(req.name)
    return req
