"""A lock with nothing for its platform: one line naming the lock, the platform and the
Python, raised as each caller's own error (a wheelhouse build's, a trust check's, an
export's), with its exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockkit.config.project import Project
from lockkit.errors import BuildError, ConfigError, TrustError
from lockkit.lock import export
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import load_platforms
from lockkit.platforms.targets import NothingInstallable, select
from lockkit.wheelhouse import build, trust

# a lock for Windows only: PEP 751's environments exclude linux-cpu
LOCK = """\
lock-version = "1.0"
created-by = "lockkit"
requires-python = "==3.11.*"
environments = ["sys_platform == 'win32'"]

[[packages]]
name = "numpy"
version = "2.1.0"
wheels = [{url = "http://127.0.0.1:9/numpy-2.1.0-py3-none-any.whl", hashes = {sha256 = "%s"}}]
""" % ("a" * 64)


@pytest.fixture
def windows_lock(tmp_path: Path) -> Lock:
    path = tmp_path / "pylock.linux-cpu.toml"
    path.write_text(LOCK)
    return Lock.read(path)


def test_select_names_the_lock_the_platform_and_the_python(windows_lock):
    platform = load_platforms()["linux-cpu"]
    with pytest.raises(NothingInstallable) as err:
        select(windows_lock.pylock, platform, windows_lock.python, windows_lock.path)
    assert str(err.value).startswith(
        f"{windows_lock.path}: nothing installable for linux-cpu with Python 3.11: ")
    assert "environment" in str(err.value)  # packaging's reason follows


@pytest.mark.parametrize("caller,cls,code", [
    ("build", BuildError, 1), ("trust", TrustError, 1), ("export", ConfigError, 2),
])
def test_each_caller_raises_its_own_error_with_the_same_line(windows_lock, tmp_path,
                                                             caller, cls, code):
    platform = load_platforms()["linux-cpu"]
    project = Project(root=tmp_path, config_file=None)
    with pytest.raises(NothingInstallable) as said:
        select(windows_lock.pylock, platform, windows_lock.python, windows_lock.path)
    with pytest.raises(cls) as err:
        if caller == "build":
            build.plan(project, platform, lock=windows_lock)
        elif caller == "trust":
            trust.selection(windows_lock, platform)
        else:
            export.requirements(project, platform, lock=windows_lock)
    assert type(err.value) is cls and err.value.exit_code == code
    assert str(err.value) == str(said.value)
    assert err.value.hint is None  # the class's own hint is shown, as before
