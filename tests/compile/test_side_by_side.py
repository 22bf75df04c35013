"""Several backends side by side (issue 42): one torch pin cannot serve two backends, as
each PyTorch index serves its own torch releases (``linux-rocm6`` up to 2.9, ``linux-cu132``
from 2.12). ``[platform-requirements]`` gives a platform its own lines: here CPU and CUDA
13.2 lock torch 2.13.0 and ROCm 6 locks torch 2.9.1 and torchvision 0.24.1, all against
the loopback replica of the PyTorch index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from tests.support.project import Loopback, assert_conforms
from tests.support.pytorch_variants import fill_side_by_side

PLATFORMS = ("linux-cpu", "linux-cu132", "linux-rocm6")
ROCM = '[platform-requirements]\nlinux-rocm6 = ["torch==2.9.1", "torchvision==0.24.1"]\n'
ROCM_LABEL = "lockkit.toml[platform-requirements.linux-rocm6]"


@pytest.fixture
def side_by_side(tmp_path: Path, indexes: Loopback) -> Path:
    """A project locking CPU, CUDA 13.2 and ROCm 6 (the shipped platforms), torch 2.13.0
    in requirements.in and 2.9.1 on ROCm 6, compiled."""
    fill_side_by_side(indexes.pt)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.in").write_text("torch==2.13.0\nfilelock\n")
    (root / "lockkit.toml").write_text(
        indexes.config(platforms=json.dumps(list(PLATFORMS)), extra=ROCM))
    assert main(["compile", "--project", str(root)]) == 0
    return root


def lock_of(root: Path, platform: str) -> dict:
    return tomllib.loads((root / "locks" / f"pylock.{platform}.toml").read_text())


def versions(lock: dict) -> dict[str, str]:
    return {p["name"]: p["version"] for p in lock["packages"]}


def test_cpu_and_cuda_lock_the_shared_pin_and_rocm_its_own_lines(side_by_side):
    """torch 2.13.0 from whl/cpu and whl/cu132; on ROCm 6 the platform's line replaced the
    pin (torch 2.9.1 from whl/rocm6.4) and added torchvision; every lock is PEP 751."""
    for platform in PLATFORMS:
        assert_conforms(lock_of(side_by_side, platform), platform, side_by_side)
    assert versions(lock_of(side_by_side, "linux-cpu"))["torch"] == "2.13.0+cpu"
    assert versions(lock_of(side_by_side, "linux-cu132"))["torch"] == "2.13.0+cu132"
    rocm = versions(lock_of(side_by_side, "linux-rocm6"))
    assert rocm["torch"] == "2.9.1+rocm6.4" and rocm["torchvision"] == "0.24.1+rocm6.4"
    assert "torchvision" not in versions(lock_of(side_by_side, "linux-cpu"))


def test_the_lock_records_the_platforms_effective_requirements(side_by_side):
    """ROCm's record: requirements.in without the replaced torch line, and the table's lines
    under their own label; the other platforms' records are the inputs as they are."""
    rocm = lock_of(side_by_side, "linux-rocm6")["tool"]["lockkit"]["inputs"]["requirements"]
    assert rocm == {"requirements.in": ["filelock"],
                    ROCM_LABEL: ["torch==2.9.1", "torchvision==0.24.1"]}
    cpu = lock_of(side_by_side, "linux-cpu")["tool"]["lockkit"]["inputs"]["requirements"]
    assert cpu == {"requirements.in": ["filelock", "torch==2.13.0"]}


def test_check_is_fresh_and_a_changed_rocm_line_makes_only_rocm_stale(side_by_side, capsys):
    assert main(["compile", "--project", str(side_by_side), "--check"]) == 0
    config = side_by_side / "lockkit.toml"
    config.write_text(config.read_text().replace('"torch==2.9.1"', '"torch==2.9.0"'))
    capsys.readouterr()
    assert main(["compile", "--project", str(side_by_side), "--check"]) == 1
    err = capsys.readouterr().err
    assert "locks not fresh: linux-rocm6 (stale)" in err
    assert "linux-cpu: fresh (" in err and "linux-cu132: fresh (" in err
    assert (f"linux-rocm6: stale (locks/pylock.linux-rocm6.toml): {ROCM_LABEL}: changed "
            "torch==2.9.1 → torch==2.9.0\n") in err


