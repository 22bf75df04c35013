"""A file whose host fails is fetched from its twin host (:func:`lockkit.index.urls.twin`):
the lock pins download-r2.pytorch.org, and when that host fails (an answer of 503, a TLS
handshake cut off) ``wheelhouse build`` takes the same path from download.pytorch.org,
checks the lock's sha256 and says which host served the file. A 404 or wrong bytes are no
host failure: nothing is looked for elsewhere.

The R2 host is a loopback server that fails (``[mirrors]`` maps the official host to it,
as every test maps the official hosts to the replica); download.pytorch.org is the
replica's ``/pt`` host.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from lockkit.cache.store import Cache
from lockkit.config.project import load_project
from lockkit.download.sources import Twin
from lockkit.platforms.definitions import load_platforms
from lockkit.wheelhouse import build as wheelhouse
from tests.support.failing_host import FailingHost
from tests.support.pytorch_index import OFFICIAL, R2
from tests.support.wheelhouse import TORCH, build_cli, compiled, served

TORCH_PATH = f"/whl/cpu/{TORCH}"


@pytest.fixture
def r2_down(request, project, indexes):
    """The lock compiled as usual (it pins R2), then R2's loopback host made a failing
    one; download.pytorch.org stays the replica."""
    compiled(project, indexes)
    host = FailingHost(request.param)
    config = project / "lockkit.toml"
    mapping = f'"{R2}" = "{indexes.pt.r2}"'
    assert mapping in config.read_text()
    config.write_text(config.read_text().replace(mapping, f'"{R2}" = "{host.url}/r2"'))
    indexes.forget_requests()
    yield host
    host.close()


def _failed_at(host: FailingHost) -> bool:
    """Whether the failing host was asked for the torch wheel."""
    return host.connections > 0 if host.mode == "tls" else f"/r2{TORCH_PATH}" in host.requests


@pytest.mark.parametrize(("r2_down", "why"), [("503", "HTTP 503"), ("tls", "ConnectError")],
                         indirect=["r2_down"])
def test_a_failing_r2_host_is_replaced_by_the_origin_and_the_hash_checked(
        project, indexes, tmp_path, r2_down, why, capsys):
    cache = tmp_path / "cache"
    assert build_cli(project, cache, "--retries", "0") == 0
    out, err = capsys.readouterr()
    assert _failed_at(r2_down)
    assert f"/pt{TORCH_PATH}" in [urllib.parse.unquote(p) for p in indexes.pt.requests]
    wheel = project / "wheelhouse" / "linux-cpu" / TORCH
    assert wheel.read_bytes() == served(indexes)
    failed = f"the mirror of {R2} failed: {why}"
    assert f"{TORCH}: {failed}" in err and "sha256 checked" in err
    table = " ".join(out.split())  # the table wraps a long "from" cell
    assert f"{indexes.pt.url}/… ({failed}" in table


def test_a_lock_that_pins_the_origin_falls_back_to_r2_the_other_way_round(project, indexes,
                                                                         tmp_path, capsys):
    """A lock written before the index linked R2 pins download.pytorch.org; that host
    failing, the same path comes from R2."""
    lock = compiled(project, indexes)
    lock.write_text(lock.read_text().replace(R2, OFFICIAL))
    down = FailingHost("503")
    try:
        config = project / "lockkit.toml"
        mapping = f'"{OFFICIAL}" = "{indexes.pt.main}"'
        config.write_text(config.read_text().replace(mapping, f'"{OFFICIAL}" = "{down.url}/pt"'))
        indexes.forget_requests()
        assert build_cli(project, tmp_path / "cache", "--retries", "0") == 0
    finally:
        down.close()
    out = " ".join(capsys.readouterr().out.split())
    assert f"/pt{TORCH_PATH}" in down.requests
    assert f"/r2{TORCH_PATH}" in [urllib.parse.unquote(p) for p in indexes.pt.requests]
    assert f"(the mirror of {OFFICIAL} failed: HTTP 503)" in out
    assert (project / "wheelhouse" / "linux-cpu" / TORCH).read_bytes() == served(indexes)


@pytest.mark.parametrize("r2_down", ["503"], indirect=True)
def test_wrong_bytes_from_the_origin_are_refused_after_r2_failed(project, indexes, tmp_path,
                                                                 r2_down, capsys):
    indexes.pt.faults[TORCH] = ["wrong"]
    cache = tmp_path / "cache"
    assert build_cli(project, cache, "--retries", "0") == 1
    err = capsys.readouterr().err
    assert f"{TORCH} from {indexes.pt.main}{TORCH_PATH.replace('+', '%2B')}" in err
    assert "does not match the lock's" in err
    assert _failed_at(r2_down) and indexes.pt.faults[TORCH] == []
    assert not (project / "wheelhouse" / "linux-cpu").exists()
    assert not Cache(cache).get(_torch_sha256(project), None)


@pytest.mark.parametrize("r2_down", ["404"], indirect=True)
def test_a_404_from_the_r2_host_is_not_looked_for_on_the_origin(project, indexes, tmp_path,
                                                                r2_down, capsys):
    assert build_cli(project, tmp_path / "cache", "--retries", "0") == 1
    err = capsys.readouterr().err
    assert TORCH in err and "HTTP 404" in err
    assert _failed_at(r2_down)
    # the mirrored page was read (its R2 link went to R2's mirror again), the file never
    # asked of the other host
    assert not any(TORCH in urllib.parse.unquote(p) for p in indexes.pt.requests)
    assert r2_down.requests.count(f"/r2{TORCH_PATH}") == 2


def test_the_twin_of_a_mirrored_host_is_tried_only_through_its_own_mirror(project, indexes):
    """An air-gapped site mirrors R2 only: the twin host is never planned behind the
    mirror's back (unless --fallback-to-official allows the official hosts)."""
    compiled(project, indexes)
    platform = load_platforms(project)["linux-cpu"]
    key = TORCH_PATH.replace("+", "%2B")
    # both hosts mirrored: the twin's mirror once, right after R2's, whatever the flag
    _, items = wheelhouse.plan(load_project(project), platform, fallback_to_official=True)
    urls = next(i for i in items if i.package == "torch").want.urls
    assert urls[:2] == (f"{indexes.pt.r2}{key}",
                        Twin(url=f"{indexes.pt.main}{key}", instead=f"the mirror of {R2}"))
    assert urls[-1] == f"{R2}{key}" and sum(isinstance(u, Twin) for u in urls) == 1
    config = project / "lockkit.toml"
    config.write_text(config.read_text().replace(f'"{OFFICIAL}" = "{indexes.pt.main}"\n', ""))
    proj = load_project(project)
    _, items = wheelhouse.plan(proj, platform)
    torch = next(i for i in items if i.package == "torch")
    assert torch.want.urls == (f"{indexes.pt.r2}{key}",)
    _, items = wheelhouse.plan(proj, platform, fallback_to_official=True)
    torch = next(i for i in items if i.package == "torch")
    assert torch.want.urls[-1] == Twin(url=f"{OFFICIAL}{key}", instead=R2)


def _torch_sha256(project: Path) -> str:
    from lockkit._internal.compat import tomllib

    lock = tomllib.loads((project / "locks" / "pylock.linux-cpu.toml").read_text())
    return next(w["hashes"]["sha256"] for p in lock["packages"] if p["name"] == "torch"
                for w in p["wheels"])
