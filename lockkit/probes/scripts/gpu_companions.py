"""The GPU probe's companion checks: torchvision and torchaudio are torch's build, and one
of their compiled ops runs on the device and agrees with the CPU.

Loaded by ``gpu_probe.py`` from its own folder, by path (``-I`` keeps the folder off
``sys.path``), inside the interpreter under test: the standard library and torch only.
Each check returns its report and may raise; ``gpu_probe.py`` guards it (a raise is the
check's ``error``) and says when it is skipped (:func:`companion_skip`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
from collections.abc import Callable
from typing import Any


def device_name(args: argparse.Namespace) -> str:
    return f"{args.device}:0" if args.device in ("cuda", "xpu") else args.device


def cuda_of(number: Any) -> str | None:
    """A companion's CUDA_VERSION (12060) as torch spells it (12.6), decoded the way
    torchvision/extension.py and torchaudio/_extension/utils.py compare them."""
    if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
        return None
    return f"{number // 1000}.{number % 1000 // 10}"


def local_label(version: str | None) -> str | None:
    return version.split("+", 1)[1] if version and "+" in version else None


def same_build(torch: Any, name: str, version: str, cuda: str | None) -> str | None:
    """Why companion *name* is not torch's build, or None. On ROCm the label is the only
    evidence: torchvision's ``_cuda_version`` op and torchaudio's ``cuda_version`` answer
    -1/None there (vision.cpp, audio's utils.cpp: ``#ifdef WITH_CUDA``)."""
    t_cuda, t_hip = torch.version.cuda, getattr(torch.version, "hip", None)
    t_label, label = local_label(torch.__version__), local_label(version)
    if t_hip:
        if label != t_label:
            return (f"{name} {version} is not torch's ROCm build (torch {torch.__version__}, "
                    f"HIP {t_hip})")
        return None
    if t_cuda:
        if cuda is None:
            return f"{name} {version} reports no CUDA (a CPU build); torch is CUDA {t_cuda}"
        if cuda.split(".")[:2] != t_cuda.split(".")[:2]:
            return f"{name} {version} is a CUDA {cuda} build; torch is CUDA {t_cuda}"
        return None
    if cuda:
        return f"{name} {version} is a CUDA {cuda} build; torch {torch.__version__} is not"
    return None


def companion(torch: Any, name: str, version: str, cuda: str | None, raw: Any,
              op: Callable[[], tuple[bool, str]]) -> dict[str, Any]:
    result: dict[str, Any] = {"status": "passed", "version": version, "cuda": cuda,
                              "cuda_version_raw": raw, "torch": torch.__version__}
    why = same_build(torch, name, version, cuda)
    if why is None:
        ok, what = op()
        result["op"] = what
        why = None if ok else what
    if why:
        result.update(status="failed", error=why)
    return result


def vision_check(torch: Any, args: argparse.Namespace) -> dict[str, Any]:
    """``torchvision.version.cuda`` exists only for a CUDA build (its setup.py writes
    ``if _check_cuda_version() > 0: cuda = ...``); a CUDA major that differs from torch's
    already fails the import (torchvision/extension.py ``_check_cuda_version``)."""
    tv = importlib.import_module("torchvision")
    ops = importlib.import_module("torchvision.ops")
    raw = getattr(getattr(tv, "version", None), "cuda", None)
    device = device_name(args)

    def op() -> tuple[bool, str]:
        boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0],
                              [20.0, 20.0, 30.0, 30.0]], dtype=torch.float32)
        scores = torch.tensor([0.9, 0.8, 0.7], dtype=torch.float32)
        kept = [int(i) for i in ops.nms(boxes.to(device), scores.to(device), 0.5).cpu().tolist()]
        what = f"torchvision.ops.nms on {device} kept boxes {kept}"
        return kept == [0, 2], what + ("" if kept == [0, 2] else ", expected [0, 2]")

    return companion(torch, "torchvision", tv.__version__, cuda_of(raw), raw, op)


def audio_cuda(torch: Any) -> Any:
    """torchaudio/_extension/utils.py ``_check_cuda_version``: the extension's
    ``cuda_version()`` (an int, None without CUDA); newer releases register it as
    ``torch.ops._torchaudio.cuda_version``."""
    try:
        return torch.ops._torchaudio.cuda_version()
    except Exception:  # noqa: BLE001 - the older layout follows
        return importlib.import_module("torchaudio.lib._torchaudio").cuda_version()


def audio_check(torch: Any, args: argparse.Namespace) -> dict[str, Any]:
    ta = importlib.import_module("torchaudio")
    functional = importlib.import_module("torchaudio.functional")
    raw = audio_cuda(torch)
    device = device_name(args)

    def op() -> tuple[bool, str]:
        signal = torch.tensor([math.sin(i * 0.03) for i in range(4800)], dtype=torch.float32)
        cpu = functional.resample(signal, 48000, 24000).tolist()
        got = functional.resample(signal.to(device), 48000, 24000).cpu().tolist()
        worst = max((abs(a - b) for a, b in zip(cpu, got)), default=0.0)  # noqa: B905
        ok = len(cpu) == len(got) and worst <= 1e-4
        what = (f"torchaudio.functional.resample on {device}: {len(got)} samples, max "
                f"|device - cpu| {worst:.3g}")
        return ok, what + ("" if ok else " (limit 1e-4 and the CPU's length)")

    return companion(torch, "torchaudio", ta.__version__, cuda_of(raw), raw, op)


def companion_skip(name: str, locked: bool, args: argparse.Namespace) -> str | None:
    """Why companion *name* is not checked, or None. ``--installed``: it is checked when
    it is installed, whether or not it imports (one that fails to import, such as a
    torchvision of another CUDA major, is a finding); finding it imports nothing."""
    if locked:
        return None
    if not args.installed:
        return "not locked"
    return None if importlib.util.find_spec(name) is not None else "not installed"
