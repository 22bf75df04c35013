"""Each command's flags, defaults and help, one function per command: the parser calls the
running command's alone (every one for ``--help``). Nothing runs here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["FORCE", "FOUND", "OUTPUT_RULE", "VERIFY", "cache", "ci", "compile", "diagnose",
           "diff", "export", "output", "platforms", "project_args", "sync", "verify"]

FOUND = ("project folder holding lockkit.toml (default: the nearest folder with lockkit.toml "
          "or [tool.lockkit], from the current one up to the repository root)")


# The rule of lockkit._internal.outfile, said once for every output flag's help.
OUTPUT_RULE = ("'-' is stdout; a device or FIFO is written through; a file is replaced only "
               "if lockkit wrote it ({what}), never the project's config, requirement "
               "files or locks")
FORCE = "overwrite an output file lockkit did not write (never one of the command's inputs)"


def output(value: str) -> Path | str:
    """An output flag's value: ``-`` is stdout (lockkit._internal.outfile.argument)."""
    from lockkit._internal.outfile import argument

    return argument(value)


def project_args(p: Any) -> None:
    p.add_argument("--project", type=Path, default=None, metavar="DIR", help=FOUND)
    p.add_argument("--mirror", action="append", default=[], metavar="OFFICIAL=MIRROR",
                   help="serve an official URL prefix from a mirror (repeatable; the longest "
                        "prefix wins). The PyTorch index links files on a second host: map "
                        "both, e.g. https://download.pytorch.org=https://mirror.example/pt and "
                        "https://download-r2.pytorch.org=https://mirror.example/r2, or map the "
                        "index alone to a proxy that rewrites links to itself")
    p.add_argument("--index-url", metavar="URL",
                   help="replace the default index (user:token@ and ${VAR} are used, never "
                        "written)")


def _install_from(p: Any) -> None:
    """The flags verify and sync share: the wheelhouse to install from, the interpreter."""
    p.add_argument("--wheelhouse", type=Path, metavar="DIR",
                   help="install from this wheelhouse (default: <project>/wheelhouse/"
                        "<platform> if present, else fetch the lock's URLs by hash; with "
                        "--existing: where the lock's wheels are read for their RECORD)")
    p.add_argument("--python", type=Path, metavar="PATH",
                   help="interpreter to build the venv from (default: one of the lock's "
                        "Python version)")


def platforms(sub: Any) -> None:
    plat = sub.add_parser(
        "platforms", help="list the known platforms",
        description="List shipped platforms and the project's own. With --check-index, "
                    "compare them with what the PyTorch index serves: exit 0 when they are "
                    "up to date, 1 when a variant is missing, an index has gone or a "
                    "releases range is stale, 2 for a usage error, 3 when the index cannot "
                    "be read (unreachable, a page past max-page-size, not an index page).")
    plat.add_argument("--project", type=Path, default=None, metavar="DIR", help=FOUND)
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


def compile(sub: Any) -> None:
    comp = sub.add_parser(
        "compile", help="write locks/pylock.<platform>.toml",
        description="Resolve the project's constraints with uv for each platform and write "
                    "locks/pylock.<platform>.toml: every file hashed, torch-family packages "
                    "only from the platform's PyTorch index.")
    comp.add_argument("--platform", action="append", default=[], metavar="NAME",
                      help="platform to compile (repeatable; default: the config's list)")
    comp.add_argument("--all", action="store_true", help="compile every known platform")
    comp.add_argument("--check", action="store_true",
                      help="write nothing, offline; exit 1 if a lock is missing, stale or "
                           "edited (a file on a host compile does not take it from), or "
                           ".lockkit/ci/requirements.txt was written by another lockkit "
                           "version or for other dependencies")
    comp.add_argument("--locked", action="store_true",
                      help="write nothing; resolve again (the locks' pins preferred) and exit 1 "
                           "naming every package, version, file, URL or hash that differs "
                           "from the committed lock (the CI gate: --check and more; needs the "
                           "indexes)")
    # One uv per core. "One at a time measured faster" was an artefact of the servers'
    # listen backlog of 5 dropping uv's connection bursts (now 128, routing index included).
    jobs = os.cpu_count() or 1
    comp.add_argument("--upgrade", action="store_true",
                      help="resolve afresh: the existing lock's versions are not preferred")
    comp.add_argument("--upgrade-package", action="append", default=[], metavar="NAME",
                      help="let NAME move to its newest allowed version; every other package "
                           "keeps the version the existing lock pins (repeatable)")
    comp.add_argument("--force", action="store_true",
                      help="take a lock edited by hand ('compile --check': modified) as "
                           "preferences; without it (or --upgrade) such a lock is refused")
    comp.add_argument("--exclude-newer", metavar="DATE",
                      help="ignore files uploaded after DATE (RFC 3339, e.g. 2024-10-01): "
                           "resolve as of that day (overrides exclude-newer in lockkit.toml)")
    comp.add_argument("--jobs", type=int, default=jobs,
                      help=f"platforms resolved at once (default {jobs}: the core count)")
    comp.add_argument("--timeout", type=float, default=30.0, metavar="S",
                      help="seconds an index may take to connect or answer before it counts "
                           "as unreachable (default 30); uv tries each request 4 times, so "
                           "an index that never answers fails within 4 x S + 14 seconds")
    comp.add_argument("--max-page-size", type=int, metavar="MIB",
                      help="the largest PyTorch index page read, in MiB (default: "
                           "max-page-size in lockkit.toml, else 64); a larger one fails")
    project_args(comp)


