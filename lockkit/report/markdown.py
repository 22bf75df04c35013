"""A dossier for people: the verdict and first error, the steps, the commands, the
inventory, the system chain and the application's checks (``dossier.md``)."""

from __future__ import annotations

import json

from lockkit.redact import redact
from lockkit.report.model import Dossier

__all__ = ["render"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(d: Dossier) -> str:
    lines = [f"# lockkit {d.kind}: {d.subject}", "",
             f"**Result: {d.result}**" + (f" — first error: {d.first_error}"
                                          if d.first_error else ""), ""]
    for label, value in (("lockkit version", d.lockkit_version), ("started", d.started),
                         ("command line", " ".join(d.command_line)), ("lock", d.lock),
                         ("lock sha256", d.lock_sha256), ("interpreter", d.interpreter),
                         ("installer", d.installer), ("wheelhouse", d.wheelhouse)):
        if value:
            lines.append(f"- {label}: `{value}`")
    lines += ["", "## Steps", "", "| # | step | status | seconds | first error / reason |",
              "|---|---|---|---|---|"]
    for i, s in enumerate(d.steps, 1):
        lines.append(f"| {i} | {s.name} | {s.status} | {s.duration_s:.2f} | {_cell(s.note)} |")
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
    if d.fingerprints:
        lines += ["", "## Fingerprints", ""]
        for f in d.fingerprints:
            lines.append(f"- {'✔' if f.passed else '✘'} {f.detail}")
    if d.application:
        lines += ["", "## Application check", ""]
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
    return redact("\n".join(lines) + "\n")
