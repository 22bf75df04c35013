"""The application step: the project's own check, run in a clean copy of its committed
files (:mod:`lockkit.env.workspace`) with the rebuilt venv's interpreter.

The check is [verify.application] (any command: exit 0 in time, the declared outputs
written, JSON outputs within their tolerance of the committed references) or
[verify.embedding] (its specialised form, judged by
``lockkit.verify.checks.embedding.verdict``). Both read their files' fingerprints first.
``[verify] application = "none"`` waives the step."""

from __future__ import annotations

from pathlib import Path

from lockkit._internal import proc
from lockkit._internal.fs import sha256_file
from lockkit.config.checks.application import ApplicationConfig
from lockkit.config.checks.embedding import EmbeddingConfig
from lockkit.env.workspace import clean_copy, command_env
from lockkit.report.checks.application import APPLICATION
from lockkit.report.records import ApplicationResult, CheckResult, Fingerprint
from lockkit.steps.context import Run
from lockkit.steps.engine import Step, StepFailed, StepSkipped
from lockkit.verify.checks.application.compare import compare_files
from lockkit.verify.checks.embedding import verdict as embedding

__all__ = ["app_step"]

NO_CHECK = ("no application check in lockkit.toml: declare [verify.application] (any "
            'command) or [verify.embedding], or write application = "none" with a reason '
            "under [verify]")


def app_step(run: Run, step: Step) -> None:
    tables = run.opts.project.verify  # every table validated when the project loaded
    application = tables.get("application", ApplicationConfig)
    embedding_table = tables.get("embedding", EmbeddingConfig)
    waiver = tables.get("application_waiver", str)
    if application is not None:
        _command_check(run, step, application)
    elif embedding_table is not None:
        _embedding_check(run, step, embedding_table)
    elif waiver:
        raise StepSkipped(f'application = "none": {waiver}', waived=True)
    else:
        raise StepSkipped(NO_CHECK)


def _prepare(run: Run, step: Step, declared: tuple[tuple[str, str], ...]) -> Path:
    """The clean copy, its fingerprints checked (``StepFailed`` on the first bad one)."""
    root = run.opts.project.root
    copy = run.work / "app" / "project"
    count, from_git = clean_copy(run, root, copy)
    step.detail["copied_files"] = count
    prints = tuple(_fingerprint(path, expected, copy, root, from_git)
                   for path, expected in declared)
    run.found.fingerprints = prints
    bad = next((f for f in prints if not f.passed), None)
    if bad:
        raise StepFailed(f"{bad.name}: {bad.detail}")
    return copy


def _fingerprint(path: str, expected: str, copy: Path, root: Path,
                 from_git: bool) -> Fingerprint:
    actual = sha256_file(copy / path) if (copy / path).is_file() else None
    # In the project but not in git: the copy lacks it, and "missing" would mislead.
    uncommitted = actual is None and from_git and (root / path).is_file()
    return Fingerprint(path=path, expected=expected, actual=actual, uncommitted=uncommitted)


def _run_app(run: Run, step: Step, argv: list[str], timeout: float, copy: Path,
             what: str) -> proc.Result:
    home = run.work / "app" / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = command_env(home)  # at the timeout every Python process prints its stacks
    result = run.call("application", argv, timeout=timeout, env=env, cwd=copy,
                      stacks_on_timeout=True)
    run.attachments["application.log"] = (result.stdout + result.stderr)[-20000:]
    step.detail.update(environment=sorted(env), device=run.opts.device)
    if result.timed_out:
        report = run.note_hang("application", result, copy)
        where = f": {report.summary}" if report else ""
        raise StepFailed(f"the {what} {proc.outcome(result)}{where}")
    return result


def _command_check(run: Run, step: Step, cfg: ApplicationConfig) -> None:
    run.found.application_config = cfg.to_dict()
    copy = _prepare(run, step, cfg.fingerprints)
    present = [p for p in cfg.expected_outputs if (copy / p).exists()]
    if present:  # it could not be told apart from what the command writes
        raise StepFailed(f"output {present[0]} exists before the command ran (it is "
                         "committed): name a path the command writes")
    assert run.python is not None
    result = _run_app(run, step, cfg.argv(run.python, run.opts.device), cfg.timeout, copy,
                      "command")
    said = "" if result.ok else ": " + proc.last_error_line(result.stderr or result.stdout)
    checks = [CheckResult(name="command", passed=result.ok,
                          detail=f"exited {result.returncode}{said}")]
    if result.ok:
        checks += [CheckResult(name=f"output {p}", passed=(copy / p).exists(),
                               detail="written" if (copy / p).exists() else "not written")
                   for p in cfg.expected_outputs]
    worst: tuple[float, str] | None = None
    for c in cfg.compare if all(ch.passed for ch in checks) else ():
        found, detail = compare_files(copy / c.output, copy / c.reference, c.atol, c.rtol)
        checks.append(CheckResult(name=f"compare {c.output}", passed=bool(found and found.passed),
                                  detail=f"against {c.reference}: {detail}"))
        if found and found.worst_path and (worst is None or found.max_abs_diff > worst[0]):
            worst = (found.max_abs_diff, f"{c.output} {found.worst_path}")
    app = run.found.checks[APPLICATION.key] = ApplicationResult(
        kind="command", checks=tuple(checks), command=cfg.command,
        returncode=result.returncode, max_abs_diff=worst[0] if worst else None,
        worst_id=worst[1] if worst else None)
    step.detail.update(returncode=result.returncode, outputs=len(cfg.expected_outputs),
                       max_abs_diff=app.max_abs_diff, worst_id=app.worst_id)
    if not app.passed:
        raise StepFailed(app.first_error or "the application check failed")


def _embedding_check(run: Run, step: Step, cfg: EmbeddingConfig) -> None:
    run.found.embedding_config = cfg.to_dict()
    copy = _prepare(run, step, cfg.fingerprints)
    out = run.work / "app" / "out"
    out.mkdir()
    assert run.python is not None
    argv = embedding.command(cfg, run.python, out, run.opts.device)
    result = _run_app(run, step, argv, cfg.timeout, copy, "embedding command")
    if not result.ok:
        raise StepFailed(f"the embedding command exited {result.returncode}: "
                         f"{proc.last_error_line(result.stderr or result.stdout)}")
    verdict = embedding.check_outputs(cfg, copy, out)
    run.found.checks[APPLICATION.key] = verdict  # the report's own record (kind "embedding")
    step.detail.update(worst_id=verdict.worst_id, max_abs_diff=verdict.max_abs_diff,
                       min_cosine=verdict.min_cosine)
    if not verdict.passed:
        raise StepFailed(verdict.first_error or "the embedding check failed")
