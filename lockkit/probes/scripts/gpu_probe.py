"""Check that the torch in this interpreter is the expected build and reaches the device.

Standalone on purpose: run inside the venv under test (``python -I gpu_probe.py --expect
cuda --cuda 12.6 --device cuda``) with the standard library, torch and numpy only. The
companion checks (``gpu_companions.py``) and ``--extensions`` (``gpu_extensions.py``) are
scripts of their own beside it, loaded from this file's folder by path.
Three sub-checks, in order, each ``passed``, ``failed``, ``error`` (it raised) or
``skipped``, and each that did not pass carries an ``error`` (or ``reason``) line:

1. ``build``  - the wheel is built for the backend (CUDA version, ROCm's
   ``torch.version.hip``, Intel XPU's ``torch.xpu``, CPU, MPS);
2. ``device`` - the expected device is visible (no CPU fallback is ever taken);
3. ``matmul`` - a seeded float32 product on the device agrees with a float64 CPU one
   within the tolerance recorded in the output;
4. ``torchvision`` / ``torchaudio`` (``--vision`` / ``--audio``: the lock has them;
   ``--installed``: whichever is installed, as ``lockkit diagnose`` has no lock) - the
   companion reports the CUDA (or, on ROCm, the local label) torch reports, and one of
   its compiled ops runs on the device and agrees with the CPU (``skipped``: not locked,
   or not installed).

A later check is skipped when an earlier one of the first three did not pass. One JSON
object goes to stdout and the exit code is 0 whenever the script could run: the host
judges.

``--extensions FILE``: instead, import each module the JSON list in FILE names
(``[{"module": ..., "smoke": ...}]``) and evaluate its smoke expression with ``torch``,
``device`` and ``module`` bound, printing one JSON line per module as it ends, so a
hang or crash in one still leaves the others' results (``probe: "extensions"``); with
``--no-torch`` after them (a lock without torch), torch is not imported (bound to None).

Top-level keys: probe, schema, args, torch, checks (build, device, matmul, torchvision,
torchaudio).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

SCHEMA = 1
SEED = 20240617
CHECKS = ("build", "device", "matmul", "torchvision", "torchaudio")
CORE = 3  # the checks a later one needs; the companions do not block each other
REFUSAL = "lockkit refuses a CPU fallback"
TOLERANCE_RULE = "|device - reference| <= atol + rtol * |reference| for every element"
TOLERANCE_WHY = ("float32 accumulation over inputs in [-1, 1] errs by about 1e-5 at the "
                 "default size 256; a wrong kernel or silently reduced precision (TF32, fp16 "
                 "reductions) typically exceeds it")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def version_matches(got: str | None, want: str | None) -> bool:
    """'12.6' matches '12.6' and '12.6.3'; '6.2' matches '6.2.41133-dd7f95766'."""
    if want is None:
        return got is not None
    if got is None:
        return False
    wanted = want.split(".")
    return got.split(".")[: len(wanted)] == wanted


def describe_build(cuda: str | None, hip: str | None, mps_built: bool,
                   xpu_built: bool = False) -> str:
    if xpu_built:
        return "an XPU build (torch.xpu)"
    if hip:
        return f"a ROCm build (torch.version.hip={hip}, torch.version.cuda={cuda})"
    if cuda:
        return f"a CUDA {cuda} build (torch.version.hip=None)"
    return "an MPS build" if mps_built else "a CPU-only build (no CUDA, no HIP)"


def wanted_build(args: argparse.Namespace) -> str:
    source = f" ({args.source})" if getattr(args, "source", None) else ""
    if args.expect == "cuda":
        return (f"a CUDA {args.cuda} build" if args.cuda else "a CUDA build") + source
    if args.expect == "rocm":
        return (f"a ROCm {args.hip} build" if args.hip else "a ROCm build") + source
    if args.expect == "xpu":
        return "an XPU build"
    return "an MPS build" if args.expect == "mps" else "a CPU-only build"


def build_check(torch: Any, args: argparse.Namespace) -> dict[str, Any]:
    cuda, hip = torch.version.cuda, getattr(torch.version, "hip", None)
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    mps_built = bool(mps is not None and mps.is_built())
    # An XPU build: torch.xpu._is_compiled() (torch/xpu/__init__.py), else torch.version.xpu.
    xpu = getattr(torch, "xpu", None)
    xpu_built = bool(optional(lambda: xpu._is_compiled()) if xpu is not None else False) or \
        bool(getattr(torch.version, "xpu", None))
    if args.expect == "cuda":  # a ROCm wheel also answers torch.cuda: hip must be unset
        ok = version_matches(cuda, args.cuda) and not hip
    elif args.expect == "rocm":
        ok = version_matches(hip, args.hip)
    elif args.expect == "mps":
        ok = mps_built
    elif args.expect == "xpu":
        ok = xpu_built and not cuda and not hip
    else:
        ok = not cuda and not hip and not xpu_built
    result: dict[str, Any] = {"status": "passed" if ok else "failed", "expected": args.expect,
                              "expected_cuda": args.cuda, "expected_hip": args.hip,
                              "torch": torch.__version__, "cuda": cuda, "hip": hip,
                              "mps_built": mps_built, "xpu_built": xpu_built}
    if not ok:
        built = describe_build(cuda, hip, mps_built, xpu_built)
        result["error"] = f"torch {torch.__version__} is {built}; expected {wanted_build(args)}"
    return result


def optional(get: Callable[[], Any]) -> Any:
    try:
        return get()
    except Exception:  # noqa: BLE001 - a fact for the report, never the verdict
        return None


def gpu_facts(torch: Any) -> dict[str, Any]:
    """Name, capability and arch of device 0; on ROCm the name proves nothing about vendor."""
    props = optional(lambda: torch.cuda.get_device_properties(0))
    return {"name": optional(lambda: torch.cuda.get_device_name(0)),
            "capability": optional(lambda: "{}.{}".format(*torch.cuda.get_device_capability(0))),
            "arch": getattr(props, "gcnArchName", None) or None,
            # a hint for "no kernel image is available" errors
            "arch_list": optional(lambda: list(torch.cuda.get_arch_list()))}


def unreachable(what: str, why: str) -> str:
    return f"the expected {what} is unreachable ({why}); {REFUSAL}"


def device_check(torch: Any, args: argparse.Namespace) -> dict[str, Any]:
    if args.device == "cpu":
        return {"status": "passed", "device": "cpu", "name": platform.processor() or "cpu"}
    if args.device == "mps":
        ok = bool(torch.backends.mps.is_available())
        result: dict[str, Any] = {"status": "passed" if ok else "failed", "device": "mps",
                                  "mps_available": ok}
        if not ok:
            result["error"] = unreachable("MPS device", "torch.backends.mps.is_available() is "
                                          "False")
        return result
    if args.device == "xpu":
        return xpu_device_check(torch)
    available = bool(torch.cuda.is_available())
    count = int(torch.cuda.device_count()) if available else 0
    result = {"status": "passed" if count > 0 else "failed",
              "device": "cuda:0", "cuda_available": available,
                              "device_count": count}
    if count > 0:
        result.update(gpu_facts(torch))
    else:
        what = "ROCm GPU" if args.expect == "rocm" else "GPU"
        result["error"] = unreachable(what, f"torch.cuda.is_available() is {available}, "
                                      f"{count} devices")
    return result


def xpu_device_check(torch: Any) -> dict[str, Any]:
    """Intel GPUs answer torch.xpu, not torch.cuda; devices are named xpu."""
    available = bool(torch.xpu.is_available())
    count = int(torch.xpu.device_count()) if available else 0
    result = {"status": "passed" if count > 0 else "failed", "device": "xpu:0",
              "xpu_available": available, "device_count": count}
    if count > 0:
        result["name"] = optional(lambda: torch.xpu.get_device_name(0))
    else:
        result["error"] = unreachable("XPU device", f"torch.xpu.is_available() is {available}, "
                                      f"{count} devices")
    return result


def seeded_inputs(torch: Any, size: int) -> tuple[Any, Any, Any, str]:
    """float32 inputs and their float64 product, computed on the CPU, numpy when present."""
    try:
        import numpy as np
    except ImportError:
        gen = torch.Generator().manual_seed(SEED)
        a, b = ((torch.rand(size, size, generator=gen, dtype=torch.float64) * 2 - 1).float()
                for _ in range(2))
        return a, b, a.double() @ b.double(), "torch cpu float64"
    rng = np.random.default_rng(SEED)
    a, b = (rng.uniform(-1.0, 1.0, (size, size)).astype(np.float32) for _ in range(2))
    reference = a.astype(np.float64) @ b.astype(np.float64)
    return torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(reference), "numpy float64"


def matmul_check(torch: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Like numpy.allclose: the rule and both tolerances go into the report."""
    device = f"{args.device}:0" if args.device in ("cuda", "xpu") else args.device
    a, b, reference, source = seeded_inputs(torch, args.size)
    start = time.perf_counter()
    got = (a.to(device) @ b.to(device)).cpu().double()  # .cpu() waits for the device
    seconds = time.perf_counter() - start
    error = (got - reference).abs()
    finite = bool(torch.isfinite(got).all())
    within = bool((error <= args.atol + args.rtol * reference.abs()).all())
    result: dict[str, Any] = {
        "status": "passed" if finite and within else "failed", "device": device,
        "size": args.size, "dtype": "float32", "seed": SEED, "reference": source,
        "max_abs_error": float(error.max()), "max_abs_reference": float(reference.abs().max()),
        "tolerance": {"atol": args.atol, "rtol": args.rtol, "rule": TOLERANCE_RULE,
                      "why": TOLERANCE_WHY},
        "finite": finite, "seconds": round(seconds, 4)}
    if not finite:
        result["error"] = f"the {device} product has non-finite values"
    elif not within:
        result["error"] = (f"max |error| {result['max_abs_error']:.3g} on {device} exceeds "
                           f"atol {args.atol:g} + rtol {args.rtol:g} * |reference|")
    return result


