"""The download loop of ``wheelhouse build`` (:mod:`lockkit.download.pool`): an
interrupt cuts a slow body off with no partial file left, a body longer than the lock's
size is refused and never retried, and a failed mirror never falls back to the official
host unless ``--fallback-to-official`` allows it."""

from __future__ import annotations

import json
import time

import pytest
import tomli_w

from lockkit._internal.compat import tomllib
from lockkit.cache.store import Cache
from tests.support.failing_host import FailingHost
from tests.support.project import OFFICIAL
from tests.support.pytorch_index import R2
from tests.support.wheelhouse import (
    TORCH,
    build_cli,
    build_lib,
    compiled,
    leftovers,
    partials,
    served,
    wheel_requests,
)


def test_interrupt_during_a_slow_body_removes_the_partial_file(project, indexes, tmp_path):
    """A body arriving slowly is cut off under its reader: the build ends at once and the
    partial file is gone before build() returns."""
    compiled(project, indexes)
    cache = tmp_path / "cache"
    calls: list[float] = []

    def stop_on_first_bytes(n: int) -> None:
        if n > 0 and not calls:
            calls.append(time.monotonic())
            raise KeyboardInterrupt

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        build_lib(project, cache, tmp_path / "wh", jobs=3, on_bytes=stop_on_first_bytes)
    assert time.monotonic() - start < 5
    assert partials(cache) == [] and leftovers(tmp_path, "wh") == []


# --- size caps -------------------------------------------------------------------------------

def test_body_longer_than_the_locks_size_is_refused(project, indexes, tmp_path, capsys):
    """The replica's pages give no sizes (as the PyTorch index's do not): the lock is
    given one smaller than the served file."""
    lock = compiled(project, indexes)
    data = tomllib.loads(lock.read_text())
    (wheel,) = next(p for p in data["packages"] if p["name"] == "torch")["wheels"]
    wheel["size"] = len(served(indexes)) - 100
    lock.write_text(tomli_w.dumps(data))
    cache = tmp_path / "cache"
    assert build_cli(project, cache) == 1
    err = capsys.readouterr().err
    assert TORCH in err and f"{indexes.pt.r2}/whl/cpu/" in err
    assert f"longer than the lock's size of {wheel['size']} bytes" in err
    assert wheel_requests(indexes).count(f"/r2/whl/cpu/{TORCH}") == 1  # never retried
    assert not Cache(cache).path(wheel["hashes"]["sha256"]).exists()
    assert partials(cache) == []
    assert not (project / "wheelhouse" / "linux-cpu").exists()


# --- mirror failures ----------------------------------------------------------------------------

@pytest.fixture
def broken_mirror(project, indexes):
    """The lock's torch URL made a loopback "official host" (the replica's R2 host), and a
    mirror of it that fails with HTTP 500 on every request."""
    lock = compiled(project, indexes)
    lock.write_text(lock.read_text().replace(R2, indexes.pt.r2))
    broken = FailingHost("500")  # a mirror that answers HTTP 500 to everything
    (project / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\nplatforms = ["linux-cpu"]\n'
        f'[mirrors]\n"{indexes.pt.r2}" = "{broken.url}/r2"\n"{OFFICIAL}" = "{broken.url}/pt"\n')
    yield broken
    broken.close()


def test_failed_mirror_does_not_fall_back_to_the_official_host(project, indexes, tmp_path,
                                                               broken_mirror, capsys):
    assert build_cli(project, tmp_path / "cache", "--retries", "0") == 1
    err = capsys.readouterr().err
    assert TORCH in err and "HTTP 500" in err
    assert f"the mirror failed and the official host ({indexes.pt.r2}/whl/cpu/" in err
    assert "was not tried" in err and "--fallback-to-official" in err
    assert any(TORCH in p for p in broken_mirror.requests)
    assert not any(TORCH in p for p in wheel_requests(indexes))  # the official host: never


def test_fallback_to_official_is_opt_in(project, indexes, tmp_path, broken_mirror):
    assert build_cli(project, tmp_path / "cache", "--retries", "0",
                     "--fallback-to-official") == 0
    manifest = json.loads((project / "wheelhouse" / "linux-cpu" / "manifest.json").read_text())
    torch = next(f for f in manifest["files"] if f["path"] == TORCH)
    assert "origin" not in torch  # where it was found is the build log's (issue 15)
    assert any(TORCH in p for p in broken_mirror.requests)
    assert any(TORCH in p for p in wheel_requests(indexes))  # then the lock's own URL

