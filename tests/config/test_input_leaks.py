"""Issue 31, item 5: an input file's lines are never a leak.

Only regular files are read as inputs (``/proc``, ``/dev``, FIFOs refused in one line, a
FIFO never opened), a refused line of a file outside the project is named by file, line
and problem but never quoted, and every ``${VAR}`` of the config is known to the
redaction before the first message. lockkit runs as a user runs it: a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TOKEN = "s3cr3t-t0ken-7f1c"  # the value of ${IDX_TOKEN}: never to be printed
CONFIG = 'platforms = ["linux-cpu"]\nindex-url = "http://deploy:${IDX_TOKEN}@127.0.0.1:9/simple"\n'


def compile_(root: Path, *extra: str, token: str = TOKEN) -> subprocess.CompletedProcess:
    """``lockkit compile`` of *root*, ${IDX_TOKEN} set; a hang fails the test (timeout)."""
    env = {**os.environ, "IDX_TOKEN": token}
    return subprocess.run([sys.executable, "-m", "lockkit", "compile", "--project", str(root),
                           *extra], capture_output=True, text=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)


def project(tmp_path: Path, requirements: str, config: str = CONFIG) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.in").write_text(requirements)
    (root / "lockkit.toml").write_text(config)
    return root


def _fifo(root: Path) -> str:
    os.mkfifo(root / "pipe.txt")
    return "pipe.txt"


def _link_to_proc(root: Path) -> str:
    (root / "env.txt").symlink_to("/proc/self/environ")
    return "env.txt"


@pytest.mark.parametrize(("make", "system"), [
    (lambda root: "/proc/self/environ", "under /proc"),
    (lambda root: "/dev/stdin", "under /dev"),
    (_link_to_proc, "under /proc"),
    (_fifo, "a FIFO"),
], ids=["proc-environ", "dev-stdin", "link-into-proc", "fifo"])
@pytest.mark.parametrize("named_by", ["include", "config"])
def test_an_input_that_is_not_a_regular_file_is_refused_in_one_line_unread(
        tmp_path, make, system, named_by):
    """Named by a ``-r`` line or by lockkit.toml ``requirements``: exit 2, one line naming
    the file and where it is named, nothing of it read (a FIFO is not waited on), no
    environment content."""
    root = project(tmp_path, "numpy\n")
    name = make(root)
    if named_by == "include":
        (root / "requirements.in").write_text(f"numpy\n-r {name}\n")
        where = f"{root / 'requirements.in'}:2: -r {name}: "
    else:
        (root / "lockkit.toml").write_text(CONFIG + f'requirements = ["{name}"]\n')
        where = f"{root / 'lockkit.toml'}: requirements[0]: '{name}': "
    run = compile_(root)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"lockkit: error: {where}") and system in run.stderr
    assert "not a regular file" in run.stderr and run.stderr.count("\n") == 1
    assert TOKEN not in run.stdout + run.stderr and "PATH=" not in run.stderr


SECRET_LINES = ("numpy\nmachine index.internal login deploy password hunter2-hunter2\n"
                "--index-url https://deploy:hunter2-hunter2@index.internal/simple\n"
                "bogus==not-a-version\n")


@pytest.mark.parametrize("named_by", ["include", "config", "link"])
def test_a_refused_line_of_a_file_outside_the_project_is_named_never_quoted(tmp_path,
                                                                             named_by):
    """~/.netrc-like lines outside the project: file:line and the problem, not the line,
    whether named by ``-r``, by lockkit.toml ``requirements``, or through a link in the
    project pointing out of it."""
    outside = tmp_path / "elsewhere" / "netrc"
    outside.parent.mkdir()
    outside.write_text(SECRET_LINES)
    root = project(tmp_path, "numpy\n")
    if named_by == "include":
        (root / "requirements.in").write_text(f"numpy\n-r {outside}\n")
    elif named_by == "link":
        (root / "netrc").symlink_to(outside)
        (root / "requirements.in").write_text("numpy\n-r netrc\n")
    else:
        (root / "lockkit.toml").write_text(
            CONFIG + f'requirements = ["requirements.in", "{outside}"]\n')
    run = compile_(root)
    assert run.returncode == 2, run.stderr
    for number, problem in ((2, "not a requirement lockkit can lock"),
                            (3, "option '--index-url' chooses where packages come from"),
                            (4, "not a requirement lockkit can lock")):
        assert f"{outside}:{number}: {problem}" in run.stderr
    assert "not shown: the file is outside the project" in run.stderr
    for content in ("hunter2", "machine", "index.internal", "not-a-version", "bogus"):
        assert content not in run.stdout + run.stderr, content


def test_a_refused_pyproject_outside_the_project_is_named_never_quoted(tmp_path):
    outside = tmp_path / "elsewhere" / "pyproject.toml"
    outside.parent.mkdir()
    outside.write_text('[project]\nname = "x"\nversion = "1"\n'
                       'dependencies = ["hunter2-hunter2 password"]\n')
    root = project(tmp_path, "numpy\n", CONFIG + f'requirements = ["{outside}"]\n')
    run = compile_(root)
    assert run.returncode == 2, run.stderr
    assert f"lockkit: error: {outside}: 1 problem(s)" in run.stderr
    assert "hunter2" not in run.stderr and "password" not in run.stderr


@pytest.mark.parametrize("config", [
    CONFIG,
    'platforms = ["linux-cpu"]\n[mirrors]\n'
    '"https://download-r2.pytorch.org" = "http://ci:${IDX_TOKEN}@127.0.0.1:9/r2"\n',
], ids=["index-url", "mirror"])
@pytest.mark.parametrize("token", [TOKEN, TOKEN.replace("-", "\\")],
                         ids=["plain", "backslashes"])
def test_a_config_token_is_concealed_in_an_error_printed_before_any_request(tmp_path, config,
                                                                            token):
    """The value of a ${VAR} in index-url or a mirror is known to the redaction from the
    moment the config is read: a refused line of the project's own (quoted: it is inside
    the project) that holds the value shows ``${IDX_TOKEN}`` instead, also where the line
    is quoted as Python's repr() writes it (a backslash doubled)."""
    root = project(tmp_path, f"numpy {token}\n", config)
    run = compile_(root, token=token)
    assert run.returncode == 2, run.stderr
    assert f"{root / 'requirements.in'}:1: " in run.stderr and "${IDX_TOKEN}" in run.stderr
    for form in (token, repr(token)[1:-1], "s3cr3t"):
        assert form not in run.stdout + run.stderr


@pytest.mark.parametrize("label,shown", [("../shared/constraints.txt", False),
                                         ("/etc/lockkit/constraints.txt", False),
                                         ("requirements.in", True)])
def test_a_stale_detail_counts_an_outside_files_requirements_never_names_them(label, shown):
    """A line of a file outside the project that parses as a requirement (a one-word secret
    does) reaches the stale detail that verify and wheelhouse build print and write into
    the dossier: counted there, never named. The project's own files are named."""
    from lockkit.lock.freshness import InputsRecord, explain

    was = {"requirements": {label: ["numpy"]}, "options": {}}
    now: InputsRecord = {"requirements": {label: ["hunter2token", "numpy"]}, "options": {}}
    detail = explain(was, now)
    assert ("hunter2token" in detail) is shown
    assert detail == (f"{label}: added hunter2token" if shown else
                      f"{label}: 1 requirement(s) added (not shown: the file is outside "
                      f"the project)")
