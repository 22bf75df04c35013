"""``lockkit verify --existing PYTHON``: check an environment lockkit did not build.

A docker image, a cluster's module or shared venv is where the GPU often is, and it
cannot be rebuilt to be checked. The rebuild's host, venv and install steps give way to
a host step that takes the interpreter as it is, and the inventory reads what that
interpreter sees (its ``sys.path``, as the probes see it: ``-I``, the allow-listed
variables) instead of a venv's folder:

    host -> start-up -> inventory -> pip-check -> system -> gpu -> extensions -> application
    -> resume

The host step reads the interpreter without running its start-up code (``python -I -S``,
``probes/site_probe.py``), and the start-up step judges that code before anything starts
the interpreter the usual way (:mod:`lockkit.env.startup`): ``pip-check``, the probes
and the checks come after it, and do not run when it fails.

The inventory holds the environment to the lock: every locked package installed at its
locked version, and every file its ``*.dist-info/RECORD`` lists with a hash hashing to it
(the wheel spec's ``sha256=<urlsafe base64, no padding>``; lines without a hash, RECORD
itself and ``.pyc`` files, are passed; a listed file that is gone fails). Packages the
lock does not name are listed as extras, a failure with ``--strict`` only. Beyond what
RECORD says, it looks at what Python will load:

- RECORD against the wheel: where the lock's wheel is at hand (``--wheelhouse``, else
  the download cache, else fetched by its hash with ``--fetch-wheels``), hashing to the
  lock's sha256, its own RECORD (the only member read) is the one the installed RECORD
  must match (:mod:`lockkit.env.ownership`), so a file edited together with its
  RECORD row is caught. Packages with no wheel at
  hand are named in the inventory's ``record_on_its_word`` and a warning.
- Ownership: every file under the site-packages folders is some RECORD's; an unowned
  ``.pth``, ``sitecustomize`` or ``usercustomize``, or an unowned module inside a locked
  package's folder, fails; other unowned files are listed (``--strict`` fails them).
- The variables of the environment verify runs in that change what Python imports
  (:mod:`lockkit.env.importenv`): recorded, redacted; the folders they add listed; a
  locked package they shadow, or start-up code they add, fails.

Nothing here writes into the environment: no installer runs (``pip check`` reads), the
bytecode of every command goes to the run's temp folder (``pycache_prefix``), or nowhere
(``-B``: ``-I`` ignores ``PYTHONPYCACHEPREFIX``, and a ``sitecustomize`` is imported even
so), and the run's ``venv`` stays None, so ``--keep-venv``'s clean-up never reaches it;
``--wheelhouse`` and the cache are only read. The dossier
says ``existing environment (not rebuilt)``, and a run where every step passed reads
``passed-existing``, never a rebuild's ``passed``
(:func:`lockkit.verify.run.make_dossier`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from lockkit._internal import proc
from lockkit._internal.parse import parse_json
from lockkit._internal.private import open_regular
from lockkit.cache.store import Cache
from lockkit.env import importenv, interpreter, rebuild, startup, workspace
from lockkit.env.ownership import (
    Unowned,
    record_against_wheel,
    record_rows,
    top_level,
    unowned,
    wheel_record,
)
from lockkit.errors import ConfigError, LockkitError
from lockkit.probes import probe
from lockkit.report.records import Inventory
from lockkit.steps.context import Run
from lockkit.steps.engine import Step, StepFailed
from lockkit.verify import checks
from lockkit.wheelhouse import trust

__all__ = ["LABEL", "bodies", "host_step", "inventory_step", "plan", "record_problems",
           "startup_step", "taken_on_its_word", "venv_root"]

LABEL = "existing environment (not rebuilt)"


def plan() -> list[tuple[str, tuple[str, ...]]]:
    """``verify --existing``'s steps, the checks' from :data:`lockkit.verify.checks.CHECKS`."""
    return [("host", ()), ("start-up", ("host",)), ("inventory", ("host",)),
            ("pip-check", ("start-up",)), ("system", ("pip-check", "inventory")),
            ("gpu", ("system",)), *((check.key, check.after) for check in checks.CHECKS)]


_SHOWN = 20  # altered files named in the dossier; the count says how many more


def bodies(run: Run) -> dict[str, Callable[[Step], None]]:
    """The steps that differ from a rebuild's (:func:`lockkit.verify.run.execute`): the
    host step reads the interpreter's site once (``site_probe.py``, nothing run), and the
    start-up and inventory steps judge what it read."""
    read: dict[str, startup.Site] = {}
    return {"host": lambda s: host_step(run, s, read),
            "start-up": lambda s: startup_step(run, s, read["site"]),
            "inventory": lambda s: inventory_step(
                run, s, read["site"], startup.judge(read["site"], run.expected,
                                                    run.opts.allow_extra))}


def host_step(run: Run, step: Step, read: dict[str, startup.Site]) -> None:
    """This machine against the platform, the interpreter against the lock's Python, and
    what the lock selects for the platform: the versions the inventory holds it to. The
    interpreter's facts come from ``site_probe.py``, which runs none of its start-up code
    (:mod:`lockkit.env.startup`)."""
    opts = run.opts
    assert opts.existing is not None
    run.found.code = workspace.git_state(run, opts.project.root)
    rebuild.check_machine(opts.platform, step)
    run.wheelhouse = opts.wheelhouse  # only read: the lock's wheels, for their RECORD
    read["site"] = site = _read_site(run, opts.existing)
    python, facts = interpreter.given_interpreter(
        run, opts.existing, interpreter.lock_python(run), "--existing", facts=site.facts)
    step.detail.update(interpreter=facts, environment=LABEL)
    run.found.python, run.interpreter, run.python = facts, python, python
    run.pycache = run.work / "pyc"  # the probes' and commands' bytecode: not in site-packages
    try:
        run.expected = {s.package: s.version
                        for s in trust.selection(run.committed(), opts.platform)}
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None


def startup_step(run: Run, step: Step, site: startup.Site) -> None:
    """What the interpreter runs at start-up, judged before anything starts it
    (:mod:`lockkit.env.startup`); what passed on someone's word is a warning."""
    found = startup.judge(site, run.expected, run.opts.allow_extra)
    step.detail.update(code_lines=len(site.code), customize=len(site.customize),
                       failures=found.failures, taken_on_its_word=found.taken)
    run.found.warnings = (*run.found.warnings,
                          *(f"start-up code taken on its word: {t}" for t in found.taken))
    run.found.taken = (*run.found.taken, *(f"start-up code: {t}" for t in found.taken))
    if found.failures:
        raise StepFailed("code that runs at start-up or changes what an import loads is "
                         "not the lock's: " + "; ".join(found.failures[:3])
                         + (f" (and {len(found.failures) - 3} more)"
                            if len(found.failures) > 3 else "")
                         + ("; --allow-extra NAME accepts an extra you vouch for"
                            if any("(not in the lock)" in f for f in found.failures) else ""))


