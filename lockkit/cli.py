"""The command line: thin commands over the library; the only place that exits."""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from lockkit import __version__, ui
from lockkit.errors import INTERRUPTED, LockkitError, StaleLockError, UsageError, WriteError


class _Parser(argparse.ArgumentParser):
    """argparse with lockkit's one-line errors (subcommand parsers inherit the class)."""

    def error(self, message: str) -> Any:
        command = self.prog.removeprefix("lockkit").strip()  # "compile", "wheelhouse build"
        raise UsageError(f"{command}: {message}" if command else message,
                         hint=f"see '{self.prog} --help'")


# Numeric flags and the range each must be in: (attribute, flag, test, what it must be).
_RANGES: tuple[tuple[str, str, Any, str], ...] = (
    ("jobs", "--jobs", lambda v: v >= 1, "at least 1"),
    ("retries", "--retries", lambda v: v >= 0, "0 or more"),
    ("timeout", "--timeout", lambda v: math.isfinite(v) and v > 0, "a number of seconds above 0"),
    ("probe_timeout", "--probe-timeout", lambda v: math.isfinite(v) and v > 0,
     "a number of seconds above 0"),
)


def _check_ranges(args: argparse.Namespace) -> None:
    for attr, flag, ok, must in _RANGES:
        value = getattr(args, attr, None)
        if value is not None and not ok(value):
            raise UsageError(f"{flag} {value}: must be {must}")


