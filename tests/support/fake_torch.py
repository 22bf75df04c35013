"""A tiny real ``torch`` wheel that answers the probes' questions as the test sets them.

The wheel is built by :func:`index_server.build_wheel` (valid METADATA, WHEEL, RECORD), so
an installer treats it as the real thing. Its ``torch`` knows its build (``__version__``,
``torch.version.cuda`` / ``hip`` / ``xpu``), its devices (``torch.cuda.*``, or
``torch.xpu.*`` for an Intel XPU build, as torch/xpu/__init__.py names them), a few
``torch.backends`` flags and settings, and on purpose not everything: the probes must
turn a missing attribute into a recorded error. Matrix products go through numpy when
the venv has it (the probe then runs its real comparison); without numpy the fake has no
tensors at all. It keeps a CPU generator and one per CUDA device (``manual_seed``,
``rand``, ``get_rng_state``, ``torch.cuda.get_rng_state_all``), so a training script can
show a device generator left out of a resume. ``hang`` and ``crash`` make ``import torch``
never return, or kill the interpreter, as a broken native library would.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.index_server import build_wheel

__all__ = ["build_fake_audio", "build_fake_extension", "build_fake_torch", "build_fake_vision"]

_MODULE = '''\
"""A fake torch for lockkit's probe tests."""
import os
import sys
import types

_CONFIG = {config!r}

if _CONFIG["hang"]:
    import subprocess
    import time
    # A child holding our stdout/stderr, as compile workers or a driver helper would:
    # the host must kill the whole group, not wait for the pipes to close.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    if os.environ.get("FAKE_TORCH_PIDFILE"):
        with open(os.environ["FAKE_TORCH_PIDFILE"], "w") as fh:
            fh.write(f"{{os.getpid()}} {{child.pid}}")
    while True:
        time.sleep(3600)
if _CONFIG["crash"] == "abort":
    os.abort()
if _CONFIG["crash"] == "segv":
    import ctypes
    ctypes.string_at(0)
if _CONFIG["chatter"]:
    print("fake torch: chatter on sys.stdout")
    sys.stdout.flush()
    os.write(1, b"fake torch: C-level chatter on fd 1\\n")

__version__ = _CONFIG["version"]
_DEVICES = _CONFIG["devices"]
_GPU = bool(_CONFIG["cuda"] or _CONFIG["hip"])
_XPU = bool(_CONFIG["xpu"])

version = types.SimpleNamespace(cuda=_CONFIG["cuda"], hip=_CONFIG["hip"], xpu=_CONFIG["xpu"],
                                git_version="fake")


def _ordinal(index):
    if not 0 <= index < cuda.device_count():
        raise RuntimeError(f"CUDA error: invalid device ordinal {{index}}")
    return index


def _name(index=0):
    _ordinal(index)
    return _CONFIG["device_name"]


def _capability(index=0):
    _ordinal(index)
    return tuple(_CONFIG["capability"])


class _Properties:
    def __init__(self, index=0):
        self.name = _name(index)
        self.total_memory = 80 * 2**30
        if _CONFIG["hip"]:
            self.gcnArchName = "gfx942:sramecc+:xnack-"


cuda = types.SimpleNamespace(
    is_available=lambda: _GPU and _DEVICES > 0,
    device_count=lambda: _DEVICES if _GPU else 0,
    get_device_name=_name,
    get_device_capability=_capability,
    get_device_properties=_Properties,
    get_arch_list=lambda: ["sm_80", "sm_90"] if _CONFIG["cuda"] else [],
)
xpu = types.SimpleNamespace(
    _is_compiled=lambda: _XPU,
    is_available=lambda: _XPU and _DEVICES > 0,
    device_count=lambda: _DEVICES if _XPU else 0,
    get_device_name=lambda index=0: _CONFIG["device_name"],
)
# No fp32_precision anywhere, no get_num_interop_threads: an older torch, as far as the
# probes can tell, and they must say so rather than fail.
backends = types.SimpleNamespace(
    cudnn=types.SimpleNamespace(
        is_available=lambda: _GPU, version=lambda: 90100 if _CONFIG["cuda"] else 30200,
        deterministic=False, benchmark=False, allow_tf32=True),
    cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)),
    mps=types.SimpleNamespace(is_built=lambda: _CONFIG["mps"],
                              is_available=lambda: _CONFIG["mps"] and _DEVICES > 0),
)

