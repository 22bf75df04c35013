"""No re-exports: a module's ``__all__`` lists only the names it defines, so a name is
imported from the one module that defines it and a grep for its definition finds every
user (mypy's ``implicit_reexport = false`` holds the importers to the same rule)."""

from __future__ import annotations

import ast

from tests.house.test_house import PACKAGE, sources

# Re-exports kept for now, each with its reason. An entry that is no longer a re-export
# fails test_the_allow_list_is_not_stale: remove it then.
ALLOWED = {
    # the compat module's job: tomllib on Python 3.11+, tomli before it
    ("_internal/compat.py", "tomllib"),
}


def reexported(text: str) -> list[str]:
    """The names in *text*'s ``__all__`` that the module binds by an import (at module
    level, under ``if``/``try`` included) rather than by a def, class or assignment."""
    tree = ast.parse(text)
    listed: list[str] = []
    imported: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.If, ast.Try)):
            todo += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                listed += [e.value for e in ast.walk(node.value)
                           if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return [name for name in listed if name in imported]


def found() -> set[tuple[str, str]]:
    return {(path.relative_to(PACKAGE).as_posix(), name) for path in sources()
            for name in reexported(path.read_text("utf-8"))}


def test_every_name_in_an_all_is_the_modules_own():
    extra = sorted(f"lockkit/{path}: {name}" for path, name in found() - ALLOWED)
    assert extra == [], ("re-exported: import each name from the module that defines it, "
                         "and drop it from __all__")


def test_the_allow_list_is_not_stale():
    gone = sorted(f"lockkit/{path}: {name}" for path, name in ALLOWED - found())
    assert gone == [], "no longer re-exported: remove from ALLOWED"


def test_the_reader_sees_every_form_of_re_export():
    text = '''
from __future__ import annotations
import json
import os.path
from typing import TYPE_CHECKING
from .sibling import helper as renamed
from lockkit.errors import UsageError
if TYPE_CHECKING:
    from pathlib import Path
try:
    import tomllib
except ImportError:
    import tomli as tomllib
def own(): ...
class Own: ...
CONSTANT = 1
__all__ = ["CONSTANT", "Own", "Path", "UsageError", "json", "os", "own", "renamed",
           "tomllib"]
__all__ += ["annotations"]
'''
    assert sorted(reexported(text)) == ["Path", "UsageError", "annotations", "json", "os",
                                        "renamed", "tomllib"]
    assert reexported("from x import y\n") == []  # no __all__: nothing promised


def test_a_tuple_all_is_read_too():
    assert reexported("from x import y\n__all__ = ('y', 'z')\nz = 1\n") == ["y"]