# verify's steps, in the order they run (lockkit.verify.run.PLAN; tests/cli/test_truth.py
# holds them equal)
VERIFY = (
    "Rebuild locks/pylock.<platform>.toml into a new venv and check it, one step each, in "
    "order: host, venv, install (from the wheelhouse, no network), pip-check, inventory "
    "(against the lock), system (the driver and runtime chain), gpu (no silent CPU "
    "fallback), extensions (the compiled modules [verify.extensions] names, imported and "
    "smoke-tested), application (the project's own check, [verify.application] or the "
    "embedding check), resume (a training resumed from its checkpoint against one "
    "uninterrupted, [verify.resume]). A check the project does not declare says so in "
    "its row. Writes dossier.json, dossier.md and installed-after.txt. Exit 0 passed, "
    "1 a check failed or the result is incomplete, 2 usage or configuration error.")


def verify(sub: Any) -> None:
    ver = sub.add_parser(
        "verify", help="rebuild the lock in a fresh venv and prove it works",
        description=VERIFY)
    ver.add_argument("--platform", metavar="NAME",
                     help="platform to verify (default: the config's only platform)")
    _install_from(ver)
    ver.add_argument("--installer", choices=("uv", "pip"), default="uv",
                     help="uv (default: fast, no pip in the venv) or pip (the plain "
                          "'python -m venv' + 'pip install' procedure)")
    ver.add_argument("--no-gpu", action="store_true",
                     help="skip GPU work: on a GPU platform the gpu and application "
                          "steps (result: incomplete); on a CPU platform nothing")
    ver.add_argument("--report-dir", type=Path, metavar="DIR",
                     help="where the dossier goes: a new or empty folder, or an earlier report "
                          "of the platform (default: .lockkit/reports/<platform>/<UTC time>, "
                          "-2, -3... if taken)")
    ver.add_argument("--keep-venv", action="store_true",
                     help="keep the rebuilt venv in its temp folder (its path is printed; the "
                          "folder is yours to remove). For a venv to work in, use 'lockkit sync'")
    ver.add_argument("--existing", type=Path, metavar="PYTHON",
                     help="check this interpreter's environment as it is, not rebuilt (nothing "
                          "installed or changed; files against RECORD): result passed-existing")
    ver.add_argument("--fetch-wheels", action="store_true",
                     help="with --existing: fetch the lock's wheels that are not at hand (by "
                          "hash, through the download cache) to compare their RECORD")
    ver.add_argument("--strict", action="store_true",
                     help="with --existing: packages the lock does not name (but pip, "
                          "setuptools, wheel), and files no RECORD lists, fail the inventory")
    ver.add_argument("--allow-extra", action="append", default=[], metavar="NAME",
                     help="with --existing: accept this package the lock does not name, its "
                          "start-up code too, on your word (repeatable; the dossier lists it)")
    ver.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                     help="seconds before a hung probe counts as failed (default 300)")
    ver.add_argument("--collect-env", action="store_true",
                     help="record torch's collect_env report in the dossier even when the GPU "
                          "step passes (it always runs when that step fails; it costs "
                          "seconds: pip, nvidia-smi and a torch import of its own)")
    ver.add_argument("--cache-dir", type=Path, metavar="DIR",
                     help="download cache when fetching the lock's URLs (with --existing: "
                          "where the lock's wheels are looked for, for their RECORD)")
    ver.add_argument("--junit", type=output, metavar="FILE",
                     help="also write a JUnit XML report, one test case per step. "
                          + OUTPUT_RULE.format(what="a JUnit report")
                          + ". '--junit -' puts it on stdout in place of the steps table "
                            "(which then goes to stderr); not with --json")
    ver.add_argument("--force", action="store_true", help=FORCE.replace("an output file",
                                                                        "a --junit file"))
    ver.add_argument("--json", action="store_true",
                     help="print the dossier's JSON document (dossier.json) instead of the table")
    ver.add_argument("--absolute-paths", action="store_true", help="write the dossier's paths "
                     "as they are, not relative to its roots (<project>/..., <venv>/...)")
    ver.add_argument("--variant", metavar="NAME",
                     help="record this run as an intended variant (e.g. fp16-weights); "
                          "'lockkit diff' lists its declared differences apart")
    ver.add_argument("--reason", metavar="TEXT", help="why the variant exists (with --variant)")
    ver.add_argument("--changes", action="append", default=[], metavar="LAYER",
                     choices=("code", "data", "packages", "system", "result"),
                     help="a layer the variant is meant to change (repeatable; with --variant)")
    project_args(ver)


