"""The Python a platform's lock is resolved for: one rule, which compile follows when it
writes the lock, ``compile --check`` when it recomputes the inputs, ``ci github`` when it
sets up each job's Python, and ``-v`` when it says why (verify and sync read the answer
back from the lock)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockkit.config.project import python_allowed
from lockkit.errors import ConfigError

if TYPE_CHECKING:

    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform

__all__ = ["KNOWN_PYTHONS", "lock_python", "lock_python_why"]

# The CPython minors a platform is taken to support (no platform file lists its own).
KNOWN_PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14")


def lock_python(project: Project, platform: Platform) -> str:
    """The Python version a platform's lock is resolved for, the one rule every command
    follows (verify and sync read it back from the lock): :func:`lock_python_why`'s."""
    return lock_python_why(project, platform)[0]


def lock_python_why(project: Project, platform: Platform) -> tuple[str, str]:
    """The lock's Python and why (what ``-v`` says): the project's ``python`` key; else the
    platform's default when it satisfies pyproject.toml's ``requires-python``; else the
    lowest Python the platform supports that does. A minor satisfies it when some release
    of it does (``>=3.11.4`` keeps 3.11). None does: one ConfigError."""
    if project.python:
        return project.python, "the project's python key"
    spec = project.requires_python
    if spec is None:
        return platform.python, "the platform's default; no requires-python"
    if python_allowed(spec, platform.python):
        return platform.python, f"the platform's default, within requires-python {spec}"
    for minor in KNOWN_PYTHONS:
        if python_allowed(spec, minor):
            return minor, (f"the lowest within requires-python {spec}; the platform's "
                           f"default {platform.python} is not")
    raise ConfigError(f"pyproject.toml's requires-python {str(spec)!r} is satisfied by no "
                      f"Python platform {platform.name} supports ({platform.python}, the "
                      f"default, and {KNOWN_PYTHONS[0]} to {KNOWN_PYTHONS[-1]}): widen it, "
                      "or name the lock's Python with the python key")
