"""``[verify.application]``: any command, run by verify's application step.

The general form of the application check: the project's command runs in a clean copy
of its committed files with the rebuilt venv's interpreter (``{python}``), and passes
when it exits 0 within ``timeout`` seconds and writes the declared ``outputs``. An
output can be compared, as JSON (a number is JSON too), with a committed reference
within a declared tolerance and its reason (``[verify.application.compare]``), and the
files it reads are fingerprinted, as ``[verify.embedding]`` (the specialised form) does.

``[verify] application = "none"`` with ``reason`` says a project has no application to
run: the step is then skipped as *waived* and the run can still pass. Every key is read
when the project loads, each problem named by its key path (``verify.application.
compare."out/metrics.json".atol: ...``), so a mistake costs under a second, not minutes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from lockkit._internal.keys import KeyReader
from lockkit.config.checks.rules import (
    DEVICE_USE,
    Check,
    Fields,
    command,
    fingerprints,
    relative_path,
)

__all__ = ["APPLICATION_HINT", "CHECK", "ApplicationConfig", "Comparison", "application_problems"]

APPLICATION_HINT = "see docs/howto/checks.md, 'The application check', for a complete table"

_KEYS = ("command", "timeout", "outputs", "compare", "fingerprints")
_COMPARE_KEYS = ("reference", "atol", "rtol", "reason")
_USE = ("only {python} (the rebuilt venv's interpreter) and " + DEVICE_USE
        + "; paths are relative to the copy")


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """One output compared with its committed reference: |got - ref| <= atol + rtol*|ref|
    for every number, equality for everything else, the same JSON shape."""

    output: str  # relative to the clean copy (the command's working folder)
    reference: str  # relative to the project; fingerprinted
    atol: float
    rtol: float
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"reference": self.reference, "atol": self.atol, "rtol": self.rtol,
                "reason": self.reason}


class _Command(TypedDict):
    command: tuple[str, ...]


class _Values(_Command, total=False):
    """The :class:`ApplicationConfig` fields the table sets (Python 3.10 has no
    ``typing.Required``: the required key comes from :class:`_Command`)."""

    timeout: float
    outputs: tuple[str, ...]
    compare: tuple[Comparison, ...]
    fingerprints: tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class ApplicationConfig:
    """The validated [verify.application] table."""

    command: tuple[str, ...]
    timeout: float = 600.0
    outputs: tuple[str, ...] = ()
    compare: tuple[Comparison, ...] = ()
    fingerprints: tuple[tuple[str, str], ...] = ()

    @property
    def expected_outputs(self) -> tuple[str, ...]:
        """Every file the command must write: ``outputs``, then the compared ones."""
        compared = tuple(c.output for c in self.compare if c.output not in self.outputs)
        return self.outputs + compared

    def argv(self, python: Path, device: str) -> list[str]:
        return [part.format(python=str(python), device=device) for part in self.command]

    def to_dict(self) -> dict[str, object]:
        """The table as written in lockkit.toml, for the dossier."""
        return {"command": list(self.command), "timeout": self.timeout,
                "outputs": list(self.outputs),
                "compare": {c.output: c.to_dict() for c in self.compare},
                "fingerprints": dict(self.fingerprints)}


def application_problems(root: Path, verify: Mapping[str, object]
                         ) -> tuple[ApplicationConfig | None, str | None, list[str]]:
    """From the [verify] table: the application check, or the waiver's reason
    (``application = "none"``), and every problem (key paths, for the caller to prefix
    with the file). The caller checks that [verify] has no unknown keys."""
    r = KeyReader(where="verify", unknown="path: unknown key")
    cfg, waiver = _application(r, root, verify)
    return (None, None, r.errors) if r.errors else (cfg, waiver, [])


def _application(r: KeyReader, root: Path, verify: Mapping[str, object]
                 ) -> tuple[ApplicationConfig | None, str | None]:
    value, reason = verify.get("application"), verify.get("reason")
    if value == "none":
        if not isinstance(reason, str) or not reason.strip():
            r.fail("reason", 'required with application = "none": say why this project has '
                             "no application to run"
                             + (f", got {reason!r}" if reason is not None else ""))
        elif "embedding" in verify:
            r.fail("application", '"none", but [verify.embedding] declares a check: remove '
                                  "one of them")
        return None, reason.strip() if isinstance(reason, str) else None
    if reason is not None:
        r.fail("reason", 'only with application = "none" (a tolerance\'s reason goes in its '
                         "own table)")
    if value is None:
        return None, None
    if not isinstance(value, dict):
        r.fail("application", f'expected a table or "none", got {value!r}')
        return None, None
    if "embedding" in verify:
        r.fail("application", "[verify.embedding] is declared too: declare one application "
                              "check (a command can run both)")
    return _read(r.at("application"), root.resolve(), value), None


def _read(r: KeyReader, root: Path, table: Mapping[str, object]) -> ApplicationConfig | None:
    """``[verify.application]``, *r* reading at its path; None when it has a problem."""
    before = len(r.errors)
    r.unknown(table, _KEYS)
    r.require(table, ("command",))
    argv = command(r, table.get("command"), ("python", "device"), use=_USE)
    timeout = r.number("timeout", table.get("timeout"), 1e-9)
    outputs = _outputs(r, root, table.get("outputs"))
    compare = _compare(r.at("compare"), root, table.get("compare"))
    references = [c.reference for c in compare or ()]
    prints = table.get("fingerprints")
    pairs = fingerprints(r, prints, root, references, "the comparison")
    for path in references if prints is None else ():
        r.fail("fingerprints", f"missing: {path!r} is compared, so it needs an identity "
                               "(its sha256)")
    if len(r.errors) > before or argv is None:
        return None
    values = _Values(command=argv, fingerprints=pairs)  # absent keys keep their defaults
    if timeout is not None:
        values["timeout"] = timeout
    if outputs is not None:
        values["outputs"] = outputs
    if compare is not None:
        values["compare"] = compare
    return ApplicationConfig(**values)


def _outputs(r: KeyReader, root: Path, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        r.fail("outputs", f"expected a list of relative paths, got {value!r}")
        return None
    paths = [relative_path(r, f"outputs[{i}]", v, root) for i, v in enumerate(value)]
    return tuple(p for p in paths if p is not None)


def _compare(r: KeyReader, root: Path, value: object) -> tuple[Comparison, ...] | None:
    """``[verify.application.compare]``: *r* reads at ``verify.application.compare``."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        r.fail("", "expected a table of 'output path' = { reference, atol, rtol, reason }")
        return None
    found = []
    for output, entry in value.items():
        key = f'"{output}"'
        if relative_path(r, key, output, root) is None:
            continue
        if not isinstance(entry, dict):
            r.fail(key, f"expected {{ reference, atol, rtol, reason }}, got {entry!r}")
            continue
        before, at = len(r.errors), r.at(key)
        at.unknown(entry, _COMPARE_KEYS)
        at.require(entry, _COMPARE_KEYS, "required: no tolerance is assumed")
        item = {"output": output,
                "reference": relative_path(at, "reference", entry.get("reference"), root),
                "atol": at.number("atol", entry.get("atol"), 0),
                "rtol": at.number("rtol", entry.get("rtol"), 0),
                "reason": at.text("reason", entry.get("reason"))}
        if len(r.errors) == before:
            found.append(Comparison(**item))
    return tuple(found)


def _read_check(root: Path, verify: Mapping[str, object]) -> tuple[Fields, list[str]]:
    """Read always: the waiver and its reason are [verify]'s own keys."""
    config, waiver, problems = application_problems(root, verify)
    return {"application": config, "application_waiver": waiver}, problems


CHECK = Check(key="application", read=_read_check, hint=APPLICATION_HINT,
              fields={"application": ApplicationConfig, "application_waiver": str})
