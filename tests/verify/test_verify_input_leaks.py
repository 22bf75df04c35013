"""Issue 31, item 5: an input that leaks is never carried into a dossier.

verify and ``wheelhouse build`` use the lock as it is and only warn when its freshness
cannot be checked; that warning, printed and written into ``dossier.json`` and
``dossier.md`` (which the generated CI workflow uploads), once quoted the input's lines:
the whole environment for ``-r /proc/self/environ``, a token for a file outside the
project. It now names the file and line only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.project import built_service, lockkit

TOKEN = "s3cr3t-t0ken-7f1c"  # ${IDX_TOKEN}'s value, in the environment verify runs in


def _outside(tmp_path: Path) -> str:
    netrc = tmp_path / "home" / ".netrc"
    netrc.parent.mkdir()
    netrc.write_text(f"machine index.internal login deploy password {TOKEN}\n")
    return str(netrc)


@pytest.mark.parametrize("target", [lambda tmp: "/proc/self/environ", _outside],
                         ids=["proc-environ", "outside-file"])
def test_the_stale_lock_warning_never_carries_an_inputs_lines_into_the_dossier(
        tmp_path, indexes, monkeypatch, target):
    root = built_service(tmp_path, indexes)
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