def _project_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--project", type=Path, default=None, metavar="DIR",
                   help="project folder holding lockkit.toml (default: the nearest folder with "
                        "lockkit.toml or [tool.lockkit], from the current one up to the "
                        "repository root)")
    p.add_argument("--mirror", action="append", default=[], metavar="OFFICIAL=MIRROR",
                   help="serve an official URL prefix from a mirror (repeatable; the longest "
                        "prefix wins). The PyTorch index links files on a second host: map "
                        "both, e.g. https://download.pytorch.org=https://mirror.example/pt and "
                        "https://download-r2.pytorch.org=https://mirror.example/r2, or map the "
                        "index alone to a proxy that rewrites links to itself")
    p.add_argument("--index-url", metavar="URL",
                   help="replace the default index (user:token@ and ${VAR} are used, never written)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lockkit",
        description="Rebuildable PyTorch environments: per-platform PEP 751 locks with hashes "
                    "and pinned PyTorch indexes.")
    parser.add_argument("--version", action="version", version=f"lockkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    plat = sub.add_parser("platforms", help="list the known platforms",
                          description="List shipped platforms and the project's own.")
    plat.add_argument("--project", type=Path, default=Path("."), metavar="DIR")
    plat.add_argument("--json", action="store_true", help="print a JSON list (a CI matrix input)")
    plat.add_argument("--markdown", action="store_true",
                      help="print the README's platform table (Markdown)")
    plat.add_argument("--host", action="store_true",
                      help="the platforms this machine can run, best first, and why not the others")
    comp = sub.add_parser(
        "compile", help="write locks/pylock.<platform>.toml",
        description="Resolve the project's constraints with uv for each platform and write "
                    "locks/pylock.<platform>.toml: every file hashed, torch-family packages "
                    "only from the platform's PyTorch index.")
    comp.add_argument("--platform", action="append", default=[], metavar="NAME",
                      help="platform to compile (repeatable; default: the config's list)")
    comp.add_argument("--all", action="store_true", help="compile every known platform")
    comp.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 if a lock is missing or stale (the CI gate)")
    # Concurrent uv runs contend for uv's cache; on 2 cores one at a time was measured faster.
    jobs = max(1, min(4, (os.cpu_count() or 2) // 2))
    comp.add_argument("--upgrade", action="store_true",
                      help="resolve afresh: the existing lock's versions are not preferred")
    comp.add_argument("--upgrade-package", action="append", default=[], metavar="NAME",
                      help="let NAME move to its newest allowed version; every other package "
                           "keeps the version the existing lock pins (repeatable)")
    comp.add_argument("--exclude-newer", metavar="DATE",
                      help="ignore files uploaded after DATE (RFC 3339, e.g. 2024-10-01): "
                           "resolve as of that day (overrides exclude-newer in lockkit.toml)")
    comp.add_argument("--jobs", type=int, default=jobs,
                      help=f"platforms resolved at once (default {jobs}: half the cores, at most 4)")
    _project_args(comp)
    _wheelhouse_parser(sub)
    _verify_parsers(sub)
    return parser


def _verify_parsers(sub: Any) -> None:
    ver = sub.add_parser(
        "verify", help="rebuild the lock in a fresh venv and prove it works",
        description="Rebuild locks/pylock.<platform>.toml into a new venv and check it, in "
                    "order: host, venv, install (from the wheelhouse, no network), pip-check, "
                    "inventory against the lock, system chain, GPU (no silent CPU fallback), "
                    "application (the project's embedding check). Writes dossier.json, "
                    "dossier.md and installed-after.txt. Exit 0 passed, 1 a check failed or "
                    "the result is incomplete, 2 usage or configuration error.")
    ver.add_argument("--platform", metavar="NAME",
                     help="platform to verify (default: the config's only platform)")
    ver.add_argument("--wheelhouse", type=Path, metavar="DIR",
                     help="install from this wheelhouse (default: <project>/wheelhouse/"
                          "<platform> if present, else fetch the lock's URLs by hash)")
    ver.add_argument("--python", type=Path, metavar="PATH",
                     help="interpreter to build the venv from (default: one of the lock's "
                          "Python version)")
    ver.add_argument("--installer", choices=("uv", "pip"), default="uv",
                     help="uv (default: fast, no pip in the venv) or pip (the plain "
                          "'python -m venv' + 'pip install' procedure)")
    ver.add_argument("--no-gpu", action="store_true",
                     help="skip the GPU and application checks (result: incomplete)")
    ver.add_argument("--report-dir", type=Path, metavar="DIR",
                     help="where the dossier goes (default: .lockkit/reports/<platform>/<UTC time>)")
    ver.add_argument("--keep-venv", action="store_true", help="keep the rebuilt venv")
    ver.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                     help="seconds before a hung probe counts as failed (default 300)")
    ver.add_argument("--cache-dir", type=Path, metavar="DIR",
                     help="download cache when fetching the lock's URLs")
    ver.add_argument("--junit", type=Path, metavar="FILE",
                     help="also write a JUnit XML report, one test case per step")
    ver.add_argument("--json", action="store_true",
                     help="print the dossier's JSON document instead of the steps table "
                          "(the same document as dossier.json and 'diagnose --json')")
    ver.add_argument("--variant", metavar="NAME",
                     help="record this run as an intended variant (e.g. fp16-weights); "
                          "'lockkit diff' lists its declared differences apart")
    ver.add_argument("--reason", metavar="TEXT", help="why the variant exists (with --variant)")
    ver.add_argument("--changes", action="append", default=[], metavar="LAYER",
                     choices=("code", "data", "packages", "system", "result"),
                     help="a layer the variant is meant to change (repeatable; with --variant)")
    _project_args(ver)
    diag = sub.add_parser(
        "diagnose", help="probe an existing interpreter's system and GPU stack",
        description="Run the system and GPU steps of verify on an existing interpreter: "
                    "an interpretable answer to 'is this environment's GPU stack right?'.")
    diag.add_argument("--python", type=Path, metavar="PATH",
                      help="interpreter to probe (default: the one running lockkit)")
    diag.add_argument("--expect", choices=("cpu", "cuda", "rocm", "mps"),
                      help="backend the torch build must have (default: the one it reports)")
    diag.add_argument("--json", action="store_true", help="print the report as JSON")
    diag.add_argument("--probe-timeout", type=float, default=300.0, metavar="S")
    diff = sub.add_parser(
        "diff", help="say which layer differs between two dossiers, locks or manifests",
        description="Compare two runs (dossier.json or its folder), locks or wheelhouse "
                    "manifests, grouped by layer: code and parameters, data and weights, "
                    "Python and packages, system and backend, result. Exit 0 when nothing "
                    "differs (or every difference is declared by a variant), 1 when "
                    "something does, 2 for unreadable input.")
    diff.add_argument("a", type=Path, metavar="A")
    diff.add_argument("b", type=Path, metavar="B")
    diff.add_argument("--json", action="store_true", help="print the differences as JSON")
    ci = sub.add_parser("ci", help="write a CI workflow that verifies every platform",
                        description="Generate CI configuration: a 'compile --check' job, then "
                                    "one verify job per platform on its own runner.")
    cisub = ci.add_subparsers(dest="ci_command", metavar="SYSTEM", required=True)
    gh = cisub.add_parser(
        "github", help="write a GitHub Actions workflow",
        description="Write a GitHub Actions workflow: a 'locks' job running 'lockkit compile "
                    "--check', then a matrix with one job per platform on its runner label "
                    "([ci.runners] in lockkit.toml overrides the defaults), each building the "
                    "wheelhouse, running 'lockkit verify --junit' and uploading the dossier.")
    gh.add_argument("--platform", action="append", default=[], metavar="NAME",
                    help="platform to verify (repeatable; default: the config's list)")
    gh.add_argument("--all", action="store_true", help="every known platform")
    gh.add_argument("--project", type=Path, default=Path("."), metavar="DIR",
                    help="project folder, relative to the repository root (default: .)")
    gh.add_argument("-o", "--output", type=Path, metavar="FILE",
                    help="workflow file (default: .github/workflows/lockkit.yml)")


def _wheelhouse_parser(sub: Any) -> None:
    wh = sub.add_parser(
        "wheelhouse", help="download a lock's wheels into an offline-installable folder",
        description="Build, pack and unpack per-platform wheelhouses: every wheel of "
                    "locks/pylock.<platform>.toml, hash-checked, with a pylock.toml, a "
                    "requirements.txt and a PEP 503 simple/ tree that install with no network.")
    whsub = wh.add_subparsers(dest="wheelhouse_command", metavar="ACTION", required=True)
    build = whsub.add_parser(
        "build", help="fetch the lock's wheels into wheelhouse/<platform>/",
        description="Fetch every file the platform's lock selects (cache, --find-links, "
                    "mirror, then the lock's URL), verify each sha256 while it streams, and "
                    "write the folder atomically. A second build of the same lock downloads "
                    "nothing.")
    build.add_argument("--platform", required=True, metavar="NAME", help="platform whose lock to use")
    build.add_argument("--out", type=Path, metavar="DIR",
                       help="output folder (default: <project>/wheelhouse/<platform>)")
    build.add_argument("--find-links", action="append", type=Path, default=[], metavar="DIR",
                       help="folder of files to take by hash before downloading (repeatable)")
    build.add_argument("--jobs", type=int, default=8, help="downloads at once (default 8)")
    build.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="content-addressed download cache (default: the user cache folder, "
                            "or $LOCKKIT_CACHE_DIR)")
    build.add_argument("--retries", type=int, default=3,
                       help="retries of a 5xx, reset, timeout or truncated body (default 3)")
    build.add_argument("--timeout", type=float, default=60.0,
                       help="seconds without data before a download counts as timed out")
    build.add_argument("--fallback-to-official", action="store_true",
                       help="after a configured mirror fails, try the official host "
                            "(default: an air-gapped build never reaches for it)")
    _project_args(build)
    pack = whsub.add_parser(
        "pack", help="write the wheelhouse as one reproducible archive",
        description="Pack wheelhouse/<platform>/ into one tar (sorted members, fixed times and "
                    "owners, manifest.json and SHA256SUMS first): the same folder gives the "
                    "same bytes.")
    pack.add_argument("--platform", required=True, metavar="NAME")
    pack.add_argument("--project", type=Path, default=Path("."), metavar="DIR")
    pack.add_argument("--from", dest="folder", type=Path, metavar="DIR",
                      help="wheelhouse folder (default: <project>/wheelhouse/<platform>)")
    pack.add_argument("-o", "--output", type=Path, metavar="FILE",
                      help="archive (default: <project>/wheelhouse/<platform>.wheelhouse.tar)")
    pack.add_argument("--lock", type=Path, metavar="FILE",
                      help="also check every wheel by hash against this committed lock")
    unpack = whsub.add_parser(
        "unpack", help="check and extract a wheelhouse archive",
        description="Check every member against the archive's manifest before anything "
                    "appears; refuse links, devices, absolute or '..' paths and unlisted "
                    "members; leave nothing behind on failure.")
    unpack.add_argument("archive", type=Path, metavar="FILE")
    unpack.add_argument("--out", type=Path, metavar="DIR",
                        help="destination folder (default: the archive's name without "
                             ".wheelhouse.tar, beside it)")
    unpack.add_argument("--lock", type=Path, metavar="FILE",
                        help="also check every wheel by hash against this committed lock "
                             "(locks/pylock.<platform>.toml)")


