"""Today's PyTorch index variants and a CUDA 13 torch on the default index (issue 17),
filled into the loopback replica (:class:`pytorch_index.PyTorchIndex`)."""

from __future__ import annotations

from typing import Any

from tests.support.fake_torch import build_fake_torch, build_fake_vision
from tests.support.pytorch_index import PyTorchIndex

# -- today's variants (issue 17) ------------------------------------------------------------
# Which folders exist: manage_v2.py indexes every ``whl/<variant>`` matching
# ACCEPTED_SUBDIR_PATTERNS (cu*, rocm*.*, cpu, xpu); the variants themselves are those uv's
# --torch-backend knows (astral-sh/uv crates/uv-torch/src/backend.rs). One folder serves
# several OS/arch wheels: the aarch64 and Windows builds sit beside the x86_64 ones.
X86 = "cp311-cp311-linux_x86_64"
ARM = "cp311-cp311-linux_aarch64"
WIN = "cp311-cp311-win_amd64"
MANY_X86 = "cp311-cp311-manylinux_2_28_x86_64"
# The dependencies a CUDA 13 torch declares, as pytorch's builds set them
# (PYTORCH_EXTRA_INSTALL_REQUIREMENTS, copied from a pytorch/test-infra build log in
# aws/lambda/log-classifier/fixtures/classify/gha_operation_canceled.txt), trimmed to
# three cuda-toolkit extras. The wheel on the default index has no +cu label.
LINUX = 'platform_system == "Linux"'
CUDA13_REQUIRES = [
    f"cuda-toolkit[cudart,cublas,nvrtc]==13.0.3; {LINUX}",
    f'cuda-bindings<14,>=13.0.3; {LINUX} and python_version < "3.15"',
    f"nvidia-cudnn-cu13==9.24.0.43; {LINUX}",
    f"nvidia-nccl-cu13==2.30.7; {LINUX}",
    f"triton==3.7.0; {LINUX}",
]
# (variant, torch version, wheel tags, family dependency or None)
CURRENT = (
    ("cu130", "2.9.1+cu130", (X86, ARM), ("triton", "3.5.1")),
    ("cu128", "2.9.1+cu128", (X86, ARM, WIN), ("triton", "3.5.1")),
    ("cu128", "2.8.0+cu128", (X86, ARM, WIN), ("triton", "3.4.0")),
    ("rocm6.4", "2.9.1+rocm6.4", (X86,), ("pytorch-triton-rocm", "3.5.1")),
    ("rocm7.1", "2.10.0+rocm7.1", (X86,), ("triton-rocm", "3.6.0")),
    ("cu132", "2.12.0+cu132", (X86, ARM, WIN), ("triton", "3.7.0")),  # issue 36
    ("rocm7.2", "2.12.0+rocm7.2", (X86,), ("triton-rocm", "3.7.0")),
    ("xpu", "2.9.1+xpu", (X86, WIN), ("pytorch-triton-xpu", "3.5.0")),
    ("cpu", "2.9.1+cpu", (ARM,), None),
)


def fill_current(pt: PyTorchIndex, default: Any) -> None:
    """Today's variant folders (CURRENT) and, on the default index (*default*, an
    index_server.Index), a CUDA 13 torch with its nvidia/cuda-toolkit dependencies."""
    made: set[tuple[str, str, str]] = set()
    for variant, version, tags, dep in CURRENT:
        for tag in tags:
            requires = ["filelock"]
            if dep and tag != WIN:  # triton is a Linux dependency of torch
                requires.append(f"{dep[0]}=={dep[1]}; {LINUX}")
                if (variant, dep[0], dep[1] + tag) not in made:
                    made.add((variant, dep[0], dep[1] + tag))
                    pt.add(variant, dep[0], dep[1], tag=tag)
            pt.add(variant, "torch", version, requires=requires, tag=tag)
    toolkit = {"cudart": ("nvidia-cuda-runtime", "13.0.96"),
               "cublas": ("nvidia-cublas", "13.1.0.3"),
               "nvrtc": ("nvidia-cuda-nvrtc", "13.0.88")}
    default.add("cuda-toolkit", "13.0.3", extras=tuple(toolkit), requires=[
        f'{name}=={ver}.*; {LINUX} and extra == "{extra}"'
        for extra, (name, ver) in toolkit.items()])
    for name, ver in [*toolkit.values(), ("nvidia-cudnn-cu13", "9.24.0.43"),
                      ("nvidia-nccl-cu13", "2.30.7"), ("cuda-bindings", "13.0.3")]:
        default.add(name, ver, tag="py3-none-manylinux_2_28_x86_64")
    default.add("triton", "3.7.0", tag=MANY_X86)
    default.add("torch", "2.14.1", requires=["filelock", *CUDA13_REQUIRES], tag=MANY_X86)


