"""Every random generator train.py draws from, saved, restored and sampled together.

A training step draws from python's ``random``, numpy's global generator and torch's CPU
generator, and on a GPU from the device's own: dropout on ``cuda:0`` draws from
``torch.cuda``'s generator, never the CPU one. A resume that restores only the CPU
generator gives the resumed run other dropout masks on the device. Measured on an NVIDIA
H200 (torch 2.11.0+cu130) with train.py's model, AdamW and dropout: losses 6.8e-4 away
from the uninterrupted run; with ``torch.cuda.get_rng_state_all()`` restored too,
bit-identical, with and without deterministic mode.

The device's generator is ``torch.cuda`` on CUDA and on ROCm (whose torch answers to
``torch.cuda``), ``torch.xpu`` on Intel GPUs (both keep one per device: ``*_all``) and
``torch.mps`` on Apple silicon (one device). Only torch's public API is used, so a
project can copy this file as it is.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

# The one piece each --break of train.py leaves out of the restore.
BREAKS = ("python-rng", "numpy-rng", "torch-rng", "device-rng")


def device_kind(device: str) -> str:
    """``cuda:0`` -> ``cuda``: the torch module that owns the device's generator."""
    return device.partition(":")[0]


def save(device: str) -> dict[str, Any]:
    """Every generator's state, for the checkpoint (the device's under its kind)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.get_rng_state()}
    kind = device_kind(device)
    if kind in ("cuda", "xpu"):
        state[kind] = getattr(torch, kind).get_rng_state_all()
    elif kind == "mps":
        state[kind] = torch.mps.get_rng_state()
    return state


def restore(state: dict[str, Any], device: str, broken: str = "") -> None:
    """Put every generator back, except the one *broken* names (see ``BREAKS``)."""
    if broken != "python-rng":
        random.setstate(state["python"])
    if broken != "numpy-rng":
        np.random.set_state(state["numpy"])
    if broken != "torch-rng":
        torch.set_rng_state(state["torch"])
    kind = device_kind(device)
    if broken == "device-rng" or kind == "cpu":
        return
    if kind == "mps":
        torch.mps.set_rng_state(state[kind])
    else:
        getattr(torch, kind).set_rng_state_all(state[kind])


def draws(device: str) -> dict[str, list[float]]:
    """Three draws from each generator, taken after the checkpoint was written (the
    contract's ``end.json`` ``rng``); on a GPU, the device's under its kind too."""
    out = {"python": [random.random() for _ in range(3)],
           "numpy": np.random.random(3).tolist(), "torch": torch.rand(3).tolist()}
    kind = device_kind(device)
    if kind != "cpu":
        out[kind] = torch.rand(3, device=device).tolist()
    return out
