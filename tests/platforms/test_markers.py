"""A platform's marker (a lock's ``environments``): its OS and its architecture, the latter
spelled as the target's interpreter reports ``platform.machine()`` (markers compare it
exactly): ``x86_64``/``aarch64`` on Linux, ``arm64`` on macOS, ``AMD64`` on Windows."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.markers import Marker

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.platforms.definitions import ARCHES, load_platforms
from lockkit.platforms.folders import shipped_dir
from lockkit.platforms.targets import environment
from tests.support.project import assert_conforms

SHIPPED = load_platforms()
SYS = {"linux": "linux", "macos": "darwin", "windows": "win32"}


@pytest.mark.parametrize("name,marker", [
    ("linux-cpu", "sys_platform == 'linux' and platform_machine == 'x86_64'"),
    ("linux-cu130-aarch64", "sys_platform == 'linux' and platform_machine == 'aarch64'"),
    ("macos-arm64", "sys_platform == 'darwin' and platform_machine == 'arm64'"),
    ("windows-cu128", "sys_platform == 'win32' and platform_machine == 'AMD64'"),
])
def test_the_marker_names_os_and_architecture(name, marker):
    assert SHIPPED[name].marker == marker


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_marker_holds_for_its_target_only(name):
    """True in the platform's own marker environment, false on every other CPU of its OS."""
    plat = SHIPPED[name]
    assert plat.marker == (f"sys_platform == '{SYS[plat.os]}' and "
                           f"platform_machine == '{plat.arch}'")
    assert plat.arch in ARCHES[plat.os]  # the shipped files use the interpreter's spelling
    marker = Marker(plat.marker)
    env = {key: str(value) for key, value in environment(plat, plat.python).items()}
    assert marker.evaluate(env)
    for other in (a for a in ARCHES[plat.os] if a != plat.arch):
        assert not marker.evaluate({**env, "platform_machine": other})


def test_a_project_platform_in_another_case_gets_the_interpreters_spelling(project, indexes):
    """``arch = "amd64"`` is accepted (case is ignored); the lock says ``AMD64``, as Python
    on Windows does, and lockkit's own selection for the platform agrees with it."""
    text = (shipped_dir() / "windows-cpu.toml").read_text().replace('arch = "AMD64"',
                                                                    'arch = "amd64"')
    (project / "platforms" / "windows-lower.toml").write_text(text)
    (project / "requirements.in").write_text("filelock\n")
    plat = load_platforms(project)["windows-lower"]
    assert plat.arch == "amd64"
    assert plat.marker == "sys_platform == 'win32' and platform_machine == 'AMD64'"
    assert environment(plat, "3.11")["platform_machine"] == "AMD64"
    assert main(["compile", "--project", str(project), "--platform", "windows-lower"]) == 0
    lock = tomllib.loads(Path(project / "locks" / "pylock.windows-lower.toml").read_text())
    assert lock["environments"] == [plat.marker]
    assert_conforms(lock, "windows-lower", project)  # selects with environment(): it agrees