def cmd_platforms(args: argparse.Namespace) -> int:
    from lockkit.platforms import load_platforms, markdown_table

    if not args.project.is_dir():
        raise UsageError(f"--project {args.project}: not a folder")
    platforms = load_platforms(args.project.resolve())
    if args.host:
        return _platforms_host(platforms, args.json)
    if args.json:
        print(json.dumps([p.summary() for p in platforms.values()], indent=2))
        return 0
    if args.markdown:
        print(markdown_table(platforms), end="")
        return 0
    rows = [(p.name, p.os, p.arch, p.python, p.backend_label,
             f"alias of {p.alias_of}" if p.alias_of else p.torch_index or "(default index)",
             p.torch_releases) for p in platforms.values()]
    ui.print_table("lockkit platforms", ("name", "os", "arch", "python", "backend", "torch index",
                                         "torch releases"), rows, stream=sys.stdout)
    return 0


def _platforms_host(platforms: dict[str, Any], as_json: bool) -> int:
    from lockkit import host

    fits, out = host.rank(platforms.values(), host.detect())
    if as_json:
        print(json.dumps({"runs": [{"name": r.platform.name, "reason": r.reason} for r in fits],
                          "ruled_out": [{"name": r.platform.name, "reason": r.reason}
                                        for r in out]}, indent=2))
        return 0
    rows = [(i, r.platform.name, "runs here", r.reason) for i, r in enumerate(fits, 1)]
    rows += [("", r.platform.name, "ruled out", r.reason) for r in out]
    ui.print_table("lockkit platforms --host", ("#", "platform", "verdict", "why"), rows,
                   stream=sys.stdout)
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from lockkit.compiler import check_platforms, compile_platforms, select_platforms
    from lockkit.config import load_project
    from lockkit.platforms import load_platforms

    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url,
                           exclude_newer=args.exclude_newer)
    selected = select_platforms(load_platforms(project.root), args.platform, args.all, project)
    if args.check:
        if project.config_file is None:
            raise UsageError(f"--check: no lockkit.toml (or [tool.lockkit] in pyproject.toml) "
                             f"in {project.root}",
                             hint="run it in the project folder, or pass --project DIR")
        outcomes = check_platforms(project, selected)
        bad = [o for o in outcomes if o.status != "fresh"]
        for o in outcomes:
            detail = f": {o.detail}" if o.detail else ""
            ui.say(f"{o.platform}: {o.status} ({o.path.relative_to(project.root)}){detail}")
        if bad:
            raise StaleLockError(
                "locks not fresh: " + ", ".join(f"{o.platform} ({o.status})" for o in bad),
                hint="run 'lockkit compile' and commit the locks")
        return 0
    with ui.progress("resolving " + ", ".join(p.name for p in selected),
                     total=len(selected)) as advance:
        outcomes = compile_platforms(project, selected, jobs=args.jobs,
                                     on_done=lambda o: advance(1), upgrade=args.upgrade,
                                     upgrade_packages=tuple(args.upgrade_package))
    ui.print_table("lockkit compile", ("platform", "status", "packages", "lock"),
                   [(o.platform, o.status, o.packages or "", o.path.relative_to(project.root))
                    for o in outcomes], stream=sys.stdout)
    failed = [o for o in outcomes if o.error]
    for o in failed[1:]:
        ui.say(f"error: {o.error}")
    if failed:
        raise failed[0].error  # type: ignore[misc]
    return 0


