"""verify's ``extensions`` step: the compiled modules ``[verify.extensions]`` declares,
each imported in the rebuilt venv and smoke-called on the platform's device, and the
list of locked packages that ship native code.

The user's smoke expressions run inside the venv (``gpu_probe.py --extensions``), never
here; this module only writes them to a file, reads the probe's one line per module back
and names the module that was running when the probe hung or crashed. Without the table
the step passes with the native-code list alone: a project without compiled extensions
of its own has nothing more to declare.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from lockkit.config.checks.extensions import ExtensionsConfig
from lockkit.probes import hang, probe
from lockkit.report.checks.extensions import EXTENSIONS
from lockkit.report.extrecords import ExtensionCheck, ExtensionsResult, NativePackage
from lockkit.steps.context import Run
from lockkit.steps.engine import Step, StepFailed

__all__ = ["extensions_step", "native_packages"]

_LIBRARY = re.compile(r"\.(?:so(?:\.\d+)*|pyd|dylib)$")
_EXAMPLES = 5


def native_packages(wheelhouse: Path | None,
                    locked: Mapping[str, str] | None = None) -> tuple[NativePackage, ...]:
    """The wheels of *wheelhouse* (only the *locked* packages' when given) whose tags are
    not pure (abi ``none`` and platform ``any``) or whose file list holds a shared library."""
    if wheelhouse is None or not wheelhouse.is_dir():
        return ()
    found = []
    for wheel in sorted(wheelhouse.glob("*.whl")):
        try:
            name, version, _, tags = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename:
            continue
        if locked and canonicalize_name(name) not in locked:
            continue
        try:
            with zipfile.ZipFile(wheel) as zf:
                libraries = [n for n in zf.namelist() if _LIBRARY.search(n)]
        except (OSError, zipfile.BadZipFile):
            libraries = []
        pure = all(t.abi == "none" and t.platform == "any" for t in tags)
        if pure and not libraries:
            continue
        found.append(NativePackage(
            name=str(name), version=str(version), wheel=wheel.name,
            tags="-".join(wheel.name[:-4].split("-")[-3:]), libraries=len(libraries),
            examples=tuple(sorted(libraries)[:_EXAMPLES])))
    return tuple(found)


def extensions_step(run: Run, step: Step) -> None:
    """Import each declared module and run its smoke call; ``StepFailed`` on the first
    that fails. The result goes to ``run.found.checks`` either way."""
    opts = run.opts
    native = native_packages(run.wheelhouse, run.expected)
    step.detail["native packages"] = len(native)
    if run.no_torch:  # the modules are imported and smoke-called without it, on the CPU
        step.detail["torch"] = f"not imported: {run.no_torch}"
    cfg = opts.project.verify.get("extensions", ExtensionsConfig)
    if cfg is None:
        run.found.checks[EXTENSIONS.key] = ExtensionsResult(native=native)
        step.detail["declared"] = "none ([verify.extensions] absent)"
        return
    assert run.python is not None
    gpu_skipped = opts.no_gpu and opts.platform.gpu_device != "cpu"
    device = "cpu" if gpu_skipped or run.no_torch else opts.device
    specs = [{"module": m.module, **({} if gpu_skipped or not m.smoke else {"smoke": m.smoke})}
             for m in cfg.modules]
    spec_file = run.work / "extensions.json"
    spec_file.write_text(json.dumps(specs), encoding="utf-8")
    lines, ended, stderr = probe.run_lines(
        run.python, "gpu_probe.py", ["--extensions", str(spec_file), "--device", device,
                                     *(["--no-torch"] if run.no_torch else [])],
        timeout=cfg.timeout, record=run.recorder("extensions"), pycache=run.pycache)
    stalled = hang.explain(stderr) if ended and ended.startswith("timed out") else None
    if stalled is not None:
        ended = f"{ended} ({stalled.summary})"
    checks = _checks([m.module for m in cfg.modules], lines, ended, device)
    run.found.checks[EXTENSIONS.key] = result = ExtensionsResult(
        checks=checks, native=native, device=device, config=cfg.to_dict(),
        hang=stalled.to_dict() if stalled else None)
    step.detail.update({c.module: c.status for c in checks}, device=device)
    if gpu_skipped:
        step.detail["smoke"] = "not run: --no-gpu (imports only)"
    if not result.passed:
        raise StepFailed(result.first_error or "an extension check failed")


def _checks(modules: list[str], lines: list[dict[str, object]], ended: str | None,
            device: str) -> tuple[ExtensionCheck, ...]:
    """One check per declared module, in order; the first without a line is the one the
    probe was running when it ended early (*ended* says how)."""
    by_module = {str(d.get("module")): d for d in lines if d.get("probe") == "extensions"}
    checks: list[ExtensionCheck] = []
    blamed = False
    for module in modules:
        if module in by_module:
            checks.append(ExtensionCheck.from_dict(by_module[module]))
        elif not blamed:
            blamed = True
            why = ended or "the probe printed no result for it"
            checks.append(ExtensionCheck(module=module, status="failed", device=device,
                                         error=f"{module}: the extensions probe {why} while "
                                               "importing or calling it"))
        else:
            checks.append(ExtensionCheck(module=module, status="not-run", device=device,
                                         error=f"{module}: not reached"))
    return tuple(checks)