def diagnose(sub: Any) -> None:
    diag = sub.add_parser(
        "diagnose", help="probe an existing interpreter's system and GPU stack",
        description="Run the system and GPU steps of verify on an existing interpreter: "
                    "an interpretable answer to 'is this environment's GPU stack right?'.")
    diag.add_argument("--python", type=Path, metavar="PATH",
                      help="interpreter to probe (default: the active venv's, else the "
                           "project's .venv, else python3 on PATH other than lockkit's own)")
    diag.add_argument("--expect", choices=("cpu", "cuda", "rocm", "mps"),
                      help="backend the torch build must have (default: the one it reports)")
    diag.add_argument("--json", action="store_true", help="print the report as JSON")
    diag.add_argument("--absolute-paths", action="store_true", help="paths not as <venv>/...")
    diag.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                      help="seconds before a hung probe counts as failed (default 300)")


def diff(sub: Any) -> None:
    diff = sub.add_parser(
        "diff", help="say which layer differs between two dossiers, locks or manifests",
        description="Compare two runs (dossier.json or its folder), locks or wheelhouse "
                    "manifests, grouped by layer: code and parameters, data and weights, "
                    "Python and packages, system and backend, result. Exit 0 when nothing "
                    "differs (or every difference is declared by a variant), 1 when "
                    "something does, 2 for unreadable input.")
    diff.add_argument("a", type=Path, metavar="A",
                      help="a dossier.json (or its report folder), a lock, or a wheelhouse "
                           "manifest.json")
    diff.add_argument("b", type=Path, metavar="B",
                      help="the other dossier, lock or manifest (the layers both sides have "
                           "are compared)")
    diff.add_argument("--json", action="store_true", help="print the differences as JSON")