# -- the index as of torch 2.14 (issue 36) ---------------------------------------------------
# Which torch each folder serves, from pytorch/test-infra's release matrix
# (tools/scripts/generate_binary_build_matrix.py, CUDA_ARCHES_DICT / ROCM_ARCHES_DICT
# "release", at each "go live" commit up to 00fa5780c, 2026-08-11, "release 2.14"):
# 2.10 cu126/cu128/cu130 and rocm7.0/7.1; 2.11 the same CUDA, rocm7.1/7.2; 2.12 to 2.14
# cu126/cu130/cu132 (cu128 dropped: its last torch is 2.11) and rocm7.1/7.2. Old folders
# stay in the bucket serving their old torch (whl/cu118, whl/rocm7.0). Two versions a
# folder (its first and its last) place it in time; CUDA 13.2 has aarch64 and Windows
# builds (CUDA_AARCH64_ARCHES; only 13.4 is in CUDA_ARCHES_NO_WINDOWS).
MAC = "cp311-none-macosx_11_0_arm64"
AS_OF_2_14 = (
    ("cu118", ("2.0.0", "2.7.1"), (X86, WIN)),
    ("cu126", ("2.6.0", "2.14.0"), (X86, ARM, WIN)),
    ("cu128", ("2.7.0", "2.11.0"), (X86, ARM, WIN)),
    ("cu130", ("2.9.0", "2.14.0"), (X86, ARM, WIN)),
    ("cu132", ("2.12.0", "2.14.0"), (X86, ARM, WIN)),
    ("rocm6.4", ("2.8.0", "2.9.1"), (X86,)),
    ("rocm7.0", ("2.10.0",), (X86,)),
    ("rocm7.1", ("2.10.0", "2.14.0"), (X86,)),
    ("rocm7.2", ("2.11.0", "2.14.0"), (X86,)),
    ("xpu", ("2.5.0", "2.14.0"), (X86, WIN)),
    ("cpu", ("2.0.0", "2.14.0"), (X86, ARM, WIN)),
)


def fill_as_of_2_14(pt: PyTorchIndex, rows: tuple[Any, ...] = AS_OF_2_14) -> None:
    """Each folder of *rows* with its torch wheels (``+<variant>`` labels), the macOS torch
    in ``whl/cpu`` without a label (as the real one is), and a file directly under ``whl/``
    (the real bucket has them: the root listing exists because of them)."""
    for variant, versions, tags in rows:
        for version in versions:
            for tag in tags:
                pt.add(variant, "torch", f"{version}+{variant}", tag=tag)
    pt.add("cpu", "torch", "2.14.0", tag=MAC)
    pt.add(None, "setuptools", "70.2.0")


# -- several backends side by side (issue 42) ------------------------------------------------
# One project, three indexes, two torch release lines: whl/cpu and whl/cu132 serve torch
# 2.13 (AS_OF_2_14: both serve 2.12 to 2.14), whl/rocm6.4 ends at 2.9.1 (its last torch,
# as in CURRENT, with 2.9.0 before it). Each torch declares its family dependency on its
# own index, as pytorch's builds do (triton for CUDA: CURRENT's 2.12 pin; the ROCm triton
# of each 2.9 release), and torchvision 0.24.1, the torchvision of torch 2.9.1, pins it
# (vision's release builds declare ``torch==<its torch>`` without the local label).
SIDE_BY_SIDE = (
    ("cpu", "2.13.0+cpu", None),
    ("cu132", "2.13.0+cu132", ("triton", "3.7.0")),
    ("rocm6.4", "2.9.1+rocm6.4", ("pytorch-triton-rocm", "3.5.1")),
    ("rocm6.4", "2.9.0+rocm6.4", ("pytorch-triton-rocm", "3.5.0")),
)


# Importable builds of the same wheels (fake_torch.py), for verify: what each answers as
# torch.version.cuda / hip. The ROCm 6.4 torch reports the HIP its hipcc printed (ROCm
# 6.4.2's, "HIP version: 6.4.43484-123eb5128"); torchvision's CUDA_VERSION is -1 on ROCm.
FAKE_BUILDS: dict[str, dict[str, Any]] = {
    "cpu": {"cuda": None},
    "cu132": {"cuda": "13.2"},
    "rocm6.4": {"cuda": None, "hip": "6.4.43484-123eb5128",
                "device_name": "AMD Instinct MI300X", "capability": (9, 4)},  # gfx942
}


def fill_side_by_side(pt: PyTorchIndex, devices: int | None = None) -> None:
    """The folders of SIDE_BY_SIDE, each torch with its family dependency, and the ROCm 6
    torchvision of torch 2.9.1. With *devices*, torch and torchvision are importable fakes
    (FAKE_BUILDS; a GPU build sees that many devices) with the same Requires-Dist and tags
    as the bare wheels, so a lock of them verifies."""
    fakes = pt.base / "fakes"
    for variant, version, dep in SIDE_BY_SIDE:
        requires = ["filelock"]
        if dep:
            requires.append(f"{dep[0]}=={dep[1]}; {LINUX}")
            pt.add(variant, dep[0], dep[1], tag=X86)
        if devices is None:
            pt.add(variant, "torch", version, requires=requires, tag=X86)
        else:
            pt.put(variant, build_fake_torch(fakes, version=version, devices=devices,
                                             requires=requires, tag=X86, **FAKE_BUILDS[variant]))
    vision, requires = "0.24.1+rocm6.4", ["torch==2.9.1"]
    if devices is None:
        pt.add("rocm6.4", "torchvision", vision, requires=requires, tag=X86)
    else:
        pt.put("rocm6.4", build_fake_vision(fakes, vision, cuda_version=-1, requires=requires,
                                            tag=X86))
