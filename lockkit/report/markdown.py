"""A dossier for people: the verdict and first error, the steps, the commands, the
inventory, the system chain and the application's checks (``dossier.md``)."""

from __future__ import annotations

import json

from lockkit._internal.redact import redact
from lockkit.report.model import Dossier

__all__ = ["render"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(d: Dossier) -> str:
    lines = [f"# lockkit {d.kind}: {d.subject}", "",
             f"**Result: {d.result}**" + (f" — first error: {d.first_error}"
                                          if d.first_error else ""), ""]
    if d.hang:  # the procedure: aim the diagnosis at the layer where it stalled
        lines += [f"> **Stalled:** {d.hang.get('step')}: {d.hang.get('phase')}"
                  + (f" at `{d.hang['frame']}`" if d.hang.get("frame") else "")
                  + f" ({d.hang.get('detail')})", ""]
    for warning in d.warnings:
        lines.append(f"> **Warning:** {warning}")
    for step in d.waivers:
        lines.append(f"> **Waived:** {step.name}: {step.reason}")
    if d.warnings or d.waivers:
        lines.append("")
    for label, value in (("lockkit version", d.lockkit_version), ("started", d.started),
                         ("command line", " ".join(d.command_line)), ("lock", d.lock),
                         ("lock sha256", d.lock_sha256), ("interpreter", d.interpreter),
                         ("installer", d.installer), ("wheelhouse", d.wheelhouse)):
        if value:
            lines.append(f"- {label}: `{value}`")
    lines += ["", "## Steps", "", "| # | step | status | seconds | first error / reason |",
              "|---|---|---|---|---|"]
    for i, s in enumerate(d.steps, 1):
        lines.append(f"| {i} | {s.name} | {s.shown_status} | {s.duration_s:.2f} | "
                     f"{_cell(s.note)} |")
    if d.commands:
        lines += ["", "## Commands run, in order", ""]
        for c in d.commands:
            end = "timed out" if c.timed_out else f"exit {c.returncode}"
            lines.append(f"1. `{' '.join(c.argv)}` → {end} ({c.duration_s:.2f} s, "
                         f"step {c.step})")
    if d.inventory:
        lines += ["", "## Inventory against the lock", ""]
        for key in ("missing", "extra", "mismatched"):
            lines.append(f"- {key}: {', '.join(getattr(d.inventory, key)) or 'none'}")
    if d.system:
        torch, os_ = d.system.torch, d.system.section("os")
        lines += ["", "## System chain", ""]
        for label, value in (("os", os_.get("distro")), ("kernel", os_.get("kernel")),
                             ("arch", d.system.raw.get("arch")),
                             ("libc", d.system.raw.get("libc")),
                             ("python", d.system.section("python").get("version")),
                             ("torch", torch.version), ("torch.version.cuda", torch.cuda),
                             ("torch.version.hip", torch.hip),
                             ("cuDNN / MIOpen", f"{torch.cudnn} / {torch.miopen}"),
                             ("devices", json.dumps(list(torch.devices))[:200]),
                             ("driver", json.dumps(d.system.raw.get("driver"))[:200])):
            lines.append(f"- {label}: `{value}`")
    lines += _gpu_chain(d) + _toolchain(d) + _extensions(d)
    if d.fingerprints:
        lines += ["", "## Fingerprints", ""]
        for f in d.fingerprints:
            lines.append(f"- {'✔' if f.passed else '✘'} {f.detail}")
    if d.application:
        lines += ["", "## Application check", ""]
        if d.application.command is not None:
            lines.append(f"- command: `{' '.join(d.application.command)}` → exit "
                         f"{d.application.returncode}")
        for check in d.application.checks:
            lines.append(f"- {'✔' if check.passed else '✘'} {check.name}: {check.detail}")
    if d.resume:
        r = d.resume
        lines += ["", "## Training resume", "",
                  f"- {'✔' if r.passed else '✘'} {r.steps}+{r.resume_steps} steps "
                  f"uninterrupted against {r.steps} steps, checkpoint, then a new process "
                  f"for {r.resume_steps}: " + (r.first_error or "identical")]
        tolerance = "exact" if not (r.atol or r.rtol) else f"atol {r.atol:g}, rtol {r.rtol:g}"
        lines.append(f"- tolerance: {tolerance}" + (f" ({r.reason})" if r.reason else "")
                     + (f"; largest loss difference {r.max_loss_diff:.3g}"
                        if r.max_loss_diff is not None else ""))
    if d.hang and d.hang.get("stacks"):
        lines += ["", "## Stacks at the timeout", "", "```text",
                  str(d.hang["stacks"]).rstrip(), "```"]
    return redact("\n".join(lines) + "\n")


def _gpu_chain(d: Dossier) -> list[str]:
    checks = (d.gpu or {}).get("checks")
    if not isinstance(checks, dict) or not checks:
        return []
    lines = ["", "## GPU chain", ""]
    for name, check in checks.items():
        if isinstance(check, dict):
            note = check.get("error") or check.get("reason") or check.get("op") or ""
            lines.append(f"- {name}: {check.get('status')}" + (f" — {note}" if note else ""))
    return lines


def _toolchain(d: Dossier) -> list[str]:
    if not d.system:
        return []
    tools = d.system.section("toolchain").get("tools")
    lines = []
    if isinstance(tools, dict) and tools:
        lines += ["", "## Build toolchain", ""]
        for name, tool in tools.items():
            if isinstance(tool, dict):
                lines.append(f"- {name}: {tool.get('version') or tool.get('error')}"
                             + (f" (`{tool['path']}`)" if tool.get("path") else ""))
        env = d.system.section("toolchain").get("env") or {}
        lines += [f"- {k}: `{v}`" for k, v in env.items() if v]
    info = d.system.section("collect_env")
    if info:
        lines += ["", "torch.utils.collect_env: "
                  + (f"recorded in the JSON dossier ({info.get('seconds')} s)"
                     if "info" in info else f"not recorded ({info.get('error')})")]
    return lines


def _extensions(d: Dossier) -> list[str]:
    ext = d.extensions
    if ext is None:
        return []
    lines = ["", "## Compiled extensions", ""]
    if not ext.checks:
        lines.append("- none declared ([verify.extensions])")
    if ext.hang:
        lines.append(f"- the probe stalled in {ext.hang.get('phase')}"
                     + (f" at {ext.hang['frame']}" if ext.hang.get("frame") else ""))
    for c in ext.checks:
        lines.append(f"- {'✔' if c.passed else '✘'} {c.module} on {c.device}: "
                     + (c.error or f"smoke value {c.value}"))
    lines += ["", f"Locked packages that ship native code: {len(ext.native)}", ""]
    lines += [f"- {n.name} {n.version} ({n.tags}, {n.libraries} shared libraries)"
              for n in ext.native]
    return lines