def inventory_step(run: Run, step: Step, site: startup.Site,
                   judged: startup.Judgement) -> None:
    """The environment against the lock: versions, RECORD hashes (and RECORD against the
    lock's wheel where one is at hand), files no RECORD owns, what the environment's
    variables add; see the module. Installer tooling without start-up code and the extras
    the user allowed are named apart, not as extras (*judged*)."""
    assert run.python is not None
    listing = _listing(site)
    seen = listing.first
    expected = run.expected
    installed = {name: d[0] for name, d in seen.items()}
    allowed = {canonicalize_name(a) for a in run.opts.allow_extra} & installed.keys()
    tooling = {canonicalize_name(t.rsplit(" ", 1)[0]) for t in judged.tooling} - allowed
    apart = (allowed | tooling) - expected.keys()
    same = sorted(n for n in expected if n in installed
                  and rebuild.same_version(installed[n], expected[n]))
    labels = {n: f"{n} {installed[n]}" for n in installed}
    altered = [p for n in same for p in record_problems(labels[n], Path(seen[n][1]),
                                                        seen[n][2])]
    wheels = _wheels_at_hand(run, same)
    checked = {n: record_against_wheel(labels[n], seen[n][2] or "", wheels[n])
               for n in same if n in wheels}
    altered += [p for n in same for p in checked.get(n, [])]
    files = _ownership(listing, same)
    paths = importenv.import_paths(os.environ, run.found.python or {}, listing.sites)
    surveyed = importenv.survey(paths, {top: labels[n] for n in same
                                        for top in top_level(seen[n][2] or "")})
    inventory = Inventory(
        expected=len(expected), installed=len(installed),
        missing=tuple(sorted(f"{n}=={v}" for n, v in expected.items() if n not in installed)),
        extra=tuple(sorted(f"{n}=={v}" for n, v in installed.items()
                           if n not in expected and n not in apart)),
        mismatched=tuple(sorted(f"{n}: lock {expected[n]}, installed {v}"
                                for n, v in installed.items()
                                if n in expected and n not in same)),
        altered=_shown(altered), unowned_code=_shown(files.code),
        unowned=_shown(files.other), record_from_wheel=tuple(labels[n] for n in checked),
        record_on_its_word=tuple(labels[n] for n in same if n not in checked),
        import_variables=importenv.variables(os.environ),
        import_paths=tuple(surveyed.added), shadowed=tuple(surveyed.failures),
        tooling=tuple(sorted(f"{n}=={installed[n]}" for n in tooling & apart)),
        allowed_extra=tuple(sorted(f"{n}=={installed[n]}" for n in allowed & apart)))
    _record(run, step, inventory, installed, counts={
        "record_files_altered": len(altered), "unowned_files": len(files.other)})
    problems = inventory.failures(extras=run.opts.strict)
    if problems:
        raise StepFailed("the environment differs from the lock: " + "; ".join(problems))


