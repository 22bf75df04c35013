"""A tiny real ``torch`` wheel that answers the probes' questions as the test sets them.

The wheel is built by :func:`index_server.build_wheel` (valid METADATA, WHEEL, RECORD), so
an installer treats it as the real thing. Its ``torch`` knows its build (``__version__``,
``torch.version.cuda`` / ``hip`` / ``xpu``), its devices (``torch.cuda.*``, or
``torch.xpu.*`` for an Intel XPU build, as torch/xpu/__init__.py names them), a few
``torch.backends`` flags and settings, and on purpose not everything: the probes must
turn a missing attribute into a recorded error. Matrix products go through numpy when
the venv has it (the probe then runs its real comparison); without numpy the fake has no
tensors at all. ``hang`` and ``crash`` make ``import torch`` never return, or kill the
interpreter, as a broken native library would.
"""

from __future__ import annotations

from pathlib import Path

from index_server import build_wheel

__all__ = ["build_fake_torch"]

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


class Tensor:
    """Just what gpu_probe's matmul check does with a tensor, on a numpy array."""

    def __init__(self, array):
        self._a = array

    def to(self, device):
        if str(device).startswith("xpu"):
            if not xpu.is_available():
                raise RuntimeError("PyTorch was compiled without XPU support")
        elif str(device).startswith(("cuda", "mps")) and not cuda.is_available():
            raise RuntimeError("Found no NVIDIA driver on your system.")
        return self

    def cpu(self):
        return self

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
) -> Path:
    """Write the fake torch wheel into *dest* and return its path.

    ``crash``: ``True`` or ``"abort"`` for ``os.abort()`` (SIGABRT), ``"segv"`` for a
    NULL read through ctypes (SIGSEGV). ``matmul_error`` is added to every element of a
    product, to make the device "compute" wrong. ``chatter`` prints on stdout at import.
    """
    crash_mode = "abort" if crash is True else (crash or None)
    if crash_mode not in (None, "abort", "segv"):
        raise ValueError(f"crash must be False, True, 'abort' or 'segv', not {crash!r}")
    config = {"version": version, "cuda": cuda, "hip": hip, "xpu": xpu, "devices": devices,
              "device_name": device_name, "capability": list(capability), "mps": mps,
              "matmul_error": matmul_error, "chatter": chatter, "hang": hang,
              "crash": crash_mode}
    module = _MODULE.format(config=config)
    return build_wheel(dest, "torch", version, files={"torch/__init__.py": module})
