"""The benchmark harness runs and reports; no timing is asserted here (the numbers are
noise on a shared machine: `nox -s benchmark` is where they are judged)."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _harness as h  # noqa: E402
from _projects import synthetic_project  # noqa: E402


def bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_startup_quick_prints_a_verdict_per_target() -> None:
    done = bench("startup.py", "--quick", "--report-only", "--pairs", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.match(r"target\s+lockkit\s+baseline\s+ratio\s+limit\s+verdict$", lines[2])
    for name in ("lockkit --version (console script)", "python -m lockkit --version",
                 "compile --check"):
        row = next(ln for ln in lines if ln.startswith(name + "  "))
        assert re.search(r"\d+\.\d\dx\s+(<=) \d+(\.\d+)?x\s+(PASS|FAIL)$", row), row
    assert re.search(r"^\d of 3 targets hold", done.stdout, re.M)


@pytest.mark.slow
def test_diagnose_quick_is_a_ratio_against_importing_torch() -> None:
    done = bench("diagnose.py", "--quick", "--report-only", "--pairs", "1")
    assert done.returncode == 0, done.stderr
    row = next(ln for ln in done.stdout.splitlines()
               if ln.startswith("diagnose (real CPU torch)  "))
    assert re.search(r'python -c "import torch"\s+\d+\.\d\dx\s+<= 1\.5x\s+(PASS|FAIL)$', row) \
        or "SKIP" in row, row


def test_download_quick_times_lockkit_and_curl_on_both_cases() -> None:
    if shutil.which("curl") is None:
        pytest.skip("needs curl, the baseline")
    done = bench("download.py", "--quick", "--report-only", "--pairs", "1")
    assert done.returncode == 0, done.stderr
    for name in ("cold download (8 files, 42 MB)", "cold download (1 file, 17 MB)"):
        row = next(ln for ln in done.stdout.splitlines() if ln.startswith(name + "  "))
        assert re.search(r"curl -Z .*\d+\.\d\dx\s+>= 0\.9x\s+(PASS|FAIL)$", row), row
    assert "CPU median lockkit" in done.stdout


def test_edge_quick_times_parts_and_a_resume_against_one_curl_stream() -> None:
    if shutil.which("curl") is None:
        pytest.skip("needs curl, the baseline")
    done = bench("edge.py", "--quick", "--report-only", "--pairs", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for name, limit in (("capped edge, 1 file (13 MB, 10 MiB/s per connection)", ">= 2.5x"),
                        ("capped edge, 1 file (13 MB), cut at half, resumed", "<= 1.2x")):
        row = next(ln for ln in lines if ln.startswith(name + "  "))
        assert re.search(rf"curl, one stream, uncut\s+\d+\.\d\dx\s+{limit}\s+(PASS|FAIL)$",
                         row), row


@pytest.mark.parametrize(("verdicts", "report_only", "code"), [
    (("PASS", "PASS"), False, 0), (("PASS", "FAIL"), False, 1), (("PASS", "FAIL"), True, 0),
    (("PASS", "SKIP"), False, 0)])
def test_exit_status_is_the_verdict_unless_report_only(
        verdicts: tuple[str, ...], report_only: bool, code: int,
        capsys: pytest.CaptureFixture[str]) -> None:
    value = {"PASS": 1.0, "FAIL": 3.0, "SKIP": None}
    results = [h.Result(name=f"t{i}", subject="1 s", baseline="1 s", value=value[v],
                        target=h.Target(op="<=", limit=2), skipped="no torch" * (v == "SKIP"))
               for i, v in enumerate(verdicts)]
    assert [r.verdict for r in results] == list(verdicts)
    assert h.finish("t", results, h.Options(report_only=report_only)) == code
    assert "no torch" in capsys.readouterr().out or "SKIP" not in verdicts


@pytest.mark.slow
def test_floor_check_agrees_with_compile_check(tmp_path: Path) -> None:
    """The floor is only a floor if it does the same check: fresh, then stale after an
    input changes, then modified after a lock's packages are edited, as lockkit says."""
    from lockkit.platforms.folders import shipped_dir

    env = h.bench_env(tmp_path)
    with h.FastIndex(tmp_path / "index") as index:
        project = synthetic_project(tmp_path, index, 4)
        h.run([*h.lockkit_argv(), "compile", "--all", "--project", str(project)], env)
    lockkit = [*h.lockkit_argv(), "compile", "--check", "--project", str(project)]
    floor = [sys.executable, str(BENCH / "floor_check.py"), "--project", str(project),
             "--platforms", str(shipped_dir())]

    def both() -> list[tuple[int, str]]:
        runs = [subprocess.run(a, capture_output=True, text=True, env=env) for a in (lockkit,
                                                                                  floor)]
        return [(r.returncode, r.stderr) for r in runs]

    (lk_code, lk_err), (fl_code, fl_err) = both()
    assert (lk_code, fl_code) == (0, 0), lk_err + fl_err
    shipped = len(list(shipped_dir().glob("*.toml")))  # every shipped platform, aliases too
    assert fl_err.count(": fresh") == len(list((project / "locks").glob("*.toml"))) == shipped
    reqs = project / "requirements.in"
    reqs.write_text(reqs.read_text() + "bench-pkg-001 # a second mention changes the inputs\n")
    (lk_code, lk_err), (fl_code, fl_err) = both()
    assert (lk_code, fl_code) == (1, 1)
    assert "linux-cpu: stale" in lk_err and "linux-cpu: stale" in fl_err
    lock = project / "locks" / "pylock.linux-cpu.toml"
    lock.write_text(lock.read_text().replace('version = "1.0.0"', 'version = "1.0.1"', 1))
    (_, lk_err), (_, fl_err) = both()
    assert "linux-cpu: modified" in lk_err and "linux-cpu: modified" in fl_err