def ci(sub: Any) -> None:
    ci = sub.add_parser("ci", help="write a CI workflow that verifies every platform",
                        description="Generate CI configuration: a 'compile --locked' job, then "
                                    "one verify job per platform on its own runner.")
    cisub = ci.add_subparsers(dest="ci_command", metavar="COMMAND", required=True)
    gh = cisub.add_parser(
        "github", help="write a GitHub Actions workflow",
        description="Write a GitHub Actions workflow: a 'locks' job running 'lockkit compile "
                    "--locked', then a matrix with one job per platform on its runner label "
                    "([ci.runners] in lockkit.toml overrides the defaults), each building the "
                    "wheelhouse, running 'lockkit verify --junit' and uploading the dossier. "
                    "Only platforms with a committed lock get a job (the others are named on "
                    "stderr); outside a git repository it refuses. CI installs the lockkit that "
                    "[ci] lockkit names (default: this lockkit's own wheel, written to "
                    ".lockkit/ci/) and its dependencies from .lockkit/ci/requirements.txt, "
                    "which it writes: every file by its sha256 (pip --require-hashes); "
                    "actions are pinned to commits; caches are keyed by each lock's hash.")
    gh.add_argument("--platform", action="append", default=[], metavar="NAME",
                    help="platform to verify (repeatable; default: the config's list)")
    gh.add_argument("--all", action="store_true", help="every known platform")
    gh.add_argument("--project", type=Path, default=Path("."), metavar="DIR",
                    help="project folder inside the repository, absolute or relative to "
                         "the current folder (default: .)")
    gh.add_argument("-o", "--output", type=output, metavar="FILE",
                    help="workflow file (default: <repository root>/.github/workflows/"
                         "lockkit.yml). " + OUTPUT_RULE.format(what="its header line"))
    gh.add_argument("--force", action="store_true", help=FORCE)
    gh.add_argument("--refresh", metavar="WHEN",
                    help="also write a scheduled workflow (daily, weekly or monthly; default: "
                         "[ci] refresh in lockkit.toml, else none) that runs 'lockkit compile "
                         "--upgrade', puts 'lockkit diff' by layer of each changed lock in the "
                         "body of one pull request on the branch lockkit/refresh, opens or "
                         "updates it, and starts this workflow on that branch, which verifies "
                         "every platform. Written next to the workflow as lockkit-refresh.yml; "
                         "not with '-o -'")
    take = cisub.add_parser(
        "take-locks", help="copy the refresh artifact's locks, and nothing else, into locks/",
        description="The refresh workflow's pull-request job runs this before it commits: "
                    "DIR (the compile job's artifact) must hold body.md and locks/ with "
                    "only pylock.<platform>.toml files of the --platform names, each a PEP "
                    "751 lock whose [tool.lockkit] table names its platform. Anything else "
                    "fails (exit 1), naming each file, and nothing is copied.")
    take.add_argument("artifact", type=Path, metavar="DIR", help="the artifact's folder")
    take.add_argument("--platform", action="append", required=True, metavar="NAME",
                      help="a platform whose lock the artifact may hold (repeatable)")
    take.add_argument("--project", type=Path, default=Path("."), metavar="DIR",
                      help="the project whose locks/ receives them (default: .)")


def export(sub: Any) -> None:
    exp = sub.add_parser(
        "export", help="write a lock as a hashed requirements file any pip installs",
        description="Write locks/pylock.<platform>.toml in another installer's format, to "
                    "stdout unless -o names a file (as 'uv export' does). 'requirements': "
                    "a file that pip of any version installs with 'pip install "
                    "--require-hashes -r FILE' (pip reads -r pylock.toml only from 26.1): "
                    "torch-family packages pinned by URL to the file the lock selects, "
                    "the others pinned with == and the hash of every file the lock lists, "
                    "from the lock's default index (one --index-url line). 'pylock': the "
                    "lock itself. URLs go through the project's [mirrors] unless --official; "
                    "user:token@ is never written, a ${VAR} only as the placeholder (pip "
                    "fills it from the environment).")
    exp.add_argument("--platform", required=True, metavar="NAME",
                     help="platform whose committed lock to export")
    exp.add_argument("--format", choices=("requirements", "pylock"), default="requirements",
                     help="requirements (default) or pylock (a pylock.<name>.toml)")
    exp.add_argument("-o", "--output", type=output, metavar="FILE",
                     help="write FILE atomically instead of stdout (e.g. "
                          "requirements-rebuild.txt, or pylock.<platform>.toml for pylock). "
                          + OUTPUT_RULE.format(what="an export"))
    exp.add_argument("--force", action="store_true", help=FORCE)
    exp.add_argument("--official", action="store_true",
                     help="write the lock's own URLs, not the project's mirrors")
    exp.add_argument("--project", type=Path, default=None, metavar="DIR",
                     help="project folder holding lockkit.toml (default: the nearest one "
                          "from the current folder up)")
    exp.add_argument("--mirror", action="append", default=[], metavar="OFFICIAL=MIRROR",
                     help="serve an official URL prefix from a mirror, on top of the "
                          "project's [mirrors] (repeatable; the longest prefix wins)")