def test_a_new_shared_pin_leaves_the_platform_that_replaces_it_fresh(side_by_side, capsys):
    """ROCm's own torch line replaces requirements.in's pin there: a new pin in the file
    makes CPU and CUDA stale, and the ROCm lock, whose effective inputs did not move, fresh."""
    (side_by_side / "requirements.in").write_text("torch==2.13.1\nfilelock\n")
    capsys.readouterr()
    assert main(["compile", "--project", str(side_by_side), "--check"]) == 1
    err = capsys.readouterr().err
    assert "locks not fresh: linux-cpu (stale), linux-cu132 (stale)" in err
    assert "linux-rocm6: fresh (" in err


def test_diff_of_two_rocm_locks_names_the_changed_line(side_by_side, tmp_path, capsys):
    before = tmp_path / "before.toml"
    shutil.copy(side_by_side / "locks" / "pylock.linux-rocm6.toml", before)
    config = side_by_side / "lockkit.toml"
    config.write_text(config.read_text().replace(
        '"torch==2.9.1", "torchvision==0.24.1"', '"torch==2.9.0"'))
    assert main(["compile", "--project", str(side_by_side), "--platform", "linux-rocm6"]) == 0
    assert versions(lock_of(side_by_side, "linux-rocm6"))["torch"] == "2.9.0+rocm6.4"
    capsys.readouterr()
    after = side_by_side / "locks" / "pylock.linux-rocm6.toml"
    assert main(["diff", str(before), str(after), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)["differences"]
    said = [line for row in rows for line in row["said"]]
    assert said == [f"{ROCM_LABEL}: changed torch==2.9.1 → torch==2.9.0",
                    f"{ROCM_LABEL}: removed torchvision==0.24.1"]


def test_a_pin_outside_a_platforms_releases_points_at_the_table(tmp_path, indexes, capsys):
    """Without the ROCm line, torch==2.13.0 is outside what linux-rocm6 serves: the warning
    names the table that gives ROCm its own torch (and compile fails there: no such torch);
    with the line, nothing is said about releases."""
    fill_side_by_side(indexes.pt)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.in").write_text("torch==2.13.0\n")
    (root / "lockkit.toml").write_text(indexes.config(platforms='["linux-rocm6"]'))
    assert main(["compile", "--project", str(root)]) == 1
    err = capsys.readouterr().err
    assert ("requirements.in: torch==2.13.0 is outside the releases linux-rocm6 serves "
            "(>=2.8,<2.10, its [torch] releases); it is locked as written if an index has "
            'it. To lock another torch on linux-rocm6 alone: [platform-requirements] '
            'linux-rocm6 = ["torch==X"], X in >=2.8,<2.10') in " ".join(err.split())
    (root / "lockkit.toml").write_text(indexes.config(
        platforms='["linux-rocm6"]', extra='[platform-requirements]\n'
                                           'linux-rocm6 = ["torch==2.9.1"]\n'))
    assert main(["compile", "--project", str(root)]) == 0
    assert "releases" not in capsys.readouterr().err


def test_each_platforms_wheelhouse_holds_the_torch_its_lock_names(side_by_side, tmp_path):
    """The locks are used as they are: wheelhouse build fetches ROCm's torch 2.9.1 and
    torchvision and CUDA's torch 2.13.0, each from its own lock."""
    for platform, wanted in (("linux-rocm6", {"torch-2.9.1+rocm6.4", "torchvision-0.24.1"}),
                             ("linux-cu132", {"torch-2.13.0+cu132"})):
        out = tmp_path / platform
        assert main(["wheelhouse", "build", "--project", str(side_by_side), "--platform",
                     platform, "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]) == 0
        names = {w.name for w in out.glob("*.whl")}
        assert all(any(n.startswith(w) for n in names) for w in wanted), names
