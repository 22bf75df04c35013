"""Every benchmark target (issues 16 and 44, and diagnose's of issue 26), one after another, and
one summary table.

`nox -s benchmark` runs this. Each benchmark is also a script of its own
(`python benchmarks/startup.py --quick`, ...). A benchmark that cannot run (its setup
failed) is one FAIL row saying why, and the others still run. Exit 0 when every target
holds (a skipped one, such as verify without the real torch wheel, does not fail), 1 if
any fails, 0 always with --report-only.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import _harness as h
import compile as compile_
import cudaset
import diagnose
import download
import edge
import rss
import startup
import verify
import wheelhouse

__all__ = ["BENCHMARKS", "main"]

BENCHMARKS: dict[str, Callable[[h.Options], list[h.Result]]] = {
    "startup": startup.measure, "compile": compile_.measure, "wheelhouse": wheelhouse.measure,
    "download": download.measure, "edge": edge.measure, "cudaset": cudaset.measure,
    "rss": rss.measure,
    "verify": verify.measure,
    "diagnose": diagnose.measure,
}


def run_one(name: str, measure: Callable[[h.Options], list[h.Result]],
            opts: h.Options) -> list[h.Result]:
    start = time.perf_counter()
    print(f"== {name}", file=sys.stderr)
    try:
        results = measure(opts)
    except SystemExit as exc:  # a setup step failed: say so as a row, go on
        why = str(exc.code).splitlines()[0] if exc.code else "failed"
        results = [h.Result(name=name, subject="-", baseline="-", value=float("nan"),
                            target=h.Target(op="<=", limit=0), note=f"could not run: {why}")]
    print(f"== {name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    h.print_table(name, results)
    return results


def main() -> int:
    opts = h.cli(__doc__ or "")
    results = [r for name, measure in BENCHMARKS.items() for r in run_one(name, measure, opts)]
    return h.finish("summary: the targets of issues 16, 35 and 44", results, opts)


if __name__ == "__main__":
    sys.exit(main())
