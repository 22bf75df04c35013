"""A GitHub Actions workflow that gates locks and verifies every platform on its runner.

Three jobs: ``locks`` fails the run when a lock is missing, stale, edited, or not what a
fresh resolution makes (``compile --locked``: the offline ``--check`` verdict and then uv
again, every difference named; a pull request that swaps a file and recomputes the lock's
digest fails here), then ``verify`` builds each platform's wheelhouse and verifies it on a
runner of that platform, one matrix entry per platform with a committed lock (a platform
without one would fail ``locks`` and with it every job), uploading the dossier and JUnit
file whether or not verify passed. uv's cache, lockkit's download cache and the wheelhouse
are cached under a key holding the platform lock's hash. When every platform verified,
``attest`` signs each dossier with GitHub's artifact attestation action: the lock is the
subject, ``dossier.json`` the predicate (:mod:`lockkit.report.intoto`'s statement, signed);
only that job holds ``id-token: write``, and it runs neither lockkit nor project code. The
scheduled refresh pull request is a second file (:mod:`lockkit.ci.refresh`).

**Where lockkit comes from.** ``[ci] lockkit`` is one pip requirement line, checked at
load (:func:`lockkit.config.keys.lockkit_requirement`): ``lockkit==1.2.3`` (with
``--hash=sha256:...`` options to check the download), a wheel committed to the repository
(hashed here, when the workflow is written, and checked by pip in CI), an https URL
(``#sha256=`` checked by pip) or a VCS URL at a full commit. Without the key ``ci github``
writes lockkit's own wheel into the project, ``.lockkit/ci/lockkit-<version>-py3-none-any.whl``,
made as ``tools/`` makes it (:func:`lockkit.wheelhouse.tools.own_wheel`: the same bytes from run to
run). Never by name from an index:
no project of that name on the default index is known to be lockkit's, and whoever
published it first would run code in every user's CI. lockkit and its dependencies are
installed in one ``pip install --require-hashes -r .lockkit/ci/requirements.txt``
(:mod:`lockkit.ci.pins`, written beside the wheel): every file by its sha256, none by name
alone; a committed file is never looked up on an index.

**Only committed files reach CI**: the locks and a ``[ci] lockkit`` wheel must be
tracked by git (:func:`split_by_lock`, :func:`pin_files`), so outside a git repository,
or where git cannot say, ``ci github`` refuses rather than write a workflow for files CI
may never see.

**Hardening** (zizmor's audits): read-only ``permissions``, ``persist-credentials: false``,
actions pinned to commits (:data:`ACTIONS`), no ``${{ }}`` in a ``run:`` but the matrix
values the file defines; the requirement reaches a ``shell: python`` install script
through ``env:`` (the same on every runner's OS, no shell quoting).

The text is made of :mod:`lockkit.ci.render`'s pieces, every value through its ``scalar``.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockkit._internal import proc
from lockkit._internal.fs import sha256_file
from lockkit.ci.pins import hashed, only_binary, pins_path
from lockkit.ci.render import (
    install_step,
    lock_path,
    posix,
    project_arg,
    quoted,
    runner_yaml,
    scalar,
    where_from,
)
from lockkit.config.keys import LockkitRequirement, Runner, runner_labels
from lockkit.errors import ConfigError, UsageError
from lockkit.platforms.arch import arch_family
from lockkit.platforms.definitions import Platform
from lockkit.report.intoto import PREDICATE_TYPE

if TYPE_CHECKING:
    from lockkit._internal.outfile import Target

__all__ = ["ACTIONS", "DEFAULT_OUTPUT", "HEADER", "default_runner",
           "github_workflow", "install_lockkit", "locate_project", "lockkit_step", "pin_files",
           "recognise", "setup_steps", "split_by_lock", "uses", "validate_runners",
           "where_lockkit", "write_workflow"]

DEFAULT_OUTPUT = Path(".github/workflows/lockkit.yml")
REPORT_DIR = "lockkit-report"
TOOL_PYTHON = "3.12"  # the Python the locks job runs lockkit with (it only resolves)
CACHES = {"LOCKKIT_CACHE_DIR": "${{ runner.temp }}/lockkit-cache",  # outside the checkout:
          "UV_CACHE_DIR": "${{ runner.temp }}/uv-cache"}  # verify's git state stays clean

# The actions the workflow uses, each pinned to the commit of a release tag, the tag kept
# as a comment. Obtained from each repository's git tags (lockkit's `fetch` of
# github:actions/<name>, then `git rev-parse <tag>^{commit}`), the newest release tag
# of each on 2026-12-03 (download-artifact and attest: 2026-12-05). Update them together,
# the same way; never by hand-typed SHA.
ACTIONS = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/cache": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
    "actions/download-artifact": ("3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
    "actions/attest": ("1e69f48acb82d1966a394da916b4c1698aa569d6", "v4.2.2"),
}

# GitHub-hosted runners by (os, arch); a platform without one gets self-hosted labels.
_HOSTED = {("linux", "x64"): "ubuntu-latest", ("linux", "arm64"): "ubuntu-24.04-arm",
           ("macos", "arm64"): "macos-14", ("windows", "x64"): "windows-latest"}
_RUNNER_ARCH = {"x86_64": "x64", "arm64": "arm64"}  # GitHub's names of the arch families


def _arch(platform: Platform) -> str:
    family = arch_family(platform.arch)
    return _RUNNER_ARCH.get(family, family)


def default_runner(platform: Platform) -> Runner:
    """The runner a platform's verify job asks for when ``[ci.runners]`` names none.

    CPU and MPS platforms run on GitHub-hosted runners. CUDA and ROCm need a GPU, which
    GitHub does not host for general use, so they ask for a self-hosted runner carrying
    ``self-hosted``, the OS, the architecture, ``gpu`` and the backend kind; labels match
    case-insensitively, so the runner's default ``Linux``/``X64`` labels count.
    """
    arch = _arch(platform)
    hosted = _HOSTED.get((platform.os, arch))
    if hosted and platform.backend.kind in ("cpu", "mps"):
        return hosted
    labels = ["self-hosted", platform.os, arch]
    if platform.backend.kind in ("cuda", "rocm"):
        labels += ["gpu", platform.backend.kind]
    return labels


def validate_runners(value: Any, known: Collection[str] | None,
                     where: str = "[ci.runners]") -> dict[str, Runner]:
    """Check a ``[ci.runners]`` table: platform name -> label or non-empty list of labels.

    Every problem is collected and named by key (with a close match for a misspelt
    platform) before one :class:`ConfigError` is raised. With *known* None only the
    labels are checked: the project's config is read before its platforms are.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a table of platform = runner label(s), "
                          f"got {value!r}")
    errors: list[str] = []
    found: dict[str, Runner] = {}
    for name, labels in value.items():
        if known is not None and name not in known:
            close = difflib.get_close_matches(str(name), sorted(known), n=1)
            errors.append(f"{where}.{name}: unknown platform"
                          + (f" (did you mean '{close[0]}'?)" if close else ""))
        elif (runner := runner_labels(labels)) is not None:
            found[name] = runner
        else:
            errors.append(f"{where}.{name}: expected a label or a non-empty list of labels, "
                          f"got {labels!r}")
    if errors:
        raise ConfigError("; ".join(errors))
    return found


