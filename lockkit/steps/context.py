"""What one verify run knows while it runs: its options, its temp folder, what it found."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockkit._internal import proc
from lockkit._internal.redact import masked
from lockkit._internal.uv import uv_bin
from lockkit.config.project import Project
from lockkit.errors import LockkitError
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import Platform
from lockkit.probes import hang
from lockkit.report.records import CommandRecord, Variant
from lockkit.steps.engine import Step, StepFailed, Steps
from lockkit.steps.findings import Findings

if TYPE_CHECKING:
    from lockkit.wheelhouse.build import BuildResult

__all__ = ["NO_TORCH", "Options", "Run", "UV_CACHE", "torch_device"]

# uv's cache for one verify, inside its temp folder: the user's cache would keep an
# unpacked copy of torch (~700 MB) for every wheelhouse path verified, and nothing
# removes those. Same filesystem as the venv, so uv hard-links from it (no second copy).
UV_CACHE = "uv-cache"
NO_TORCH = "no torch in this lock"  # a service that needs none: nothing of torch to check


def torch_device(gpu: str) -> str:
    """The torch device string of a platform's ``[gpu] device``: device 0 of ``cuda``
    (ROCm's torch answers to ``torch.cuda`` too, so its platforms say ``cuda``) and of
    ``xpu``; ``cpu`` and ``mps`` (one device) as they are."""
    return f"{gpu}:0" if gpu in ("cuda", "xpu") else gpu


@dataclass(frozen=True, kw_only=True)
class Options:
    project: Project
    platform: Platform
    wheelhouse: Path | None = None
    python: Path | None = None
    # verify --existing: this interpreter's environment is checked as it is, not rebuilt
    # (lockkit.verify.existing); strict: packages the lock does not name fail its inventory
    existing: Path | None = None
    strict: bool = False
    allow_extra: tuple[str, ...] = ()  # extras accepted on the user's word (--allow-extra)
    installer: str = "uv"
    no_gpu: bool = False
    keep_venv: bool = False
    probe_timeout: float = 300.0
    # torch's collect_env in the dossier even when the GPU step passes (verify --collect-env)
    collect_env: bool = False
    command_line: tuple[str, ...] = ()
    variant: Variant | None = None  # verify --variant: the layers the run means to change
    # builds a wheelhouse (the folder given) from the lock's URLs
    fetch: Callable[[Path, Lock], BuildResult] | None = None
    on_step: Callable[[Step], None] | None = None
    # a long step's own progress: (what, done, total), e.g. ("installing", 12, 40) packages
    on_progress: Callable[[str, int, int], None] | None = None
    # lockkit's download cache: with uv, installs go through <cache>/verify when that cache
    # is private to the user (install.shared_root); None, or a cache other users can
    # write: a uv cache and bytecode of the run's own, in its temp folder, removed with it
    cache_root: Path | None = None

    @property
    def device(self) -> str:
        """Where the platform's checks run: its smoke calls, and the application and
        resume commands (their ``{device}`` placeholder)."""
        return torch_device(self.platform.gpu_device)


@dataclass
class Run:
    """The mutable state of one run; the dossier is assembled from it at the end."""

    opts: Options
    work: Path
    steps: Steps
    commands: list[CommandRecord] = field(default_factory=list)
    interpreter: Path | None = None
    venv: Path | None = None
    python: Path | None = None
    wheelhouse: Path | None = None
    seed: dict[str, str] = field(default_factory=dict)
    expected: dict[str, str] = field(default_factory=dict)
    found: Findings = field(default_factory=Findings)
    attachments: dict[str, str] = field(default_factory=dict)
    # with a shared venv folder (rebuild.venv_step): the bytecode folder its interpreter
    # uses, and the open lock file that keeps other runs out of the folder until release()
    pycache: Path | None = None
    held: Any = None
    # <cache>/verify held shared (lockkit.cache.inuse) from the venv step to release():
    # 'cache prune' skips it while this run uses it
    in_use: Any = None
    # the committed lock, read once when the run begins (read_lock), or why it could not be
    lock: Lock | None = None
    lock_error: str = ""

    @property
    def no_torch(self) -> str | None:
        """Why nothing of torch is checked: the lock names no torch (a service that needs
        none, on any platform), known once the install step has read the lock; None when
        it names torch. The torch, gpu, extensions and resume steps say so, and none of
        them fails for it."""
        return None if "torch" in self.expected else NO_TORCH

    def read_lock(self) -> None:
        """Read the platform's committed lock, once for the whole run; a lock that cannot
        be read fails the first step that needs it (:meth:`committed`), not the run."""
        try:
            self.lock = Lock.read(self.opts.project.lock_path(self.opts.platform.name))
        except LockkitError as exc:
            self.lock_error = str(exc)

    def committed(self) -> Lock:
        """The committed lock; StepFailed, saying why, where it could not be read."""
        if self.lock is None:
            raise StepFailed(self.lock_error or "the lock was not read")
        return self.lock

    def release(self) -> None:
        if self.held is not None:
            self.held.close()  # closing the file releases its flock
            self.held = None
        if self.in_use is not None:
            self.in_use.release()
            self.in_use = None

    def recorder(self, step: str) -> proc.Recorder:
        """Records each command run for *step*, redacted, into the dossier's list."""
        return lambda r: self.commands.append(CommandRecord(
            step=step, argv=tuple(masked(a) for a in r.argv), cwd=r.cwd,
            returncode=r.returncode, duration_s=round(r.duration, 3), timed_out=r.timed_out))

    def call(self, step: str, argv: Sequence[str], *, timeout: float = 600,
             env: dict[str, str] | None = None, cwd: Path | None = None,
             stacks_on_timeout: bool = False, uv_cache: Path | None = None) -> proc.Result:
        """Run a command for *step*; every uv command uses this run's own uv cache, or
        *uv_cache*. *stacks_on_timeout*: see :func:`lockkit._internal.proc.call` (the caller's *env*
        should carry ``PYTHONFAULTHANDLER=1``). Every command's TMPDIR is a folder of the
        run's work folder: what a command leaves there (ensurepip's wheel folder, when a
        signal ends it) goes with the work folder."""
        if argv[0] == uv_bin():
            env = {**(env if env is not None else proc.isolated_env()),
                   "UV_CACHE_DIR": str(uv_cache or self.work / UV_CACHE)}
        elif self.pycache is not None and argv[0] == str(self.python):
            env = {**(env if env is not None else proc.isolated_env()),
                   "PYTHONPYCACHEPREFIX": str(self.pycache)}
        tmp = self.work / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env = {**(env if env is not None else os.environ), "TMPDIR": str(tmp)}
        return proc.call(argv, timeout=timeout, env=env, cwd=cwd, record=self.recorder(step),
                         stacks_on_timeout=stacks_on_timeout)

    def note_hang(self, step: str, result: proc.Result, root: Path) -> hang.HangReport | None:
        """Where a timed-out command of *step* stalled, from the stacks it printed; the
        first one is kept for the dossier (its Markdown leads with it)."""
        if not result.timed_out:
            return None
        report = hang.explain(result.stderr, root)
        if report is not None and self.found.hang is None:
            self.found.hang = {"step": step, **report.to_dict()}
        return report
