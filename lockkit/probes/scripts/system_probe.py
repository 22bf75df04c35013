"""Record the system chain of the interpreter running this script, as one JSON object.

Standalone on purpose: it runs *inside the venv under test* (``python -I system_probe.py``),
where lockkit is not installed, so it uses the standard library, torch and numpy only.
Run with ``-I``, it cannot import a sibling file: it loads its parts from its own folder
by path, the host tools (``system_tools.py``: drivers, toolchain), torch's facts
(``system_torch.py``) and, with ``--then-gpu``, ``gpu_probe.py``; the small helpers they
share are repeated in each. Each field is collected on its own: one that fails
becomes ``{"error": ...}`` and the others still come out, so a partial torch (or a fake
one in the tests) gives a partial report, never a crash. The script always exits 0 when
it can print; the host judges.

Top-level keys: probe, schema, os, arch, libc, cpu, python, driver, torch, numpy, settings,
toolchain (the compilers and build tools a compiled extension needs, each with its
version or "not found"), collect_env (``torch.utils.collect_env.get_env_info()``, run in
a child process capped at COLLECT_ENV_TIMEOUT: its ``run`` has no timeout of its own).
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

SCHEMA = 1
COLLECT_ENV_TIMEOUT = 60
PENDING = "runs beside the GPU checks; reported after them"
# The child leads its own session (the probe kills it with whatever it ran). It starts
# before the probe imports torch, so it must not outlive the probe if the probe is killed
# (lockkit's timeout kills the probe's group, not this session): a watchdog thread ends
# the session when the parent is gone.
_COLLECT_ENV = """
import json, os, signal, threading, time
parent = os.getppid()
def watch():
    while os.getppid() == parent:
        time.sleep(0.1)
    os.killpg(0, signal.SIGKILL)
if hasattr(os, "killpg"):  # POSIX; on Windows the child is not in a session of its own
    threading.Thread(target=watch, daemon=True).start()
import torch.utils.collect_env as c
print(json.dumps(c.get_env_info()._asdict(), default=str))
"""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def attempt(get: Callable[[], Any]) -> Any:
    """One value; its failure (AttributeError on an old or partial torch) is the value."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - any failure is data for the host
        return {"error": first_line(exc)}


def os_info() -> dict[str, Any]:
    info: dict[str, Any] = {"system": platform.system(), "kernel": platform.release(),
                            "version": platform.version(), "distro": None}
    if hasattr(platform, "freedesktop_os_release"):  # Python 3.10+, Linux only
        try:
            info["distro"] = platform.freedesktop_os_release().get("PRETTY_NAME")
        except OSError:
            pass
    if platform.system() == "Darwin":
        info["distro"] = f"macOS {platform.mac_ver()[0]}"
    elif platform.system() == "Windows":
        info["distro"] = f"Windows {platform.win32_ver()[1]}"
    return info


def libc_info() -> dict[str, str | None]:
    name, version = platform.libc_ver()
    return {"name": name or None, "version": version or None}


def cpu_info() -> dict[str, Any]:
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        model = platform.processor() or None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"model": model, "count": os.cpu_count(), "usable": usable}


def python_info() -> dict[str, Any]:
    return {"version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable, "prefix": sys.prefix,
            "base_prefix": sys.base_prefix, "in_venv": sys.prefix != sys.base_prefix,
            "isolated": bool(sys.flags.isolated)}