def uses(action: str) -> str:
    return "{}@{} # {}".format(action, *ACTIONS[action])


def pin_files(req: LockkitRequirement, repo: Path,
              where: str = "[ci] lockkit") -> LockkitRequirement:
    """*req* with a committed file's sha256 added; a ConfigError when the file is not in
    *repo*'s git index or its hash is not one the config gives."""
    if req.source != "path":
        return req
    path = repo / req.requirement
    tracked = _committed(repo, [posix(req.requirement)])
    if not path.is_file() or posix(req.requirement) not in tracked:
        raise ConfigError(f"{where}: {req.requirement}: no such file committed to the "
                          f"repository ({repo})", hint="commit it, or pin lockkit otherwise")
    digest = f"sha256:{sha256_file(path)}"
    if req.hashes and digest not in req.hashes:
        raise ConfigError(f"{where}: {req.requirement} has {digest}, not the hash given")
    return LockkitRequirement(requirement=req.requirement, hashes=(digest,), source="path")



def _matrix(platforms: Sequence[Platform], runners: Mapping[str, Runner],
            python: str | Mapping[str, str] | None, project: str) -> list[str]:
    names = [p.name for p in platforms]
    twice = sorted({n for n in names if names.count(n) > 1})
    if not platforms or twice:
        raise UsageError("platforms: " + (f"named twice: {', '.join(twice)}" if twice
                                          else "at least one is needed"))
    return [f"          - {{platform: {scalar(p.name, flow=True)}, "
            f"runner: {runner_yaml(p.name, runners.get(p.name, default_runner(p)))}, "
            f"python: {quoted(_python_of(python, p))}, "
            f"lock: {scalar(lock_path(project, p.name), flow=True)}}}" for p in platforms]


