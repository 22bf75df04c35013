"""What the inputs seem not to mean, said before compile resolves: a requirement file
that names nothing, and a name one slip away from a torch-family package (``torchh``,
``torch-vision``), which would be locked as written, from the default index."""

from __future__ import annotations

import re

from lockkit.platforms.definitions import Platform

__all__ = ["asked_names", "input_warnings"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def asked_names(requirements: dict[str, list[str]]) -> list[str]:
    """The names the inputs ask for directly (their family pages are fetched early)."""
    return [m.group() for reqs in requirements.values() for r in reqs
            if not r.startswith("-") and (m := _NAME.match(r))]


def input_warnings(platforms: list[Platform], requirements: dict[str, list[str]]) -> list[str]:
    """What the inputs (:func:`lockkit.config.project.normalized_inputs`) seem not to mean: a
    requirement file that names no requirement (its part of the lock is empty), and a
    name one slip away from a torch-family package of the *platforms* (``torchh``,
    ``torch-vision``), which would be locked as written, from the default index."""
    family = sorted({name for p in platforms for name in p.torch_packages})
    said = []
    for label, reqs in requirements.items():
        if not label.endswith("]") and not [r for r in reqs
                                            if not r.startswith("-") or r.startswith("-r ")]:
            said.append(f"{label} names no requirement: nothing from it is locked")
        for name in dict.fromkeys(asked_names({label: reqs})):
            meant = _slip_of(name, family)
            if meant:
                said.append(f"{label}: {name!r} is not a PyTorch package; did you mean "
                            f"{meant!r}? ({name!r} is locked as written, from the default "
                            "index)")
    return said


def _slip_of(name: str, family: list[str]) -> str | None:
    """The family name *name* is a slip of: the same but for '-'/'_' (``torch-vision``),
    a letter doubled, dropped or changed, or two swapped (``torchh``, ``torchvison``).
    A letter added is not a slip (``torchx``, ``torchrl`` are other projects)."""
    if name in family:
        return None
    typed = name.replace("-", "")
    for meant in family:
        bare = meant.replace("-", "")
        if typed == bare or _one_slip(typed, bare):
            return meant
    return None


def _one_slip(typed: str, meant: str) -> bool:
    if len(typed) == len(meant) + 1:  # a letter doubled
        return any(typed[i] == typed[i - 1] and typed[:i] + typed[i + 1:] == meant
                   for i in range(1, len(typed)))
    if len(typed) == len(meant) - 1:  # a letter dropped
        return any(meant[:i] + meant[i + 1:] == typed for i in range(len(meant)))
    if len(typed) != len(meant):
        return False
    diff = [i for i, (a, b) in enumerate(zip(typed, meant, strict=True)) if a != b]
    return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                              and typed[diff[0]] == meant[diff[1]]
                              and typed[diff[1]] == meant[diff[0]])
