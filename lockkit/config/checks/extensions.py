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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lockkit._internal.keys import KeyReader
from lockkit.config.checks.rules import Check, Fields

__all__ = ["CHECK", "EXTENSIONS_HINT", "ExtensionSpec", "ExtensionsConfig", "extensions_problems"]

EXTENSIONS_HINT = ('e.g. [verify.extensions] modules = [{ module = "torchvision.ops", '
                   'smoke = "..." }]; see docs/howto/checks.md, "Compiled extensions"')
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_TABLE_KEYS = ("modules", "timeout")
_ENTRY_KEYS = ("module", "smoke")


@dataclass(frozen=True, kw_only=True)
class ExtensionSpec:
    module: str
    smoke: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"module": self.module, **({"smoke": self.smoke} if self.smoke else {})}


@dataclass(frozen=True, kw_only=True)
class ExtensionsConfig:
    """The validated table; ``timeout`` covers the whole step (all modules, one process)."""

    modules: tuple[ExtensionSpec, ...]
    timeout: float = 300.0

    def to_dict(self) -> dict[str, object]:
        return {"modules": [m.to_dict() for m in self.modules], "timeout": self.timeout}


def _entry(r: KeyReader, entry: object) -> ExtensionSpec | None:
    """One ``modules`` entry, *r* reading at its path (``verify.extensions.modules[0]``)."""
    if not isinstance(entry, dict):
        r.fail("", f"expected a table {{ module = ..., smoke = ... }}, got {entry!r}")
        return None
    before = len(r.errors)
    r.unknown(entry, _ENTRY_KEYS)
    r.require(entry, ("module",))
    module = r.string("module", entry.get("module"), "a dotted module name such as "
                      "'torchvision.ops'", _MODULE)
    smoke = r.text("smoke", entry.get("smoke"), "a Python expression string")
    if smoke is not None:
        try:
            ast.parse(smoke.strip(), mode="eval")
        except SyntaxError as exc:
            r.fail("smoke", f"not a Python expression ({exc.msg}): {smoke!r}")
    if len(r.errors) > before or module is None:
        return None
    return ExtensionSpec(module=module, smoke=smoke.strip() if smoke else None)


def extensions_problems(table: object) -> tuple[ExtensionsConfig | None, list[str]]:
    """The validated table, or None and every problem, each naming its key path."""
    r = KeyReader(where="verify.extensions")
    if not isinstance(table, dict):
        r.fail("", f"expected a table, got {table!r}")
        return None, r.errors
    r.unknown(table, _TABLE_KEYS)
    modules = table.get("modules")
    specs: list[ExtensionSpec] = []
    if not isinstance(modules, list) or not modules:
        r.fail("modules", f"expected a non-empty list of {{ module = ..., smoke = ... }} "
                          f"tables, got {modules!r}")
    else:
        found = [_entry(r.at(f"modules[{i}]"), entry) for i, entry in enumerate(modules)]
        specs = [s for s in found if s is not None]
        names = [s.module for s in specs]
        for twice in sorted({n for n in names if names.count(n) > 1}):
            r.fail("modules", f"{twice!r} listed twice")
    timeout = r.number("timeout", table.get("timeout", 300.0), 1e-9,
                       expected="a positive number of seconds")
    if r.errors:
        return None, r.errors
    return ExtensionsConfig(modules=tuple(specs), timeout=float(timeout)), []


def _read_check(root: Path, verify: Mapping[str, object]) -> tuple[Fields, list[str]]:
    if "extensions" not in verify:
        return {}, []
    config, problems = extensions_problems(verify["extensions"])
    return {"extensions": config}, problems


CHECK = Check(key="extensions", read=_read_check, hint=EXTENSIONS_HINT,
              fields={"extensions": ExtensionsConfig})
