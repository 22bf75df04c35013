"""``[platform-requirements]``: a platform's own lines, each replacing the requirement of
the same (canonical) name for that platform, or adding it.

One torch pin cannot serve two backends: each PyTorch index serves its own range of
releases (``linux-rocm6`` serves torch ``>=2.8,<2.10``, ``linux-cu132`` ``>=2.12``), so a
project that locks both says ``torch==2.13.0`` once and ``linux-rocm6 = ["torch==2.9.1"]``
here. The table is read with the project (:func:`read_table`, every problem by its key
path); a platform's *effective* inputs (:func:`lockkit.config.inputs.effective_inputs`)
are the project's inputs with the replaced names taken out and the platform's lines under
a label of their own (``lockkit.toml[platform-requirements.linux-rocm6]``): what uv
resolves, what the lock's ``[tool.lockkit] inputs`` records (so ``compile --check`` finds
only that platform stale when its line changes) and what ``lockkit diff`` names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lockkit._internal.keys import KeyReader

__all__ = ["KEY", "PlatformLines", "read_table", "requirement_name"]

KEY = "platform-requirements"
_HINT = ('e.g. [platform-requirements] linux-rocm6 = ["torch==2.9.1", '
         '"torchvision==0.24.1"]: each key a platform the project compiles')


@dataclass(frozen=True, kw_only=True)
class PlatformLines:
    """One key of the table: as written (a platform name or an alias), the platform it
    stands for (an alias's target; the key itself otherwise) and its lines, normalised."""

    key: str
    target: str
    lines: tuple[str, ...]

    def names(self) -> set[str]:
        """The canonical names these lines replace."""
        return {n for n in map(requirement_name, self.lines) if n is not None}

    def label(self, config: Path | None, root: Path) -> str:
        """The lines' label in an inputs record, beside the input files' labels."""
        where = config.relative_to(root).as_posix() if config is not None else "lockkit.toml"
        table = KEY if where.endswith("lockkit.toml") else f"tool.lockkit.{KEY}"
        return f"{where}[{table}.{self.key}]"


def requirement_name(line: str) -> str | None:
    """The canonical name of a requirement line (``--hash`` options after it allowed);
    None for an option line (``-r other.in``) or one that does not parse."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(line.split(" --hash=")[0]).name)
    except InvalidRequirement:
        return None


def read_table(c: KeyReader, root: Path, data: Mapping[str, object],
               configured: Sequence[str]) -> tuple[PlatformLines, ...]:
    """The table, each value a list of requirement strings and each key a platform the
    project compiles (*configured*, by name or alias); every problem recorded in *c*."""
    table = c.table(data, KEY, f"[{KEY}]")
    if not table:
        return ()
    from lockkit.config.reqfile import normalize_requirement
    from lockkit.platforms.definitions import closest_platform, load_catalog

    catalog = load_catalog(root)
    known = {**{n: p.alias_of or n for n, p in catalog.platforms.items()},
             **{n: n for n in catalog.broken}}
    wanted = {known.get(n, n) for n in configured}
    found: dict[str, PlatformLines] = {}
    for key, value in table.items():
        lines = c.at(KEY).strings(key, value, empty=False)
        target = known.get(key)
        if target is None or target not in wanted:
            close = closest_platform(key, [*configured, *(n for n, t in known.items()
                                                          if t in wanted)])
            tip = f"did you mean {close!r}?" if close and target is None else \
                f"the project compiles {', '.join(configured)}" + (
                    f"; add {key} to platforms to compile it" if target else "")
            c.fail(f"{KEY}.{key}", "names no platform the project compiles "
                   f"(its platforms key); {tip}", hint=_HINT)
            continue
        if target in found:
            c.fail(f"{KEY}.{key}", f"names the same platform as {found[target].key!r} "
                   f"({target}); keep one of the two", hint=_HINT)
            continue
        normalised = []
        for i, line in enumerate(lines or ()):
            try:
                normalised.append(normalize_requirement(line))
            except ValueError as exc:
                c.fail(f"{KEY}.{key}[{i}]", str(exc))
        found[target] = PlatformLines(key=key, target=target, lines=tuple(normalised))
    return tuple(found.values())
