"""Issue 32: every output file (``-o``, ``--junit``, pack's sidecar) follows the folder rule.

A file is written only where there is nothing or over a file lockkit wrote (recognised by
its content); anything else is exit 2 with one line, the file unchanged, unless ``--force``;
the command's inputs never, ``--force`` or not. ``-o -`` is stdout; a FIFO is written
through; a symlink is judged by the file it points to. One project, compiled and built
once from the loopback PyTorch replica serving a fake torch, is copied for each test; the
commands run as a user runs them, in a child process from the project folder.
"""

from __future__ import annotations

import hashlib
import os
import select
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockkit.ci.workflow import recognise as is_workflow
from lockkit.lock.export import recognise as is_export
from lockkit.report.junit import recognise as is_junit
from lockkit.wheelhouse.archive import recognise as is_archive
from lockkit.wheelhouse.sbom import recognise as is_sbom
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer
from tests.support.pytorch_index import PyTorchIndex

P = "linux-cpu"
COMMANDS = {  # the command line, and the flag that names its output file
    "export": (["export", "--platform", P], "-o"),
    "pack": (["wheelhouse", "pack", "--platform", P], "-o"),
    "sbom": (["wheelhouse", "sbom", "--platform", P], "-o"),
    "ci": (["ci", "github", "--platform", P], "-o"),
    "verify": (["verify", "--platform", P, "--report-dir", "report"], "--junit"),
}
RECOGNISE = {"export": is_export, "pack": is_archive, "sbom": is_sbom, "ci": is_workflow,
             "verify": is_junit}
OURS = {  # a file each command wrote in the template (the same bytes on every run but verify)
    "export": "requirements-rebuild.txt", "pack": "ours/pack.tar", "sbom": "ours/sbom.json",
    "ci": "ours/ci.yml", "verify": "ours/junit.xml"}
HAND_WRITTEN = {"README.md": b"# my project\n", "app.py": b"print('hello')\n",
                "pyproject.toml": b'[project]\nname = "app"\nversion = "1"\n'}


def run(root: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "lockkit", *argv], cwd=root,
                          capture_output=True, timeout=900)


def assert_ran(name: str, done: subprocess.CompletedProcess[bytes]) -> None:
    """The command did its work: verify's fake torch has no ``torch.Generator``, so its gpu
    step fails (exit 1) after every report is written; the others exit 0."""
    if name == "verify":
        assert done.returncode == 1 and b"verify failed: gpu" in done.stderr, done.stderr
    else:
        assert done.returncode == 0, done.stderr.decode()


def command(name: str, target: str | None, *extra: str) -> list[str]:
    argv, flag = COMMANDS[name]
    return [*argv, *([flag, target] if target is not None else []), *extra]


# every test here runs on a copy of the template: lockkit's dependencies come from the
# default index, once a session (tool_wheels)
pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def template(tmp_path_factory, tool_wheels) -> Iterator[Path]:
    """A compiled, built git project with hand-written files beside lockkit's, and one
    output of each command already written by lockkit. Its default index serves lockkit's
    own dependencies too: ``ci github`` resolves them for the hashed pins it writes."""
    base = tmp_path_factory.mktemp("outputs")
    pt, server = PyTorchIndex(base / "pytorch"), IndexServer(base / "index")
    with pt, server:
        pt.put("cpu", build_fake_torch(base / "built", version="2.5.1+cpu", cuda=None))
        default = server.index("/simple")
        for wheel in tool_wheels:
            default.put(wheel)
        root = base / "proj"
        root.mkdir()
        (root / "requirements.in").write_text("torch==2.5.1\n")
        (root / "lockkit.toml").write_text(
            f'index-url = "{server.url}/simple"\nplatforms = ["{P}"]\n'
            '[ci]\nlockkit = "lockkit==9"\n[mirrors]\n'
            + "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items()))
        for name, data in HAND_WRITTEN.items():
            (root / name).write_bytes(data)
        assert run(root, "compile").returncode == 0
        assert run(root, "wheelhouse", "build", "--platform", P).returncode == 0
        for git in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "project"]):
            subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *git],
                           cwd=root, check=True, capture_output=True)
        (root / "ours").mkdir()
        for name, out in OURS.items():
            assert_ran(name, run(root, *command(name, out)))
            assert RECOGNISE[name](root / out)
        yield root  # the indexes stay up: the tests run ci github again


