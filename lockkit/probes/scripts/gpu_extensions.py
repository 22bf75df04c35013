"""``gpu_probe.py --extensions FILE --device DEVICE``: each declared module imported and its
smoke expression evaluated, one JSON line per module as it ends.

Loaded by ``gpu_probe.py`` from its own folder, by path (``-I`` keeps the folder off
``sys.path``), inside the interpreter under test: the standard library only, torch as
``gpu_probe.py`` imports it. A hang or a crash in one module leaves the lines of those
before it.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable
from typing import Any


def first_line(exc: BaseException) -> str:
    """As ``gpu_probe.py``'s (a script of its own: it cannot import that one)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


COMPILED = (".so", ".pyd", ".dylib")


def extension_check(torch: Any, spec: dict[str, Any], device: str) -> dict[str, Any]:
    """Import one declared module and evaluate its smoke expression (the user's code, in
    this venv only) with ``torch``, ``device``, ``module`` and its top package bound; it
    passes unless it raises or evaluates to ``False``."""
    name = str(spec.get("module"))
    result: dict[str, Any] = {"probe": "extensions", "module": name, "device": device,
                              "status": "passed"}
    start = time.perf_counter()
    try:
        module = importlib.import_module(name)
        result["file"] = getattr(module, "__file__", None)
        result["compiled"] = str(result["file"] or "").endswith(COMPILED)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the failure is the finding
        return {**result, "status": "failed", "stage": "import",
                "error": f"import {name} failed: {first_line(exc)}"}
    smoke = spec.get("smoke")
    if smoke:
        names = {"torch": torch, "device": device, "module": module,
                 name.split(".")[0]: importlib.import_module(name.split(".")[0])}
        try:
            value = eval(compile(smoke, f"<smoke of {name}>", "eval"), names)  # noqa: S307
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            result.update(status="failed", stage="smoke",
                          error=f"{name}: smoke {smoke!r} on {device} raised {first_line(exc)}")
        else:
            result["value"] = repr(value)[:200]
            if value is False:
                result.update(status="failed", stage="smoke",
                              error=f"{name}: smoke {smoke!r} on {device} returned False")
    result["seconds"] = round(time.perf_counter() - start, 4)
    return result


def run_extensions(path: str, device: str, write: Callable[[str], object],
                   import_torch: Callable[[], tuple[Any, str | None]] | None) -> None:
    """*import_torch*: ``gpu_probe.py``'s (torch and why it failed to import); None: the
    lock names no torch, so none is imported (``torch`` is None in a smoke expression)."""
    with open(path, encoding="utf-8") as fh:
        specs = json.load(fh)
    torch, failure = import_torch() if import_torch is not None else (None, None)
    for spec in specs:
        if failure:
            line: dict[str, Any] = {"probe": "extensions", "module": spec.get("module"),
                                    "status": "failed", "stage": "import", "error": failure}
        else:
            line = extension_check(torch, spec, device)
        write(json.dumps(line, default=str) + "\n")