def _record(run: Run, step: Step, inventory: Inventory, installed: dict[str, str],
            counts: dict[str, int]) -> None:
    """What the inventory found, for the dossier, and the warnings for what it took on
    its word or did not fail on."""
    run.found.inventory = inventory
    run.found.packages = rebuild.package_table(run.lock, installed)
    run.attachments["installed-after.txt"] = "".join(
        f"{n}=={v}\n" for n, v in sorted(installed.items()))
    step.detail.update(inventory.to_dict(), environment=LABEL, strict=run.opts.strict,
                       **counts)
    notes = []
    if inventory.record_on_its_word:
        notes.append("RECORD taken on its word (no wheel of the lock at hand: pass "
                      "--wheelhouse or --fetch-wheels, or fill the download cache) for "
                      + ", ".join(inventory.record_on_its_word))
    if inventory.unowned and not run.opts.strict:
        notes.append(f"{counts['unowned_files']} file(s) under site-packages that no RECORD "
                     f"lists (the inventory names them; --strict fails them), first: "
                     f"{inventory.unowned[0]}")
    run.found.warnings = (*run.found.warnings, *notes)


def taken_on_its_word(run: Run) -> tuple[str, ...]:
    """What an ``--existing`` verdict did not check itself, for the dossier and its
    attestation: the environment's making, the interpreter, and what the steps accepted
    on someone's word."""
    inventory = run.found.inventory
    return (
        "the environment: built by someone else; this run did not install it from the lock",
        "the interpreter and its standard library, as found",
        *run.found.taken,
        *(f"RECORD (no wheel of the lock at hand): {n}"
          for n in (inventory.record_on_its_word if inventory else ())),
        *(f"installer tooling not in the lock, with no start-up code: {n}"
          for n in (inventory.tooling if inventory else ())),
        *(f"an extra you vouched for (--allow-extra): {n}"
          for n in (inventory.allowed_extra if inventory else ())))


def _shown(items: list[str]) -> tuple[str, ...]:
    """The first ``_SHOWN`` of *items*, and how many more there are."""
    return tuple(items[:_SHOWN]) + ((f"... and {len(items) - _SHOWN} more",)
                                    if len(items) > _SHOWN else ())


def venv_root(run: Run) -> str | None:
    """The existing environment's folder, the ``<venv>`` root of its dossier: its
    ``sys.prefix`` when that is a venv (a system Python's prefix, ``/usr``, is no one
    run's folder: its paths stay as they are)."""
    python = run.found.python or {}
    prefix = python.get("prefix")
    return prefix if python.get("in_venv") and isinstance(prefix, str) else None


@dataclass(frozen=True)
class _Listing:
    """What the interpreter imports: *first*, canonical name -> (version, base folder,
    RECORD text) of the first distribution of each name on its ``sys.path`` (the one
    imported); *rows*: every distribution, shadowed ones too (their RECORDs own files);
    *sites*: its site-packages folders."""

    first: dict[str, tuple[str, str, str | None]]
    rows: list[tuple[str, str, str, str | None]]
    sites: list[str]


