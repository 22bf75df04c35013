"""A verify or diagnose dossier as JUnit XML, so CI shows each step as a test.

One ``<testsuites>`` holding one ``<testsuite>``; each step is a ``<testcase>`` in the
dossier's order. ``failed`` is a ``<failure>`` carrying the step's first error,
``skipped`` and ``not-run`` are ``<skipped>`` carrying the reason: a step that never
ran is not a failure of its own, the step it needed already is. ``errors`` is always 0
because a step's crash is recorded by :mod:`lockkit.steps.engine` as ``failed``.

The shape follows the common (Jenkins/Ant) JUnit schema that GitHub, GitLab and
Jenkins test reporters read: numeric ``tests``/``failures``/``errors``/``skipped``/
``time``, ``timestamp`` without a zone. Paths are the dossier document's: relative to
its roots, each root a ``root.<name>`` property (:mod:`~lockkit.report.roots`). Every
message is redacted with the project's :class:`~lockkit._internal.redact.Secrets`, and
characters XML 1.0 cannot carry (terminal escapes in a subprocess's output) are dropped
so the file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockkit._internal.redact import Secrets, masked
from lockkit.report.json import scrub
from lockkit.report.model import Dossier
from lockkit.report.shapes import STATUSES

if TYPE_CHECKING:
    from lockkit._internal.outfile import Target

__all__ = ["WHAT", "recognise", "render", "write_junit"]

# XML 1.0 allows tab, LF, CR and everything from U+0020 except surrogates, FFFE, FFFF.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
WHAT = "a JUnit report lockkit wrote"  # what --junit is replaced only over
_OURS = re.compile(rb'^<testsuites name="lockkit ', re.MULTILINE)  # render's root element
_VERSION = b'<property name="lockkit_version" '  # one of _PROPERTIES, always set
_PROPERTIES = ("kind", "platform", "python", "result", "first_error", "lockkit_version",
               "started", "lock_sha256")


def _text(value: Any) -> str:
    """A value as safe XML text (the document's strings were redacted by :func:`render`):
    user info masked, illegal characters removed."""
    return _NOT_XML.sub("", masked("" if value is None else str(value)))


def _seconds(value: Any) -> str:
    return f"{float(value or 0.0):.3f}"


def _check(given: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The steps as a list; every unknown status is named by its index."""
    steps = list(given)
    bad = [f"steps[{i}].status: {s.get('status')!r} is not one of {', '.join(STATUSES)}"
           for i, s in enumerate(steps) if s.get("status") not in STATUSES]
    if bad:
        raise ValueError("; ".join(bad))
    return steps


def _testcase(parent: ET.Element, step: Mapping[str, Any], classname: str) -> None:
    case = ET.SubElement(parent, "testcase", classname=classname, name=_text(step["name"]),
                         time=_seconds(step.get("duration_s")))
    status = step["status"]
    if status == "failed":
        message = _text(step.get("error") or "failed")
        ET.SubElement(case, "failure", message=message, type="failed").text = message
    elif status == "skipped":
        ET.SubElement(case, "skipped", message=_text(step.get("reason") or "skipped"))
    elif status == "not-run":
        reason = step.get("reason")
        ET.SubElement(case, "skipped", message=_text(f"not run: {reason}" if reason else "not run"))


def render(dossier: Dossier | Mapping[str, Any], secrets: Secrets) -> str:
    """The JUnit XML text (UTF-8 declared) of one dossier (or its JSON document), *secrets*
    (the project's) concealed."""
    root = _element(scrub(dossier.to_dict() if isinstance(dossier, Dossier) else dossier,
                          secrets))
    ET.indent(root)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
            + "\n")


def _element(doc: Mapping[str, Any]) -> ET.Element:
    """The ``<testsuites>`` element for one dossier's JSON document."""
    steps = _check(doc.get("steps") or [])
    kind = _text(doc.get("kind") or "verify")
    platform = doc.get("platform")
    subject = _text(platform or doc.get("python") or "")
    classname = f"lockkit.{kind}.{_text(platform)}" if platform else f"lockkit.{kind}"
    counts = {"tests": str(len(steps)),
              "failures": str(sum(s["status"] == "failed" for s in steps)), "errors": "0",
              "skipped": str(sum(s["status"] in ("skipped", "not-run") for s in steps)),
              "time": _seconds(sum(float(s.get("duration_s") or 0.0) for s in steps))}
    root = ET.Element("testsuites", {"name": f"lockkit {kind}", **counts})
    suite = ET.SubElement(root, "testsuite",
                          {"name": f"lockkit {kind} {subject}".rstrip(), **counts})
    if doc.get("started"):
        suite.set("timestamp", _text(doc["started"]).removesuffix("Z"))
    props = ET.SubElement(suite, "properties")
    for key in _PROPERTIES:
        if doc.get(key) is not None:
            ET.SubElement(props, "property", name=key, value=_text(doc[key]))
    for name, path in (doc.get("roots") or {}).items():
        ET.SubElement(props, "property", name=f"root.{name}", value=_text(path))
    for step in steps:
        _testcase(suite, step, classname)
    return root


def write_junit(dossier: Dossier | Mapping[str, Any], path: Path | Target,
                secrets: Secrets) -> None:
    """Write *dossier* as JUnit XML to *path* (UTF-8, with a declaration): a regular file
    atomically, under :mod:`lockkit._internal.outfile`'s rule (a path is checked here; a
    :class:`~lockkit._internal.outfile.Target` was checked by the caller)."""
    from lockkit._internal import outfile

    text = render(dossier, secrets)
    target = path if isinstance(path, outfile.Target) else outfile.check(
        path, what=WHAT, recognise=recognise)
    outfile.write(target, text)


def recognise(path: Path) -> bool:
    """A JUnit report lockkit wrote: its ``<testsuites>`` is lockkit's and its suite has
    the ``lockkit_version`` property (:mod:`lockkit._internal.outfile`'s rule)."""
    from lockkit._internal.outfile import head

    data = head(path, 1 << 16)
    return data is not None and bool(_OURS.search(data)) and _VERSION in data
