"""The floor a row's target meets in lockkit's design: its dependencies without lockkit.

For a lockkit command, the floor is a bare ``python -c`` that imports, in the same order,
every module the command's run imported that is not lockkit's own (the standard library's,
packaging's, httpx's...: read from the run's ``-X importtime``), then does the row's
baseline work from there (bare uv's compile, curl's download, ``cp -al``, the standard
library's ``--check``) or nothing (``python -c pass``). Any program that
needs those modules pays this much; lockkit's own code (its modules, parsing, checks,
writing) comes on top. A floor that alone misses its row's target says that the target
needs fewer dependencies or standard-library modules on that path, not less lockkit code.

The floor takes its modules before its work. A compile imports part of them while uv
runs (the lock writer's), so its floor is not a bound on every design: one that started
uv before importing what uv does not wait on could go below it. What uv waits on is most
of them: the config and platform files read (tomllib), the inputs validated (packaging),
the routing index serving (http.server, which imports ssl through http.client).

Shown as INFO rows (never a FAIL) under the rows they explain, measured in pairs against
the same baseline as the row itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence

import _harness as h

__all__ = ["modules_of", "program", "row"]

# Each import attempted in the run's order; one that failed there (a platform's module,
# an optional accelerator) fails here too and is passed over, as the run passed it over.
_IMPORTS = """for name in {modules!r}:
    try:
        __import__(name)
    except ImportError:
        pass
"""
_THEN = """import subprocess, sys
sys.exit(subprocess.run({then!r}).returncode)
"""
_SCRIPT = """import runpy, sys
sys.argv = {argv!r}
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def modules_of(argv: Sequence[str | os.PathLike[str]], env: dict[str, str],
               cwd: os.PathLike[str] | None = None) -> list[str]:
    """The modules *argv*'s run imports that are not lockkit's, in import order (the run
    is made once, with ``PYTHONPROFILEIMPORTTIME``; it must succeed)."""
    done = subprocess.run([os.fspath(a) for a in argv], env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
                          cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"benchmark: exit {done.returncode} reading the imports of "
                         f"{' '.join(os.fspath(a) for a in argv)}\n{done.stderr[-3000:]}")
    names: list[str] = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and not line.endswith("imported package"):
            name = line.rsplit("|", 1)[-1].strip()
            if name.split(".")[0] != "lockkit" and name not in names:
                names.append(name)
    return names


def program(modules: Sequence[str], then: Sequence[str | os.PathLike[str]] = (), *,
            script: Sequence[str | os.PathLike[str]] = ()) -> list[str]:
    """``python -c``: import *modules*, then run the process *then* and exit with its
    code, or run the Python *script* (its path, then its arguments) in this interpreter."""
    code = _IMPORTS.format(modules=list(modules))
    if then:  # subprocess after the run's own modules (imported by then, when it ran any)
        code += _THEN.format(then=[os.fspath(a) for a in then])
    if script:
        code += _SCRIPT.format(argv=[os.fspath(a) for a in script])
    return [sys.executable, "-c", code]


def row(of: str, limit: h.Target, floor: Callable[[], float], baseline: Callable[[], float],
        baseline_text: str, modules: int, opts: h.Options, then: str = "") -> h.Result:
    """The INFO row under the row *of*: *floor* against the row's *baseline*, in pairs."""
    pairs = h.measure_pairs(floor, baseline, opts, f"floor of {of}")
    ratio = pairs.ratio if limit.op == "<=" else 1 / pairs.ratio  # a throughput row: >=
    work = f", then {then}" if then else ""
    return h.Result(name=f"  floor: {of}", subject=h.median_s(pairs.subject),
                    baseline=f"{h.median_s(pairs.baseline)} {baseline_text}", value=ratio,
                    target=limit, info=True,
                    note=f"floor: the run's {modules} modules that are not lockkit's, bare"
                         f"{work}; {pairs.spread()}")
