"""Issue 31, item 5: an input that leaks is never carried into a dossier.

verify and ``wheelhouse build`` use the lock as it is and only warn when its freshness
cannot be checked; that warning, printed and written into ``dossier.json`` and
``dossier.md`` (which the generated CI workflow uploads), once quoted the input's lines:
the whole environment for ``-r /proc/self/environ``, a token for a file outside the
project. It now names the file and line only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lockkit.cli import main
from tests.support.project import lockkit

SERVICE = Path(__file__).parents[2] / "examples" / "service"
TOKEN = "s3cr3t-t0ken-7f1c"  # ${IDX_TOKEN}'s value, in the environment verify runs in


def built(tmp_path: Path, indexes) -> Path:
    """examples/service (no torch: quick) against the loopback index, compiled and built."""
    root = tmp_path / "service"
    shutil.copytree(SERVICE, root)
    config = root / "lockkit.toml"
    config.write_text(f'index-url = "{indexes.url}/simple"\n' + config.read_text())
    assert main(["compile", "--project", str(root)]) == 0
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-service",
                 "--cache-dir", str(tmp_path / "cache"), "--no-tools"]) == 0
    return root


def _outside(tmp_path: Path) -> str:
    netrc = tmp_path / "home" / ".netrc"
    netrc.parent.mkdir()
    netrc.write_text(f"machine index.internal login deploy password {TOKEN}\n")
    return str(netrc)


@pytest.mark.parametrize("target", [lambda tmp: "/proc/self/environ", _outside],
                         ids=["proc-environ", "outside-file"])
def test_the_stale_lock_warning_never_carries_an_inputs_lines_into_the_dossier(
        tmp_path, indexes, monkeypatch, target):
    root = built(tmp_path, indexes)
    include = target(tmp_path)
    with open(root / "requirements.in", "a") as fh:
        fh.write(f"-r {include}\n")
    line = len((root / "requirements.in").read_text().splitlines())
    monkeypatch.setenv("IDX_TOKEN", TOKEN)
    run = lockkit("verify", "--project", str(root), "--platform", "linux-service",
                  "--report-dir", str(root / "report"), network=False)
    build = lockkit("wheelhouse", "build", "--project", str(root), "--platform",
                    "linux-service", "--cache-dir", str(tmp_path / "cache"), "--no-tools",
                    network=False)
    written = [(root / "report" / name).read_text() for name in ("dossier.json", "dossier.md")]
    for text in (*written, run.stdout, run.stderr, build.stdout, build.stderr):
        assert TOKEN not in text
        assert "PATH=" not in text and "password" not in text
    (warning,) = json.loads(written[0])["warnings"]
    assert warning.startswith("pylock.linux-service.toml: its freshness could not be checked")
    named = f"requirements.in:{line}: -r {include}: a file under /proc, not a regular " \
        "file" if include.startswith("/proc") else f"{include}:1: not a requirement"
    assert named in warning
    assert "its freshness could not be checked" in build.stderr
