"""What every benchmark shares: paired timing, the verdict table, a fast loopback index.

A target is a ratio against a baseline measured in the same run: the subject and the
baseline run in pairs, interleaved (ABBA order, so a drift of the machine's load falls on
both sides), after warm-up pairs that are not counted; the ratio is median over median.
Each script's ``main`` prints its table; ``run_all.py`` prints every script's rows as one.
Exit status: 0 when every target passes (a skipped one does not fail), 1 otherwise, and
always 0 with ``--report-only``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

__all__ = ["fresh", "guard", "Options", "Result", "Sample", "Pairs", "Target", "FastIndex",
           "bench_env", "cli", "finish", "lockkit_argv", "measure_pairs", "median_s", "peak_rss",
           "print_table", "run", "run_timed", "synthetic_wheel", "workdir"]

ROOT = Path(__file__).resolve().parents[1]
MB = 1 << 20


@dataclass(frozen=True, kw_only=True)
class Options:
    quick: bool = False  # fewer pairs, smaller files: proves the harness, decides nothing
    report_only: bool = False
    pairs: int = 11
    warmup: int = 1


def cli(doc: str, argv: Sequence[str] | None = None) -> Options:
    """The flags every benchmark takes."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 pairs and small files: checks that the benchmark runs")
    parser.add_argument("--report-only", action="store_true",
                        help="print the table, exit 0 whatever the verdicts")
    parser.add_argument("--pairs", type=int, default=None,
                        help="measured pairs per target (default 11, 3 with --quick)")
    args = parser.parse_args(argv)
    pairs = args.pairs or (3 if args.quick else 11)
    return Options(quick=args.quick, report_only=args.report_only, pairs=max(1, pairs))


@dataclass(frozen=True, kw_only=True)
class Target:
    """``ratio <op> limit``, e.g. ``<= 2.5``; ``absolute`` when the limit is a plain value."""

    op: str  # "<=", ">=", "<"
    limit: float

    def holds(self, value: float) -> bool:
        return {"<=": value <= self.limit, ">=": value >= self.limit,
                "<": value < self.limit}[self.op]

    def __str__(self) -> str:
        return f"{self.op} {self.limit:g}"


def guard(recorded: float) -> Target:
    """A row that is no longer a target (its floor, the dependencies' own imports, is
    accepted): it fails only when it gets worse than *recorded*, the ratio it had when it
    became a guard (issue 35's closing run), by more than 10%."""
    return Target(op="<=", limit=round(recorded * 1.1, 2))


@dataclass(frozen=True, kw_only=True)
class Result:
    """One row of the verdict table."""

    name: str
    subject: str  # e.g. "0.081 s" (median)
    baseline: str  # e.g. "0.010 s python -c pass" or "10.2 s (recorded)"
    value: float | None  # the ratio (or absolute value) compared with the target
    target: Target
    unit: str = "x"
    note: str = ""
    skipped: str = ""  # why it could not be measured here
    info: bool = False  # shown for comparison, not a target: never a FAIL

    @property
    def verdict(self) -> str:
        if self.skipped or self.value is None:
            return "SKIP"
        if self.info:
            return "INFO"
        return "PASS" if self.target.holds(self.value) else "FAIL"


@dataclass(frozen=True)
class Sample:
    seconds: float
    maxrss_kib: int = 0  # the child's peak resident set (Linux: KiB)


@dataclass
class Pairs:
    subject: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.subject) / statistics.median(self.baseline)

    def spread(self) -> str:
        """The interquartile range of the per-pair ratios: how much to trust the median."""
        ratios = sorted(s / b for s, b in zip(self.subject, self.baseline, strict=True))
        if len(ratios) < 4:
            return f"pair ratios {ratios[0]:.2f}-{ratios[-1]:.2f}"
        q = statistics.quantiles(ratios, n=4)
        return f"pair ratios IQR {q[0]:.2f}-{q[2]:.2f}"


def measure_pairs(subject: Callable[[], float], baseline: Callable[[], float],
                  opts: Options, label: str = "") -> Pairs:
    """Warm-up pairs (not kept), then ``opts.pairs`` pairs in ABBA order."""
    for _ in range(opts.warmup):
        subject()
        baseline()
    pairs = Pairs()
    for i in range(opts.pairs):
        if i % 2 == 0:
            pairs.subject.append(subject())
            pairs.baseline.append(baseline())
        else:
            pairs.baseline.append(baseline())
            pairs.subject.append(subject())
    if label:
        print(f"  {label}: {median_s(pairs.subject)} vs {median_s(pairs.baseline)} "
              f"-> {pairs.ratio:.2f}x ({pairs.spread()})", file=sys.stderr)
    return pairs


