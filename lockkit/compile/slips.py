"""What the inputs seem not to mean, said before compile resolves: a requirement file
that names nothing, a name one slip away from a torch-family package (``torchh``,
``torch-vision``), which would be locked as written, from the default index, and a torch
pinned to a release outside a platform's ``[torch] releases``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from lockkit.config.inputs import effective_inputs
from lockkit.platforms.definitions import Platform

if TYPE_CHECKING:
    from lockkit.config.project import Project

__all__ = ["asked_names", "input_warnings"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def asked_names(requirements: dict[str, list[str]]) -> list[str]:
    """The names the inputs ask for directly (their family pages are fetched early)."""
    return [m.group() for reqs in requirements.values() for r in reqs
            if not r.startswith("-") and (m := _NAME.match(r))]


def input_warnings(platforms: list[Platform], requirements: dict[str, list[str]],
                   project: Project | None = None) -> list[str]:
    """What the inputs (:func:`lockkit.config.inputs.normalized_inputs`) seem not to mean: a
    requirement file that names no requirement (its part of the lock is empty), a
    name one slip away from a torch-family package of the *platforms* (``torchh``,
    ``torch-vision``), which would be locked as written, from the default index, and a
    torch pin outside a platform's releases (with the *project*, each platform's pins as
    it resolves them, its ``[platform-requirements]`` applied)."""
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
    for platform in platforms:
        own = requirements if project is None else \
            effective_inputs(project, platform, requirements)
        said += _pins_outside_releases(platform, own)
    return said


def _pins_outside_releases(platform: Platform, requirements: dict[str, list[str]]
                           ) -> list[str]:
    """A ``torch==X`` whose X is outside a platform's ``[torch] releases`` (what its PyTorch
    index serves, as the platform file says): it is locked as written when some index has
    it, and the lock then holds a torch the platform was not meant for; said, not refused
    (``releases`` is the platform file's word, not the index's), with the table that pins
    another torch on that platform alone."""
    said = []
    for label, reqs in requirements.items():
        for pinned in _torch_pins(reqs):
            if platform.torch_releases and not SpecifierSet(
                    platform.torch_releases).contains(pinned, prereleases=True):
                said.append(f"{label}: torch=={pinned} is outside the releases "
                            f"{platform.name} serves ({platform.torch_releases}, its "
                            "[torch] releases); it is locked as written if an index has "
                            f"it. To lock another torch on {platform.name} alone: "
                            f'[platform-requirements] {platform.name} = ["torch==X"], X in '
                            f"{platform.torch_releases}")
    return said


def _torch_pins(reqs: list[str]) -> list[Version]:
    """The versions torch is pinned to (``==X``, no wildcard) in requirement lines."""
    pins = []
    for line in reqs:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue  # an option line, or one the input reader reports
        if canonicalize_name(req.name) != "torch":
            continue
        for spec in req.specifier:
            if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
                try:
                    pins.append(Version(spec.version))
                except InvalidVersion:
                    continue
    return pins


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
