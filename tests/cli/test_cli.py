"""One line for every bad input (issue 12, point 7): the file, key or flag named; exit 2
for input errors, 1 for I/O failures; never a traceback."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.cli.common import new_report_folder
from lockkit.wheelhouse.archive import pack
from tests.support.archive import make_folder

SHIPPED = Path(__file__).parents[2] / "platforms"


def one_line(err: str, results: bool = False) -> str:
    """The error line (a hint may follow it), and no traceback; nothing else was printed
    but the phase lines of work that had started ('linux-cpu: fetching 3 files...'),
    unless *results* (compile's status table, printed before a platform's failure)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err
    errors = [i for i, ln in enumerate(lines) if ln.startswith("lockkit: error: ")]
    assert len(errors) == 1, err
    assert results or all(ln.endswith("...") for ln in lines[:errors[0]]), err
    assert all(ln.startswith("hint: ") for ln in lines[errors[0] + 1:]), err
    return lines[errors[0]]


# --- numeric flags -----------------------------------------------------------------------

@pytest.mark.parametrize("argv,flag", [
    (["wheelhouse", "build", "--platform", "linux-cpu", "--timeout", "-1"], "--timeout -1"),
    (["wheelhouse", "build", "--platform", "linux-cpu", "--timeout", "nan"], "--timeout nan"),
    (["wheelhouse", "build", "--platform", "linux-cpu", "--jobs", "0"], "--jobs 0"),
    (["wheelhouse", "build", "--platform", "linux-cpu", "--retries", "-1"], "--retries -1"),
    (["compile", "--jobs", "0"], "--jobs 0"),
    (["verify", "--probe-timeout", "-5"], "--probe-timeout -5"),
    (["diagnose", "--probe-timeout", "-5"], "--probe-timeout -5"),
    (["compile", "--jobs", "many"], "argument --jobs: invalid int value: 'many'"),
    (["compile", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
], ids=["timeout", "timeout-nan", "wheelhouse-jobs", "retries", "compile-jobs",
        "verify-probe-timeout", "diagnose-probe-timeout", "not-a-number", "unknown-flag"])
def test_numeric_flag_out_of_range_is_exit_2_naming_it(tmp_path, capsys, argv, flag):
    assert main([*argv, *(["--project", str(tmp_path)] if argv[0] != "diagnose" else [])]) == 2
    assert flag in one_line(capsys.readouterr().err)


# --- lockkit.toml --------------------------------------------------------------------------

@pytest.mark.parametrize("line,expected", [
    ("python = 3.11", "python: expected a version string such as \"3.11\", got 3.11"),
    ('python = "banana"', "python: expected a version string such as \"3.11\", got 'banana'"),
    ('ci = "x"', "ci: expected a table ([ci]), got 'x'"),
    ("requirements = []", "requirements: empty"),
    ('[verify.embeding]\ncommand = ["x"]',
     "unknown key 'verify.embeding' (did you mean 'verify.embedding'?)"),
    ('[ci.runner]\nlinux-cpu = "x"', "unknown key 'ci.runner' (did you mean 'ci.runners'?)"),
], ids=["python-number", "python-banana", "ci-string", "requirements-empty", "verify-typo",
        "ci-typo"])
def test_bad_config_value_is_a_config_error_before_uv_runs(project, capsys, line, expected):
    config = project / "lockkit.toml"
    config.write_text(line + "\n" + config.read_text()
                      if not line.startswith("[") else config.read_text() + line + "\n")
    assert main(["compile", "--project", str(project)]) == 2
    msg = one_line(capsys.readouterr().err)
    assert f"{config}: " in msg and expected in msg
    assert "uv" not in msg.replace(str(project), "")


# --- platform files ----------------------------------------------------------------------

@pytest.mark.parametrize("source,old,new,expected", [
    ("linux-cpu", 'arch = "x86_64"', 'arch = "potato"',
     "arch: 'potato' is not one of x86_64, aarch64, ppc64le, s390x for os 'linux'"),
    ("windows-cpu", 'arch = "AMD64"', 'arch = "aarch64"', "arch: 'aarch64' is not one of"),
    ("linux-cu126", 'cuda = "12.6"', "cuda = 12", "gpu.cuda: expected str, got 12"),
    ("macos-arm64", 'macos-deployment-target = "14.0"', 'macos-deployment-target = "fourteen"',
     "macos-deployment-target: 'fourteen' is not a version such as '14.0'"),
    ("linux-cpu", 'python = "3.11"', 'python = "banana"', "python: 'banana' is not a version"),
], ids=["arch-potato", "arch-not-for-windows", "gpu-cuda-number", "macos-target-words",
        "python-banana"])
def test_bad_platform_file_is_rejected_at_load(tmp_path, capsys, source, old, new, expected):
    text = (SHIPPED / f"{source}.toml").read_text()
    assert old in text
    (tmp_path / "platforms").mkdir()
    path = tmp_path / "platforms" / "mine.toml"
    path.write_text(text.replace(old, new).replace(f'name = "{source}"', 'name = "mine"'))
    assert main(["platforms", "--project", str(tmp_path)]) == 2
    msg = one_line(capsys.readouterr().err)
    assert str(path) in msg and expected in msg


def test_every_shipped_platform_file_still_loads(capsys):
    assert main(["platforms", "--project", str(SHIPPED.parent)]) == 0


# --- files: encodings, folders, missing ----------------------------------------------------

def _lock(project: Path) -> Path:
    return project / "locks" / "pylock.linux-cpu.toml"


def _not_utf8(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("torch==2.5.1\nnumpy  # caf\xe9\n".encode("latin-1"))


def _folder(path: Path) -> None:
    path.mkdir(parents=True)


@pytest.mark.parametrize("command,make,target,expected", [
    ("compile", _not_utf8, "requirements.in", "not UTF-8 text"),
    ("compile", _not_utf8, "locks/pylock.linux-cpu.toml", "not UTF-8 text"),
    ("wheelhouse", _not_utf8, "locks/pylock.linux-cpu.toml", "not UTF-8 text"),
    ("compile", _folder, "locks/pylock.linux-cpu.toml", "is a folder"),
    ("wheelhouse", _folder, "locks/pylock.linux-cpu.toml", "is a folder"),
    ("verify", _folder, "locks/pylock.linux-cpu.toml", "no lock"),
], ids=["requirements-not-utf8", "lock-not-utf8-compile", "lock-not-utf8-wheelhouse",
        "lock-is-a-folder-compile", "lock-is-a-folder-wheelhouse", "lock-is-a-folder-verify"])
def test_unreadable_input_file_is_exit_2_naming_it(project, tmp_path, capsys, command, make,
                                                    target, expected):
    make(project / target)
    argv = {"compile": ["compile"],
            "wheelhouse": ["wheelhouse", "build", "--platform", "linux-cpu",
                           "--cache-dir", str(tmp_path / "cache")],
            "verify": ["verify", "--platform", "linux-cpu"]}[command]
    assert main([*argv, "--project", str(project)]) == 2
    msg = one_line(capsys.readouterr().err)
    assert str(project / target) in msg and expected in msg


def test_platforms_of_a_missing_project_is_exit_2(tmp_path, capsys):
    assert main(["platforms", "--project", str(tmp_path / "nowhere")]) == 2
    assert "--project" in one_line(capsys.readouterr().err)


# --- writing: full disks, read-only folders ------------------------------------------------

def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _small_disk() -> None:
    """In the child: files stop growing past 64 bytes (EFBIG, as a full disk stops them)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


def _build(project: Path, cache: Path, out: Path, limited: bool = False
           ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lockkit", "wheelhouse", "build", "--project",
                           str(project), "--platform", "linux-cpu", "--cache-dir", str(cache),
                           "--out", str(out)], capture_output=True, text=True,
                          preexec_fn=_small_disk if limited else None)


@pytest.mark.parametrize("case", ["cache-full", "out-full", "cache-dev-full", "out-dev-full",
                                  "out-under-a-file"])
def test_wheelhouse_that_cannot_be_written_is_one_line_exit_1(project, tmp_path, capsys,
                                                               case):
    assert main(["compile", "--project", str(project)]) == 0
    (tmp_path / "a-file").write_text("")
    cache, out = tmp_path / "cache", tmp_path / "out"
    if case == "out-full":  # the cache holds every file: only the output is written
        assert _build(project, cache, tmp_path / "first").returncode == 0
    cache = Path("/dev/full") if case == "cache-dev-full" else cache
    out = {"out-dev-full": Path("/dev/full/wheelhouse"),
           "out-under-a-file": tmp_path / "a-file" / "wheelhouse"}.get(case, out)
    r = _build(project, cache, out, limited=case in ("cache-full", "out-full"))
    assert r.returncode == 1, r.stderr
    msg = one_line(r.stderr)
    places = {str(p) for p in (cache, out, *cache.parents, *out.parents) if len(p.parts) > 2}
    assert any(f"{p}:" in msg or f"{p} " in msg for p in places), msg
    assert not out.exists()


@pytest.mark.parametrize("how", ["read-only", "disk-full"])
def test_a_project_whose_locks_cannot_be_written_is_one_line_exit_1(project, capsys,
                                                                     monkeypatch, how):
    (project / "locks").mkdir()
    if how == "disk-full":
        monkeypatch.setattr(os, "fsync", _no_space)
    elif os.geteuid() == 0:  # root writes through a read-only mode: refuse as the OS would
        def refused(*args, **kwargs):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        monkeypatch.setattr(tempfile, "mkstemp", refused)
    else:
        (project / "locks").chmod(0o555)
    try:
        assert main(["compile", "--project", str(project)]) == 1
    finally:
        (project / "locks").chmod(0o755)
    msg = one_line(capsys.readouterr().err, results=True)
    assert f"{_lock(project)}: cannot write" in msg
    assert not [p for p in (project / "locks").iterdir()]


# --- wheelhouse unpack ---------------------------------------------------------------------

def test_unpack_to_a_dangling_symlink_is_exit_2(tmp_path, capsys):
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.wheelhouse.tar")
    link = tmp_path / "dest"
    link.symlink_to(tmp_path / "gone")
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(link)]) == 2
    msg = one_line(capsys.readouterr().err)
    assert f"--out {link}" in msg
    assert not (tmp_path / "gone").exists()


# --- output into a closed pipe -------------------------------------------------------------

def test_platforms_json_into_head_ends_without_a_traceback():
    r = subprocess.run(f"'{sys.executable}' -m lockkit platforms --json | head -1",
                       shell=True, capture_output=True, text=True)
    assert r.stdout.strip() == "["
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr


def test_platforms_json_into_a_closed_pipe_is_quiet():
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails
    try:
        r = subprocess.run([sys.executable, "-m", "lockkit", "platforms", "--json"],
                           stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert r.returncode == 1
    assert r.stderr == ""


# --- closed standard streams, deep includes ------------------------------------------------

def _with_closed(stream: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """lockkit run as a shell runs ``lockkit ... >&-`` (stream "1") or ``2>&-`` ("2")."""
    return subprocess.run(["sh", "-c", f'exec "$@" {stream}>&-', "sh", sys.executable, "-m",
                           "lockkit", *argv], capture_output=stream != "1", text=True,
                          stdout=subprocess.DEVNULL if stream == "1" else None,
                          stderr=subprocess.PIPE if stream == "1" else None, timeout=300)


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell closes the stream")
def test_commands_with_stdout_closed_do_their_work_and_exit_as_usual(project):
    lock = project / "locks" / "pylock.linux-cpu.toml"
    run = _with_closed("1", "compile", "--platform", "linux-cpu", "--project", str(project))
    assert (run.returncode, run.stderr) == (0, "linux-cpu: resolving...\n")  # progress
    assert "[tool.lockkit]" in lock.read_text()
    for argv in (["compile", "--check", "--platform", "linux-cpu"], ["platforms", "--json"]):
        run = _with_closed("1", *argv, "--project", str(project))
        assert "Traceback" not in run.stderr
        assert run.returncode == 0, run.stderr
    (project / "requirements.in").write_text("torch==2.5.1\n")  # the lock is now stale
    run = _with_closed("1", "compile", "--check", "--platform", "linux-cpu", "--project",
                       str(project))
    assert run.returncode == 1 and one_line(run.stderr, results=True).endswith("(stale)")


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell closes the stream")
def test_commands_with_stderr_closed_exit_as_usual_and_keep_stdout_for_results(project):
    """What would go to stderr is dropped: not printed on stdout, not written into a file
    that took stderr's number, and never a traceback (exit 1) instead of the usual code."""
    lock = project / "locks" / "pylock.linux-cpu.toml"
    run = _with_closed("2", "compile", "--platform", "linux-cpu", "--project", str(project))
    assert run.returncode == 0
    assert run.stdout.splitlines()[0] == "lockkit compile"
    from lockkit._internal.compat import tomllib

    assert tomllib.loads(lock.read_text())["tool"]["lockkit"]["platform"] == "linux-cpu"
    config = project / "lockkit.toml"
    config.write_text("python = 3.11\n" + config.read_text())
    run = _with_closed("2", "compile", "--platform", "linux-cpu", "--project", str(project))
    assert (run.returncode, run.stdout) == (2, "")


def test_a_chain_of_a_thousand_includes_is_one_line_exit_2(project, capsys):
    for i in range(1000):
        (project / f"r{i}.txt").write_text(f"-r r{i + 1}.txt\n")
    (project / "r1000.txt").write_text("numpy\n")
    (project / "requirements.in").write_text("torch==2.5.1\n-r r0.txt\n")
    assert main(["compile", "--platform", "linux-cpu", "--project", str(project)]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"{project / 'requirements.in'}" in line and "more than 100 files deep" in line
    assert not (project / "locks").exists()


# --- the start: argparse answers, the interpreter ends as usual -------------------------------

def test_version_and_help_are_argparses_answers_with_exit_0(capsys):
    from lockkit import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"lockkit {__version__}\n"
    assert main(["--help"]) == 0
    assert "compile" in capsys.readouterr().out
    assert main(["compile", "--help"]) == 0
    assert "--upgrade-package" in capsys.readouterr().out


def test_each_command_has_its_flags_and_a_module_that_handles_it():
    """Each command's module declares its help, its flags and its handle(), and the parser
    lists the commands in the order of the table that names their modules."""
    import importlib

    from lockkit.cli.parser import COMMANDS, build_parser

    listed = next(a for a in build_parser()._actions  # noqa: SLF001 (argparse's own list)
                  if a.dest == "command")
    assert list(listed.choices or ()) == list(COMMANDS)
    for command, module in COMMANDS.items():
        loaded = importlib.import_module(module)
        assert callable(loaded.handle) and callable(loaded.add_arguments), command
        assert loaded.HELP and loaded.DESCRIPTION, command


_LOADED = ("import sys\nfrom lockkit.cli import main\nmain(sys.argv[1:])\n"
           "print(*sorted(m for m in sys.modules if m.startswith('lockkit.cli.')))")


_EVERY = {"lockkit.cli.flags", "lockkit.cli.common", "lockkit.cli.platforms",
          "lockkit.cli.compile", "lockkit.cli.wheelhouse", "lockkit.cli.pack",
          "lockkit.cli.sbom", "lockkit.cli.unpack", "lockkit.cli.verify",
          "lockkit.cli.diagnose", "lockkit.cli.diff", "lockkit.cli.ci", "lockkit.cli.export",
          "lockkit.cli.cache", "lockkit.cli.sync"}
_WHEELHOUSE = {"lockkit.cli.flags", "lockkit.cli.common", "lockkit.cli.wheelhouse",
               "lockkit.cli.pack", "lockkit.cli.sbom", "lockkit.cli.unpack"}


@pytest.mark.parametrize(("argv", "commands"), [
    (["--version"], set()), (["--help"], _EVERY), (["wheelhouse", "pack", "--help"], _WHEELHOUSE),
    (["diff", "missing-a.json", "missing-b.json"], {"lockkit.cli.diff"})])
def test_a_command_imports_its_own_module_alone(tmp_path, argv, commands):
    """The parser is all a start imports (``--version``: no command's flags either); a
    command's module (which declares its flags) only when that command is named, every
    one for ``--help``."""
    run = subprocess.run([sys.executable, "-c", _LOADED, *argv], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    loaded = set(run.stdout.splitlines()[-1].split())
    assert loaded == {"lockkit.cli.parser"} | commands


def test_a_profiler_sees_the_whole_run(tmp_path):
    """lockkit ends through the interpreter's usual exit (no os._exit), so a tool that
    writes its results at exit, as cProfile does, gets them written."""
    out = tmp_path / "version.prof"
    run = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "lockkit",
                          "--version"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("lockkit ")
    assert out.is_file() and out.stat().st_size > 0


# --- report folders -------------------------------------------------------------------

def test_report_folders_started_in_the_same_second_never_collide(tmp_path):
    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(
        new_report_folder(tmp_path / "reports", "20261203T184312Z"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 8 and all(p.is_dir() for p in got)
    assert sorted(p.name for p in got)[:2] == ["20261203T184312Z", "20261203T184312Z-2"]
