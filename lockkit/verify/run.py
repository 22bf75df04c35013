"""``lockkit verify``: rebuild a lock into a fresh venv and prove that it works.

The steps run in the order of the rebuild procedure, each needing the one before it
(``inventory`` needs ``install`` only: both metadata checks report even when the other
fails), and every command runs the new venv's interpreter by its path:

    host -> venv -> install -> pip-check -> inventory -> system -> gpu -> extensions
         -> application -> resume

(``extensions`` needs ``system`` only: with the GPU skipped it still imports the modules.
``resume`` needs ``gpu``, not ``application``: a project that trains without an
application check still has its resume checked.)

:func:`verify` returns the :class:`~lockkit.report.model.Dossier` and the run's logs; it
writes no report (the caller renders them with :mod:`lockkit.report`).

``--no-gpu`` skips GPU work only: on a platform whose backend is ``cpu`` there is none, so
every step runs (the gpu step's checks run on the CPU). On a GPU platform it skips the
gpu step, and so the application and resume steps that need it (they would run on that
GPU, against references made there): the result is ``incomplete``, never ``passed``.

A lock that names no torch (a service that needs none, whatever the platform: one without
``[torch]``, or ``linux-cpu``) has nothing to check on a device: the system step records
the interpreter and OS without torch, and the gpu step is skipped saying "no torch in this
lock", a skip that blocks nothing and leaves the result ``passed`` (as a declared waiver
does). The extensions step imports the declared modules without torch; the resume step,
undeclared, is skipped the same way (no torch, no training to resume). The application
step, and a declared resume, run as the project declares them: a service's own check
needs no torch. Should the lock name torch (from the default index on a platform without
``[torch]``), it is checked as on any CPU platform.

``--existing PYTHON`` checks that interpreter's environment instead of a rebuild
(:mod:`lockkit.verify.existing`, its own plan); its pass reads ``passed-existing``.
"""

from __future__ import annotations

import datetime
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from lockkit import __version__
from lockkit._internal.endings import interrupt_held
from lockkit._internal.fs import sha256_file, temp_private
from lockkit.env import install, rebuild
from lockkit.env.workspace import git_state
from lockkit.lock import freshness
from lockkit.probes import probe
from lockkit.report.model import Dossier
from lockkit.report.roots import named_roots, own_roots
from lockkit.steps.context import NO_TORCH, UV_CACHE, Options, Run
from lockkit.steps.engine import Step, StepFailed, Steps, StepSkipped, overall
from lockkit.verify import chain, checks, existing

__all__ = ["Outcome", "PLAN", "execute", "make_dossier", "new_run", "plan", "step_bodies",
           "verify"]



def plan() -> list[tuple[str, tuple[str, ...]]]:
    """verify's steps and what each needs: the rebuild's, then each check's, in the order of
    the checks' registry (:data:`lockkit.verify.checks.CHECKS`, read now)."""
    return [("host", ()), ("venv", ("host",)), ("install", ("venv",)),
            ("pip-check", ("install",)), ("inventory", ("install",)),
            ("system", ("pip-check", "inventory")), ("gpu", ("system",)),
            *((check.key, check.after) for check in checks.CHECKS)]


PLAN = plan()  # the plan with the checks lockkit ships
ISOLATION = ("installer calls ran with --no-config/--isolated and without PIP_*/UV_* "
             "variables: no user or global pip/uv configuration was used")


@dataclass(frozen=True, kw_only=True)
class Outcome:
    dossier: Dossier
    attachments: Mapping[str, str]  # file name -> text: the installed list, the app's log
    venv: Path | None  # the rebuilt venv, when kept

    @property
    def result(self) -> str:
        return self.dossier.result


