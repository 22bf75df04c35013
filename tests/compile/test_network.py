"""Real resolutions against the default index (deselect with -m 'not network')."""

from __future__ import annotations

import pytest
from packaging.pylock import Pylock

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from tests.support.project import OFFICIAL

pytestmark = pytest.mark.network


def _project(tmp_path, indexes, requirements: str):
    root = tmp_path / "real"
    root.mkdir()
    (root / "requirements.in").write_text(requirements)
    # The PyTorch index is unreachable here: point it at the loopback one (404 for
    # anything it lacks), and let uv supply the default index itself.
    (root / "lockkit.toml").write_text(f'[mirrors]\n"{OFFICIAL}" = "{indexes.url}/whl"\n')
    return root


def test_macos_torch_from_the_default_index(tmp_path, indexes):
    root = _project(tmp_path, indexes, "torch==2.5.1\n")
    assert main(["compile", "--project", str(root), "--platform", "macos-arm64"]) == 0
    lock = tomllib.loads((root / "locks" / "pylock.macos-arm64.toml").read_text())
    Pylock.from_dict(lock)
    torch = next(p for p in lock["packages"] if p["name"] == "torch")
    assert torch["version"] == "2.5.1"
    assert all("macosx" in w["url"] and "arm64" in w["url"] for w in torch["wheels"])
    assert all(len(w["hashes"]["sha256"]) == 64 for p in lock["packages"] for w in p["wheels"])


@pytest.mark.parametrize("platform,tag", [("windows-cpu", "win_amd64"),
                                          ("linux-cpu", "manylinux")])
def test_torch_free_set_for_windows_and_linux(tmp_path, indexes, platform, tag):
    root = _project(tmp_path, indexes, "pyyaml==6.0.2\nrich\n")
    assert main(["compile", "--project", str(root), "--platform", platform]) == 0
    lock = tomllib.loads((root / "locks" / f"pylock.{platform}.toml").read_text())
    Pylock.from_dict(lock)
    pyyaml = next(p for p in lock["packages"] if p["name"] == "pyyaml")
    assert pyyaml["wheels"] and all(tag in w["url"] for w in pyyaml["wheels"])