def cache(sub: Any) -> None:
    cache = sub.add_parser(
        "cache", help="show or prune lockkit's download cache",
        description="lockkit's download cache holds one read-only copy of every file it "
                    "fetched, by sha256, shared by every project. 'info' says how big it is "
                    "and how much of it the project's locks reference; 'prune' removes what "
                    "no lock of the given projects references. uv keeps its own cache "
                    "('uv cache dir' shows it, 'uv cache prune' trims it); lockkit touches "
                    "it only with 'prune --uv'.")
    csub = cache.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    info = csub.add_parser("info", help="size of the cache and what the locks reference",
                           description="The cache folder, its files and bytes, partial "
                                       "downloads, and how much the project's locks "
                                       "(locks/pylock.*.toml) reference by sha256. uv's "
                                       "own cache is apart: 'uv cache dir'.")
    prune = csub.add_parser(
        "prune", help="remove cached files no lock of the project references",
        description="Remove every cached file that no lock of the project(s) "
                    "(locks/pylock.*.toml, every platform) references by sha256, and partial "
                    "downloads older than a day. The cache is shared: another project's "
                    "files go too unless its folder is also given with --project (they are "
                    "downloaded again when needed). Nothing outside the cache folder is "
                    "touched and no link is followed; a folder that is not lockkit's cache "
                    "is refused. uv's own cache ('uv cache dir') is left to uv unless --uv "
                    "runs 'uv cache prune'.")
    for p in (info, prune):
        p.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="the cache folder (default: the user cache folder, or "
                            "$LOCKKIT_CACHE_DIR)")
        p.add_argument("--project", type=Path, action="append", default=[], metavar="DIR",
                       help="project whose locks count as references (repeatable; default: "
                            "the nearest one from the current folder up)")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
    prune.add_argument("--dry-run", action="store_true",
                       help="list what would be removed and its bytes; remove nothing")
    prune.add_argument("--uv", action="store_true",
                       help="also run 'uv cache prune' (uv's unused cache entries)")


def sync(sub: Any) -> None:
    syn = sub.add_parser(
        "sync", help="rebuild the project's venv from the lock, fresh, and swap it in",
        description="Rebuild a venv (default <project>/.venv, the one 'uv sync' uses) from "
                    "locks/pylock.<platform>.toml with verify's steps: host, venv, install "
                    "(from the wheelhouse, else the lock's URLs by hash), pip-check, "
                    "inventory. The new venv is built beside the old one and swapped in "
                    "only when every step passed; on a failure the old venv is untouched. "
                    "Only a new or empty folder, or a venv lockkit made for the same "
                    "platform, is written or replaced. Exit 0 synced, 1 a step failed "
                    "(nothing replaced), 2 bad input.")
    syn.add_argument("--platform", metavar="NAME",
                     help="platform whose lock to install (default: the config's only "
                          "platform, else the best this machine runs that has a lock)")
    syn.add_argument("--venv", type=Path, metavar="DIR",
                     help="venv to create or replace: a new or empty folder, or a venv "
                          "lockkit made for the platform (default: <project>/.venv)")
    _install_from(syn)
    syn.add_argument("--installer", choices=("uv", "pip"), default="uv",
                     help="uv (default: a --relocatable venv, no pip in it) or pip "
                          "('python -m venv' + 'pip install'; its paths are rewritten to "
                          "the final folder before the swap)")
    syn.add_argument("--verify", action="store_true",
                     help="also run verify's system, gpu, extensions, application and "
                          "resume steps, swap only if all pass, and write the dossier to "
                          ".lockkit/reports/<platform>/")
    syn.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                     help="seconds before a hung probe counts as failed (with --verify)")
    syn.add_argument("--absolute-paths", action="store_true", help="with --verify: write the "
                     "dossier's paths as they are, not relative to its roots")
    syn.add_argument("--cache-dir", type=Path, metavar="DIR",
                     help="download cache when fetching the lock's URLs")
    syn.add_argument("--force", action="store_true",
                     help="replace lockkit's venv even when it holds files no package "
                          "installed (an editable checkout in src/, notes): they are removed")
    project_args(syn)