def test_a_floor_imports_the_runs_modules_but_lockkits_then_does_the_baselines_work(
        tmp_path: Path) -> None:
    """A floor row's program: the modules a lockkit run imported (its own left out), then
    the baseline's process (its exit code the program's) or script (its argv its own)."""
    import floors

    modules = floors.modules_of([*h.lockkit_argv(), "--version"], dict(os.environ))
    assert "argparse" in modules and not [m for m in modules if m.startswith("lockkit")]
    bare = floors.program(modules)
    probe = "import sys; sys.exit(0 if 'argparse' in sys.modules else 3)"
    assert subprocess.run([*bare[:2], bare[2] + probe]).returncode == 0
    assert subprocess.run(floors.program(["json"], [sys.executable, "-c", "raise SystemExit(5)"])
                          ).returncode == 5
    script = tmp_path / "argv.py"
    script.write_text("import sys; open(sys.argv[1], 'w').write(' '.join(sys.argv[2:]))\n")
    out = tmp_path / "out.txt"
    assert subprocess.run(floors.program(["json"], script=[script, out, "a", "b"])
                          ).returncode == 0
    assert out.read_text() == "a b"


def test_the_cdn_like_edge_counts_bytes_sent_and_cuts_the_answer_crossing_a_fraction(
        tmp_path: Path) -> None:
    """The edge the cuda-set rows fetch from: it counts the body bytes sent per file
    (what the cut and interrupted rows report), and cuts only the first answer that
    crosses the fraction asked, of the file asked, at that byte."""
    from edge import Edge

    (tmp_path / "a.whl").write_bytes(os.urandom(1 << 20))
    (tmp_path / "b.whl").write_bytes(os.urandom(1 << 20))
    with Edge(tmp_path, rate=64 << 20, link=128 << 20) as edge:
        assert edge.sent(cut=0.6, only="a.whl") == {}

        def get(name: str, first: int = 0) -> int:
            """The body bytes that came before the end or the cut, however it shows."""
            conn = http.client.HTTPConnection(edge.url.split("//")[1], timeout=30)
            conn.request("GET", f"/{name}", headers={"Range": f"bytes={first}-"})
            resp, got = conn.getresponse(), 0
            try:
                while piece := resp.read1(1 << 16):
                    got += len(piece)
            except (http.client.IncompleteRead, OSError):
                pass
            conn.close()
            return got

        assert get("a.whl", 1 << 19) == (1 << 20) * 6 // 10 - (1 << 19)  # cut at 60%
        assert get("a.whl") == 1 << 20  # once only
        assert get("b.whl") == 1 << 20  # that file only
        expected = {"a.whl": (1 << 20) * 16 // 10 - (1 << 19), "b.whl": 1 << 20}
        deadline = time.monotonic() + 10  # counted as each answer's handler returns
        while (sent := edge.sent()) != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sent == expected
