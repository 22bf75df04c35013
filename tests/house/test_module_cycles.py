"""No import circle between the modules of one stage folder: inside a stage, as between
stages, a reader follows each import down and never comes back to where it started.

Every import counts, wherever it is written (module level, inside a function, under
``if TYPE_CHECKING:``; :func:`tests.house.test_house.imports`): a deferred import only
hides a circle until the function runs, and a type-only one is still a dependency."""

from __future__ import annotations

from tests.house.test_house import cycles, imports_in, module_name, sources, stage_of


def targets(module: str, names: list[str], known: set[str]) -> list[str]:
    """The modules an import of *names* from *module* runs: ``from lockkit.wheelhouse
    import sbom`` is the module ``lockkit.wheelhouse.sbom``; a name that is no module is
    *module* itself."""
    found = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
    if len(found) < len(names) or not names:
        found += [module] if module in known else []
    return found


def module_graph(texts: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Each module of *texts* (name -> (source, is a package's ``__init__``)) and the
    modules of its own stage it imports."""
    known = set(texts)
    graph: dict[str, set[str]] = {}
    for name, (text, package) in texts.items():
        graph[name] = {t for _, target, names in imports_in(text, name, package)
                       for t in targets(target, names, known)
                       if t != name and stage_of(t) == stage_of(name)}
    return graph


def package_graph() -> dict[str, set[str]]:
    return module_graph({module_name(p): (p.read_text("utf-8"), p.name == "__init__.py")
                         for p in sources()})


def found() -> set[tuple[str, ...]]:
    return set(cycles(package_graph()))


def test_no_import_cycle_between_the_modules_of_a_stage():
    new = sorted(found(), key=lambda c: (len(c), c))
    assert new == [], ("import cycles inside a stage folder (move what both sides need to "
                       "the lower module): "
                       + "; ".join(" -> ".join((*c, c[0])) for c in new))


def test_the_module_graph_sees_deferred_and_submodule_imports():
    """``from <stage> import <module>`` is that module, a deferred or type-only import is
    an edge, an import of another stage is none; and the circle is named."""
    texts = {
        "lockkit.wh": ("", True),
        "lockkit.wh.archive": ("from lockkit.wh.implied import check\n", False),
        "lockkit.wh.implied": ("from lockkit.wh import meta\nimport lockkit.lock.model\n",
                               False),
        "lockkit.wh.meta": ("if TYPE_CHECKING:\n    from .sbom import File\n", False),
        "lockkit.wh.sbom": ("def refresh():\n    from lockkit.wh.archive import read\n",
                            False),
        "lockkit.wh.offline": ("from lockkit.wh.meta import write\n", False),
        "lockkit.lock.model": ("from lockkit.wh.archive import pack\n", False),
    }
    graph = module_graph(texts)
    assert graph["lockkit.wh.implied"] == {"lockkit.wh.meta"}
    assert graph["lockkit.lock.model"] == set()
    assert cycles(graph) == [("lockkit.wh.archive", "lockkit.wh.implied", "lockkit.wh.meta",
                              "lockkit.wh.sbom")]
    del texts["lockkit.wh.sbom"]
    assert cycles(module_graph(texts)) == []