def setup_steps(python: str, indent: str = "      ") -> list[str]:
    """Check out (no token left in .git/config) and set up *python*."""
    return [f"{indent}- uses: {uses('actions/checkout')}", f"{indent}  with:",
            f"{indent}    persist-credentials: false",
            f"{indent}- uses: {uses('actions/setup-python')}", f"{indent}  with:",
            f"{indent}    python-version: {python}"]


def _cache(what: str, paths: Sequence[str], key: str, indent: str = "      ") -> list[str]:
    return [f"{indent}- name: {scalar('cache ' + what)}",
            f"{indent}  uses: {uses('actions/cache')}", f"{indent}  with:",
            f"{indent}    path: |", *(f"{indent}      {p}" for p in paths),
            f"{indent}    key: {scalar(key)}"]


def install_lockkit(req: LockkitRequirement, project: str,
                    indent: str = "      ") -> list[str]:
    """The step installing *req* and lockkit's dependencies from the project's pins
    (:mod:`lockkit.ci.pins`), in pip's hash-checking mode."""
    return install_step(pins_path(project), only_binary=only_binary(req),
                        unhashed=None if hashed(req) else req.requirement, indent=indent)


def where_lockkit(req: LockkitRequirement, own: bool, project: str) -> list[str]:
    """The header's comment on where lockkit and its dependencies come from."""
    return where_from(req, own, pins_path(project), hashed(req))


def lockkit_step(name: str, command: str, indent: str = "      ") -> list[str]:
    """A step running lockkit, with its cache folders set."""
    return [f"{indent}- name: {scalar(name)}", f"{indent}  env:",
            *(f"{indent}    {k}: {scalar(v)}" for k, v in CACHES.items()),
            f"{indent}  run: {scalar(command)}"]


def _python_of(python: str | Mapping[str, str] | None, platform: Platform) -> str:
    """The Python a platform's verify job sets up: the lock's own, by platform name (what
    ``lockkit compile`` chose: :func:`lockkit.lock.python.lock_python`), or one version
    for all, else the platform file's default."""
    if isinstance(python, Mapping):
        return python.get(platform.name, platform.python)
    return python or platform.python


def _attest_job(matrix: list[str]) -> list[str]:
    """The job signing each platform's dossier (GitHub's artifact attestation)."""
    plat = "${{ matrix.platform }}"
    return [
        "  # Signs each platform's dossier once every platform verified: subject the lock,",
        "  # predicate dossier.json (the statement verify writes as dossier.intoto.json).",
        "  # Only this job may mint the OIDC token the signature needs; it runs no lockkit",
        "  # and no project code. Check one with `gh attestation verify <lock> --repo ...`.",
        "  attest:", f"    name: attest {plat}", "    needs: verify", "    strategy:",
        "      matrix:", "        include:", *matrix,
        "    runs-on: ubuntu-latest",
        "    permissions:", "      contents: read", "      id-token: write",
        "      attestations: write",
        "    steps:",
        f"      - uses: {uses('actions/checkout')}", "        with:",
        "          persist-credentials: false",
        f"      - uses: {uses('actions/download-artifact')}", "        with:",
        f"          name: dossier-{plat}", f"          path: {REPORT_DIR}",
        f"      - uses: {uses('actions/attest')}", "        with:",
        "          subject-path: ${{ matrix.lock }}",
        f"          predicate-type: {scalar(PREDICATE_TYPE)}",
        f"          predicate-path: {REPORT_DIR}/dossier.json",
    ]


