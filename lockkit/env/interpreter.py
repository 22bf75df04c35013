"""The interpreter a venv is made from: the lock's Python version, found on this machine.

verify's and sync's host step (:func:`lockkit.env.rebuild.host_step`) asks for the
version the committed lock was made for (:func:`lock_python`), takes ``--python`` or
finds one (:func:`find_interpreter`), and checks the wheelhouse against the tags that
interpreter installs (:func:`interpreter_tags`). Every command is recorded for the
``host`` step, run isolated (``-I``, no ``PIP_*``/``UV_*`` variables).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from packaging.tags import Tag, compatible_tags, cpython_tags, platform_tags

from lockkit._internal import proc
from lockkit._internal.parse import parse_json
from lockkit._internal.uv import uv_bin
from lockkit.errors import ConfigError, LockkitError
from lockkit.report.shapes import Foreign
from lockkit.steps.context import Run
from lockkit.steps.engine import StepFailed

__all__ = ["find_interpreter", "given_interpreter", "interpreter_tags", "lock_python"]


def lock_python(run: Run) -> str:
    """The Python version of the committed lock (:func:`lockkit.lock.meta.python_of`),
    which compile chose by the one rule (:func:`lockkit.lock.python.lock_python`: the
    ``python`` key, else a Python satisfying pyproject.toml's ``requires-python``)."""
    try:
        return run.committed().python
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None


def find_interpreter(run: Run, version: str) -> tuple[Path, Foreign]:
    """An interpreter of Python *version* (the lock's) and its facts, for verify and sync.

    ``--python``, which must be that version; else the one ``uv python find`` names (uv's
    own discovery: its managed installs, PATH, the Windows registry; ``--system``: never
    the interpreter of a virtual environment, such as the project's ``.venv`` that sync
    replaces); else the first ``python<version>`` on PATH that runs and says it is that
    version, an activated venv's included (``uv venv`` and ``python -m venv`` both make
    the new venv from its base interpreter). A pyenv shim of a version not selected
    fails to run and is passed by. None found: one line naming the version, the lock and
    how to give one (``--python PATH``)."""
    lock = run.opts.project.lock_path(run.opts.platform.name).name
    if run.opts.python is not None:
        return given_interpreter(run, run.opts.python, version, "--python")
    for candidate in _candidates(run, version):
        try:
            facts = _interpreter_facts(run, candidate)
        except StepFailed:
            continue
        if facts["version"] == version:
            return candidate, facts
    raise StepFailed(f"no Python {version} interpreter found ({lock} is for Python {version}; "
                     f"'uv python find {version}' and python{version} on PATH found none): "
                     f"pass --python PATH to a Python {version} interpreter, or install one "
                     f"('uv python install {version}')")


def given_interpreter(run: Run, given: Path, version: str, flag: str,
                      facts: Foreign | None = None) -> tuple[Path, Foreign]:
    """*given* (by *flag*: ``--python``, ``verify --existing``) and its *facts* (asked
    here when not given); it must be Python *version*, the lock's."""
    lock = run.opts.project.lock_path(run.opts.platform.name).name
    facts = facts if facts is not None else _interpreter_facts(run, given)
    if facts["version"] != version:
        raise StepFailed(f"{flag} {given} is Python {facts['version']}; {lock} is for "
                         f"Python {version}: pass {flag} with a Python {version} interpreter")
    return given, facts


def _candidates(run: Run, version: str) -> Iterator[Path]:
    found = run.call("host", [uv_bin(), "python", "find", "--system", "--no-config",
                              "--offline", "--no-python-downloads", version], timeout=60,
                     env=proc.isolated_env())
    if found.ok and found.stdout.strip():
        yield Path(found.stdout.strip())
    name = f"python{version}{'.exe' if os.name == 'nt' else ''}"
    for folder in filter(None, os.environ.get("PATH", "").split(os.pathsep)):
        path = Path(folder) / name
        if path.is_file() and os.access(path, os.X_OK):
            yield path


_FACTS = ("import json, platform, sys, sysconfig; print(json.dumps({'version': "
          "'%d.%d' % sys.version_info[:2], 'full': platform.python_version(), "
          "'implementation': sys.implementation.name, 'platform': sysconfig.get_platform(), "
          "'executable': sys.executable, 'prefix': sys.prefix, "
          "'in_venv': sys.prefix != sys.base_prefix}))")


def _interpreter_facts(run: Run, python: Path) -> Foreign:
    # -B: -I ignores PYTHONPYCACHEPREFIX, and the site module imports a sitecustomize
    # even so: no bytecode of it may land in an environment verify --existing only reads
    result = run.call("host", [str(python), "-I", "-B", "-c", _FACTS], timeout=60,
                      env=proc.isolated_env())
    try:
        if result.ok:
            facts = parse_json(result.stdout, python)
            if isinstance(facts, dict) and isinstance(facts.get("version"), str):
                return facts
    except json.JSONDecodeError:
        pass
    except ConfigError as exc:  # nested too deeply: that line, as the step's failure
        raise StepFailed(str(exc)) from None
    raise StepFailed(f"cannot run the interpreter {python}: {proc.outcome(result)}")


def interpreter_tags(facts: Foreign) -> list[Tag]:
    """The tags of an interpreter on this machine (same OS and libc as lockkit's own)."""
    version = tuple(int(x) for x in facts["version"].split("."))
    plats = list(platform_tags())
    return [*cpython_tags(version, platforms=plats),
            *compatible_tags(version, interpreter=f"cp{version[0]}{version[1]}",
                             platforms=plats)]
