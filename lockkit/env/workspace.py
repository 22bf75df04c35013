"""Where the project's own commands run: a clean copy of its committed files, and the
environment they get.

The application and resume checks (``checks/``) both run the project's command in a
copy of what is committed (in git), never in the project itself: a file that is only on
the developer's disk must not make the check pass. Their commands see the same few
variables of the caller's environment, with a fresh ``HOME``. The host step records
the revision those files come from, and whether the tree differs from it
(:func:`git_state`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lockkit.report.records import GitState
from lockkit.steps.context import Run

__all__ = ["clean_copy", "command_env", "git_state"]

# What the project's command sees of the caller's environment: enough to run, nothing to
# lean on.
_PASSED_VARS = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "LD_LIBRARY_PATH")
# lockkit's own outputs: never copied, never a reason to call the tree dirty.
_LOCKKIT_OUTPUTS = (".lockkit", "wheelhouse")
_NEVER_COPY = {".git", "__pycache__", ".venv", "locks", *_LOCKKIT_OUTPUTS}


def command_env(home: Path) -> dict[str, str]:
    """The environment of a project's command, with *home* as its ``HOME``.

    ``PYTHONFAULTHANDLER``: at the timeout the group gets SIGABRT and every Python
    process of it (DataLoader workers inherit the variable) prints its stacks
    (:mod:`lockkit.probes.hang`)."""
    env = {k: os.environ[k] for k in _PASSED_VARS if k in os.environ}
    env.update(HOME=str(home), PYTHONHASHSEED="0", PYTHONNOUSERSITE="1", LANG="C.UTF-8",
               PYTHONFAULTHANDLER="1")
    return env


def clean_copy(run: Run, root: Path, dest: Path, step: str = "application"
               ) -> tuple[int, bool]:
    """The project's committed files (in git), or the project minus build debris; and
    whether git said which. The git call is recorded for *step*."""
    files = _git_files(run, root, step)
    from_git = files is not None
    if files is None:
        files = [p.relative_to(root).as_posix() for p in root.rglob("*")
                 if p.is_file() and not _NEVER_COPY & set(p.relative_to(root).parts)
                 and not (run.venv and p.is_relative_to(run.venv))]  # sync builds it there
    for rel in files:
        src, dst = root / rel, dest / rel
        if src.is_file() and not src.is_symlink():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    dest.mkdir(parents=True, exist_ok=True)
    return len(files), from_git


def _git_files(run: Run, root: Path, step: str) -> list[str] | None:
    result = run.call(step, ["git", "-C", str(root), "ls-files", "-z", "--cached", "."],
                      timeout=60, env=dict(os.environ))
    if not result.ok:
        return None
    return [f for f in result.stdout.split("\0") if f]


def git_state(run: Run, root: Path) -> GitState:
    """The revision, and whether the project's files differ from it; lockkit's own
    outputs (``.lockkit/``, ``wheelhouse/``) never count (``locks/`` is committed)."""
    def git(*args: str) -> str | None:
        result = run.call("host", ["git", "-C", str(root), *args], timeout=60,
                          env=dict(os.environ))
        return result.stdout.strip() if result.ok else None

    if git("rev-parse", "--is-inside-work-tree") != "true":
        return GitState(git=False)
    excluded = [f":(exclude){name}" for name in _LOCKKIT_OUTPUTS]
    return GitState(git=True, revision=git("rev-parse", "HEAD"),  # None before a first commit
                    dirty=bool(git("status", "--porcelain", "--", ".", *excluded)))
