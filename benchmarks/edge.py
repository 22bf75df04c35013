"""Download target on a CDN-like edge: lockkit's Fetcher against one curl stream, on a
loopback server that caps each connection, as a CDN edge does.

The server (a process of its own, ``http.server`` on 127.0.0.1) sends each file from a
local folder with ``os.sendfile``, at most ``RATE`` bytes per second on each connection;
it serves one ``Range`` per request (206, ``Content-Range``) and ``If-Range`` against the
file's ETag. Two cases, each a cold download into an empty cache (a new folder per run):
  - one file of 120 MB (12 MB with --quick): lockkit fetches it in ranged parts on up to
    four connections; curl (``curl -s -S --fail -o``) on one, as lockkit did before it
    split files. Target: lockkit at least 2.5x faster (the ratio printed is curl's time
    over lockkit's; four parts at the cap would give 4x).
  - the same file, its first connection cut at half the file: lockkit with parts off
    (``part_min`` larger than the file, so one stream, as a resume is measured alone)
    resumes from the byte reached; the baseline is curl's uncut download. Target:
    lockkit's time at most 1.2x curl's (restarting from byte 0 costs 1.5x; the retry
    pause is 0.5 s).
curl hashes nothing; lockkit checks every sha256. lockkit runs in this process (its
import is not timed; its HTTP client is built inside the time), curl as a child process.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import _harness as h

__all__ = ["Edge", "measure"]

MB = h.MB
RATE = 10 * MB  # bytes per second per connection: what one CDN connection gives
SIZE_MB = 120
PARTS = h.Target(op=">=", limit=2.5)
RESUME = h.Target(op="<=", limit=1.2)
_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class Link:
    """The link all connections share: at most *rate* bytes per second in all (a token
    bucket: each step of each connection takes its slot in turn, and waits for it)."""

    def __init__(self, rate: int) -> None:
        self.rate, self.free, self.lock = rate, 0.0, threading.Lock()

    def take(self, n: int) -> None:
        if not self.rate:
            return
        with self.lock:
            now = time.monotonic()
            start = max(self.free, now - 0.05)  # a burst of 50 ms at most after a pause
            self.free = start + n / self.rate
        if start > now:
            time.sleep(start - now)


class State:
    """What the edge does and has done: the fraction of each file at which the first
    answer that crosses it is cut (0: none; *only*: that file alone), and the body bytes
    sent per file (``GET /_sent``; ``GET /_control?cut=0.6&only=<name>`` sets the cut
    and starts the counts again)."""

    def __init__(self, cut_at: float) -> None:
        self.cut_at, self.only = cut_at, ""
        self.cut_done: set[str] = set()
        self.sent: dict[str, int] = {}
        self.lock = threading.Lock()

    def count(self, name: str, n: int) -> None:
        with self.lock:
            self.sent[name] = self.sent.get(name, 0) + n

    def control(self, query: str) -> bytes:
        asked = urllib.parse.parse_qs(query)
        with self.lock:
            before = dict(self.sent)
            if "cut" in asked:
                self.cut_at = float(asked["cut"][0])
                self.only = asked.get("only", [""])[0]
                self.cut_done, self.sent = set(), {}
        return json.dumps(before).encode()

    def stop_at(self, name: str, size: int, start: int, end: int) -> int:
        at = int(size * self.cut_at)
        with self.lock:
            if not self.cut_at or (self.only and name != self.only) or name in self.cut_done \
                    or not start < at < end:
                return end
            self.cut_done.add(name)
        return at


def serve(folder: str, rate: int, cut: bool, link_rate: int = 0) -> None:
    """The server process: the files of *folder* at ``/<name>``, *rate* bytes per second
    per connection, *link_rate* in all (0: no link cap); with *cut*, the first answer
    that crosses half of a file is cut there."""
    root, state, link = Path(folder), State(0.5 if cut else 0.0), Link(link_rate)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            where, _, query = self.path.partition("?")
            if where in ("/_sent", "/_control"):
                body = state.control(query if where == "/_control" else "")
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            path = root / self.path.lstrip("/")
            if "/" in self.path.lstrip("/") or not path.is_file():
                self.send_error(404)
                return
            size = path.stat().st_size
            etag = f'"{size:x}"'
            start, end = 0, size
            asked = _RANGE.fullmatch(self.headers.get("Range", ""))
            if asked and self.headers.get("If-Range", etag) == etag:
                start = int(asked[1])
                end = min(size, int(asked[2]) + 1) if asked[2] else size
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(end - start))
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            self.wfile.flush()
            stop = state.stop_at(path.name, size, start, end)
            sent = _send(self.connection, path, start, stop, rate, link)
            state.count(path.name, sent)
            if stop < end:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 128
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def _send(sock: socket.socket, path: Path, start: int, end: int, rate: int,
          link: Link | None = None) -> int:
    """Bytes [start, end) of *path* at most *rate* bytes per second, each step through
    the *link*; returns the bytes sent."""
    began, sent, step = time.monotonic(), 0, 256 << 10
    try:
        with path.open("rb") as f:
            while start + sent < end:
                n = min(step, end - start - sent)
                if link is not None:
                    link.take(n)
                sent += os.sendfile(sock.fileno(), f.fileno(), start + sent, n)
                ahead = sent / rate - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
    except OSError:
        pass
    return sent


_SERVE = ("import sys; sys.path.insert(0, sys.argv[1]); import edge; "
          "edge.serve(sys.argv[2], int(sys.argv[3]), sys.argv[4] == '1', int(sys.argv[5]))")


class Edge:
    """The server process for *folder*, stopped on exit."""

    def __init__(self, folder: Path, *, cut: bool = False, rate: int = RATE,
                 link: int = 0) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(Path(__file__).parent),
                                      str(folder), str(rate), "1" if cut else "0", str(link)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def __enter__(self) -> Edge:
        return self

    def sent(self, cut: float | None = None, only: str = "") -> dict[str, int]:
        """The body bytes sent per file since the last reset; with *cut*, a reset that
        cuts the first answer crossing that fraction of each file (of *only*)."""
        query = "" if cut is None else "?" + urllib.parse.urlencode({"cut": cut, "only": only})
        with urllib.request.urlopen(f"{self.url}/{'_control' if query else '_sent'}{query}",
                                    timeout=30) as resp:
            found: dict[str, int] = json.loads(resp.read())
        return found

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def lockkit_fetch(name: str, sha: str, size: int, edge: Callable[[], Edge], *,
                  part_min: int) -> Callable[[Path], float]:
    from lockkit.cache.store import Cache
    from lockkit.download.fetch import Fetcher, Want, http_client

    def timed(folder: Path) -> float:
        with edge() as server:
            url = f"{server.url}/{name}"
            want = Want(filename=name, sha256=sha, size=size, urls=(url,), source=url)
            start = time.perf_counter()
            with http_client(timeout=60.0) as client:
                fetcher = Fetcher(client, Cache(folder / "cache"), policy=client.policy,
                                  part_min=part_min)
                got = fetcher.fetch(want)
            seconds = time.perf_counter() - start
        assert got.path.stat().st_size == size
        return seconds
    return timed


def curl_fetch(name: str, edge: Callable[[], Edge], env: dict[str, str]) -> Callable[[Path], float]:
    def timed(folder: Path) -> float:
        with edge() as server:
            return h.run_timed(["curl", "-s", "-S", "--fail", "-o", name, f"{server.url}/{name}"],
                               env, cwd=folder).seconds
    return timed


def make_file(folder: Path, size: int) -> tuple[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    name, data = "bench_edge-1.0-py3-none-any.whl", os.urandom(size)
    (folder / name).write_bytes(data)
    return name, hashlib.sha256(data).hexdigest()


def measure(opts: h.Options) -> list[h.Result]:
    size = int(SIZE_MB * MB / (10 if opts.quick else 1))
    rows = [(f"capped edge, 1 file ({size / 1e6:.0f} MB, {RATE // MB} MiB/s per connection)",
             PARTS, True, False),
            (f"capped edge, 1 file ({size / 1e6:.0f} MB), cut at half, resumed",
             RESUME, False, True)]
    if shutil.which("curl") is None:
        return [h.Result(name=label, subject="-", baseline="-", value=None, target=target,
                         skipped="no curl on PATH") for label, target, _, _ in rows]
    results = []
    with h.workdir("edge") as work:
        name, sha = make_file(work / "files", size)
        env = h.bench_env(work)
        from lockkit.download.transfer import PART_MIN

        for label, target, parts, cut in rows:
            # parts: the default size (a quick run's file is smaller: a quarter of it)
            least = (min(PART_MIN, size // 4) if parts else size + 1)
            served = functools.partial(Edge, work / "files", cut=cut)
            pairs = h.measure_pairs(
                h.fresh(work, lockkit_fetch(name, sha, size, served, part_min=least)),
                h.fresh(work, curl_fetch(name, lambda: Edge(work / "files"), env)),
                opts, label)
            value = 1 / pairs.ratio if target is PARTS else pairs.ratio
            results.append(h.Result(
                name=label, subject=f"{h.median_s(pairs.subject)}",
                baseline=f"{h.median_s(pairs.baseline)} curl, one stream, uncut",
                value=value, target=target,
                note=f"{pairs.spread()} (lockkit time / curl time)"))
    return results


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("edge", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
