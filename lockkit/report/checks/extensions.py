"""The extensions check's part of the dossier: ``checks.extensions``
(:class:`~lockkit.report.extrecords.ExtensionsResult`: the declared compiled modules and the
locked packages that ship native code) and its section of ``dossier.md``."""

from __future__ import annotations

from lockkit.report.checks.interface import Recorded
from lockkit.report.extrecords import ExtensionsResult
from lockkit.report.shapes import ExtensionsDoc

__all__ = ["EXTENSIONS"]


def _markdown(ext: ExtensionsResult) -> list[str]:
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


EXTENSIONS = Recorded(key="extensions", record=ExtensionsResult,
                      load=ExtensionsResult.from_dict, markdown=_markdown, shape=ExtensionsDoc)