# Random numbers as torch keeps them: one generator for the CPU and one per CUDA device;
# manual_seed seeds them all, and a draw on "cuda:0" (dropout there) comes from the
# device's, so a resume that restores only the CPU one draws other numbers on the GPU.
import random as _random

_CPU_RNG = _random.Random(0)
_CUDA_RNGS = [_random.Random(index + 1) for index in range(_DEVICES)]


def manual_seed(seed):
    _CPU_RNG.seed(seed)
    for index, generator in enumerate(_CUDA_RNGS):
        generator.seed(seed * 1000 + index + 1)


def get_rng_state():
    return _CPU_RNG.getstate()


def set_rng_state(state):
    _CPU_RNG.setstate(state)


def _generator(device):
    device = str(device)
    if device == "cpu":
        return _CPU_RNG
    if device.startswith("cuda") and cuda.is_available():
        return _CUDA_RNGS[_ordinal(int(device.partition(":")[2] or 0))]
    raise RuntimeError(f"fake torch: no generator for device {{device!r}}")


def rand(*size, device="cpu"):
    import numpy

    generator = _generator(device)
    count = int(numpy.prod(size))
    draws = [generator.random() for _ in range(count)]
    return Tensor(numpy.array(draws, dtype="float32").reshape(size), str(device))


def _get_rng_state_all():
    return [generator.getstate() for generator in _CUDA_RNGS[:cuda.device_count()]]


def _set_rng_state_all(states):
    for generator, state in zip(_CUDA_RNGS, states):
        generator.setstate(state)


cuda.get_rng_state_all = _get_rng_state_all
cuda.set_rng_state_all = _set_rng_state_all


def get_default_dtype():
    return "torch.float32"


def are_deterministic_algorithms_enabled():
    return False


def is_deterministic_algorithms_warn_only_enabled():
    return False


def get_float32_matmul_precision():
    return "highest"


def get_num_threads():
    return 1


def _value(x):
    return x._a if isinstance(x, Tensor) else x


float32 = "torch.float32"
# torch.ops: namespaces appear as libraries register them; torchaudio's is absent here,
# as in the releases that keep cuda_version in torchaudio.lib._torchaudio.
ops = types.SimpleNamespace(aten=types.SimpleNamespace())


class Tensor:
    """Just what gpu_probe's checks do with a tensor, on a numpy array; ``device`` is
    where ``.to()`` put it, so a companion's fake op can fail on the GPU only."""

    def __init__(self, array, device="cpu"):
        self._a = array
        self.device = device

    def to(self, device):
        if str(device).startswith("xpu"):
            if not xpu.is_available():
                raise RuntimeError("PyTorch was compiled without XPU support")
        elif str(device).startswith(("cuda", "mps")) and not cuda.is_available():
            raise RuntimeError("Found no NVIDIA driver on your system.")
        return Tensor(self._a, str(device))

    def cpu(self):
        return Tensor(self._a)

    def tolist(self):
        return self._a.tolist()

    def item(self):
        return self._a.item()

    def sum(self):
        return Tensor(self._a.sum(), self.device)

    def double(self):
        return Tensor(self._a.astype("float64"))

    def abs(self):
        return Tensor(abs(self._a))

    def all(self):
        return Tensor(self._a.all())

    def max(self):
        return Tensor(self._a.max())

    def __bool__(self):
        return bool(self._a)

    def __float__(self):
        return float(self._a)

    def __matmul__(self, other):
        return Tensor(self._a @ other._a + _CONFIG["matmul_error"])

    def __sub__(self, other):
        return Tensor(self._a - _value(other))

    def __add__(self, other):
        return Tensor(self._a + _value(other))

    __radd__ = __add__

    def __mul__(self, other):
        return Tensor(self._a * _value(other))

    __rmul__ = __mul__

    def __le__(self, other):
        return Tensor(self._a <= _value(other))


