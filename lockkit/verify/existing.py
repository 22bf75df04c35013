"""``lockkit verify --existing PYTHON``: check an environment lockkit did not build.

A docker image, a cluster's module or shared venv is where the GPU often is, and it
cannot be rebuilt to be checked. The rebuild's host, venv and install steps give way to
a host step that takes the interpreter as it is, and the inventory reads what that
interpreter sees (its ``sys.path``, as the probes see it: ``-I``, the allow-listed
variables) instead of a venv's folder:

    host -> pip-check -> inventory -> system -> gpu -> extensions -> application -> resume

The inventory holds the environment to the lock: every locked package installed at its
locked version, and every file its ``*.dist-info/RECORD`` lists with a hash hashing to it
(the wheel spec's ``sha256=<urlsafe base64, no padding>``; lines without a hash, RECORD
itself and ``.pyc`` files, are passed; a listed file that is gone fails). Packages the
lock does not name are listed as extras, a failure with ``--strict`` only.

Nothing here writes into the environment: no installer runs (``pip check`` reads), the
bytecode of every command goes to the run's temp folder (``pycache_prefix``), and the
run's ``venv`` stays None, so ``--keep-venv``'s clean-up never reaches it. The dossier
says ``existing environment (not rebuilt)``, and a run where every step passed reads
``passed-existing``, never a rebuild's ``passed``
(:func:`lockkit.verify.run.make_dossier`).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from lockkit._internal import proc as _run
from lockkit._internal.parse import parse_json
from lockkit.errors import LockkitError
from lockkit.report.model import Inventory
from lockkit.verify import probe, rebuild
from lockkit.verify.context import Run
from lockkit.verify.interpreter import given_interpreter, lock_python
from lockkit.verify.steps import Step, StepFailed
from lockkit.verify.workspace import git_state
from lockkit.wheelhouse import trust

__all__ = ["LABEL", "PLAN", "bodies", "host_step", "inventory_step", "record_problems",
           "venv_root"]

LABEL = "existing environment (not rebuilt)"
PLAN: list[tuple[str, tuple[str, ...]]] = [
    ("host", ()), ("pip-check", ("host",)), ("inventory", ("host",)),
    ("system", ("pip-check", "inventory")), ("gpu", ("system",)),
    ("extensions", ("system",)), ("application", ("gpu",)), ("resume", ("gpu",)),
]
_SHOWN = 20  # altered files named in the dossier; the count says how many more

# Each distribution the interpreter sees, first on sys.path first (the one imported):
# [name, version, the folder its RECORD paths are relative to, RECORD's text or None].
_LIST = ("import importlib.metadata as m, json; print(json.dumps([[d.metadata['Name'], "
         "d.version, str(d.locate_file('')), d.read_text('RECORD')] "
         "for d in m.distributions()]))")


def bodies(run: Run) -> dict[str, Callable[[Step], None]]:
    """The steps that differ from a rebuild's (:func:`lockkit.verify.run.execute`)."""
    return {"host": lambda s: host_step(run, s), "inventory": lambda s: inventory_step(run, s)}


def host_step(run: Run, step: Step) -> None:
    """This machine against the platform, the interpreter against the lock's Python, and
    what the lock selects for the platform: the versions the inventory holds it to."""
    opts = run.opts
    assert opts.existing is not None
    run.found.code = git_state(run, opts.project.root)
    rebuild.check_machine(opts.platform, step)
    python, facts = given_interpreter(run, opts.existing, lock_python(run), "--existing")
    step.detail.update(interpreter=facts, environment=LABEL)
    run.found.python, run.interpreter, run.python = facts, python, python
    run.pycache = run.work / "pyc"  # the probes' and commands' bytecode: not in site-packages
    lock = opts.project.lock_path(opts.platform.name)
    try:
        run.expected = {s.package: s.version for s in trust.selection(lock, opts.platform)}
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None