def cmd_wheelhouse(args: argparse.Namespace) -> int:
    return {"build": _wheelhouse_build, "pack": _wheelhouse_pack,
            "unpack": _wheelhouse_unpack}[args.wheelhouse_command](args)


def _wheelhouse_build(args: argparse.Namespace) -> int:
    from lockkit import wheelhouse
    from lockkit.auth import Credentials
    from lockkit.compiler import select_platforms
    from lockkit.config import load_project
    from lockkit.fetch import Cache, default_cache_dir, http_client
    from lockkit.platforms import load_platforms

    for folder in args.find_links:
        if not folder.is_dir():
            raise UsageError(f"--find-links {folder}: not a folder")
    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform, = select_platforms(load_platforms(project.root), [args.platform], False, project)
    out = (args.out or project.root / "wheelhouse" / platform.name).absolute()
    lock_path, items = wheelhouse.plan(project, platform,
                                       fallback_to_official=args.fallback_to_official)
    total = sum(i.want.size or 0 for i in items) or None
    cache = Cache((args.cache_dir or default_cache_dir()).absolute())
    try:
        with http_client(connections=args.jobs, timeout=args.timeout,
                         credentials=Credentials.for_project(project)) as client, \
                ui.transfer(f"{platform.name}: files", len(items), total) as shown:
            result = wheelhouse.build(
                project, platform, out, client=client, cache=cache,
                find_links=tuple(p.absolute() for p in args.find_links), jobs=args.jobs,
                attempts=args.retries + 1, items=items, lock_path=lock_path,
                on_file=lambda got: shown.file_done(), on_bytes=shown.moved)
    except OSError as exc:
        if exc.filename is not None:
            raise  # main names the file
        # A write into an open file (a full disk) names none: name both places written.
        raise WriteError(f"{platform.name}: cannot write the wheelhouse {_shown(out)} or the "
                         f"cache {_shown(cache.root)}: {exc.strerror or exc}") from None
    ui.print_table(f"lockkit wheelhouse build {platform.name}",
                   ("package", "version", "file", "size", "from"),
                   [(r.package, r.version, r.path, _size(r.size),
                     _where(r.origin) + (" (built from sdist)" if r.built_from else ""))
                    for r in result.files], stream=sys.stdout)
    ui.say(f"{platform.name}: {len(result.files)} wheels, {_size(result.downloaded_bytes)} "
           f"downloaded, {result.from_cache} from cache -> {_shown(out)}")
    return 0


