"""The house rules the package keeps: stages that import only what their folder's docstring
allows, wherever the import is written (module level, inside a function, under
``if TYPE_CHECKING:``: a type-only import is a dependency too, and is held to the same list),
no two stages that may import each other (directly or around a longer circle of the lists),
no stage reaching into another's private names, modules and functions a newcomer can read,
and a code map in CONTRIBUTING.md that is those docstrings."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

import lockkit

PACKAGE = Path(lockkit.__file__).resolve().parent
CODE_MAP = PACKAGE.parent / "CONTRIBUTING.md"
BEGIN, END = "<!-- code-map:begin -->", "<!-- code-map:end -->"
MODULE_LINES, FUNCTION_LINES = 400, 60
STAGE_SHARE = 0.15  # the most of the package's lines one stage folder may hold
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
    """Every module of the package, the probe scripts included: they keep the size limits
    like every module (nothing in them imports lockkit, so the import rules hold too)."""
    return sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every lockkit import in *path* (:func:`imports_in`)."""
    return imports_in(path.read_text("utf-8"), module_name(path), path.name == "__init__.py")


def imports_in(text: str, module: str, package: bool = False) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every lockkit import in *text*, the source of *module* (a
    *package*'s ``__init__``), wherever it is written: the whole tree is walked, so module
    level, inside a function (a deferred import), under ``if TYPE_CHECKING:``; relative
    imports resolved; ``importlib.import_module("lockkit...")`` with a literal name too."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, package)
            if _ours(target):
                found.append((node.lineno, target, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if _ours(a.name)]
        elif isinstance(node, ast.Call) and _ours(name := _dynamic(node)):
            found.append((node.lineno, str(name), []))
    return found


def _absolute(node: ast.ImportFrom, module: str, package: bool) -> str:
    """The absolute name ``from ... import`` reads, a relative one resolved in *module*."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")[:len(module.split(".")) - node.level + package]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _dynamic(node: ast.Call) -> object:
    """The literal name of ``importlib.import_module("...")`` or ``__import__("...")``."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    first = node.args[0] if node.args else None
    if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
        return first.value
    return None


def _ours(module: object) -> bool:
    return isinstance(module, str) and (module == "lockkit" or module.startswith("lockkit."))


def stage_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def permits(rules: set[str], target: str) -> bool:
    return any(target == rule or target.startswith(rule + ".") for rule in rules)


def may_import() -> dict[str, set[str]]:
    """Each stage and the other stages its docstring lets it import (a rule naming a module
    inside a stage, ``lockkit.index.urls``, lets it import that stage)."""
    names = {f.name for f in stages()}
    graph = {}
    for folder in stages():
        rules = allowed(folder)
        said = {r.split(".")[1] for r in rules if r.count(".")} if rules is not None else names
        graph[folder.name] = (said & names) - {folder.name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Every elementary cycle of *graph*, each once, started at its least node, shortest
    first: ``("config", "verify")`` is config -> verify -> config."""
    found: set[tuple[str, ...]] = set()

    def walk(start: str, path: tuple[str, ...]) -> None:
        for node in sorted(graph.get(path[-1], ())):
            if node == start:
                found.add(path)
            elif node > start and node not in path:
                walk(start, (*path, node))

    for start in sorted(graph):
        walk(start, (start,))
    return sorted(found, key=lambda c: (len(c), c))


# The stages in import order: each may import only those before it (the code map's order,
# held to the "May import" lists by test_the_code_map_lists_the_stages_in_import_order)
ORDER = ("_internal", "platforms", "index", "config", "lock", "cache", "compile", "download",
         "wheelhouse", "report", "probes", "steps", "env", "verify", "ci", "cli")


def out_of_order(order: tuple[str, ...], graph: dict[str, set[str]]) -> list[str]:
    """Each stage of *order* that *graph* lets import a stage listed after it (or not at
    all), as ``config may import index, listed after it``."""
    return [f"{name} may import {', '.join(sorted(later))}, listed after it"
            for i, name in enumerate(order) if (later := graph.get(name, set()) - set(order[:i]))]


def render_code_map() -> str:
    """CONTRIBUTING.md's code map: each stage's docstring, in import order (:data:`ORDER`)."""
    folders = {f.name: f for f in stages()}
    assert sorted(ORDER) == sorted(folders), "a stage is missing from the code map's order"
    said = ", ".join(f"`{name}`" for name in ORDER)
    head = textwrap.fill(f"In import order, each stage importing only those above it: {said}.",
                         92, break_on_hyphens=False)
    blocks = [f"### `lockkit/{name}/`\n\n{docstring(folders[name]).strip()}" for name in ORDER]
    return "\n\n".join([head, *blocks])


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


def test_no_two_stages_may_import_each_other():
    """The "May import" lists form no circle: data flows one way, so a stage that may
    import another is never importable by it, directly or through other stages."""
    found = [" -> ".join((*cycle, cycle[0])) for cycle in cycles(may_import())]
    more = f"; and {len(found) - 10} more" if len(found) > 10 else ""
    assert not found, ("stages whose 'May import' lists form a cycle (shortest first): "
                       + "; ".join(found[:10]) + more)


def test_the_import_reader_sees_every_form_of_import():
    """Deferred, type-only, relative and dynamic imports are imports too (else a cycle
    hides in a function body); and the cycle finder names a circle of any length."""
    text = ("import lockkit.platforms\nfrom lockkit.index.urls import expand\n"
            "if TYPE_CHECKING:\n    from lockkit.lock.lockfile import Lock\n"
            "def f():\n    from lockkit.verify.run import verify\n"
            "    from ..cache import store\n    from . import keys\n"
            "    importlib.import_module('lockkit.report.json')\n"
            "    from os import path\n")
    seen = {target for _, target, _ in imports_in(text, "lockkit.config.project")}
    assert seen == {"lockkit.platforms", "lockkit.index.urls", "lockkit.lock.lockfile",
                    "lockkit.verify.run", "lockkit.cache", "lockkit.config",
                    "lockkit.report.json"}
    in_package = imports_in("from .checks import rules\n", "lockkit.config", package=True)
    assert in_package == [(1, "lockkit.config.checks", ["rules"])]
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"b"}, "e": set()}
    assert cycles(graph) == [("a", "b", "c"), ("b", "c", "d")]
    assert cycles({"a": {"b"}, "b": set()}) == []


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


def oversized(sizes: dict[str, int], total: int) -> list[str]:
    """Each stage of *sizes* (its lines) over :data:`STAGE_SHARE` of *total*, named with
    its share."""
    return [f"{name}/: {n} lines, {n / total:.1%} of the package's {total}"
            for name, n in sorted(sizes.items()) if n > STAGE_SHARE * total]


def test_no_stage_folder_holds_more_than_its_share_of_the_package():
    """A folder names one thing a reader can hold in mind: a stage that grows past 15% of
    the package's lines (verify once held a fifth) does several things, and is split by
    what they are."""
    def count(paths: list[Path]) -> int:
        return sum(len(p.read_text("utf-8").splitlines()) for p in paths)

    sizes = {folder.name: count(sorted(folder.rglob("*.py"))) for folder in stages()}
    assert oversized(sizes, count(sources())) == []


def test_a_stage_over_its_share_is_named():
    assert oversized({"verify": 20, "lock": 10}, 100) == [
        "verify/: 20 lines, 20.0% of the package's 100"]
    assert oversized({"verify": 15}, 100) == []


def test_the_contributing_code_map_is_the_stages_docstrings():
    text = CODE_MAP.read_text("utf-8")
    assert BEGIN in text and END in text
    shown = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert shown == render_code_map(), (
        "CONTRIBUTING.md's code map differs from the stages' docstrings: run "
        "'python -m tests.house.test_house' to rewrite it")


def test_the_code_map_lists_the_stages_in_import_order():
    """CONTRIBUTING.md's stage order is the order of the "May import" lists: a stage comes
    after every stage it may import, so the map reads from the ground floor up."""
    assert out_of_order(ORDER, may_import()) == []


def test_a_stage_listed_before_what_it_imports_is_named():
    graph = {"config": {"platforms", "index"}, "platforms": set(), "index": {"platforms"}}
    assert out_of_order(("platforms", "index", "config"), graph) == []
    assert out_of_order(("config", "platforms", "index"), graph) == [
        "config may import index, platforms, listed after it"]


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
