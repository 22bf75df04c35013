"""Every module of lockkit has tests of its own, or a row in ``tests/README.md`` naming the
tests that cover it, and every row names tests that exist.

A module's own tests (the rule ``tests/README.md`` states): ``tests/<stage>/test_<name>.py``
exists (``tests/internal/`` for ``lockkit/_internal/``; a package's ``__init__.py`` is
named by its folder), or a test module in ``tests/<stage>/`` imports the module, wherever
the import is written (:func:`tests.house.test_house.imports_in`). A top-level module
(``lockkit/errors.py``) may be imported from any folder. A package ``__init__.py`` with
nothing but a docstring, imports and ``__all__`` is not a module here."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests.house.test_house import PACKAGE, imports_in

TESTS = PACKAGE.parent / "tests"
README = TESTS / "README.md"
ROW = re.compile(r"^\| `(lockkit/[^`]+\.py)` \| (.+) \|$")
NAMED = re.compile(r"`(tests/[^`:]+\.py)(?:::(test_\w+))?`")


def modules() -> list[Path]:
    """Every module of the package, its probe scripts included (paths relative to the
    repository); a package ``__init__.py`` only when it holds code."""
    return sorted(p.relative_to(PACKAGE.parent) for p in PACKAGE.rglob("*.py")
                  if p.name != "__init__.py" or _has_code(p))


def _has_code(path: Path) -> bool:
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        targets = node.targets if isinstance(node, ast.Assign) else []
        if [getattr(t, "id", None) for t in targets] == ["__all__"]:
            continue
        return True
    return False


def dotted(module: Path) -> str:
    parts = module.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def folder_of_tests(module: Path) -> Path:
    """``tests/<stage>/`` of a module in a stage folder; ``tests/`` of a top-level one."""
    parts = module.parts
    return TESTS / parts[1].lstrip("_") if len(parts) > 2 else TESTS


def imported(test: Path) -> set[str]:
    """The lockkit modules (and the names imported from them) *test* imports."""
    found = set()
    for _, target, names in imports_in(test.read_text("utf-8"), "tests.x"):
        found |= {target, *(f"{target}.{n}" for n in names)}
    return found


def has_own_tests(module: Path, test_files: dict[Path, set[str]]) -> bool:
    folder = folder_of_tests(module)
    name = module.parent.name if module.name == "__init__.py" else module.stem
    if folder != TESTS and (folder / f"test_{name}.py").is_file():
        return True
    return any(dotted(module) in names for test, names in test_files.items()
               if folder in test.parents)


def rows() -> dict[str, str]:
    """Module path -> the "covered by" cell, of every row in the README's table."""
    found: dict[str, str] = {}
    for line in README.read_text("utf-8").splitlines():
        if match := ROW.match(line):
            assert match[1] not in found, f"tests/README.md: two rows for {match[1]}"
            found[match[1]] = match[2]
    return found


def functions_in(path: Path) -> set[str]:
    """The test functions of a test module, at its top level or in its classes."""
    tree = ast.parse(path.read_text("utf-8"))
    nodes = [*tree.body, *(n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body)]
    return {n.name for n in nodes if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


@functools.cache
def _test_files() -> dict[Path, set[str]]:
    return {t: imported(t) for t in TESTS.rglob("test_*.py")}


def test_every_module_has_tests_of_its_own_or_a_row_naming_them():
    test_files, table = _test_files(), rows()
    missing = [str(m) for m in modules()
               if not has_own_tests(m, test_files) and str(m) not in table]
    assert missing == [], (
        "modules with no tests of their own (tests/<stage>/test_<module>.py, or a test "
        "module of tests/<stage>/ importing them) and no row in tests/README.md naming the "
        "tests that cover them: " + ", ".join(missing))


def test_every_row_names_tests_that_exist():
    wrong = []
    for module, cell in rows().items():
        named = NAMED.findall(cell)
        if not named:
            wrong.append(f"{module}: the row names no test file")
        for file, function in named:
            path = PACKAGE.parent / file
            if not path.is_file():
                wrong.append(f"{module}: {file} does not exist")
            elif function and function not in functions_in(path):
                wrong.append(f"{module}: {file} has no {function}")
    assert wrong == [], "tests/README.md: " + "; ".join(wrong)


def test_every_row_is_still_needed():
    """A row for a module that is gone, or that now has tests of its own, is removed."""
    test_files, known = _test_files(), {str(m) for m in modules()}
    stale = [m for m in rows() if m not in known or has_own_tests(Path(m), test_files)]
    assert stale == [], ("tests/README.md: rows for modules that no longer exist or now have "
                         "tests of their own (remove the row): " + ", ".join(stale))


def test_the_rule_sees_a_module_without_tests_and_a_row_that_names_a_missing_file():
    """The checks above can fail: a made-up module has no tests, and the table's pattern
    reads a row as the README writes it."""
    assert not has_own_tests(Path("lockkit/wheelhouse/nosuchmodule.py"), _test_files())
    assert has_own_tests(Path("lockkit/download/fetch.py"), _test_files())
    row = "| `lockkit/x/y.py` | `tests/x/test_gone.py::test_it`, `tests/x/test_z.py` |"
    match = ROW.match(row)
    assert match and match[1] == "lockkit/x/y.py"
    assert NAMED.findall(match[2]) == [("tests/x/test_gone.py", "test_it"),
                                       ("tests/x/test_z.py", "")]
