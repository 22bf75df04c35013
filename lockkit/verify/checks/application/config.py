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

import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockkit.config.verify import TableReader

__all__ = ["APPLICATION_HINT", "ApplicationConfig", "Comparison", "application_problems"]

APPLICATION_HINT = "see 'The application check' in the README for a complete table"

_KEYS = ("command", "timeout", "outputs", "compare", "fingerprints")
_COMPARE_KEYS = ("reference", "atol", "rtol", "reason")


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """One output compared with its committed reference: |got - ref| <= atol + rtol*|ref|
    for every number, equality for everything else, the same JSON shape."""

    output: str  # relative to the clean copy (the command's working folder)
    reference: str  # relative to the project; fingerprinted
    atol: float
    rtol: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "atol": self.atol, "rtol": self.rtol,
                "reason": self.reason}


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

    def argv(self, python: Path) -> list[str]:
        return [part.format(python=str(python)) for part in self.command]

    def to_dict(self) -> dict[str, Any]:
        """The table as written in lockkit.toml, for the dossier."""
        return {"command": list(self.command), "timeout": self.timeout,
                "outputs": list(self.outputs),
                "compare": {c.output: c.to_dict() for c in self.compare},
                "fingerprints": dict(self.fingerprints)}


def application_problems(root: Path, verify: dict[str, Any]
                         ) -> tuple[ApplicationConfig | None, str | None, list[str]]:
    """From the [verify] table: the application check, or the waiver's reason
    (``application = "none"``), and every problem (key paths, for the caller to prefix
    with the file). The caller checks that [verify] has no unknown keys."""
    value, reason = verify.get("application"), verify.get("reason")
    if value == "none":
        if not isinstance(reason, str) or not reason.strip():
            return None, None, ['verify.reason: required with application = "none": say '
                                'why this project has no application to run'
                                + (f", got {reason!r}" if reason is not None else "")]
        if "embedding" in verify:
            return None, None, ['verify.application: "none", but [verify.embedding] '
                                "declares a check: remove one of them"]
        return None, reason.strip(), []
    problems = []
    if reason is not None:
        problems.append('verify.reason: only with application = "none" (a tolerance\'s '
                        "reason goes in its own table)")
    if value is None:
        return None, None, problems
    if not isinstance(value, dict):
        return None, None, problems + [f'verify.application: expected a table or "none", '
                                       f"got {value!r}"]
    if "embedding" in verify:
        problems.append("verify.application: [verify.embedding] is declared too: declare "
                        "one application check (a command can run both)")
    cfg, found = _read(root, value)
    return (cfg if not problems + found else None), None, problems + found


def _read(root: Path, table: dict[str, Any]) -> tuple[ApplicationConfig | None, list[str]]:
    reader = TableReader(root, "verify.application")
    for key in sorted(set(table) - set(_KEYS)):
        reader.fail(key, "unknown key" + _close(key, _KEYS))
    if "command" not in table:
        reader.fail("command", "missing (required)")
    values: dict[str, Any] = {
        "command": _command(reader, table.get("command")),
        "timeout": reader.number("timeout", table.get("timeout"), 1e-9, math.inf),
        "outputs": _outputs(reader, table.get("outputs")),
        "compare": _compare(reader, table.get("compare")),
    }
    prints = table.get("fingerprints")
    values["fingerprints"] = reader.fingerprints(prints, {}) if prints is not None else ()
    listed = {path for path, _ in values["fingerprints"]}
    for c in values["compare"] or ():
        if prints is not None and c.reference not in listed:
            reader.fail("fingerprints", f"no entry for {c.reference!r}: the comparison "
                                        "reads it, so it needs an identity")
        elif prints is None:
            reader.fail("fingerprints", f"missing: {c.reference!r} is compared, so it "
                                        "needs an identity (its sha256)")
    if reader.errors:
        return None, reader.errors
    return ApplicationConfig(**{k: v for k, v in values.items() if v is not None}), []


def _close(key: str, known: tuple[str, ...]) -> str:
    import difflib

    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _command(reader: TableReader, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        reader.fail("command", f"expected a non-empty list of strings, got {value!r}")
        return None
    try:
        fields = [f for part in value for _, f, spec, conv in string.Formatter().parse(part)
                  if f is not None and (spec or conv or f != "python")]
    except ValueError as exc:
        reader.fail("command", f"malformed placeholder: {exc} (write {{{{ for a brace)")
        return None
    if fields:
        reader.fail("command", f"unknown placeholder {{{fields[0]}}}: only {{python}} (the "
                               "rebuilt venv's interpreter); paths are relative to the copy")
        return None
    return tuple(value)


def _outputs(reader: TableReader, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        reader.fail("outputs", f"expected a list of relative paths, got {value!r}")
        return None
    paths = [reader.path(f"outputs[{i}]", v) for i, v in enumerate(value)]
    return tuple(p for p in paths if p is not None)


def _compare(reader: TableReader, value: Any) -> tuple[Comparison, ...] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        reader.fail("compare", "expected a table of 'output path' = { reference, atol, rtol, "
                               "reason }")
        return None
    found = []
    for output, entry in value.items():
        key = f'compare."{output}"'
        if reader.path(key, output) is None:
            continue
        if not isinstance(entry, dict):
            reader.fail(key, f"expected {{ reference, atol, rtol, reason }}, got {entry!r}")
            continue
        before = len(reader.errors)
        for name in sorted(set(entry) - set(_COMPARE_KEYS)):
            reader.fail(f"{key}.{name}", "unknown key" + _close(name, _COMPARE_KEYS))
        for name in _COMPARE_KEYS:
            if name not in entry:
                reader.fail(f"{key}.{name}", "missing (required: no tolerance is assumed)")
        item = {"output": output,
                "reference": reader.path(f"{key}.reference", entry.get("reference")),
                "atol": reader.number(f"{key}.atol", entry.get("atol"), 0, math.inf),
                "rtol": reader.number(f"{key}.rtol", entry.get("rtol"), 0, math.inf),
                "reason": reader.text(f"{key}.reason", entry.get("reason"))}
        if len(reader.errors) == before:
            found.append(Comparison(**item))
    return tuple(found)