def _wheelhouse_pack(args: argparse.Namespace) -> int:
    from lockkit import archive

    root = args.project.absolute()
    folder = (args.folder or root / "wheelhouse" / args.platform).absolute()
    out = (args.output or root / "wheelhouse" / f"{args.platform}.wheelhouse.tar").absolute()
    if not folder.is_dir():
        raise UsageError(f"{_shown(folder)}: no wheelhouse folder",
                         hint=f"run 'lockkit wheelhouse build --platform {args.platform}'")
    archive.pack(folder, out, lock=_committed(args.lock, root))
    ui.say(f"{args.platform}: packed {_shown(folder)} -> {_shown(out)} ({_size(out.stat().st_size)})")
    return 0


def _wheelhouse_unpack(args: argparse.Namespace) -> int:
    from lockkit import archive

    if args.archive.is_dir():  # a folder of <platform>.wheelhouse.tar: the best for this machine
        from lockkit.host import choose
        from lockkit.platforms import load_platforms

        tars = {p.name.removesuffix(".wheelhouse.tar"): p
                for p in args.archive.glob("*.wheelhouse.tar")}
        picked = choose(load_platforms(), set(tars), "wheelhouse archive")
        ui.say(f"wheelhouse unpack: picked {picked.platform.name} ({picked.reason})")
        args.archive = tars[picked.platform.name]
    if not args.archive.is_file():
        raise UsageError(f"{args.archive}: no such archive")
    name = args.archive.name.removesuffix(".tar").removesuffix(".wheelhouse")
    out = (args.out or args.archive.parent / name).absolute()
    if out.is_symlink() and not out.exists():
        raise UsageError(f"--out {out}: a symlink to {os.readlink(out)}, which does not exist",
                         hint="give a folder that exists and is empty, or a new path")
    lock = _committed(args.lock, None)
    archive.unpack(args.archive, out, lock=lock)
    ui.say(f"unpacked {args.archive} -> {_shown(out)}")
    ui.say(archive.install_hint(out))
    return 0


