"""Steps and the dossier: what ran, in order, with the first error; JSON, Markdown, table.

``verify`` and ``diagnose`` share this shape. A step ends ``passed``, ``failed``,
``skipped`` (with the reason) or ``not-run`` (a step it depends on did not pass); the
first failed step's error is the dossier's ``first_error``. Everything written goes
through :func:`scrub`, so no credential reaches a report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lockkit.redact import redact

__all__ = ["SCHEMA_VERSION", "Step", "StepFailed", "StepSkipped", "Steps", "dumps", "markdown",
           "overall", "scrub"]

SCHEMA_VERSION = 1


class StepFailed(Exception):
    """Raised inside a step: its message is the step's first error (one line)."""


class StepSkipped(Exception):
    """Raised inside a step: its message is why the step did not apply."""


@dataclass
class Step:
    name: str
    needs: tuple[str, ...] = ()
    status: str = "not-run"
    duration: float = 0.0
    error: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "duration_s": round(self.duration, 3),
                "needs": list(self.needs), "error": self.error, "reason": self.reason,
                "detail": self.detail}


class Steps:
    """The ordered steps of one run; ``run(name)`` times one and records how it ended."""

    def __init__(self, plan: list[tuple[str, tuple[str, ...]]]) -> None:
        self.steps = {name: Step(name, needs) for name, needs in plan}

    def __getitem__(self, name: str) -> Step:
        return self.steps[name]

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps.values())

    def blocked(self, name: str) -> str | None:
        """Why *name* cannot run: the first step it needs that did not pass."""
        for need in self.steps[name].needs:
            st = self.steps[need]
            if st.status != "passed":
                return f"{need} {st.status}"
        return None

    def execute(self, name: str, body: Callable[[Step], None]) -> Step:
        """Run *body* unless a needed step did not pass; its exceptions become its status."""
        step = self.steps[name]
        why = self.blocked(name)
        if why:
            step.status, step.reason = ("skipped" if why.endswith("skipped") else "not-run"), why
            return step
        start = time.perf_counter()
        try:
            body(step)
            step.status = "passed"
        except StepSkipped as exc:
            step.status, step.reason = "skipped", str(exc)
        except StepFailed as exc:
            step.status, step.error = "failed", _one_line(str(exc))
        except Exception as exc:  # noqa: BLE001 - a step's crash is its finding, not ours
            step.status, step.error = "failed", _one_line(f"{type(exc).__name__}: {exc}")
        finally:
            step.duration = time.perf_counter() - start
        return step

    @property
    def first_error(self) -> str | None:
        failed = next((s for s in self if s.status == "failed"), None)
        return f"{failed.name}: {failed.error}" if failed else None


def overall(steps: Steps) -> str:
    """``passed`` only when every step passed; ``failed`` if any failed; else incomplete."""
    statuses = [s.status for s in steps]
    if all(s == "passed" for s in statuses):
        return "passed"
    return "failed" if "failed" in statuses else "incomplete"


def _one_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return redact(lines[0] if lines else text)


def scrub(value: Any) -> Any:
    """Credentials out of every string in a JSON-shaped value."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(scrub(doc), indent=2, sort_keys=False) + "\n"


def markdown(doc: dict[str, Any]) -> str:
    """The dossier for people: the verdict, the steps, the commands, the system chain."""
    doc = scrub(doc)
    lines = [f"# lockkit {doc['kind']}: {doc.get('platform') or doc.get('python')}", "",
             f"**Result: {doc['result']}**" + (f" — first error: {doc['first_error']}"
                                               if doc.get("first_error") else ""), ""]
    for key in ("lockkit_version", "started", "command_line", "lock", "lock_sha256",
                "interpreter", "installer", "wheelhouse"):
        if doc.get(key):
            value = doc[key] if not isinstance(doc[key], list) else " ".join(doc[key])
            lines.append(f"- {key.replace('_', ' ')}: `{value}`")
    lines += ["", "## Steps", "", "| # | step | status | seconds | first error / reason |",
              "|---|---|---|---|---|"]
    for i, s in enumerate(doc["steps"], 1):
        note = (s.get("error") or s.get("reason") or "").replace("|", "\\|")
        lines.append(f"| {i} | {s['name']} | {s['status']} | {s['duration_s']:.2f} | {note} |")
    if doc.get("commands"):
        lines += ["", "## Commands run, in order", ""]
        for c in doc["commands"]:
            lines.append(f"1. `{' '.join(c['argv'])}` → exit {c['returncode']} "
                         f"({c['duration_s']:.2f} s, step {c['step']})")
    inv = doc.get("inventory")
    if inv:
        lines += ["", "## Inventory against the lock", ""]
        for key in ("missing", "extra", "mismatched"):
            lines.append(f"- {key}: {', '.join(map(str, inv.get(key) or [])) or 'none'}")
    system = doc.get("system") or {}
    if system:
        torch = system.get("torch") or {}
        lines += ["", "## System chain", ""]
        for label, value in (("os", (system.get("os") or {}).get("distro")),
                             ("kernel", (system.get("os") or {}).get("kernel")),
                             ("arch", system.get("arch")),
                             ("libc", system.get("libc")),
                             ("python", (system.get("python") or {}).get("version")),
                             ("torch", torch.get("version")),
                             ("torch.version.cuda", torch.get("cuda")),
                             ("torch.version.hip", torch.get("hip")),
                             ("cuDNN / MIOpen", f"{torch.get('cudnn')} / {torch.get('miopen')}"),
                             ("devices", json.dumps(torch.get("devices"))[:200]),
                             ("driver", json.dumps(system.get("driver"))[:200])):
            lines.append(f"- {label}: `{value}`")
    checks = doc.get("checks") or {}
    if checks.get("application"):
        app = checks["application"]
        lines += ["", "## Application check", ""]
        for c in app.get("checks", []):
            lines.append(f"- {'✔' if c['passed'] else '✘'} {c['name']}: {c['detail']}")
    return "\n".join(lines) + "\n"
