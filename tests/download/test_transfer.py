"""How a file's bytes come from a CDN-like edge (tests/support/edge.py): a body cut short
resumed from the byte reached with Range and If-Range, a large file in ranged parts
written in place, one stream where ranges are not served, an interrupted download kept in
a private cache and continued by the next build, and at most PER_HOST connections to a
host. Every file is still checked whole against its sha256."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lockkit._internal.log import VERBOSE
from lockkit.cache.store import Cache
from lockkit.cli import main
from lockkit.download.fetch import Fetcher, Item, Want, http_client
from lockkit.download.pool import fetch_items
from lockkit.download.transfer import PART_MIN
from lockkit.errors import FetchError, HashMismatch
from tests.support.edge import Edge
from tests.support.index_server import IndexServer, build_wheel
from tests.support.procs import wait_for
from tests.support.wheelhouse import kept, partials

MIB = 1 << 20
BODY = os.urandom(6 * MIB + 12345)


def want(edge: Edge, name: str = "f.whl") -> Want:
    body = edge.files[name]
    url = f"{edge.url}/{name}"
    return Want(filename=name, sha256=hashlib.sha256(body).hexdigest(), size=len(body),
                urls=(url,), source=url)


def fetch(edge: Edge, cache: Path, *, attempts: int = 4, **kw: object):
    with http_client(timeout=10.0, backoff=0.01, attempts=attempts) as client:
        fetcher = Fetcher(client, Cache(cache), policy=client.policy, **kw)  # type: ignore[arg-type]
        return fetcher.fetch(want(edge))


def test_a_cut_body_resumes_from_the_byte_reached_with_if_range(tmp_path):
    with Edge({"f.whl": BODY}) as edge:
        edge.cuts = [2 * MIB]
        got = fetch(edge, tmp_path / "c")
    assert got.path.read_bytes() == BODY
    assert got.downloaded == len(BODY)  # no byte fetched twice
    assert edge.asked == [("f.whl", None, None),
                          ("f.whl", f"bytes={2 * MIB}-", edge.etags["f.whl"])]


def test_a_changed_validator_fetches_the_whole_file_again(tmp_path):
    """If-Range that no longer matches (each answer from another edge, its own ETag): the
    edge sends the whole file, which replaces the bytes kept (none of them mixed in)."""
    with Edge({"f.whl": BODY}) as edge:
        edge.cuts, edge.rotate = [2 * MIB], True
        got = fetch(edge, tmp_path / "c")
        first = edge.asked[1][2]
    assert got.path.read_bytes() == BODY
    assert got.downloaded == 2 * MIB + len(BODY)
    assert first and [a[1] for a in edge.asked] == [None, f"bytes={2 * MIB}-"]


def test_a_server_without_ranges_restarts_a_cut_body_from_byte_0(tmp_path):
    with Edge({"f.whl": BODY}, ranges=False) as edge:
        edge.cuts = [2 * MIB]
        got = fetch(edge, tmp_path / "c")
    assert got.path.read_bytes() == BODY
    assert got.downloaded == 2 * MIB + len(BODY)


def test_a_large_file_comes_in_ranged_parts_written_in_place(tmp_path):
    with Edge({"f.whl": BODY}) as edge:
        got = fetch(edge, tmp_path / "c", part_min=MIB)
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY)
    ranges = sorted(a[1] or "" for a in edge.asked)
    step = -(-len(BODY) // 4)
    assert ranges == sorted([f"bytes=0-{step - 1}"] + [
        f"bytes={s}-{min(s + step, len(BODY)) - 1}" for s in range(step, len(BODY), step)])
    assert partials(tmp_path / "c") == [] and kept(tmp_path / "c") == []


def test_a_file_of_unknown_size_is_split_once_the_first_answer_gives_it(tmp_path):
    """No size in the lock (an index page without sizes, as the PyTorch index's): the
    first answer's Content-Length and Accept-Ranges split the file as a known size would
    be; the first stream stops where its part ends, and no byte is fetched twice."""
    with Edge({"f.whl": BODY}) as edge, http_client(timeout=10.0, backoff=0.01) as client:
        unsized = dataclasses.replace(want(edge), size=None)
        got = Fetcher(client, Cache(tmp_path / "c"), policy=client.policy,
                      part_min=MIB).fetch(unsized)
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY)
    step = -(-len(BODY) // 4)
    assert edge.asked[0] == ("f.whl", None, None)
    assert sorted(a[1] or "" for a in edge.asked[1:]) == sorted(
        f"bytes={s}-{min(s + step, len(BODY)) - 1}" for s in range(step, len(BODY), step))

def test_a_server_that_ignores_ranges_gets_one_stream(tmp_path):
    with Edge({"f.whl": BODY}, ranges=False) as edge:
        got = fetch(edge, tmp_path / "c", part_min=MIB)
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY)
    assert len(edge.asked) == 1  # the 200 was read whole; no part was asked


def test_a_part_cut_short_is_resumed_within_its_span(tmp_path):
    with Edge({"f.whl": BODY}) as edge:
        edge.cuts = [len(BODY), MIB // 2]  # the first part whole, the second cut short
        got = fetch(edge, tmp_path / "c", part_min=MIB, per_host=1)  # one part at a time
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY)
    step = -(-len(BODY) // 4)
    assert [a[1] for a in edge.asked[1:3]] == [f"bytes={step}-{2 * step - 1}",
                                               f"bytes={step + MIB // 2}-{2 * step - 1}"]
    assert edge.asked[2][2] == edge.etags["f.whl"]


def test_an_interrupted_download_is_continued_by_the_next_build(tmp_path, caplog):
    cache = tmp_path / "c"
    with Edge({"f.whl": BODY}) as edge:
        edge.cuts = [3 * MIB]
        with pytest.raises(FetchError, match="truncated|RemoteProtocolError"):
            fetch(edge, cache, attempts=1)
        assert partials(cache) == []
        [left] = kept(cache)
        assert left.name.endswith(f"-{want(edge).sha256}.part") and left.stat().st_size == 3 * MIB
        caplog.set_level(VERBOSE, logger="lockkit")
        got = fetch(edge, cache)
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY) - 3 * MIB
    assert edge.asked[-1] == ("f.whl", f"bytes={3 * MIB}-", None)
    assert f"f.whl: resuming the file an interrupted build left, from byte {3 * MIB} of " \
           f"{len(BODY)}" in caplog.text
    assert kept(cache) == [] and partials(cache) == []


def test_kept_bytes_that_do_not_make_the_file_are_fetched_again_from_byte_0(tmp_path):
    cache = tmp_path / "c"
    with Edge({"f.whl": BODY}) as edge:
        edge.cuts = [3 * MIB]
        with pytest.raises(FetchError):
            fetch(edge, cache, attempts=1)
        [left] = kept(cache)
        left.write_bytes(b"\0" * (3 * MIB))  # not the file's bytes
        got = fetch(edge, cache)
    assert got.path.read_bytes() == BODY
    assert got.downloaded == len(BODY) - 3 * MIB + len(BODY)
    assert edge.asked[-1] == ("f.whl", None, None)


def test_a_shared_cache_keeps_nothing_and_takes_nothing_kept(tmp_path):
    cache = tmp_path / "c"
    with Edge({"f.whl": BODY}) as edge:
        Cache(cache).new_partial()[0].close()  # makes the cache (0700) and partial/
        os.chmod(cache, 0o770)
        edge.cuts = [3 * MIB]
        with pytest.raises(FetchError):
            fetch(edge, cache, attempts=1)
        assert kept(cache) == []
        planted = cache / "partial" / f"1@1-{want(edge).sha256}.part"
        planted.write_bytes(b"\0" * MIB)
        got = fetch(edge, cache)
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY)
    assert edge.asked[-1] == ("f.whl", None, None) and planted.exists()


def test_no_more_than_per_host_connections_go_to_one_host(tmp_path):
    files = {f"f{i}.whl": os.urandom(MIB) for i in range(6)}
    with Edge(files, rate=8 * MIB) as edge, \
            http_client(timeout=10.0, connections=6) as client:
        fetcher = Fetcher(client, Cache(tmp_path / "c"), policy=client.policy, per_host=2)
        items = [Item(package=n, version="1", kind="wheel", want=want(edge, n), entry={})
                 for n in files]
        gots = fetch_items(fetcher, items, 6)
    assert [g.path.read_bytes() for g in gots] == list(files.values())
    assert edge.most == 2


def test_verbose_says_each_resume_and_its_byte(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="lockkit")
    with Edge({"f.whl": BODY}) as edge:
        edge.cuts = [MIB]
        fetch(edge, tmp_path / "c")
    assert f"f.whl from {edge.url}/f.whl: asking from byte {MIB}" in caplog.text


@pytest.mark.parametrize("left", ["whole", "longer"])
def test_a_kept_file_whole_or_too_long_makes_a_file_of_the_lock_size(tmp_path, left):
    """Kept bytes already whole: no request, the file is checked and lands; kept bytes
    longer than the file: fetched from byte 0, nothing of the tail kept."""
    cache = tmp_path / "c"
    with Edge({"f.whl": BODY}) as edge:
        Cache(cache).new_partial()[0].close()
        extra = b"" if left == "whole" else b"tail"
        (cache / "partial" / f"1@1-{want(edge).sha256}.part").write_bytes(BODY + extra)
        got = fetch(edge, cache)
    assert got.path.read_bytes() == BODY
    assert len(edge.asked) == (0 if left == "whole" else 1)


def test_the_first_part_cut_short_resumes_while_the_other_parts_go_on(tmp_path):
    """The other parts start at the first answer (a 206); the first, cut, resumes from
    its byte reached without touching the bytes they wrote past it."""
    with Edge({"f.whl": BODY}) as edge:
        edge.cuts = [MIB // 2]
        got = fetch(edge, tmp_path / "c", part_min=MIB)
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY)
    step = -(-len(BODY) // 4)
    assert ("f.whl", f"bytes={MIB // 2}-{step - 1}", edge.etags["f.whl"]) in edge.asked
    assert len(edge.asked) == 5


def test_a_wrong_byte_in_one_part_refuses_the_file_and_keeps_nothing(tmp_path):
    """One byte of the third part inverted by the edge: the whole file's sha256 refuses
    it; nothing gets the file's name in the cache and nothing is kept for a resume (bytes
    that made a wrong file are never trusted), so the next fetch starts from byte 0."""
    cache = tmp_path / "c"
    step = -(-len(BODY) // 4)
    with Edge({"f.whl": BODY}) as edge:
        edge.flips = {2 * step + 777}
        with pytest.raises(HashMismatch, match="does not match the lock"):
            fetch(edge, cache, part_min=MIB)
        assert len(edge.asked) == 4  # refused once, not retried into success
        assert Cache(cache).get(want(edge).sha256, len(BODY)) is None
        assert kept(cache) == [] and partials(cache) == []
        edge.flips = set()
        got = fetch(edge, cache, part_min=MIB)
    assert got.path.read_bytes() == BODY and got.downloaded == len(BODY)
    assert edge.asked[4] == ("f.whl", f"bytes=0-{step - 1}", None)


def _at_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a suite in the background ignores it


@pytest.mark.slow
@pytest.mark.skipif(os.name == "nt", reason="SIGINT to a child is POSIX's")
def test_ctrl_c_during_ranged_parts_leaves_nothing_named_and_the_next_build_continues(
        tmp_path):
    """A real ``lockkit wheelhouse build`` fetching one large file in ranged parts
    from a capped edge (through a mirror of the index's files; the lock gives no size, as
    the PyTorch index's pages give none): SIGINT once every part is under way. It exits
    130; neither the wheelhouse nor the cache holds the file under its name, only the
    kept partial file (the size learned from the answer); the next build asks only for
    what never came (no request from byte 0) and the wheel it writes has the lock's
    sha256."""
    payload = os.urandom((2 * PART_MIN + 4 * MIB) // 2).hex()  # stored: the size it says
    wheel = build_wheel(tmp_path / "w", "bigpart", "1.0", files={"bigpart/blob.txt": payload})
    body, cache, out, project = wheel.read_bytes(), tmp_path / "c", tmp_path / "wh", tmp_path / "p"
    with IndexServer(tmp_path / "idx") as server, \
            Edge({wheel.name: body}, rate=12 * MIB) as edge:
        server.index("/simple").put(wheel)
        project.mkdir()
        (project / "requirements.in").write_text("bigpart\n")
        (project / "lockkit.toml").write_text(
            f'index-url = "{server.url}/simple"\nplatforms = ["linux-cpu"]\n'
            f'[mirrors]\n"{server.url}/simple/bigpart" = "{edge.url}"\n')
        assert main(["compile", "--project", str(project), "--platform", "linux-cpu"]) == 0
        argv = ["wheelhouse", "build", "--project", str(project), "--platform", "linux-cpu",
                "--no-tools", "--cache-dir", str(cache), "--out", str(out)]
        proc = subprocess.Popen([sys.executable, "-m", "lockkit", *argv], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_at_default)
        try:
            wait_for(lambda: len(edge.asked) >= 3, "every ranged part asked", proc)
            time.sleep(0.5)  # each part has bytes
            proc.send_signal(signal.SIGINT)
            err = proc.communicate(timeout=30)[1]
        finally:
            proc.kill()
        assert proc.returncode == 130, err
        assert "lockkit: interrupted; nothing was left half-written" in err
        assert {a[1] is not None for a in edge.asked[1:]} == {True}  # parts were under way
        sha = hashlib.sha256(body).hexdigest()
        assert not list(out.glob("*.whl")) if out.exists() else True
        assert Cache(cache).get(sha, len(body)) is None and partials(cache) == []
        [left] = kept(cache)
        assert 0 < left.stat().st_size < len(body)
        before = len(edge.asked)
        edge.rate = None
        assert main([*argv, "-v"]) == 0
        again = edge.asked[before:]
    assert again and all(a[1] and not a[1].startswith("bytes=0-") for a in again), again
    [made] = out.glob("*.whl")
    assert hashlib.sha256(made.read_bytes()).hexdigest() == sha
    assert kept(cache) == [] and partials(cache) == []