def from_numpy(array):
    return Tensor(array)


def tensor(data, dtype=None, device="cpu"):
    import numpy

    return Tensor(numpy.array(data, dtype="float32" if dtype == float32 else None), device)


def ones(*size, device="cpu"):
    import numpy

    return Tensor(numpy.ones(size, dtype="float32"), device)


def isfinite(tensor):
    import numpy

    return Tensor(numpy.isfinite(tensor._a))
'''


def build_fake_torch(
    dest: Path,
    version: str = "2.5.1+cu126",
    cuda: str | None = "12.6",
    hip: str | None = None,
    xpu: str | None = None,
    devices: int = 0,
    device_name: str = "NVIDIA H100 80GB HBM3",
    capability: tuple[int, int] = (9, 0),
    mps: bool = False,
    matmul_error: float = 0.0,
    chatter: bool = False,
    hang: bool = False,
    crash: bool | str = False,
    requires: list[str] | None = None,
    tag: str = "py3-none-any",
) -> Path:
    """Write the fake torch wheel into *dest* and return its path.

    ``crash``: ``True`` or ``"abort"`` for ``os.abort()`` (SIGABRT), ``"segv"`` for a
    NULL read through ctypes (SIGSEGV). ``matmul_error`` is added to every element of a
    product, to make the device "compute" wrong. ``chatter`` prints on stdout at import.
    ``requires`` and ``tag``: the wheel's Requires-Dist and tag, as an index's torch
    declares them (its family dependency; a cp311 linux_x86_64 build).
    """
    crash_mode = "abort" if crash is True else (crash or None)
    if crash_mode not in (None, "abort", "segv"):
        raise ValueError(f"crash must be False, True, 'abort' or 'segv', not {crash!r}")
    config = {"version": version, "cuda": cuda, "hip": hip, "xpu": xpu, "devices": devices,
              "device_name": device_name, "capability": list(capability), "mps": mps,
              "matmul_error": matmul_error, "chatter": chatter, "hang": hang,
              "crash": crash_mode}
    module = _MODULE.format(config=config)
    return build_wheel(dest, "torch", version, requires=requires, tag=tag,
                       files={"torch/__init__.py": module})


# A fake torchvision as its release wheels lay it out: version.py is generated by its
# setup.py (write_version_file) and sets ``cuda`` only when the extension's CUDA_VERSION is
# > 0; torchvision/extension.py's _check_cuda_version raises at import when torch's CUDA
# major differs (pytorch/vision torchvision/extension.py). Its nms is a real greedy NMS.
_VISION_INIT = """import torch
from torchvision import extension, version
from torchvision import ops
__version__ = version.__version__
"""
_VISION_VERSION = """__version__ = {version!r}
git_version = "fake"
from torchvision.extension import _check_cuda_version
if _check_cuda_version() > 0:
    cuda = _check_cuda_version()
"""
_VISION_EXTENSION = """import torch
_CUDA_VERSION = {cuda_version!r}
def _check_cuda_version():
    if _CUDA_VERSION != -1 and torch.version.cuda is not None:
        tv_major = int(str(_CUDA_VERSION)[0:2])
        if int(torch.version.cuda.split(".")[0]) != tv_major:
            raise RuntimeError("Detected that PyTorch and torchvision were compiled with "
                               "different CUDA versions.")
    return _CUDA_VERSION
_check_cuda_version()
"""
_VISION_OPS = """import torch
_OP_ERROR = {op_error!r}
def _iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)
def nms(boxes, scores, iou_threshold):
    if _OP_ERROR and str(boxes.device).startswith("cuda"):
        raise RuntimeError(_OP_ERROR)
    b, s = boxes.tolist(), scores.tolist()
    kept = []
    for i in sorted(range(len(s)), key=lambda i: -s[i]):
        if all(_iou(b[i], b[k]) <= iou_threshold for k in kept):
            kept.append(i)
    return torch.tensor(kept, device=boxes.device)
"""

# A fake torchaudio: torchaudio/_extension/utils.py's _check_cuda_version reads
# torchaudio.lib._torchaudio.cuda_version() (None without CUDA) and raises at import when
# its major.minor is not torch's (pytorch/audio torchaudio/_extension/utils.py).
_AUDIO_INIT = """from torchaudio import _extension
from torchaudio import functional
__version__ = {version!r}
"""
_AUDIO_UTILS = """import torch
def _check_cuda_version():
    import torchaudio.lib._torchaudio
    version = torchaudio.lib._torchaudio.cuda_version()
    if version is not None and torch.version.cuda is not None:
        version_str = str(version)
        ta_version = f"{version_str[:-3]}.{version_str[-2]}"
        t_version = ".".join(torch.version.cuda.split(".")[:2])
        if ta_version != t_version:
            raise RuntimeError("Detected that PyTorch and TorchAudio were compiled with "
                               f"different CUDA versions. PyTorch has CUDA version {t_version} "
                               f"whereas TorchAudio has CUDA version {ta_version}.")
    return version
"""
_AUDIO_EXTENSION = "from .utils import _check_cuda_version\n_check_cuda_version()\n"
_AUDIO_FUNCTIONAL = """import torch
_OP_ERROR = {op_error!r}
_DRIFT = {drift!r}
def resample(waveform, orig_freq, new_freq):
    on_gpu = str(waveform.device).startswith("cuda")
    if _OP_ERROR and on_gpu:
        raise RuntimeError(_OP_ERROR)
    out = waveform._a[:: orig_freq // new_freq] + (_DRIFT if on_gpu else 0.0)
    return torch.Tensor(out, waveform.device)
"""


def build_fake_vision(dest: Path, version: str = "0.20.1+cu126", cuda_version: int = 12060,
                      op_error: str | None = None, requires: list[str] | None = None,
                      tag: str = "py3-none-any") -> Path:
    """A torchvision wheel; *cuda_version* as its C++ op reports it (CUDA_VERSION, -1 on a
    CPU or ROCm build); *op_error* makes nms raise on a CUDA device; *requires* and *tag*
    as build_fake_torch's."""
    files = {"torchvision/__init__.py": _VISION_INIT,
             "torchvision/version.py": _VISION_VERSION.format(version=version),
             "torchvision/extension.py": _VISION_EXTENSION.format(cuda_version=cuda_version),
             "torchvision/ops/__init__.py": _VISION_OPS.format(op_error=op_error)}
    return build_wheel(dest, "torchvision", version, requires=requires, tag=tag, files=files)


def build_fake_audio(dest: Path, version: str = "2.5.1+cu126", cuda_version: int | None = 12060,
                     op_error: str | None = None, drift: float = 0.0) -> Path:
    """A torchaudio wheel; *cuda_version* as its extension's cuda_version() (None on a CPU
    build); *op_error* makes resample raise on a CUDA device, *drift* makes it disagree."""
    files = {"torchaudio/__init__.py": _AUDIO_INIT.format(version=version),
             "torchaudio/_extension/__init__.py": _AUDIO_EXTENSION,
             "torchaudio/_extension/utils.py": _AUDIO_UTILS,
             "torchaudio/lib/__init__.py": "",
             "torchaudio/lib/_torchaudio.py": f"def cuda_version():\n    return {cuda_version!r}\n",
             "torchaudio/functional.py": _AUDIO_FUNCTIONAL.format(op_error=op_error,
                                                                  drift=drift)}
    return build_wheel(dest, "torchaudio", version, files=files)


def build_fake_extension(dest: Path, name: str = "fake_ext", op_error: str | None = None,
                         import_error: str | None = None) -> Path:
    """A project's compiled extension, as far as an import and a smoke call can tell:
    ``add_one`` raises *op_error* on a CUDA device; *import_error* fails the import, as a
    missing shared library would."""
    body = (f"raise ImportError({import_error!r})\n" if import_error else "") + (
        "import torch\n"
        f"_OP_ERROR = {op_error!r}\n"
        "def add_one(t):\n"
        "    if _OP_ERROR and str(t.device).startswith('cuda'):\n"
        "        raise RuntimeError(_OP_ERROR)\n"
        "    return torch.Tensor(t._a + 1, t.device)\n")
    return build_wheel(dest, name, "1.0", files={f"{name}/__init__.py": body})
