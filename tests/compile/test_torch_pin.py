"""A torch pinned outside the platform's ``[torch] releases`` is said at compile (issue 33):
before, ``torch==2.5.1`` on a platform whose file says it serves ``>=2.6`` locked without
a word. It is still locked (the platform file's ``releases`` documents the index, it does
not gate it), but compile warns, naming the input, the pin, the platform and its range."""

from __future__ import annotations

from pathlib import Path

from lockkit.cli import main
from lockkit.compile.slips import input_warnings
from lockkit.platforms.definitions import load_platforms

SHIPPED = Path(__file__).resolve().parents[2] / "platforms" / "linux-cpu.toml"


def own_linux_cpu(project: Path, releases: str) -> None:
    """The project's own linux-cpu: the shipped one, saying it serves *releases*."""
    text = SHIPPED.read_text()
    assert 'releases = ">=2.0"' in text
    (project / "platforms" / "linux-cpu.toml").write_text(
        text.replace('releases = ">=2.0"', f'releases = "{releases}"'))


def test_a_torch_pin_outside_the_platforms_releases_warns_and_is_locked(project, capsys):
    """Inside the range (``>=2.0,<2.6``) nothing is said; outside it (``>=2.6``) the
    warning, and the lock holds the pin as before."""
    own_linux_cpu(project, ">=2.0,<2.6")
    assert main(["compile", "--project", str(project), "--platform", "linux-cpu"]) == 0
    assert "releases" not in capsys.readouterr().err
    own_linux_cpu(project, ">=2.6")
    assert main(["compile", "--project", str(project), "--platform", "linux-cpu"]) == 0
    err = capsys.readouterr().err
    assert ("warning: requirements.in: torch==2.5.1 is outside the releases linux-cpu serves "
            "(>=2.6, its [torch] releases); it is locked as written if an index has it"
            ) in err
    assert 'name = "torch"\nversion = "2.5.1' in (
        project / "locks" / "pylock.linux-cpu.toml").read_text()


def test_only_an_exact_torch_pin_is_checked():
    """A range, a wildcard, another package's pin and an option line say nothing; a local
    version (``+cpu``) and a pin behind a marker are checked as pins."""
    platforms = [load_platforms()["linux-cu126"]]  # releases >=2.6
    lines = ["torch>=2.0", "torch==2.4.*", "numpy==1.0", "--index-url http://127.0.0.1/x",
             "torch==2.5.1+cu126 ; sys_platform == 'linux'"]
    assert platforms[0].torch_releases == ">=2.6"
    assert input_warnings(platforms, {"requirements.in": lines}) == [
        "requirements.in: torch==2.5.1+cu126 is outside the releases linux-cu126 serves "
        "(>=2.6, its [torch] releases); it is locked as written if an index has it. To "
        'lock another torch on linux-cu126 alone: [platform-requirements] linux-cu126 = '
        '["torch==X"], X in >=2.6']


def test_each_platform_is_warned_of_its_own_pins(tmp_path):
    """With [platform-requirements], each platform's pins are the ones it resolves: ROCm 6's
    own torch 2.9.1 is inside its releases (nothing said), and the shared torch 2.13.0 is
    still checked against the platform listed after it (a linux-cpu that ends at 2.13)."""
    from lockkit.config.project import load_project

    (tmp_path / "lockkit.toml").write_text(
        'platforms = ["linux-rocm6", "linux-cpu"]\n'
        '[platform-requirements]\nlinux-rocm6 = ["torch==2.9.1"]\n')
    project, known = load_project(tmp_path), load_platforms()
    shared = {"requirements.in": ["torch==2.13.0"]}
    (tmp_path / "platforms").mkdir()
    own_linux_cpu(tmp_path, ">=2.0,<2.13")
    platforms = [known["linux-rocm6"], load_platforms(tmp_path)["linux-cpu"]]
    assert input_warnings(platforms, shared, project) == [
        "requirements.in: torch==2.13.0 is outside the releases linux-cpu serves (>=2.0,<2.13, "
        "its [torch] releases); it is locked as written if an index has it. To lock another "
        'torch on linux-cpu alone: [platform-requirements] linux-cpu = ["torch==X"], X in '
        ">=2.0,<2.13"]
    assert len(input_warnings(platforms, shared)) == 2  # without the table: ROCm 6 too