def verify(opts: Options) -> Outcome:
    """With ``opts.existing``, the environment of that interpreter is checked as it is
    (:mod:`lockkit.verify.existing`): no venv is made, nothing is installed."""
    started = datetime.datetime.now(datetime.timezone.utc)
    steps = existing.plan() if opts.existing else plan()
    with interrupt_held() as held:  # no Ctrl-C between the folder and the try that removes it
        work = temp_private("lockkit-verify-")
    run: Run | None = None
    try:
        held.reraise()
        run = new_run(opts, work, steps)
        execute(run, steps, existing.bodies(run) if opts.existing else None)
        dossier = make_dossier(run, started)
    finally:
        if run is not None:
            run.release()
        kept = opts.keep_venv and run is not None and run.venv is not None  # not --existing
        if kept:
            for check in checks.CHECKS:
                if check.scratch:
                    shutil.rmtree(work / check.scratch, ignore_errors=True)
            shutil.rmtree(work / UV_CACHE, ignore_errors=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    assert run is not None  # made in the try, which raised otherwise
    return Outcome(dossier=dossier, attachments=dict(run.attachments),
                   venv=run.venv if kept else None)


def new_run(opts: Options, work: Path, plan: list[tuple[str, tuple[str, ...]]]) -> Run:
    """A run of *plan* (``PLAN`` or its first steps) in the folder *work*, with the
    stale-lock warning already noted."""
    run = Run(opts=opts, work=work, steps=Steps(plan))
    run.read_lock()
    stale = freshness.stale_warning(opts.project, opts.platform, run.lock) if run.lock else None
    run.found.warnings = (stale,) if stale else ()
    return run


def execute(run: Run, plan: list[tuple[str, tuple[str, ...]]],
            bodies: Mapping[str, Callable[[Step], None]] | None = None) -> None:
    """Run the steps of *plan* in order (a step's *bodies* entry replaces verify's own),
    telling ``on_step`` of each."""
    steps = {**step_bodies(run), **(bodies or {})}
    for name, _ in plan:
        step = run.steps.execute(name, steps[name])
        rebuild.venv_gone(run, step)  # not "install failed" when the venv was removed
        if run.opts.on_step:
            run.opts.on_step(step)


def step_bodies(run: Run) -> dict[str, Callable[[Step], None]]:
    """What each step of ``PLAN`` does, on *run*."""
    opts = run.opts
    skip_gpu = opts.no_gpu and opts.platform.backend.kind != "cpu"

    def host(step: Step) -> None:
        run.found.code = git_state(run, opts.project.root)
        rebuild.host_step(run, step)

    def system(step: Step) -> None:
        assert run.python is not None
        probe_gpu = not (skip_gpu or run.no_torch)
        chain.system_step(step, run.python, run.found, timeout=opts.probe_timeout,
                          record=run.recorder("system"), pycache=run.pycache,
                          gpu_args=chain.gpu_args(opts.platform, run.expected)
                          if probe_gpu else None, no_torch=run.no_torch,
                          collect_env=opts.collect_env)

    def gpu(step: Step) -> None:
        if run.no_torch:
            raise StepSkipped(f"{NO_TORCH}: nothing to check on a device", waived=True)
        if skip_gpu:
            raise StepSkipped("--no-gpu: the device was not checked, so the rebuild is not "
                              "proven")
        if opts.no_gpu:
            step.detail["no_gpu"] = (f"no effect: {opts.platform.name} has no GPU, its CPU "
                                     "checks ran")
        assert run.python is not None
        try:
            chain.gpu_step(step, run.python, chain.gpu_args(opts.platform, run.expected),
                           run.found, timeout=opts.probe_timeout, record=run.recorder("gpu"))
        except StepFailed:
            if not opts.collect_env:  # its answers help here: run it now
                run.found.system = chain.with_collect_env(
                    run.found.system, True, run.python, opts.probe_timeout, run.recorder("gpu"))
            raise
        if not opts.collect_env:
            run.found.system = chain.with_collect_env(run.found.system, False, run.python,
                                                      opts.probe_timeout)

    return {
        "host": host, "venv": lambda s: rebuild.venv_step(run, s),
        "install": lambda s: install.install_step(run, s),
        "pip-check": lambda s: rebuild.check_step(run, s),
        "inventory": lambda s: rebuild.inventory_step(run, s), "system": system, "gpu": gpu,
        **{check.key: partial(check.step, run) for check in checks.CHECKS},
    }


def make_dossier(run: Run, started: datetime.datetime) -> Dossier:
    """The dossier of *run*, started at *started* (the steps that ran, what they found),
    with the run's roots: its documents write the paths under them relative to them."""
    opts, found = run.opts, run.found
    lock = opts.project.lock_path(opts.platform.name)
    sha256 = run.lock.sha256 if run.lock else sha256_file(lock) if lock.is_file() else None
    result = overall(run.steps)
    if opts.existing and result == "passed":  # never to be read as a rebuild's pass
        result = "passed-existing"
    return Dossier(
        kind="verify", lockkit_version=__version__,
        started=started.strftime("%Y-%m-%dT%H:%M:%SZ"), command_line=opts.command_line,
        platform=opts.platform.name, lock=str(lock),
        lock_sha256=sha256,
        interpreter=str(run.interpreter) if run.interpreter else None,
        installer=opts.installer, isolation=ISOLATION,
        wheelhouse=str(run.wheelhouse) if run.wheelhouse else None,
        options={"platform": opts.platform.name, "installer": opts.installer,
                 "no_gpu": opts.no_gpu, "probe_timeout": opts.probe_timeout,
                 "python": (found.python or {}).get("full"),
                 **({"existing": str(opts.existing), "strict": opts.strict,
                     "allow_extra": list(opts.allow_extra)} if opts.existing else {})},
        environment=existing.LABEL if opts.existing else None,
        taken_on_its_word=existing.taken_on_its_word(run) if opts.existing else (),
        variant=opts.variant,
        result=result, first_error=run.steps.first_error,
        steps=tuple(s.result() for s in run.steps), commands=tuple(run.commands),
        packages=found.packages, inventory=found.inventory, system=found.system,
        gpu=found.gpu, checks=dict(found.checks), code=found.code,
        fingerprints=found.fingerprints, embedding_config=found.embedding_config,
        application_config=found.application_config, warnings=found.warnings,
        environment_passed_to_probes=tuple(sorted(probe.ALLOWED_VARS)),
        hang=found.hang,
        roots=named_roots(project=opts.project.root,
                          venv=run.venv or (existing.venv_root(run) if opts.existing else None),
                          wheelhouse=run.wheelhouse,
                          cache=opts.cache_root, tmp=run.work, **own_roots(),
                          python=_prefix(found.python)))


def _prefix(python: Mapping[str, object] | None) -> str | None:
    """The prefix of the interpreter the host step found (``sys.prefix``), the ``python``
    root: where the base interpreter and its standard library are."""
    prefix = (python or {}).get("prefix")
    return prefix if isinstance(prefix, str) and prefix else None
