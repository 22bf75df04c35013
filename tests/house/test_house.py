"""The house rules the package keeps: stages that import only what their folder's docstring
allows, no stage reaching into another's private names, modules and functions a newcomer can
read, and a code map in CONTRIBUTING.md that is those docstrings."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import lockkit

PACKAGE = Path(lockkit.__file__).resolve().parent
CODE_MAP = PACKAGE.parent / "CONTRIBUTING.md"
BEGIN, END = "<!-- code-map:begin -->", "<!-- code-map:end -->"
MODULE_LINES, FUNCTION_LINES = 400, 60
COMMON = {"lockkit", "lockkit.errors"}  # __version__ and the error tree: every stage's


def stages() -> list[Path]:
    """Each stage folder: a package directly under lockkit/."""
    return sorted(p.parent for p in PACKAGE.glob("*/__init__.py"))


def docstring(folder: Path) -> str:
    return ast.get_docstring(ast.parse((folder / "__init__.py").read_text("utf-8"))) or ""


def allowed(folder: Path) -> set[str] | None:
    """The stages *folder*'s docstring says it may import (None: every one)."""
    found = re.search(r"^May import: (.+)\Z", docstring(folder), re.M | re.S)
    assert found, f"{folder.name}/__init__.py: no 'May import:' line at its end"
    said = " ".join(found[1].split())
    if said == "every stage":
        return None
    return {name.strip() for name in said.split(",")}


def sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "probes" not in p.relative_to(PACKAGE).parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every lockkit import in *path*, wherever it is written
    (module level, in a function, under TYPE_CHECKING)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "lockkit" or node.module.startswith("lockkit."):
                found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names
                      if a.name == "lockkit" or a.name.startswith("lockkit.")]
    return found


def stage_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def permits(rules: set[str], target: str) -> bool:
    return any(target == rule or target.startswith(rule + ".") for rule in rules)


def render_code_map() -> str:
    """CONTRIBUTING.md's code map: each stage's docstring, in the order the stages run."""
    order = ["cli", "config", "platforms", "index", "lock", "compile", "cache", "wheelhouse",
             "verify", "report", "ci", "_internal"]
    folders = {f.name: f for f in stages()}
    assert sorted(order) == sorted(folders), "a stage is missing from the code map's order"
    blocks = [f"### `lockkit/{name}/`\n\n{docstring(folders[name]).strip()}" for name in order]
    return "\n\n".join(blocks)


def test_every_stage_imports_only_what_its_docstring_allows():
    broken = []
    for path in sources():
        module = module_name(path)
        if module in ("lockkit", "lockkit.__main__", "lockkit.errors"):
            continue
        own = stage_of(module)
        rules = allowed(PACKAGE / own.split(".")[1]) if own.count(".") else None
        if rules is None:
            continue
        for line, target, names in imports(path):
            targets = ([f"{target}.{n}" for n in names] if target == "lockkit" else [target])
            for t in targets:
                if t in COMMON or t == "lockkit.__version__" or stage_of(t) == own:
                    continue
                if not permits(rules, t):
                    broken.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {t}")
    assert broken == []


def test_no_stage_imports_another_stages_private_names():
    reached = [f"{path.relative_to(PACKAGE.parent)}:{line}: {target}.{name}"
               for path in sources() for line, target, names in imports(path)
               for name in names
               if name.startswith("_") and not name.startswith("__")
               and stage_of(target) != stage_of(module_name(path))]
    assert reached == []


def test_modules_and_functions_stay_readable():
    long_modules = [f"{p.relative_to(PACKAGE.parent)}: {n} lines" for p in sources()
                    if (n := len(p.read_text("utf-8").splitlines())) > MODULE_LINES]
    long_functions = []
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > FUNCTION_LINES:
                    long_functions.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} "
                                          f"{node.name}: {size} lines")
    assert long_modules == [] and long_functions == []


def test_the_contributing_code_map_is_the_stages_docstrings():
    text = CODE_MAP.read_text("utf-8")
    assert BEGIN in text and END in text
    shown = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert shown == render_code_map(), (
        "CONTRIBUTING.md's code map differs from the stages' docstrings: run "
        "'python -m tests.house.test_house' to rewrite it")


@pytest.mark.parametrize("folder", stages(), ids=lambda p: p.name)
def test_every_stage_says_what_it_does_and_what_it_may_import(folder):
    text = docstring(folder)
    assert len(text.split()) >= 15, f"{folder.name}: say what the stage does"
    rules = allowed(folder)
    if rules is not None:
        unknown = {r for r in rules if not (PACKAGE.parent / r.replace(".", "/")).exists()
                   and not (PACKAGE.parent / (r.replace(".", "/") + ".py")).exists()}
        assert unknown == set()


def _rewrite_code_map() -> None:
    text = CODE_MAP.read_text("utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    CODE_MAP.write_text(f"{head}{BEGIN}\n{render_code_map()}\n{END}{tail}", "utf-8")


if __name__ == "__main__":
    _rewrite_code_map()
