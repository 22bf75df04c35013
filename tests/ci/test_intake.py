"""``lockkit ci take-locks``: the refresh pull request takes from the compile job's artifact
the locks of its platforms and nothing else (issue 41). The compile job runs a dependency's
build code; what it leaves beside the locks, or a lock that is not lockkit's, fails the
job that holds the write token, naming each file, and nothing is copied.

(The workflow's own step, run for real on a real artifact:
``tests/ci/test_refresh.py::test_the_pull_request_job_takes_the_real_artifacts_locks_and_refuses_an_extra_file``.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockkit.ci.intake import take_locks
from lockkit.cli import main
from lockkit.errors import TrustError
from tests.support.wheelhouse import compiled


@pytest.fixture
def refreshed(project: Path, tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A real lockkit lock of linux-cpu in an artifact folder as the compile job leaves it
    (body.md, locks/); the project's committed lock set aside: (artifact, lock, committed)."""
    lock = compiled(project)
    artifact = tmp_path / "refresh"
    (artifact / "locks").mkdir(parents=True)
    (artifact / "body.md").write_text("lockkit refreshed the locks\n")
    (artifact / "locks" / lock.name).write_bytes(lock.read_bytes())
    committed = b'lock-version = "1.0"\n# the committed one\n'
    lock.write_bytes(committed)
    return artifact, lock, committed


def take(project: Path, artifact: Path, *platforms: str) -> int:
    return main(["ci", "take-locks", str(artifact), "--project", str(project),
                 *(a for p in platforms or ("linux-cpu",) for a in ("--platform", p))])


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("lockkit: error: ")]
    return line


def test_the_locks_of_the_workflows_platforms_are_taken_byte_for_byte(project, refreshed):
    artifact, lock, _ = refreshed
    assert take(project, artifact, "linux-cpu", "linux-cu126") == 0
    assert lock.read_bytes() == (artifact / "locks" / lock.name).read_bytes()


@pytest.mark.parametrize(("plant", "named"), [
    ("locks/evil.yml", "locks/evil.yml: not a pylock.<platform>.toml (a file)"),
    (".github/workflows/x.yml", ".github: not body.md or locks/ (a folder)"),
    ("setup.sh", "setup.sh: not body.md or locks/ (a file)"),
    ("locks/pylock.linux-cu126.toml",
     "locks/pylock.linux-cu126.toml: 'linux-cu126' is not a platform of this workflow"),
])
def test_an_artifact_with_anything_more_fails_naming_it_and_copies_nothing(
        project, refreshed, capsys, plant, named):
    artifact, lock, committed = refreshed
    (artifact / plant).parent.mkdir(parents=True, exist_ok=True)
    (artifact / plant).write_text("anything\n")
    assert take(project, artifact) == 1
    line = error_line(capsys)
    assert named in line and f"{artifact}: not a refresh of the locks only" in line
    assert lock.read_bytes() == committed


def test_a_lock_without_lockkits_table_or_of_another_platform_is_refused(project, refreshed,
                                                                          capsys):
    artifact, lock, committed = refreshed
    new = artifact / "locks" / lock.name
    text = new.read_text()
    new.write_text(text.split("\n[tool.lockkit]")[0] + "\n")  # still PEP 751
    assert take(project, artifact) == 1
    assert (f"locks/{lock.name}: no [tool.lockkit] table: not a lock lockkit compile wrote"
            in error_line(capsys))
    new.write_text(text.replace('platform = "linux-cpu"', 'platform = "linux-cu126"'))
    assert take(project, artifact) == 1
    assert "its [tool.lockkit].platform is 'linux-cu126', not 'linux-cpu'" in error_line(capsys)
    assert lock.read_bytes() == committed


def test_a_file_that_is_not_a_pep_751_lock_or_a_link_is_refused(project, refreshed, tmp_path):
    artifact, lock, committed = refreshed
    new = artifact / "locks" / lock.name
    new.write_text('lock-version = "1.0"\n[tool.lockkit]\nplatform = "linux-cpu"\n'
                   "[[packages]]\nname = 1\n")
    with pytest.raises(TrustError, match=f"locks/{lock.name}: invalid PEP 751 lock"):
        take_locks(artifact, lock.parent, ["linux-cpu"])
    new.unlink()
    new.symlink_to(lock)
    with pytest.raises(TrustError, match=f"locks/{lock.name}: a link, not a regular file"):
        take_locks(artifact, lock.parent, ["linux-cpu"])
    new.unlink()
    with pytest.raises(TrustError, match="locks/: missing or empty"):
        take_locks(artifact, lock.parent, ["linux-cpu"])
    assert lock.read_bytes() == committed