def _committed(lock: Path | None, project_dir: Path | None) -> Any:
    """The selection of ``--lock FILE``, for its platform (a project's own platforms are
    found beside its ``locks/`` folder)."""
    from lockkit import trust

    if lock is None:
        return None
    if not lock.is_file():
        raise UsageError(f"--lock {lock}: no such file")
    if project_dir is None and lock.absolute().parent.name == "locks":
        project_dir = lock.absolute().parent.parent
    return trust.committed(lock.absolute(), project_dir)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def _where(origin: str) -> str:
    """A URL shortened to its server (the manifest keeps the whole URL)."""
    if "://" not in origin:
        return origin
    scheme, rest = origin.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}/…"


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def cmd_verify(args: argparse.Namespace) -> int:
    from lockkit import verify
    from lockkit.report import json as json_format
    from lockkit.report import terminal, write_folder
    from lockkit.report.junit import write_junit
    from lockkit.compiler import select_platforms
    from lockkit.config import load_project
    from lockkit.platforms import load_platforms

    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url)
    known = load_platforms(project.root)
    name = args.platform or (project.platforms[0] if len(project.platforms) == 1 else None)
    if name is None:  # several (or no) platforms: the best this machine runs that has a lock
        from lockkit.host import choose

        locked = {n for n in known if project.lock_path(n).is_file()}
        picked = choose(known, locked, "lock")
        name = picked.platform.name
        ui.say(f"verify: picked {name} for this machine ({picked.reason})")
    platform, = select_platforms(known, [name], False, project)
    if not project.lock_path(platform.name).is_file():
        raise UsageError(f"{project.lock_path(platform.name)}: no lock",
                         hint=f"run 'lockkit compile --platform {platform.name}'")
    if args.wheelhouse is not None and not args.wheelhouse.is_dir():
        raise UsageError(f"--wheelhouse {args.wheelhouse}: not a folder")
    if args.python is not None and not args.python.exists():
        raise UsageError(f"--python {args.python}: no such interpreter")

    if bool(args.variant) != bool(args.reason) or (args.changes and not args.variant):
        raise UsageError("--variant, --reason and --changes go together: name the variant, "
                         "say why, and list the layers it changes")
    if args.variant and not args.changes:
        raise UsageError("--variant needs --changes LAYER: the layers this variant is meant "
                         "to change (code, data, packages, system, result)")
    variant = ({"name": args.variant, "reason": args.reason,
                "changes": sorted(set(args.changes))} if args.variant else None)

    def fetch(dest: Path) -> Path:
        from lockkit import wheelhouse
        from lockkit.auth import Credentials
        from lockkit.fetch import Cache, default_cache_dir, http_client

        with http_client(credentials=Credentials.for_project(project)) as client:
            wheelhouse.build(project, platform, dest, client=client,
                             cache=Cache((args.cache_dir or default_cache_dir()).absolute()))
        return dest

    with ui.progress(f"verifying {platform.name}", total=len(verify.PLAN)) as advance:
        outcome = verify.verify(verify.Options(
            project=project, platform=platform,
            wheelhouse=args.wheelhouse.absolute() if args.wheelhouse else None,
            python=args.python.absolute() if args.python else None,
            installer=args.installer, no_gpu=args.no_gpu,
            keep_venv=args.keep_venv, probe_timeout=args.probe_timeout,
            command_line=tuple(["lockkit", *sys.argv[1:]]), fetch=fetch, variant=variant,
            on_step=lambda step: advance(1)))
    dossier = outcome.dossier
    folder = (args.report_dir.absolute() if args.report_dir else
              project.root / ".lockkit" / "reports" / platform.name /
              dossier.started.replace("-", "").replace(":", ""))
    write_folder(folder, dossier, outcome.attachments)
    if args.junit:
        write_junit(dossier, args.junit.absolute())
    if args.json:
        sys.stdout.write(json_format.dumps(dossier))
    else:
        terminal.steps_table(dossier)
    if outcome.venv:
        ui.say(f"venv kept: {outcome.venv}")
    ui.say(f"dossier: {_shown(folder / 'dossier.json')} (and dossier.md, installed-after.txt)")
    if dossier.result != "passed":
        ui.say(f"lockkit: verify {dossier.result}: "
               f"{dossier.first_error or dossier.why_incomplete}")
        return 1
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from lockkit.diagnose import diagnose
    from lockkit.report import json as json_format
    from lockkit.report import terminal

    if args.python is not None and not args.python.exists():
        raise UsageError(f"--python {args.python}: no such interpreter")
    dossier = diagnose(args.python.absolute() if args.python else None, args.expect,
                       timeout=args.probe_timeout,
                       command_line=tuple(["lockkit", *sys.argv[1:]]))
    if args.json:
        sys.stdout.write(json_format.dumps(dossier))
    else:
        terminal.steps_table(dossier)
        terminal.diagnose_facts(dossier)
    return 0 if dossier.result == "passed" else 1