def github_workflow(platforms: list[Platform], *, project: str = ".",
                    runners: Mapping[str, Runner] | None = None,
                    python: str | Mapping[str, str] | None = None,
                    lockkit: LockkitRequirement, own: bool = False) -> str:
    """The workflow's text, byte-identical for the same arguments.

    *runners* (``[ci.runners]``) replaces :func:`default_runner` per platform name;
    *python* (one version, or each platform's lock Python by name) replaces the
    platforms' own versions; *lockkit*
    is ``[ci] lockkit`` (its committed file already hashed by :func:`pin_files`) or, with
    *own*, lockkit's own wheel (:func:`lockkit.ci.ownwheel.own_lockkit`), which the header says.
    *platforms* should be those with a committed lock (:func:`split_by_lock`).
    """
    proj, req = project_arg(project), lockkit
    plat, caches = "${{ matrix.platform }}", list(CACHES.values())
    all_locks = lock_path(project, "*")
    lines = [
        HEADER + "regenerate it after changing the platforms,",
        "# their locks or [ci] in lockkit.toml rather than editing it by hand.",
        *where_lockkit(req, own, project),
        "name: lockkit", "", "on: [push, pull_request, workflow_dispatch]", "",
        "permissions:", "  contents: read", "",
        "# A run: line holds no ${{ }} but the matrix values below, written by lockkit;",
        "# GitHub substitutes them before any shell runs, so each line works in bash",
        "# (Linux, macOS) and in pwsh (Windows runners).",
        "jobs:",
        "  locks:", "    name: locks are fresh", "    runs-on: ubuntu-latest", "    steps:",
        *setup_steps(quoted(TOOL_PYTHON)),
        *_cache("uv", caches[1:], "lockkit-locks-${{ hashFiles('" + all_locks + "') }}"),
        *install_lockkit(req, project),
        *lockkit_step("check the locks against a fresh resolution", "lockkit compile --locked "
                       + "".join(f"--platform {p.name} " for p in platforms)
                       + f"--project {proj}"),
        "",
        "  verify:", f"    name: verify {plat}", "    needs: locks", "    strategy:",
        "      fail-fast: false", "      matrix:",
        "        # `runner` is one label or a YAML list of labels; `runs-on` takes either, and",
        "        # a list given through ${{ matrix.runner }} stays a list (a runner must carry",
        "        # every label), so self-hosted GPU label sets need no fromJSON. `lock` is the",
        "        # platform's lock: the caches are keyed by its hash.",
        "        include:",
        *_matrix(platforms, runners or {}, python, project),
        "    runs-on: ${{ matrix.runner }}", "    steps:",
        *setup_steps("${{ matrix.python }}"),
        *_cache("uv, lockkit's downloads and the wheelhouse",
                [*caches, f"{posix(project)}/wheelhouse/{plat}"],
                f"lockkit-{plat}-${{{{ runner.os }}}}-${{{{ hashFiles(matrix.lock) }}}}"),
        *install_lockkit(req, project),
        *lockkit_step("build the wheelhouse",
                       f"lockkit wheelhouse build --platform {plat} --project {proj}"),
        *lockkit_step("verify", f"lockkit verify --platform {plat} --project {proj} "
                                 f"--report-dir {REPORT_DIR} --junit {REPORT_DIR}/junit.xml"),
        "      - name: upload the dossier", "        if: always()",
        f"        uses: {uses('actions/upload-artifact')}", "        with:",
        f"          name: dossier-{plat}", f"          path: {REPORT_DIR}",
        "          if-no-files-found: warn",
        "", *_attest_job(_matrix(platforms, runners or {}, python, project)),
    ]
    return "\n".join(lines) + "\n"