def fresh(work: Path, timed: Callable[[Path], float]) -> Callable[[], float]:
    """*timed* given a new empty folder each call, removed after (untimed)."""
    def call() -> float:
        folder = Path(tempfile.mkdtemp(dir=work))
        try:
            return timed(folder)
        finally:
            shutil.rmtree(folder)
    return call


def median_s(values: list[float]) -> str:
    return f"{statistics.median(values):.4f} s"


def run_timed(argv: Sequence[str | os.PathLike[str]], env: dict[str, str] | None = None,
              cwd: Path | None = None, ok: Sequence[int] = (0,)) -> Sample:
    """Wall time and peak RSS of one child (``os.wait4``: that child's own rusage)."""
    start = time.perf_counter()
    proc = subprocess.Popen([os.fspath(a) for a in argv], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()  # a child that writes much to stderr must not block on it
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode not in ok:
        shown = " ".join(os.fspath(a) for a in argv)
        raise SystemExit(f"benchmark: exit {proc.returncode}: {shown}\n"
                         f"{err.decode(errors='replace')[-3000:]}")
    return Sample(elapsed, usage.ru_maxrss)


# Linux keeps the largest resident set a process had across exec, and a child made by fork
# or vfork starts with its parent's: the benchmark process (100 MB after making a big file)
# would be counted as lockkit's peak. So a small fresh interpreter starts lockkit, and
# reports the peak os.wait4 gives it for that grandchild, which starts from the small one.
_PEAK_WRAPPER = """import os, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss(argv: Sequence[str | os.PathLike[str]], env: dict[str, str], work: Path) -> Sample:
    """Wall time and peak RSS (KiB) of *argv* itself (its first item an absolute path)."""
    report = work / "peak-rss.txt"
    sample = run_timed([sys.executable, "-c", _PEAK_WRAPPER, report, *argv], env)
    return Sample(sample.seconds, int(report.read_text()))


def run(argv: Sequence[str | os.PathLike[str]], env: dict[str, str] | None = None,
        cwd: Path | None = None) -> None:
    """An untimed setup step; its failure ends the benchmark with the child's stderr."""
    run_timed(argv, env, cwd)


def lockkit_argv(console_script: bool = False) -> list[str]:
    """``python -m lockkit`` with this interpreter, or the venv's ``lockkit`` script."""
    if console_script:
        script = Path(sys.executable).parent / ("lockkit.exe" if os.name == "nt" else "lockkit")
        if not script.is_file():
            raise SystemExit(f"benchmark: no console script {script}: install lockkit into "
                             "this interpreter's venv (pip install -e .)")
        return [str(script)]
    return [sys.executable, "-m", "lockkit"]


def bench_env(work: Path) -> dict[str, str]:
    """The environment of both sides: no pip/uv configuration of this machine, and a uv
    cache of the benchmark's own (lockkit passes UV_CACHE_DIR on to uv; both sides share
    it, so neither is the one that warms it)."""
    from lockkit._internal.proc import isolated_env  # lockkit's one definition, for both sides

    return isolated_env({"UV_CACHE_DIR": str(work / "uv-cache")})


@contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    """A temp folder removed afterwards whatever happens (the 2 GB file lives here)."""
    path = Path(tempfile.mkdtemp(prefix=f"lockkit-bench-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def print_table(title: str, results: Sequence[Result], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    rows = [("target", "lockkit", "baseline", "ratio", "limit", "verdict")]
    for r in results:
        value = "-" if r.value is None else f"{r.value:.2f}{r.unit}"
        limit = "-" if r.info else f"{r.target}{r.unit}"
        rows.append((r.name, r.subject, r.baseline, value, limit, r.verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print(f"\n{title}", file=out)
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
              file=out)
        if i == 0:
            print("  ".join("-" * w for w in widths), file=out)
    for r in results:
        if r.skipped or r.note:
            print(f"  {r.name}: {r.skipped or r.note}", file=out)
    out.flush()  # piped (nox), stdout is buffered and stderr is not: keep them in order


def finish(title: str, results: Sequence[Result], opts: Options) -> int:
    """Print the table; the exit status is the verdict unless --report-only."""
    print_table(title + (" (--quick: indicative only)" if opts.quick else ""), results)
    failed = [r.name for r in results if r.verdict == "FAIL"]
    skipped = [r.name for r in results if r.verdict == "SKIP"]
    judged = [r for r in results if r.verdict != "INFO"]
    print(f"\n{len(judged) - len(failed) - len(skipped)} of {len(judged)} targets hold"
          + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; skipped: {', '.join(skipped)}" if skipped else ""))
    return 0 if opts.report_only or not failed else 1


# --- wheels and a loopback index that is never the bottleneck ------------------------------

def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def synthetic_wheel(dest: Path, name: str, version: str, *, tag: str = "py3-none-any",
                    size: int = 0, requires: Sequence[str] = ()) -> Path:
    """A valid wheel (RECORD, METADATA, WHEEL, as tests/support/index_server.build_wheel writes
    them) with *size* bytes of incompressible payload, stored and written in 16 MiB
    chunks: a 2 GB wheel costs its disk writes, never its size in memory."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    small = {f"{dist}/__init__.py": f"__version__ = {version!r}\n".encode(),
             f"{info}/METADATA": ("\n".join(meta) + "\n").encode(),
             f"{info}/WHEEL": ("Wheel-Version: 1.0\nGenerator: lockkit-bench\n"
                               f"Root-Is-Purelib: true\nTag: {tag}\n").encode()}
    record = [f"{arc},sha256={_b64(hashlib.sha256(d).digest())},{len(d)}"
              for arc, d in small.items()]
    path = dest / f"{dist}-{version}-{tag}.whl"
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for arc, data in small.items():
            zf.writestr(zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0)), data)
        if size:
            arc = f"{dist}/_payload.bin"
            record.append(f"{arc},sha256={_write_payload(zf, arc, size)},{size}")
        record.append(f"{info}/RECORD,,")
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)),
                    "\n".join(record) + "\n")
    return path


def _write_payload(zf: zipfile.ZipFile, arc: str, size: int) -> str:
    """Random 16 MiB blocks, each XORed with its index so no two repeat (nothing on the
    way can compress them); returns the RECORD hash."""
    block = os.urandom(16 * MB)
    digest = hashlib.sha256()
    info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
    with zf.open(info, "w", force_zip64=size >= 0x7FFFFFFF) as out:
        written, n = 0, 0
        while written < size:
            chunk = (block[:8] + n.to_bytes(8, "little") + block[16:])[: size - written]
            out.write(chunk)
            digest.update(chunk)
            written, n = written + len(chunk), n + 1
    return _b64(digest.digest())


class FastIndex:
    """PEP 503 pages and files on 127.0.0.1, made to keep up with curl: a threading
    server with a listen backlog of 128 (uv and curl open connections in bursts; the
    default 5 drops SYNs), file bodies sent with ``socket.sendfile`` (no copy through
    Python), sha256 of each file taken once when it is added. Prefixes such as
    ``/simple`` or ``/whl/cpu`` each hold projects; ``add`` hard-links a file in.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, tuple[Path, str]] = {}  # URL path -> (file, sha256)
        self.pages: dict[str, list[str]] = {}  # "/simple/<project>/" -> URL paths
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real indexes serve

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                index.answer(self)

            def do_HEAD(self) -> None:  # uv asks before it reads a wheel's metadata
                index.answer(self, head=True)

        class Server(http.server.ThreadingHTTPServer):
            request_queue_size = 128
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that hung up

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def add(self, prefix: str, wheel: Path) -> str:
        """Serve *wheel* under ``<prefix>/<project>/``; returns its URL."""
        project = wheel.name.split("-", 1)[0].replace("_", "-").lower()
        folder = self.root / prefix.strip("/").replace("/", "_") / project
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / wheel.name
        if not dest.exists():
            os.link(wheel, dest)
        url_path = f"{prefix.rstrip('/')}/{project}/{wheel.name}"
        if url_path in self.files:
            return self.url + url_path
        self.files[url_path] = (dest, _sha256(dest))
        self.pages.setdefault(f"{prefix.rstrip('/')}/{project}/", []).append(url_path)
        return self.url + url_path

    def answer(self, handler: http.server.BaseHTTPRequestHandler, head: bool = False) -> None:
        path = handler.path.split("?", 1)[0].split("#", 1)[0]
        if path in self.files:
            self._send_file(handler, self.files[path][0], head)
            return
        links = self.pages.get(path if path.endswith("/") else path + "/")
        if links is None:
            self._send(handler, 404, b"not found", "text/plain", head)
            return
        body = "".join(f'<a href="{p}#sha256={self.files[p][1]}">{p.rsplit("/", 1)[1]}</a>\n'
                       for p in links)
        self._send(handler, 200, f"<!DOCTYPE html><html><body>\n{body}</body></html>\n"
                   .encode(), "text/html", head)

    @staticmethod
    def _send(handler: http.server.BaseHTTPRequestHandler, code: int, body: bytes,
              ctype: str, head: bool) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            handler.wfile.write(body)

    @staticmethod
    def _send_file(handler: http.server.BaseHTTPRequestHandler, path: Path, head: bool) -> None:
        size = path.stat().st_size
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(size))
        handler.end_headers()
        handler.wfile.flush()
        if head:
            return
        with path.open("rb") as f:
            handler.connection.sendfile(f)

    def __enter__(self) -> FastIndex:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(MB), b""):
            digest.update(chunk)
    return digest.hexdigest()

