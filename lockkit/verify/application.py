"""The application step: the project's own check, run in a clean copy of its committed
files with the rebuilt venv's interpreter; and the code fingerprint (git state)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lockkit import _run, embedding
from lockkit.common import last_error_line
from lockkit.report.model import ApplicationResult, CheckResult, Fingerprint, GitState
from lockkit.steps import Step, StepFailed, StepSkipped
from lockkit.verify.context import Run

__all__ = ["app_step", "git_state"]

# What the application sees of the caller's environment: enough to run, nothing to lean on.
_APP_VARS = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "LD_LIBRARY_PATH")
_NEVER_COPY = {".git", ".lockkit", "wheelhouse", "__pycache__", ".venv", "locks"}


def app_step(run: Run, step: Step) -> None:
    project = run.opts.project
    cfg = embedding.load_embedding_config(project.root, project.verify,
                                          source=str(project.config_file or "lockkit.toml"))
    if cfg is None:
        raise StepSkipped("no [verify.embedding] in lockkit.toml: the application is unchecked")
    run.found["embedding_config"] = cfg.to_dict()
    copy = run.work / "app" / "project"
    step.detail["copied_files"] = _clean_copy(run, project.root, copy)
    fingerprints = tuple(Fingerprint(path=path, expected=expected, actual=actual)
                         for path, expected, actual in embedding.file_hashes(cfg, copy))
    run.found["fingerprints"] = fingerprints
    bad = next((f for f in fingerprints if not f.passed), None)
    if bad:
        raise StepFailed(f"{bad.name}: {bad.detail}")
    out = run.work / "app" / "out"
    out.mkdir()
    home = run.work / "app" / "home"
    home.mkdir()
    env = {k: os.environ[k] for k in _APP_VARS if k in os.environ}
    env.update(HOME=str(home), PYTHONHASHSEED="0", PYTHONNOUSERSITE="1", LANG="C.UTF-8")
    assert run.python is not None
    argv = embedding.command(cfg, run.python, out)
    result = run.call("application", argv, timeout=cfg.timeout, env=env, cwd=copy)
    run.attachments["application.log"] = (result.stdout + result.stderr)[-20000:]
    step.detail["environment"] = sorted(env)
    if result.timed_out:
        raise StepFailed(f"the embedding command {_run.outcome(result)}")
    if not result.ok:
        raise StepFailed(f"the embedding command exited {result.returncode}: "
                         f"{last_error_line(result.stderr or result.stdout)}")
    verdict = embedding.check_outputs(cfg, copy, out)
    run.found["application"] = ApplicationResult(
        kind="embedding", checks=tuple(CheckResult(name=c.name, passed=c.passed, detail=c.detail)
                                       for c in verdict.checks),
        worst_id=verdict.worst_id, max_abs_diff=verdict.max_abs_diff,
        min_cosine=verdict.min_cosine)
    step.detail.update(worst_id=verdict.worst_id, max_abs_diff=verdict.max_abs_diff,
                       min_cosine=verdict.min_cosine)
    if not verdict.passed:
        raise StepFailed(verdict.first_error or "the embedding check failed")


def _clean_copy(run: Run, root: Path, dest: Path) -> int:
    """The project's committed files (in git), or the project minus build debris."""
    files = _git_files(run, root)
    if files is None:
        files = [p.relative_to(root).as_posix() for p in root.rglob("*")
                 if p.is_file() and not _NEVER_COPY & set(p.relative_to(root).parts)]
    for rel in files:
        src, dst = root / rel, dest / rel
        if src.is_file() and not src.is_symlink():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    dest.mkdir(parents=True, exist_ok=True)
    return len(files)


def _git_files(run: Run, root: Path) -> list[str] | None:
    result = run.call("application", ["git", "-C", str(root), "ls-files", "-z", "--cached",
                                       "."], timeout=60, env=dict(os.environ))
    if not result.ok:
        return None
    return [f for f in result.stdout.split("\0") if f]


def git_state(run: Run, root: Path) -> GitState:
    def git(*args: str) -> str | None:
        result = run.call("host", ["git", "-C", str(root), *args], timeout=60,
                          env=dict(os.environ))
        return result.stdout.strip() if result.ok else None

    if git("rev-parse", "--is-inside-work-tree") != "true":
        return GitState(git=False)
    return GitState(git=True, revision=git("rev-parse", "HEAD"),  # None before a first commit
                    dirty=bool(git("status", "--porcelain", ".")))