HEADER = "# Generated by `lockkit ci github`: "  # the workflow's first line
WHAT = "a lockkit workflow"  # what -o is replaced only over (its first line is HEADER)


def recognise(path: Path) -> bool:
    """A workflow lockkit wrote: its first line is :data:`HEADER`
    (:mod:`lockkit._internal.outfile`'s rule; a hand-written workflow is not replaced)."""
    from lockkit._internal.outfile import head

    data = head(path, len(HEADER))
    return data == HEADER.encode("utf-8")


def write_workflow(text: str, path: Path | Target) -> None:
    """Write the workflow under :mod:`lockkit._internal.outfile`'s rule (a path is checked
    here; a target was checked by the caller): a file atomically, temp file + rename,
    creating its folders."""
    from lockkit._internal import outfile

    target = path if isinstance(path, outfile.Target) else outfile.check(
        path, what=WHAT, recognise=recognise)
    outfile.write(target, text)


def _repo_root(folder: Path) -> Path | None:
    """The git work tree holding *folder*: git's answer, else the nearest ``.git``."""
    result = proc.call(["git", "rev-parse", "--show-toplevel"], cwd=folder, timeout=60)
    if result.ok and result.stdout.strip():
        return Path(result.stdout.strip()).resolve()
    return next((f for f in (folder, *folder.parents) if (f / ".git").exists()), None)


def locate_project(project: Path, cwd: Path) -> tuple[Path, str]:
    """The repository root and the project's path relative to it (posix).

    *project* may be absolute or relative to *cwd*. Outside any git repository it is a
    UsageError: CI sees only committed files, and without git no lock can be shown to be
    committed. A project outside the root is a UsageError too.
    """
    folder = (cwd / project).resolve()
    if not folder.is_dir():
        raise UsageError(f"--project {project}: not a folder")
    root = _repo_root(folder) or _repo_root(cwd.resolve())
    if root is None:
        raise UsageError(f"{folder}: not in a git repository, so no lock can be shown to be "
                         "committed (CI sees only committed files)",
                         hint="git init, then git add locks/ lockkit.toml, and run "
                              "'lockkit ci github' again")
    try:
        rel = folder.relative_to(root)
    except ValueError:
        raise UsageError(f"--project {project}: outside the repository ({root}); CI checks "
                         "out the repository, so the project must be inside it") from None
    return root, rel.as_posix()


def _committed(root: Path, paths: Sequence[str]) -> set[str]:
    """Which of *paths* (relative to *root*) git tracks (in its index: added counts); a
    UsageError when git cannot say (not installed, a broken repository)."""
    result = proc.call(["git", "ls-files", "-z", "--", *paths], cwd=root, timeout=60)
    if not result.ok:
        raise UsageError(f"{root}: git cannot list the committed files, so no lock can be "
                         f"shown to be committed: {proc.outcome(result)}",
                         hint="check that git works in this repository (git status)")
    return set(result.stdout.split("\0")) - {""}


def split_by_lock(platforms: Sequence[Platform], root: Path, project: str
                  ) -> tuple[list[Platform], list[tuple[str, str]]]:
    """The platforms whose lock is committed (tracked by git), and (name, why) for each
    left out."""
    locks = {p.name: lock_path(project, p.name) for p in platforms}
    tracked = _committed(root, list(locks.values()))
    left: dict[str, str] = {}
    for name, lock in locks.items():
        if not (root / lock).is_file():
            left[name] = f"no lock ({lock}; run 'lockkit compile --platform {name}')"
        elif lock not in tracked:
            left[name] = f"{lock} is not committed (git add it)"
    return [p for p in platforms if p.name not in left], list(left.items())
