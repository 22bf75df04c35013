"""The command reference, generated from lockkit's own argparse parser when the docs build.

A page writes ```` ```{lockkit-command} wheelhouse build ```` where that command's usage,
description, subcommands and flags belong; the text comes from
:func:`lockkit.cli.parser.build_parser` at build time, so a flag added or reworded in the
code is in the next build of the docs, and nobody copies it by hand. When the build has
read every page, a command of the parser that no page renders is a warning (an error
under ``sphinx-build -W``): a new command cannot go undocumented.

:func:`commands` and :func:`describe` are plain Python (no Sphinx), which is what
``tests/house/test_docs.py`` checks against the parser's own ``--help`` text.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx

__all__ = ["Command", "Flag", "commands", "describe", "missing", "setup"]

WIDTH = 88  # the usage block's width: the same in every build, whatever the terminal


@dataclass(frozen=True)
class Flag:
    """One argument: ``--platform NAME`` or ``-o, --output FILE`` or ``archive``."""

    names: str
    help: str


@dataclass(frozen=True)
class Command:
    """What the reference shows of one command (``compile``, ``wheelhouse build``)."""

    path: str
    usage: str
    description: str
    subcommands: tuple[tuple[str, str], ...]
    flags: tuple[Flag, ...]


def build_parser() -> argparse.ArgumentParser:
    from lockkit.cli.parser import build_parser as build

    return build()


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                None)


def commands(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    """Every command, nested ones included (``wheelhouse build``), in ``--help``'s order."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(prefix: str, node: argparse.ArgumentParser) -> None:
        sub = _subparsers(node)
        for name, child in (sub.choices.items() if sub else ()):
            path = f"{prefix} {name}".strip()
            found[path] = child
            walk(path, child)

    walk("", parser or build_parser())
    return found


def _names(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if not action.option_strings:
        return str(action.metavar or action.dest)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = formatter._format_args(action, action.dest.upper())
    return ", ".join(f"{s} {metavar}" for s in action.option_strings)


def _help(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    text = formatter._expand_help(action) if action.help else ""
    if action.choices and not isinstance(action, argparse._SubParsersAction) \
            and action.metavar is None:
        text += f" (one of: {', '.join(map(str, action.choices))})"
    if isinstance(action, argparse._AppendAction):
        text += " (repeatable)" if "repeatable" not in text else ""
    return " ".join(text.split())


def describe(path: str, parser: argparse.ArgumentParser | None = None) -> Command:
    """The usage, description, subcommands and flags of the command *path*."""
    node = commands(parser)[path]
    formatter = argparse.HelpFormatter(node.prog, width=WIDTH)
    formatter.add_usage(node.usage, node._actions, node._mutually_exclusive_groups,
                        prefix="")
    sub = _subparsers(node)
    subcommands = tuple((c.dest, c.help or "") for c in sub._choices_actions) if sub else ()
    flags = tuple(Flag(_names(a, formatter), _help(a, formatter)) for a in node._actions
                  if a.help != argparse.SUPPRESS
                  and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)))
    return Command(path=path, usage=formatter.format_help().strip(),
                   description=" ".join((node.description or "").split()),
                   subcommands=subcommands, flags=flags)


def missing(rendered: set[str], parser: argparse.ArgumentParser | None = None) -> list[str]:
    """The parser's commands that no page rendered."""
    return [path for path in commands(parser) if path not in rendered]


# --- Sphinx ---------------------------------------------------------------------------------

def _nodes(command: Command) -> list[Any]:
    from docutils import nodes

    out: list[Any] = [nodes.literal_block(command.usage, command.usage, language="text")]
    if command.description:
        out.append(nodes.paragraph(command.description, command.description))
    items = [(f"lockkit {command.path} {name}", text) for name, text in command.subcommands]
    items += [(flag.names, flag.help) for flag in command.flags]
    deflist = nodes.definition_list()
    for term, text in items:
        deflist += nodes.definition_list_item(
            "", nodes.term("", "", nodes.literal(term, term)),
            nodes.definition("", nodes.paragraph(text, text)))
    if items:
        out.append(deflist)
    return out


def _directive() -> type:
    from sphinx.util.docutils import SphinxDirective

    class LockkitCommand(SphinxDirective):
        """```{lockkit-command} wheelhouse build```: that command's generated reference."""

        required_arguments = 1
        final_argument_whitespace = True
        has_content = False

        def run(self) -> list[Any]:
            path = " ".join(self.arguments[0].split())
            known = commands()
            if path not in known:
                raise self.error(f"lockkit-command: no command 'lockkit {path}' in the "
                                 f"parser (known: {', '.join(known)})")
            seen = getattr(self.env, "lockkit_commands", {})
            seen.setdefault(self.env.docname, set()).add(path)
            self.env.lockkit_commands = seen  # type: ignore[attr-defined]
            return _nodes(describe(path))

    return LockkitCommand


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "lockkit_commands", {}).pop(docname, None)


def _merge(app: Sphinx, env: Any, docnames: Any, other: Any) -> None:
    seen = getattr(env, "lockkit_commands", {})
    seen.update(getattr(other, "lockkit_commands", {}))
    env.lockkit_commands = seen


def _check(app: Sphinx, env: Any) -> None:
    from sphinx.util import logging

    rendered = set().union(*getattr(env, "lockkit_commands", {}).values())
    for path in missing(rendered):
        logging.getLogger(__name__).warning(
            f"command reference: 'lockkit {path}' is in the parser but no page renders it; "
            f"add a '{{lockkit-command}} {path}' block under docs/reference/commands/")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("lockkit-command", _directive())
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
