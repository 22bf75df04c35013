"""nox sessions: `nox -s tests`, `nox -s lint`."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint"]


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", "-q", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "lockkit", "tests", "benchmarks")


@nox.session
def benchmark(session: nox.Session) -> None:
    session.install("-e", ".", "pip-tools")
    session.run("python", "benchmarks/compile.py")
