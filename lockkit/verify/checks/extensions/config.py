"""``[verify.extensions]``: the compiled modules ``verify`` imports in the rebuilt venv.

Each entry names a module and, optionally, a smoke call: one Python expression the GPU
probe evaluates *inside the venv* with ``torch``, ``device`` (the platform's device,
``cuda:0`` / ``xpu:0`` / ``mps`` / ``cpu``), ``module`` and the module's top package bound.
It passes unless it raises or evaluates to ``False``::

    [verify.extensions]
    timeout = 120
    [[verify.extensions.modules]]
    module = "torchvision.ops"
    smoke = "module.nms(torch.rand(4, 4, device=device), torch.rand(4, device=device), 0.5)"
    [[verify.extensions.modules]]
    module = "my_project._C"
    smoke = "module.add_one(torch.zeros(1, device=device)).item() == 1"

The table is checked when the project loads, every problem collected with its key path,
like ``[verify.embedding]``. A smoke expression is only *parsed* here (``ast.parse``),
never evaluated: user code runs in the venv under test, not in lockkit's process.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["EXTENSIONS_HINT", "ExtensionSpec", "ExtensionsConfig", "extensions_problems"]

EXTENSIONS_HINT = ('e.g. [verify.extensions] modules = [{ module = "torchvision.ops", '
                   'smoke = "..." }]; see the README section "Compiled extensions"')
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_TABLE_KEYS = ("modules", "timeout")
_ENTRY_KEYS = ("module", "smoke")
_WHERE = "verify.extensions"


@dataclass(frozen=True, kw_only=True)
class ExtensionSpec:
    module: str
    smoke: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, **({"smoke": self.smoke} if self.smoke else {})}


@dataclass(frozen=True, kw_only=True)
class ExtensionsConfig:
    """The validated table; ``timeout`` covers the whole step (all modules, one process)."""

    modules: tuple[ExtensionSpec, ...]
    timeout: float = 300.0

    def to_dict(self) -> dict[str, Any]:
        return {"modules": [m.to_dict() for m in self.modules], "timeout": self.timeout}


def _unknown(table: dict[str, Any], known: tuple[str, ...], where: str) -> list[str]:
    problems = []
    for key in sorted(set(table) - set(known)):
        close = difflib.get_close_matches(key, known, n=1)
        tip = f" (did you mean '{where}.{close[0]}'?)" if close else ""
        problems.append(f"unknown key '{where}.{key}'{tip}")
    return problems


def _entry(i: int, entry: Any) -> tuple[ExtensionSpec | None, list[str]]:
    where = f"{_WHERE}.modules[{i}]"
    if not isinstance(entry, dict):
        return None, [f"{where}: expected a table {{ module = ..., smoke = ... }}, got {entry!r}"]
    problems = _unknown(entry, _ENTRY_KEYS, where)
    module, smoke = entry.get("module"), entry.get("smoke")
    if not isinstance(module, str) or not _MODULE.fullmatch(module):
        problems.append(f"{where}.module: expected a dotted module name such as "
                        f"'torchvision.ops', got {module!r}")
    if smoke is not None:
        if not isinstance(smoke, str) or not smoke.strip():
            problems.append(f"{where}.smoke: expected a Python expression string, got {smoke!r}")
        else:
            try:
                ast.parse(smoke.strip(), mode="eval")
            except SyntaxError as exc:
                problems.append(f"{where}.smoke: not a Python expression ({exc.msg}): {smoke!r}")
    if problems or not isinstance(module, str):
        return None, problems
    return ExtensionSpec(module=module, smoke=smoke.strip() if smoke else None), []


def extensions_problems(table: Any) -> tuple[ExtensionsConfig | None, list[str]]:
    """The validated table, or None and every problem, each naming its key path."""
    if not isinstance(table, dict):
        return None, [f"{_WHERE}: expected a table, got {table!r}"]
    problems = _unknown(table, _TABLE_KEYS, _WHERE)
    modules = table.get("modules")
    specs: list[ExtensionSpec] = []
    if not isinstance(modules, list) or not modules:
        problems.append(f"{_WHERE}.modules: expected a non-empty list of "
                        f"{{ module = ..., smoke = ... }} tables, got {modules!r}")
    else:
        for i, entry in enumerate(modules):
            spec, found = _entry(i, entry)
            problems += found
            if spec is not None:
                specs.append(spec)
        names = [s.module for s in specs]
        problems += [f"{_WHERE}.modules: {n!r} listed twice"
                     for n in sorted({n for n in names if names.count(n) > 1})]
    timeout = table.get("timeout", 300.0)
    if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout) or timeout <= 0):
        problems.append(f"{_WHERE}.timeout: expected a positive number of seconds, "
                        f"got {timeout!r}")
    if problems:
        return None, problems
    return ExtensionsConfig(modules=tuple(specs), timeout=float(timeout)), []