class CollectEnv:
    """torch's own environment report, in a child process of its own session: it runs
    nvidia-smi, conda and pip without a timeout, so the whole group is killed at ours.

    Started before this process imports torch and read after: the child imports torch
    too (about a second), on the other core, instead of after this process's import."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        prefix = getattr(sys, "pycache_prefix", None)  # the same bytecode folder as ours
        argv = [sys.executable, "-I", *(["-X", f"pycache_prefix={prefix}"] if prefix else []),
                "-c", _COLLECT_ENV]
        try:
            self.proc: subprocess.Popen[str] | None = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL, text=True, start_new_session=os.name != "nt")
            self.error = None
        except OSError as exc:
            self.proc, self.error = None, first_line(exc)

    def result(self, timeout: float = COLLECT_ENV_TIMEOUT) -> dict[str, Any]:
        if self.proc is None:
            return {"error": self.error}
        proc = self.proc
        try:
            out, err = proc.communicate(
                timeout=max(0.0, timeout - (time.perf_counter() - self.start)))
        except subprocess.TimeoutExpired:
            self.stop()
            return {"error": f"timed out after {timeout:g}s"}
        seconds = round(time.perf_counter() - self.start, 2)
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            last = (err.strip().splitlines() or ["no output"])[-1]
            return {"error": f"exited {proc.returncode}: {last[:300]}", "seconds": seconds}
        return {"info": json.loads(lines[-1]), "seconds": seconds}

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if os.name != "nt":
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.kill()
        self.proc.communicate()


def import_torch() -> tuple[Any | None, dict[str, Any] | None]:
    try:
        import torch
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken torch is the finding
        return None, {"error": f"import torch failed: {first_line(exc)}"}
    return torch, None


def collect(env_mode: str = "wait") -> tuple[dict[str, Any], CollectEnv | None]:
    """The report, and collect_env still running when *env_mode* is ``beside`` (the GPU
    checks run next, in this process: its report is printed last, as its own line, so it
    runs beside them, not before). ``wait``: it is waited for and kept in the report;
    ``skip``: it is not run (diagnose asks for it only when the GPU step fails).

    The driver and toolchain tools (nvidia-smi, compilers: subprocesses, each waited for
    with the GIL released) run in a second thread while this one imports torch."""
    report: dict[str, Any] = {"probe": "system", "schema": SCHEMA, "os": attempt(os_info),
                              "arch": platform.machine(), "libc": attempt(libc_info),
                              "cpu": attempt(cpu_info), "python": attempt(python_info)}
    host_tools, torch_facts = _sibling("system_tools"), _sibling("system_torch")
    env_report = CollectEnv() if env_mode != "skip" else None
    with ThreadPoolExecutor(max_workers=1) as tools:
        driver = tools.submit(attempt, host_tools.driver_info)
        toolchain = tools.submit(attempt, host_tools.toolchain_info)
        torch, failure = import_torch()
        report["driver"] = driver.result()
        report["torch"] = failure or attempt(lambda: torch_facts.torch_info(torch))
        report["numpy"] = attempt(torch_facts.numpy_info)
        report["settings"] = attempt(lambda: torch_facts.settings_info(torch))
        report["toolchain"] = toolchain.result()
    if env_report is None:
        report["collect_env"] = {"skipped": "not asked for (run with --collect-env)"}
    elif torch is None:
        env_report.stop()
        report["collect_env"] = {"error": "torch is not importable"}
    elif env_mode == "beside":
        report["collect_env"] = {"pending": PENDING}
        return report, env_report
    else:
        report["collect_env"] = attempt(env_report.result)
    return report, None


def gpu_argv(args: list[str], report: dict[str, Any]) -> list[str]:
    """``--expect auto`` (diagnose without --expect): the build this report found."""
    torch = report.get("torch")
    build = torch.get("build") if isinstance(torch, dict) else None
    return [str(build or "cpu") if a == "auto" and args[i - 1 : i] == ["--expect"] else a
            for i, a in enumerate(args)]


def _sibling(name: str) -> Any:
    """Another script of this folder, by path (``-I`` keeps the folder off ``sys.path``)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"lockkit_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    """Print the report as the only thing on stdout, whatever the libraries print.

    ``--then-gpu ARGS...``: then run gpu_probe.py's checks with ARGS in this same process
    (torch is imported once), printing its report as a second line. The system report is
    flushed first, so a GPU check that hangs or crashes still leaves it behind. Its
    ``collect_env`` is then ``{"pending": ...}``: torch's report runs beside the GPU
    checks and comes last, as ``{"probe": "collect_env", ...}`` (the host puts it back).
    ``--expect auto`` among ARGS stands for the torch build this report found.
    ``--no-collect-env`` first: torch's report is not run. ``--collect-env`` alone: only
    torch's report, as ``{"probe": "collect_env", ...}``.
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--collect-env"]:  # torch's own report only, as one line
        return write({"probe": "collect_env", **attempt(CollectEnv().result)})
    env_mode = "skip" if argv[:1] == ["--no-collect-env"] else "wait"
    argv = argv[1:] if env_mode == "skip" else argv
    then_gpu = argv[:1] == ["--then-gpu"]
    env_mode = "beside" if then_gpu and env_mode == "wait" else env_mode
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # C-level chatter from drivers or torch goes to stderr
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report, pending = collect(env_mode)
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(real_stdout)
    write(report)
    if not then_gpu:
        return 0
    code = int(_sibling("gpu_probe").main(gpu_argv(argv[1:], report)))
    if pending is not None:
        write({"probe": "collect_env", **attempt(pending.result)})
    return code


def write(report: dict[str, Any]) -> int:
    sys.stdout.write(json.dumps(report, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