def _read_site(run: Run, python: Path) -> startup.Site:
    """What ``site_probe.py`` reads of *python* under ``-I -S -B``: the site module does
    not run, so none of the start-up code being judged runs (the allow-listed variables,
    as for every probe)."""
    script = probe.PROBES_DIR / "site_probe.py"
    result = run.call("host", [str(python), "-I", "-S", "-B", str(script)], timeout=300,
                      env=probe.probe_env())
    try:
        doc = parse_json(result.stdout, python) if result.ok else None
        if isinstance(doc, dict) and isinstance(doc.get("facts"), dict):
            return startup.Site.from_doc(doc)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        pass
    except ConfigError as exc:  # nested too deeply: that line, as the step's failure
        raise StepFailed(str(exc)) from None
    raise StepFailed(f"cannot read the site of {python}: {proc.outcome(result)}")


def _listing(site: startup.Site) -> _Listing:
    """The distributions and site folders the site probe read."""
    found: dict[str, tuple[str, str, str | None]] = {}
    for name, version, base, record in site.dists:
        found.setdefault(canonicalize_name(name), (version, base, record))
    return _Listing(first=found, rows=site.dists, sites=site.sites)


def _ownership(listing: _Listing, locked: list[str]) -> Unowned:
    """The files of the site folders no RECORD lists (:func:`ownership.unowned`); every
    distribution's RECORD owns its files, a locked one's folders are held closer."""
    real = functools.cache(os.path.realpath)  # one spelling of each folder: lib64 is lib
    owned = {os.path.normpath(os.path.join(real(base), path))
             for _, _, base, record in listing.rows if record
             for path, _ in record_rows(record)}
    folders = set()
    for name in locked:
        _, base, record = listing.first[name]
        folders |= {os.path.normpath(os.path.join(real(base), top))
                    for top in top_level(record or "")
                    if os.path.isdir(os.path.join(base, top))}
    sites = {real(site) for site in listing.sites if os.path.isdir(site)}
    return unowned(sorted(Path(s) for s in sites), owned, folders)


def _wheels_at_hand(run: Run, locked: list[str]) -> dict[str, str]:
    """Canonical name -> the RECORD inside the lock's wheel of each of *locked*, where that
    wheel is at hand (``--wheelhouse``, else the download cache, else, with
    ``--fetch-wheels``, fetched by its hash through that cache) and hashes to the lock's
    sha256; only RECORD is read from the zip."""
    lock = run.committed()
    try:
        chosen = [s for s in trust.selection(lock, run.opts.platform)
                  if s.kind == "wheel" and s.package in locked]
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None
    cache = Cache(run.opts.cache_root) if run.opts.cache_root else None
    found = _records_in(run.opts.wheelhouse, cache, chosen)
    if run.opts.fetch is not None and any(s.package not in found for s in chosen):
        try:  # the whole lock, through the cache: what is there already is not fetched
            fetched = run.opts.fetch(run.work / "fetched", lock).folder
        except LockkitError as exc:
            raise StepFailed(f"--fetch-wheels: {exc}") from None
        found |= _records_in(fetched, None, [s for s in chosen if s.package not in found])
    return found


def _records_in(wheelhouse: Path | None, cache: Cache | None,
                chosen: list[trust.Selected]) -> dict[str, str]:
    """The RECORDs of the *chosen* wheels found in *wheelhouse* (top level or ``simple/``)
    or *cache*, each wheel hashed against the lock's sha256."""
    def find(sel: trust.Selected) -> tuple[str, str | None]:
        places = ([wheelhouse / sel.filename, *wheelhouse.glob(f"simple/*/{sel.filename}")]
                  if wheelhouse else [])
        places += [cache.path(sel.sha256)] if cache else []
        for place in places:
            record = _verified_record(place, sel.sha256, sel.package)
            if record is not None:
                return sel.package, record
        return sel.package, None

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return {n: r for n, r in pool.map(find, chosen) if r is not None}


def _verified_record(path: Path, sha256: str, name: str) -> str | None:
    """The RECORD of the wheel at *path* when it is a regular file hashing to *sha256*,
    read through the descriptor that was hashed; None otherwise."""
    opened = open_regular(path)
    if opened is None:
        return None
    with os.fdopen(opened[0], "rb") as f:
        h = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
        if h.hexdigest() != sha256:
            return None
        f.seek(0)
        try:
            return wheel_record(f, name)
        except (zipfile.BadZipFile, UnicodeDecodeError, OSError):
            return None


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
        return [p for p in pool.map(check, ((p, h) for p, h in record_rows(record) if h))
                if p is not None]


def _digest(file: Path, algorithm: str) -> str:
    """The wheel spec's form: urlsafe base64 of the digest, without ``=`` padding."""
    h: Any = hashlib.new(algorithm)
    with file.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")
