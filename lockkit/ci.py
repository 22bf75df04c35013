"""A GitHub Actions workflow that gates locks and verifies every platform on its runner.

Two jobs: ``locks`` fails the run when a lock is missing or stale (``compile --check``),
then ``verify`` builds each platform's wheelhouse and verifies it on a runner of that
platform, one matrix entry per platform, uploading the dossier and JUnit file whether
or not verify passed.

The workflow is written as text, not dumped by a YAML library: the output is the same
bytes for the same inputs, reads like a hand-written file, and lockkit needs no YAML
package at run time. Every value goes through :func:`_scalar`, which quotes whatever
YAML would otherwise read as something else (``3.10`` as a float, ``on`` as a bool).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from lockkit.common import arch_family, write_atomic
from lockkit.configcheck import Runner, runner_labels
from lockkit.errors import ConfigError, UsageError
from lockkit.platforms import Platform

__all__ = ["DEFAULT_OUTPUT", "Runner", "default_runner", "github_workflow", "validate_runners",
           "write_workflow"]

DEFAULT_OUTPUT = Path(".github/workflows/lockkit.yml")
REPORT_DIR = "lockkit-report"
TOOL_PYTHON = "3.12"  # the Python the locks job runs lockkit with (it only resolves)

# GitHub-hosted runners by (os, arch); a platform without one gets self-hosted labels.
_HOSTED = {("linux", "x64"): "ubuntu-latest", ("linux", "arm64"): "ubuntu-24.04-arm",
           ("macos", "arm64"): "macos-14", ("windows", "x64"): "windows-latest"}
_RUNNER_ARCH = {"x86_64": "x64", "arm64": "arm64"}  # GitHub's names of the arch families
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_SPECIAL = {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"}


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


def _plain(value: str, flow: bool) -> bool:
    """Whether YAML reads *value* back unquoted as this very string."""
    if not value or value != value.strip() or value.lower() in _SPECIAL:
        return False
    if value[0] in _INDICATORS or value[0].isdigit() or value[0] in "+.":
        return False  # an indicator, or something that may read as a number
    if any(ord(c) < 0x20 or c in "\x7f\x85\u2028\u2029" for c in value):
        return False
    if ": " in value or " #" in value or value.endswith(":"):
        return False
    return not (flow and any(c in ",[]{}" for c in value))


def _quoted(value: str) -> str:
    """A double-quoted YAML scalar: JSON's escapes are a subset of YAML's."""
    return json.dumps(value, ensure_ascii=True)


def _scalar(value: str, *, flow: bool = False) -> str:
    """*value* plain when that reads back as the same string, else double-quoted."""
    return value if _plain(value, flow) else _quoted(value)


def _runner_yaml(name: str, runner: Any) -> str:
    labels = runner_labels(list(runner) if isinstance(runner, tuple) else runner)
    if isinstance(labels, str):
        return _scalar(labels, flow=True)
    if labels is not None:
        return "[" + ", ".join(_scalar(label, flow=True) for label in labels) + "]"
    raise ConfigError(f"[ci.runners].{name}: expected a label or a non-empty list of labels, "
                      f"got {runner!r}")


def _project_arg(project: str) -> str:
    """The project folder as one shell word that bash, pwsh and cmd all read the same."""
    if PurePosixPath(project).is_absolute() or PureWindowsPath(project).is_absolute():
        raise UsageError(f"--project {project!r}: must be relative to the repository root")
    posix = PureWindowsPath(project).as_posix() if "\\" in project else project
    if posix.startswith("-"):
        posix = "./" + posix  # not an option
    if re.fullmatch(r"[A-Za-z0-9_./-]+", posix):
        return posix
    if re.search(r"[\"'$`%!\x00-\x1f]", posix):
        raise UsageError(f"--project {project!r}: quotes, $, %, !, backquotes and control "
                         "characters cannot be passed safely to every runner's shell")
    return f'"{posix}"'


def _matrix(platforms: Sequence[Platform], runners: Mapping[str, Runner],
            python: str | None) -> list[str]:
    names = [p.name for p in platforms]
    twice = sorted({n for n in names if names.count(n) > 1})
    if not platforms or twice:
        raise UsageError("platforms: " + (f"named twice: {', '.join(twice)}" if twice
                                          else "at least one is needed"))
    return [f"          - {{platform: {_scalar(p.name, flow=True)}, "
            f"runner: {_runner_yaml(p.name, runners.get(p.name, default_runner(p)))}, "
            f"python: {_quoted(python or p.python)}}}" for p in platforms]


def github_workflow(platforms: list[Platform], *, project: str = ".",
                    runners: Mapping[str, Runner] | None = None,
                    python: str | None = None) -> str:
    """The workflow's text, byte-identical for the same arguments.

    *runners* (``[ci.runners]``) replaces :func:`default_runner` per platform name;
    *python* (the project's ``python``) replaces every platform's own version.
    """
    proj = _project_arg(project)
    install = 'python -m pip install "${{ env.LOCKKIT_SPEC }}"'
    plat = "${{ matrix.platform }}"

    def run(name: str, command: str, indent: str = "      ") -> list[str]:
        return [f"{indent}- name: {_scalar(name)}", f"{indent}  run: {_scalar(command)}"]

    lines = [
        "# Generated by `lockkit ci github`: regenerate it after changing the platforms or",
        "# [ci.runners] in lockkit.toml rather than editing it by hand.",
        "name: lockkit",
        "",
        "on: [push, pull_request, workflow_dispatch]",
        "",
        "permissions:",
        "  contents: read",
        "",
        "env:",
        "  # What `pip install` gets: a version (lockkit==X.Y), a path (.) or a VCS URL.",
        "  LOCKKIT_SPEC: lockkit",
        "",
        "# Commands take their values from ${{ }} expressions, which GitHub substitutes",
        "# before any shell runs: the same line works in bash (Linux, macOS) and in pwsh,",
        "# the default shell of Windows runners.",
        "jobs:",
        "  locks:",
        "    name: locks are fresh",
        "    runs-on: ubuntu-latest",
        "    steps:",
        "      - uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5",
        "        with:",
        f'          python-version: "{TOOL_PYTHON}"',
        *run("install lockkit", install),
        *run("check the locks", f"lockkit compile --check --project {proj}"),
        "",
        "  verify:",
        f"    name: verify {plat}",
        "    needs: locks",
        "    strategy:",
        "      fail-fast: false",
        "      matrix:",
        "        # `runner` is one label or a YAML list of labels; `runs-on` takes either, and",
        "        # a list given through ${{ matrix.runner }} stays a list (a runner must carry",
        "        # every label), so self-hosted GPU label sets need no fromJSON.",
        "        include:",
        *_matrix(platforms, runners or {}, python),
        "    runs-on: ${{ matrix.runner }}",
        "    steps:",
        "      - uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5",
        "        with:",
        "          python-version: ${{ matrix.python }}",
        *run("install lockkit", install),
        *run("build the wheelhouse",
             f"lockkit wheelhouse build --platform {plat} --project {proj}"),
        *run("verify", f"lockkit verify --platform {plat} --project {proj} "
                       f"--report-dir {REPORT_DIR} --junit {REPORT_DIR}/junit.xml"),
        "      - name: upload the dossier",
        "        if: always()",
        "        uses: actions/upload-artifact@v4",
        "        with:",
        f"          name: dossier-{plat}",
        f"          path: {REPORT_DIR}",
        "          if-no-files-found: warn",
    ]
    return "\n".join(lines) + "\n"


def write_workflow(text: str, path: Path) -> None:
    """Write the workflow atomically (temp file + rename), creating its folders."""
    write_atomic(path, text)