def cmd_diff(args: argparse.Namespace) -> int:
    from lockkit.diff import LAYERS, compare, load_side
    from lockkit.report import terminal

    a, b = load_side(args.a), load_side(args.b)
    layers, found = compare(a, b)
    differing = [layer for layer in LAYERS if any(d.layer == layer for d in found)]
    (terminal.diff_json if args.json else terminal.diff_text)(layers, differing, found, (a, b))
    return 1 if any(not d.declared for d in found) else 0


def cmd_ci(args: argparse.Namespace) -> int:
    from lockkit import ci
    from lockkit.compiler import select_platforms
    from lockkit.config import load_project
    from lockkit.platforms import load_platforms

    if args.project.is_absolute():
        raise UsageError("--project: give the project relative to the repository root")
    project = load_project(args.project)
    known = load_platforms(project.root)
    selected = select_platforms(known, args.platform, args.all, project)
    runners = ci.validate_runners(project.runners, known,
                                  where=f"{project.config_file}: [ci.runners]")
    text = ci.github_workflow(selected, project=args.project.as_posix(), runners=runners,
                              python=project.python)
    out = args.output or ci.DEFAULT_OUTPUT
    ci.write_workflow(text, out)
    ui.say(f"wrote {out}: verify on {', '.join(p.name for p in selected)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure ends as one line (and a hint) and an exit status:
    0 done, 1 a failure (a check, the network, a file that cannot be written), 2 bad input
    (flags, config, platform files, requirement files, locks), 130 interrupted."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help(sys.stderr)
            return 2
        _check_ranges(args)
        code = {"platforms": cmd_platforms, "compile": cmd_compile,
                "wheelhouse": cmd_wheelhouse, "verify": cmd_verify,
                "diagnose": cmd_diagnose, "diff": cmd_diff,
                "ci": cmd_ci}[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except LockkitError as exc:
        _fail(str(exc), exc.advice)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (``lockkit platforms --json | head -1``): nothing to say, and
        # nowhere to say it; stdout is pointed at devnull so the exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a full disk, a read-only folder: the file and the reason
        _fail(_os_error(exc), WriteError.default_hint)
        return WriteError.exit_code
    except KeyboardInterrupt:
        ui.say("lockkit: interrupted; nothing was left half-written")
        return INTERRUPTED


def _os_error(exc: OSError) -> str:
    """``<path>: <reason>``; a file met where a folder was needed is said so."""
    if exc.filename is None:
        return str(exc.strerror or exc)
    path = Path(os.fsdecode(exc.filename))
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            return f"{blocker}: not a folder (a file is in the way)"
    return f"{path}: {exc.strerror or exc}"


def _fail(message: str, hint: str | None) -> None:
    ui.say(f"lockkit: error: {message}")
    if hint:
        ui.say(f"hint: {hint}")
