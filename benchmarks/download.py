"""Download target: lockkit's Fetcher against `curl -Z` on the same loopback URLs.

It times a cold download into an empty cache: each run of lockkit gets a new, empty cache
folder (every file is fetched, hashed and written, none is found), each run of curl a new,
empty folder to write into. Both fetch the same URLs from one server, a threaded
``http.server`` on 127.0.0.1 in a process of its own (it sends each file from a local
folder with ``socket.sendfile``, so it is never what either side waits for), in two cases:
  - eight files, about 500 MB in all (40 MB with --quick), eight at once: lockkit's
    ``Fetcher`` on eight threads, the largest file first (as ``wheelhouse build`` does),
    against ``curl -Z --parallel-max 8``;
  - one file of about 200 MB (16 MB with --quick).
The ratio printed is curl's time over lockkit's (1.0: as fast as curl; the target is
>= 0.9, issue 35's). curl hashes nothing; lockkit checks every sha256 as the bytes arrive. lockkit
runs in this process (its import is not timed; its HTTP client is built inside the time),
curl as a child process (its start is timed). The CPU seconds of each side are printed
too: on a shared machine the wall times stretch with the load, the CPU cost much less.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import median

import _harness as h

__all__ = ["measure"]

MB = h.MB
EIGHT_FILES_MB = (150, 100, 80, 60, 50, 30, 20, 10)  # 500 MB; the largest: torch CPU size
ONE_FILE_MB = (200,)
TARGET = h.Target(op=">=", limit=0.9)  # issue 35


def make_files(folder: Path, sizes: Sequence[int]) -> dict[str, tuple[str, int]]:
    """Files of incompressible bytes: name -> (sha256, size)."""
    block = os.urandom(16 * MB)
    made = {}
    folder.mkdir(parents=True, exist_ok=True)
    for i, size in enumerate(sizes):
        name = f"bench_file_{i:02d}-1.0-py3-none-any.whl"
        digest = hashlib.sha256()
        with (folder / name).open("wb") as out:
            written, n = 0, 0
            while written < size:
                chunk = (n.to_bytes(8, "little") + block[8:])[: size - written]
                out.write(chunk)
                digest.update(chunk)
                written, n = written + len(chunk), n + 1
        made[name] = (digest.hexdigest(), size)
    return made


def serve(folder: str) -> None:
    """The server process: files of *folder* at ``/<name>``; prints its port, then serves."""
    root = Path(folder)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            path = root / self.path.lstrip("/")
            if "/" in self.path.lstrip("/") or not path.is_file():
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(path.stat().st_size))
            self.end_headers()
            self.wfile.flush()
            with path.open("rb") as f:
                self.connection.sendfile(f)

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 128
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a client that hung up

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


_SERVE = "import sys; sys.path.insert(0, sys.argv[1]); import download; download.serve(sys.argv[2])"


class Served:
    """The server process for *folder*, stopped on exit."""

    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(Path(__file__).parent),
                                      str(folder)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


class Cpu:
    """CPU seconds (user + system) of each timed run: on a busy machine the wall times
    of both sides stretch, what each side costs stays."""

    def __init__(self) -> None:
        self.lockkit: list[float] = []
        self.curl: list[float] = []

    def __str__(self) -> str:
        return (f"CPU median lockkit {median(self.lockkit):.2f} s (all its threads), "
                f"curl {median(self.curl):.2f} s")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def lockkit_fetch(files: dict[str, tuple[str, int]], base: str,
                  cpu: list[float]) -> Callable[[Path], float]:
    """A cold fetch of every file into a new cache under the given folder, timed."""
    from lockkit.cache.store import Cache
    from lockkit.download.fetch import Fetcher, Want, http_client

    wants = sorted((Want(filename=name, sha256=sha, size=size, urls=(f"{base}/{name}",),
                         source=f"{base}/{name}") for name, (sha, size) in files.items()),
                   key=lambda w: -(w.size or 0))

    def timed(folder: Path) -> float:
        start, cpu_start = time.perf_counter(), time.process_time()
        with http_client(connections=8, timeout=60.0) as client:
            fetcher = Fetcher(client, policy=client.policy, cache=Cache(folder / "cache"))
            with ThreadPoolExecutor(max_workers=8) as pool:
                got = list(pool.map(fetcher.fetch, wants))
        seconds = time.perf_counter() - start
        cpu.append(time.process_time() - cpu_start)
        assert sum(g.downloaded for g in got) == sum(size for _, size in files.values())
        return seconds
    return timed


def curl_fetch(files: dict[str, tuple[str, int]], base: str, env: dict[str, str],
               cpu: list[float]) -> Callable[[Path], float]:
    argv = ["curl", "-Z", "--parallel-max", "8", "-s", "-S", "--fail"]
    for name in files:
        argv += ["-o", name, f"{base}/{name}"]

    def timed(folder: Path) -> float:
        cpu_start = children_cpu()  # the server, a child too, is not waited for: not in it
        seconds = h.run_timed(argv, env, cwd=folder).seconds
        cpu.append(children_cpu() - cpu_start)
        return seconds
    return timed


def case(name: str, sizes_mb: Sequence[int], opts: h.Options) -> h.Result:
    scale = 12.5 if opts.quick else 1.0
    sizes = [int(s * MB / scale) for s in sizes_mb]
    total = sum(sizes)
    label = f"{name} ({len(sizes)} file{'s' * (len(sizes) > 1)}, {total / 1e6:.0f} MB)"
    if shutil.which("curl") is None:
        return h.Result(name=label, subject="-", baseline="-", value=None,
                        target=TARGET, skipped="no curl on PATH")
    with h.workdir("download") as work:
        files = make_files(work / "files", sizes)
        env = h.bench_env(work)
        cpu = Cpu()
        with Served(work / "files") as server:
            pairs = h.measure_pairs(h.fresh(work, lockkit_fetch(files, server.url, cpu.lockkit)),
                                    h.fresh(work, curl_fetch(files, server.url, env, cpu.curl)),
                                    opts, label)
    lk, base = total / 1e6 / min(pairs.subject), total / 1e6 / min(pairs.baseline)
    return h.Result(name=label, subject=f"{h.median_s(pairs.subject)} (best {lk:.0f} MB/s)",
                    baseline=f"{h.median_s(pairs.baseline)} curl -Z (best {base:.0f} MB/s)",
                    value=1 / pairs.ratio, target=TARGET,
                    note=f"{pairs.spread()} (lockkit time / curl time); {cpu}")


def measure(opts: h.Options) -> list[h.Result]:
    return [case("cold download", EIGHT_FILES_MB, opts),
            case("cold download", ONE_FILE_MB, opts)]


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("download", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