def guarded(check: Callable[..., dict[str, Any]], torch: Any,
            args: argparse.Namespace) -> dict[str, Any]:
    try:
        return check(torch, args)
    except Exception as exc:  # noqa: BLE001 - the first error is the finding
        return {"status": "error", "error": first_line(exc)}


def import_torch() -> tuple[Any | None, str | None]:
    try:
        import torch
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken torch is the finding
        return None, f"import torch failed: {first_line(exc)}"
    return torch, None


def torch_summary(torch: Any) -> dict[str, Any]:
    version = getattr(torch, "version", None)
    return {"version": getattr(torch, "__version__", None),
            "cuda": getattr(version, "cuda", None), "hip": getattr(version, "hip", None),
            "xpu": getattr(version, "xpu", None),
            "file": getattr(torch, "__file__", None)}


def _sibling(name: str) -> Any:
    """Another script of this folder, by path (``-I`` keeps the folder off ``sys.path``)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"lockkit_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_checks(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"probe": "gpu", "schema": SCHEMA, "args": vars(args)}
    torch, failure = import_torch()
    report["torch"] = {"error": failure} if failure else torch_summary(torch)
    checks: dict[str, dict[str, Any]] = {}
    blocked = None
    companions = _sibling("gpu_companions")  # torchvision and torchaudio
    skips = (None, None, None, companions.companion_skip("torchvision", args.vision, args),
             companions.companion_skip("torchaudio", args.audio, args))
    runs = (build_check, device_check, matmul_check, companions.vision_check,
            companions.audio_check)
    for i, (name, check, skip) in enumerate(zip(CHECKS, runs, skips)):  # noqa: B905
        if skip:
            checks[name] = {"status": "skipped", "reason": skip}
        elif blocked:
            checks[name] = {"status": "skipped", "reason": blocked}
        elif failure:
            checks[name] = {"status": "failed", "error": failure}
        else:
            checks[name] = guarded(check, torch, args)
        if i < CORE and not blocked and checks[name]["status"] != "passed":
            blocked = f"the {name} check did not pass"
    report["checks"] = checks
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect", choices=("cpu", "cuda", "rocm", "xpu", "mps"), required=True)
    parser.add_argument("--cuda", help="expected torch.version.cuda, e.g. 12.6")
    parser.add_argument("--hip", help="expected torch.version.hip major.minor, e.g. 6.2")
    parser.add_argument("--device", choices=("cpu", "cuda", "xpu", "mps"),
                        help="default: cuda for cuda and rocm (ROCm devices are named cuda)")
    parser.add_argument("--source", help="where the expectation comes from, for messages")
    parser.add_argument("--vision", action="store_true", help="torchvision is locked: check it")
    parser.add_argument("--audio", action="store_true", help="torchaudio is locked: check it")
    parser.add_argument("--installed", action="store_true",
                        help="check torchvision / torchaudio when installed (no lock)")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--atol", type=float, default=1e-3)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error("--size must be at least 1")
    if args.device is None:
        args.device = {"cpu": "cpu", "mps": "mps", "xpu": "xpu"}.get(args.expect, "cuda")
    return args


def main(argv: list[str] | None = None) -> int:
    """Print the report as the only thing on stdout, whatever the libraries print."""
    argv = sys.argv[1:] if argv is None else argv
    extensions = (argv[:1] == ["--extensions"] and len(argv) in (4, 5) and argv[2] == "--device"
                  and argv[4:] in ([], ["--no-torch"]))
    args = None if extensions else parse_args(argv)
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # C-level chatter from drivers or torch goes to stderr
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if args is None:  # one line per module, written as each one ends
                _sibling("gpu_extensions").run_extensions(
                    argv[1], argv[3], lambda t: os.write(real_stdout, t.encode()),
                    import_torch if argv[4:] != ["--no-torch"] else None)
                return 0
            report = run_checks(args)
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(real_stdout)
    sys.stdout.write(json.dumps(report, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
