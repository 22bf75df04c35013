"""A dossier for people: the verdict and first error, the steps, the commands, the
inventory, the system chain and the application's checks (``dossier.md``). Its paths are
written relative to the dossier's roots, listed once in the facts (:mod:`~lockkit.report.roots`)."""

from __future__ import annotations

import json

from lockkit._internal.redact import Secrets
from lockkit.report.checks import registry
from lockkit.report.model import Dossier
from lockkit.report.roots import relative

__all__ = ["render"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(dossier: Dossier, secrets: Secrets) -> str:
    """``dossier.md``'s text, *secrets* (the project's) concealed."""
    d = relative(dossier, dossier.roots)
    lines = _verdict(d) + _facts(d) + _steps(d) + _commands(d) + _inventory(d) + _system(d)
    lines += _gpu_chain(d) + _toolchain(d) + _fingerprints(d)
    for check in registry.RECORDS:  # each check's own section (lockkit.report.checks)
        lines += check.render(d.checks)
    lines += _stacks(d)
    return secrets.redact("\n".join(lines) + "\n")


def _verdict(d: Dossier) -> list[str]:
    """The title, the result and first error, where it stalled, warnings and waivers."""
    lines = [f"# lockkit {d.kind}: {d.subject}", "",
             f"**Result: {d.result}**" + (f" — first error: {d.first_error}"
                                          if d.first_error else ""), ""]
    if d.environment:  # verify --existing: never to be read as a rebuild
        lines += [f"**{d.environment[0].upper()}{d.environment[1:]}:** `{d.interpreter}`", ""]
        lines += ["**Taken on its word** (not checked by this run):", "",
                  *(f"- {item}" for item in d.taken_on_its_word), ""]
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
    return lines


def _facts(d: Dossier) -> list[str]:
    roots = (["- paths relative to: " + ", ".join(f"`<{name}>` = `{path}`"
                                                  for name, path in d.roots.items())]
             if d.roots else [])
    return roots + [f"- {label}: `{value}`" for label, value in (
        ("lockkit version", d.lockkit_version), ("started", d.started),
        ("command line", " ".join(d.command_line)), ("lock", d.lock),
        ("lock sha256", d.lock_sha256), ("interpreter", d.interpreter),
        ("installer", d.installer), ("wheelhouse", d.wheelhouse)) if value]


def _steps(d: Dossier) -> list[str]:
    lines = ["", "## Steps", "", "| # | step | status | seconds | first error / reason |",
             "|---|---|---|---|---|"]
    for i, s in enumerate(d.steps, 1):
        lines.append(f"| {i} | {s.name} | {s.shown_status} | {s.duration_s:.2f} | "
                     f"{_cell(s.note)} |")
    return lines


def _commands(d: Dossier) -> list[str]:
    if not d.commands:
        return []
    lines = ["", "## Commands run, in order", ""]
    for c in d.commands:
        end = "timed out" if c.timed_out else f"exit {c.returncode}"
        lines.append(f"1. `{' '.join(c.argv)}` → {end} ({c.duration_s:.2f} s, step {c.step})")
    return lines


def _inventory(d: Dossier) -> list[str]:
    if not d.inventory:
        return []
    return ["", "## Inventory against the lock", "",
            *(f"- {key}: {', '.join(getattr(d.inventory, key)) or 'none'}"
              for key in ("missing", "extra", "mismatched"))]


def _system(d: Dossier) -> list[str]:
    if not d.system:
        return []
    torch, os_ = d.system.torch, d.system.section("os")
    return ["", "## System chain", "", *(f"- {label}: `{value}`" for label, value in (
        ("os", os_.get("distro")), ("kernel", os_.get("kernel")),
        ("arch", d.system.raw.get("arch")), ("libc", d.system.raw.get("libc")),
        ("python", d.system.section("python").get("version")),
        ("torch", torch.version), ("torch.version.cuda", torch.cuda),
        ("torch.version.hip", torch.hip),
        ("cuDNN / MIOpen", f"{torch.cudnn} / {torch.miopen}"),
        ("devices", json.dumps(list(torch.devices))[:200]),
        ("driver", json.dumps(d.system.raw.get("driver"))[:200])))]


def _fingerprints(d: Dossier) -> list[str]:
    if not d.fingerprints:
        return []
    return ["", "## Fingerprints", "",
            *(f"- {'✔' if f.passed else '✘'} {f.detail}" for f in d.fingerprints)]


def _stacks(d: Dossier) -> list[str]:
    if not (d.hang and d.hang.get("stacks")):
        return []
    return ["", "## Stacks at the timeout", "", "```text", str(d.hang["stacks"]).rstrip(), "```"]


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
        why = info.get("error") or info.get("skipped")
        lines += ["", "torch.utils.collect_env: "
                  + (f"recorded in the JSON dossier ({info.get('seconds')} s)"
                     if "info" in info else f"not recorded ({why})")]
    return lines