def inventory_step(run: Run, step: Step) -> None:
    """The environment against the lock: versions, RECORD hashes, extras; see the module."""
    assert run.python is not None
    seen = _distributions(run)
    installed = {name: d[0] for name, d in seen.items()}
    expected = run.expected
    same = [n for n in expected if n in installed
            and rebuild.same_version(installed[n], expected[n])]
    altered = [p for n in sorted(same) for p in record_problems(
        f"{n} {installed[n]}", Path(seen[n][1]), seen[n][2])]
    inventory = Inventory(
        expected=len(expected), installed=len(installed),
        missing=tuple(sorted(f"{n}=={v}" for n, v in expected.items() if n not in installed)),
        extra=tuple(sorted(f"{n}=={v}" for n, v in installed.items() if n not in expected)),
        mismatched=tuple(sorted(f"{n}: lock {expected[n]}, installed {v}"
                                for n, v in installed.items()
                                if n in expected and n not in same)),
        altered=tuple(altered[:_SHOWN]) + ((f"... and {len(altered) - _SHOWN} more",)
                                           if len(altered) > _SHOWN else ()))
    run.found.inventory = inventory
    run.found.packages = rebuild.package_table(
        run.opts.project.lock_path(run.opts.platform.name), installed)
    run.attachments["installed-after.txt"] = "".join(
        f"{n}=={v}\n" for n, v in sorted(installed.items()))
    step.detail.update(inventory.to_dict(), environment=LABEL,
                       record_files_altered=len(altered), strict=run.opts.strict)
    problems = inventory.failures(extras=run.opts.strict)
    if problems:
        raise StepFailed("the environment differs from the lock: " + "; ".join(problems))


def venv_root(run: Run) -> str | None:
    """The existing environment's folder, the ``<venv>`` root of its dossier: its
    ``sys.prefix`` when that is a venv (a system Python's prefix, ``/usr``, is no one
    run's folder: its paths stay as they are)."""
    python = run.found.python or {}
    prefix = python.get("prefix")
    return prefix if python.get("in_venv") and isinstance(prefix, str) else None


def _distributions(run: Run) -> dict[str, tuple[str, str, str | None]]:
    """Canonical name -> (version, base folder, RECORD text) of each distribution the
    interpreter imports (the first of a name on its ``sys.path``), asked as the probes
    ask it: ``-I``, the allow-listed variables."""
    assert run.python is not None
    result = run.call("inventory", [str(run.python), "-I", "-B", "-c", _LIST], timeout=300,
                      env=probe.probe_env())
    try:
        rows = parse_json(result.stdout, run.python, StepFailed) if result.ok else None
    except json.JSONDecodeError:
        rows = None
    if not isinstance(rows, list):
        raise StepFailed(f"cannot list the distributions of {run.python}: "
                         f"{_run.outcome(result)}")
    found: dict[str, tuple[str, str, str | None]] = {}
    for name, version, base, record in rows:
        if name and version:
            found.setdefault(canonicalize_name(name), (version, base, record))
    return found


def record_problems(label: str, base: Path, record: str | None) -> list[str]:
    """Each file of a distribution (*label*: name and version) whose content is not the
    one its RECORD (*record*, paths relative to *base*) hashes, or that is gone."""
    if record is None:
        return [f"{label}: no RECORD in its metadata: its files cannot be checked"]

    def check(row: tuple[str, str]) -> str | None:
        path, want = row
        algorithm, _, digest = want.partition("=")
        file = Path(os.path.normpath(base / path))
        if algorithm not in hashlib.algorithms_guaranteed or algorithm in ("md5", "sha1"):
            return f"{label}: {path}: RECORD hash {want!r}: not an algorithm the wheel spec allows"
        if not file.is_file():
            return f"{label}: {path}: listed in RECORD, missing"
        got = _digest(file, algorithm)
        return (None if got == digest
                else f"{label}: {path}: RECORD {algorithm}={digest}, file {algorithm}={got}")

    # hashlib releases the GIL on large buffers: a CUDA torch's gigabytes hash on every core
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return [p for p in pool.map(check, _hashed(record)) if p is not None]


def _hashed(record: str) -> Iterator[tuple[str, str]]:
    """RECORD's (path, hash) rows that carry a hash."""
    for row in csv.reader(io.StringIO(record)):
        if len(row) >= 2 and row[0] and row[1]:
            yield row[0], row[1]


def _digest(file: Path, algorithm: str) -> str:
    """The wheel spec's form: urlsafe base64 of the digest, without ``=`` padding."""
    h: Any = hashlib.new(algorithm)
    with file.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")