@pytest.fixture
def project(template, tmp_path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(template, root, symlinks=True)
    return root


def _torch_wheel(root: Path) -> str:
    (wheel,) = (root / "wheelhouse" / P).glob("torch-*.whl")
    return str(wheel.relative_to(root))


# Each case of issue 32's "Why": the command, the file it was pointed at, what that file is.
WHY = [
    ("export", "README.md", "foreign"),
    ("export", "pyproject.toml", "input"),
    ("export", "locks/pylock.linux-cpu.toml", "input"),
    ("pack", "app.py", "foreign"),
    ("pack", "wheelhouse/linux-cpu/manifest.json", "input"),
    ("sbom", "README.md", "foreign"),
    ("sbom", "<torch wheel>", "input"),
    ("ci", "lockkit.toml", "input"),
    ("ci", None, "foreign"),  # the default path, over a hand-written workflow
    ("verify", "README.md", "foreign"),
]
IDS = [f"{c}-{p or 'default'}" for c, p, _ in WHY]


def _aimed(root: Path, path: str | None) -> tuple[str | None, Path]:
    """The argument and the file it names (the default workflow, hand-written first)."""
    if path is None:
        workflow = root / ".github" / "workflows" / "lockkit.yml"
        workflow.parent.mkdir(parents=True)
        workflow.write_text("name: mine\non: push\njobs: {}\n")
        return None, workflow
    arg = _torch_wheel(root) if path == "<torch wheel>" else path
    return arg, root / arg


@pytest.mark.parametrize(("name", "path", "kind"), WHY, ids=IDS)
def test_a_file_lockkit_did_not_write_or_an_input_is_refused_in_one_line_and_kept(
        project, name, path, kind):
    arg, file = _aimed(project, path)
    before = file.read_bytes()
    done = run(project, *command(name, arg))
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2, done.stderr.decode()
    assert len(lines) == 1 and file.name in lines[0], lines
    assert ("an input of this command" if kind == "input"
            else "a file lockkit did not write") in lines[0]
    assert file.read_bytes() == before and done.stdout == b""


@pytest.mark.parametrize(("name", "path", "kind"), WHY, ids=IDS)
def test_force_overwrites_a_foreign_file_but_never_an_input(project, name, path, kind):
    arg, file = _aimed(project, path)
    before = file.read_bytes()
    done = run(project, *command(name, arg, "--force"))
    if kind == "input":
        assert done.returncode == 2 and b"not even --force" in done.stderr, done.stderr
        assert file.read_bytes() == before
    else:
        assert_ran(name, done)
        assert file.read_bytes() != before and RECOGNISE[name](file)


@pytest.mark.parametrize("name", ["export", "ci", "verify"])
def test_a_file_a_requirement_file_includes_is_an_input_too(project, name):
    (project / "requirements.in").write_text("-c pins.txt\ntorch==2.5.1\n")
    (project / "pins.txt").write_text("torch==2.5.1\n")
    done = run(project, *command(name, "pins.txt", "--force"))
    assert done.returncode == 2 and b"a requirement file of the project" in done.stderr
    assert (project / "pins.txt").read_text() == "torch==2.5.1\n"


@pytest.mark.parametrize("name", COMMANDS)
def test_a_symlink_to_a_file_lockkit_wrote_is_followed_and_kept(project, name):
    target = project / OURS[name]
    link = project / f"link{target.suffix}"
    link.symlink_to(target)
    inode = target.stat().st_ino
    assert_ran(name, run(project, *command(name, link.name)))
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.stat().st_ino != inode and RECOGNISE[name](target)  # rewritten, atomically


@pytest.mark.parametrize("name", COMMANDS)
def test_a_symlink_to_a_foreign_file_is_refused(project, name):
    link = project / "notes-link"
    link.symlink_to(project / "README.md")
    done = run(project, *command(name, link.name))
    assert done.returncode == 2 and b"a file lockkit did not write" in done.stderr
    assert link.is_symlink() and (project / "README.md").read_bytes() == HAND_WRITTEN["README.md"]


@pytest.mark.parametrize("name", ["export", "pack", "sbom", "ci"])
def test_dash_writes_the_output_to_stdout_and_nothing_else_there(project, name):
    done = run(project, *command(name, "-"))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == (project / OURS[name]).read_bytes()
    assert not (project / "-").exists() and not (project / "-.sha256").exists()
    if name == "pack":  # the sha256 line goes where the archive does not
        digest = hashlib.sha256(done.stdout).hexdigest()
        assert f"{digest}  stdout" in done.stderr.decode()


def test_dev_stdout_is_written_through_not_replaced(project):
    done = run(project, *command("export", "/dev/stdout"))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.startswith(b"# lockkit export --platform linux-cpu")


def test_junit_dash_puts_the_report_on_stdout_in_place_of_the_table(project):
    done = run(project, *command("verify", "-"))
    assert_ran("verify", done)
    assert done.stdout.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    (project / "got.xml").write_bytes(done.stdout)
    assert is_junit(project / "got.xml") and b"lockkit verify linux-cpu" in done.stderr
    assert not (project / "-").exists()


def test_junit_dash_with_json_is_refused(project):
    done = run(project, *command("verify", "-", "--json"))
    assert done.returncode == 2 and b"both write stdout" in done.stderr


class _Reader(threading.Thread):
    """Reads a FIFO as a consumer would, without ever blocking the test: opened
    non-blocking, read until told to stop and then drained."""

    def __init__(self, fifo: Path) -> None:
        super().__init__(daemon=True)
        self.fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.data, self.stop = bytearray(), threading.Event()

    def run(self) -> None:
        while True:
            stopping = self.stop.is_set()
            select.select([self.fd], [], [], 0.05)
            try:
                block = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                block = b""
            self.data += block
            if stopping and not block:
                os.close(self.fd)
                return


@pytest.mark.parametrize("name", ["export", "pack", "sbom", "ci"])
def test_a_fifo_is_written_through_never_replaced(project, name):
    fifo = project / "out.fifo"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    reader.start()
    done = run(project, *command(name, fifo.name))
    reader.stop.set()
    reader.join(30)
    assert done.returncode == 0, done.stderr.decode()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if name == "export":  # its header names the file it was written to
        assert bytes(reader.data).startswith(b"# lockkit export --platform linux-cpu")
    else:
        assert bytes(reader.data) == (project / OURS[name]).read_bytes()
    assert not (project / "out.fifo.sha256").exists()  # a FIFO has no "beside"
