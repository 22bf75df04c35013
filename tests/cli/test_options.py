"""Each command declares its flags beside its handler, and its handler takes a frozen,
typed options object (pdm's ``cli/commands/<name>.py`` shape): no ``Any`` and no
``argparse.Namespace`` in a signature of ``lockkit/cli`` but at the one place the parsed
flags become options (each options class's ``from_namespace``) and in the parser, which
reads them before that."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
from pathlib import Path

import pytest

import lockkit
from lockkit.cli.parser import COMMANDS, build_parser

CLI = Path(lockkit.__file__).parent / "cli"

# (module, function) that may take a Namespace or Any: argparse's own methods, overridden,
# and the parser's readers of the namespace before any command runs.
_PARSER = {("parser.py", f) for f in (
    "_Parser.__init__", "_Parser.parse_known_args", "_counted", "verbosity", "_innermost",
    "_refuse_flags", "_close_flag", "check_ranges", "command_of")}
_ALLOWED = _PARSER | {("__init__.py", "_run_command")}
_LOOSE = re.compile(r"\b(Any|Namespace)\b")


def _functions(tree: ast.Module):
    """(qualified name, function) of every function and method of a module."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def _loose_parameters(path: Path) -> list[str]:
    found = []
    for name, function in _functions(ast.parse(path.read_text("utf-8"))):
        params = function.args
        every = [*params.posonlyargs, *params.args, *params.kwonlyargs,
                 *filter(None, (params.vararg, params.kwarg))]
        for param in every:
            shown = ast.unparse(param.annotation) if param.annotation else ""
            if _LOOSE.search(shown):
                found.append(f"{path.name}: {name}({param.arg}: {shown})")
    return found


def test_no_signature_takes_any_or_a_namespace_but_the_conversion_points():
    loose = []
    for path in sorted(CLI.glob("*.py")):
        for line in _loose_parameters(path):
            module, call = line.split(": ", 1)
            function = call.split("(", 1)[0]
            if (module, function) in _ALLOWED or function.endswith(".from_namespace"):
                continue
            loose.append(line)
    assert loose == []


def test_the_rule_sees_a_handler_that_takes_a_namespace(tmp_path):
    """The check above can fail: a handler of the old shape is found."""
    old = tmp_path / "old.py"
    old.write_text("import argparse\nfrom typing import Any\n\n"
                   "def handle(args: argparse.Namespace) -> int: ...\n"
                   "def _helper(project: Any) -> None: ...\n")
    assert _loose_parameters(old) == ["old.py: handle(args: argparse.Namespace)",
                                      "old.py: _helper(project: Any)"]


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) of every command and action that runs something."""
    subparsers = [a for a in parser._actions  # noqa: SLF001 (argparse's own list)
                  if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    if path and not subparsers:
        yield path, parser
    for action in subparsers:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


_LEAVES = list(_leaves(build_parser()))


def _options_class(parser: argparse.ArgumentParser) -> type:
    convert = parser._defaults["options"]  # noqa: SLF001 (set_defaults' own dict)
    assert convert.__name__ == "from_namespace"
    return convert.__self__


@pytest.mark.parametrize(("path", "parser"), _LEAVES, ids=[" ".join(p) for p, _ in _LEAVES])
def test_each_command_names_a_frozen_options_class_holding_every_flag(path, parser):
    """Every flag of the command reaches its options (none left on the namespace), as a
    field of a frozen dataclass."""
    cls = _options_class(parser)
    assert dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]
    flags = {a.dest for a in parser._actions  # noqa: SLF001
             if not isinstance(a, argparse._HelpAction)  # noqa: SLF001
             and not a.dest.startswith(("verbose ", "quiet "))}
    assert flags == {f.name for f in dataclasses.fields(cls)}, path


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_handler_is_annotated_with_its_commands_options(command):
    """``handle`` names the options class of each of its command's actions."""
    tree = ast.parse((CLI / f"{command}.py").read_text("utf-8"))
    handle = next(f for name, f in _functions(tree) if name == "handle")
    annotation = ast.unparse(handle.args.args[0].annotation)
    for path, parser in _LEAVES:
        if path[0] == command:
            assert _options_class(parser).__name__ in annotation, (path, annotation)


def test_parsed_flags_become_options_that_cannot_be_changed():
    args = build_parser("compile").parse_args(
        ["compile", "--platform", "linux-cpu", "--platform", "macos-arm64", "--jobs", "3"])
    options = args.options(args)
    assert type(options).__name__ == "CompileOptions"
    assert options.platform == ("linux-cpu", "macos-arm64") and options.jobs == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.jobs = 4
