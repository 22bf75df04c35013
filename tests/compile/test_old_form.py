"""A lock in the form lockkit wrote before lock format 2 is stale, and compile redoes it.

Lock format 1 wrote ``environments`` with the OS only (``sys_platform == 'linux'``) and the
sdist of every package that had one, allow-sdist or not. Such a lock is made here as that
lockkit made it: its digest and inputs fingerprint computed as it computed them, so only
what it holds can tell it apart. Real compiles against the loopback indexes of
tests/conftest.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.lock.freshness import LOCK_FORMAT, fingerprint, packages_digest_of_read
from lockkit.lock.model import dumps

OS_ONLY = "sys_platform == 'linux'"
WITH_ARCH = "sys_platform == 'linux' and platform_machine == 'x86_64'"


def _path(project: Path) -> Path:
    return project / "locks" / "pylock.linux-cpu.toml"


def _compile(project: Path, *args: str) -> int:
    return main(["compile", "--project", str(project), "--platform", "linux-cpu", *args])


def _check(project: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = _compile(project, "--check")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("linux-cpu:")]
    return code, lines[0] if lines else ""


@pytest.fixture
def with_sdist(project, indexes) -> Path:
    """A current lock whose filelock has an sdist (allow-sdist named it), then the project
    without that allow-sdist: the lock a format-1 lockkit wrote for it, once rewritten."""
    indexes.default.add_sdist("filelock", "3.16.1")
    (project / "lockkit.toml").write_text(indexes.config(extra='allow-sdist = ["filelock"]\n'))
    assert _compile(project) == 0
    (project / "lockkit.toml").write_text(indexes.config())
    return project


def _rewrite(project: Path, *, lock_format: int, environments: str, sdist: bool) -> None:
    """The lock as a lockkit of *lock_format* writes it for the project's inputs today."""
    path = _path(project)
    data = tomllib.loads(path.read_text())
    data["environments"] = [environments]
    if not sdist:
        for package in data["packages"]:
            package.pop("sdist", None)
    tool = data["tool"]["lockkit"]
    tool["lock-format"] = tool["inputs"]["options"]["lock-format"] = lock_format
    tool["inputs"]["options"]["allow-sdist"] = []
    tool["inputs-fingerprint"] = fingerprint(tool["inputs"])
    tool["packages-digest"] = packages_digest_of_read(data["packages"])
    path.write_text(dumps(data))


def test_check_names_what_makes_a_format_1_lock_stale(with_sdist, capsys):
    _rewrite(with_sdist, lock_format=1, environments=OS_ONLY, sdist=True)
    code, line = _check(with_sdist, capsys)
    assert code == 1
    assert line == (f"linux-cpu: stale (locks/pylock.linux-cpu.toml): lock format 1 -> "
                    f"{LOCK_FORMAT} (a newer lockkit); its environments name no architecture "
                    f"({OS_ONLY}); it lists the sdist of 1 package(s) not in allow-sdist "
                    "(filelock)")


@pytest.mark.parametrize("environments,sdist,reason", [
    (OS_ONLY, False, f"its environments name no architecture ({OS_ONLY})"),
    ("sys_platform == 'linux' and platform_machine == 'aarch64'", False,
     "its environments are sys_platform == 'linux' and platform_machine == 'aarch64', "
     f"not {WITH_ARCH}"),
    (WITH_ARCH, True, "it lists the sdist of 1 package(s) not in allow-sdist (filelock)"),
])
def test_check_reads_the_form_not_only_the_recorded_format(with_sdist, capsys, environments,
                                                           sdist, reason):
    """A lock that says the current format but holds an old form (``environments`` is not
    in the packages digest; an sdist came from a merge) is stale too, for that reason."""
    _rewrite(with_sdist, lock_format=LOCK_FORMAT, environments=environments, sdist=sdist)
    code, line = _check(with_sdist, capsys)
    assert (code, line) == (1, f"linux-cpu: stale (locks/pylock.linux-cpu.toml): {reason}")


def test_compile_rewrites_a_format_1_lock_wheels_only(with_sdist, capsys):
    """compile's memo never hands back the old lock: it is written again, in the new form."""
    _rewrite(with_sdist, lock_format=1, environments=OS_ONLY, sdist=True)
    capsys.readouterr()
    assert _compile(with_sdist) == 0
    assert "written" in capsys.readouterr().out
    lock = tomllib.loads(_path(with_sdist).read_text())
    assert lock["environments"] == [WITH_ARCH]
    assert [p["name"] for p in lock["packages"] if "sdist" in p] == []
    assert lock["tool"]["lockkit"]["lock-format"] == LOCK_FORMAT
    assert _check(with_sdist, capsys)[0] == 0


def test_allow_sdist_keeps_its_sdist_and_the_lock_fresh(project, indexes, capsys):
    indexes.default.add_sdist("filelock", "3.16.1")
    (project / "lockkit.toml").write_text(indexes.config(extra='allow-sdist = ["filelock"]\n'))
    assert _compile(project) == 0
    lock = tomllib.loads(_path(project).read_text())
    assert [p["name"] for p in lock["packages"] if "sdist" in p] == ["filelock"]
    assert _check(project, capsys) == (0, "linux-cpu: fresh (locks/pylock.linux-cpu.toml)")
