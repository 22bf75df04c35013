"""An editable install exactly as setuptools makes one (PEP 660, its "lenient" mode).

setuptools' ``editable_wheel`` command writes two files into the editable wheel when a
project's packages do not sit under one folder (``package-dir = {"torch" = "payload"}``):
``__editable__.<name>-<version>.pth``, one line ``import <finder>; <finder>.install()``,
and ``<finder>.py``, a meta-path finder whose ``MAPPING`` sends each top-level name to a
folder. :data:`FINDER_TEMPLATE` is setuptools 79.0.1's ``_FINDER_TEMPLATE``
(``setuptools/command/editable_wheel.py``), copied unchanged; :func:`editable_files`
renders it as ``_finder_template`` and ``_TopLevelFinder.get_implementation`` do, with
the finder's name made an identifier as ``_normalization.safe_identifier`` makes it.
Building through setuptools itself needs the ``wheel`` package on older setuptools, which
an offline test cannot fetch.
"""

from __future__ import annotations

import re

__all__ = ["FINDER_TEMPLATE", "editable_files"]

FINDER_TEMPLATE = """\
from __future__ import annotations
import sys
from importlib.machinery import ModuleSpec, PathFinder
from importlib.machinery import all_suffixes as module_suffixes
from importlib.util import spec_from_file_location
from itertools import chain
from pathlib import Path

MAPPING: dict[str, str] = {mapping!r}
NAMESPACES: dict[str, list[str]] = {namespaces!r}
PATH_PLACEHOLDER = {name!r} + ".__path_hook__"


class _EditableFinder:  # MetaPathFinder
    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None) -> ModuleSpec | None:  # type: ignore
        # Top-level packages and modules (we know these exist in the FS)
        if fullname in MAPPING:
            pkg_path = MAPPING[fullname]
            return cls._find_spec(fullname, Path(pkg_path))

        # Handle immediate children modules (required for namespaces to work)
        # To avoid problems with case sensitivity in the file system we delegate
        # to the importlib.machinery implementation.
        parent, _, child = fullname.rpartition(".")
        if parent and parent in MAPPING:
            return PathFinder.find_spec(fullname, path=[MAPPING[parent]])

        # Other levels of nesting should be handled automatically by importlib
        # using the parent path.
        return None

    @classmethod
    def _find_spec(cls, fullname: str, candidate_path: Path) -> ModuleSpec | None:
        init = candidate_path / "__init__.py"
        candidates = (candidate_path.with_suffix(x) for x in module_suffixes())
        for candidate in chain([init], candidates):
            if candidate.exists():
                return spec_from_file_location(fullname, candidate)
        return None


class _EditableNamespaceFinder:  # PathEntryFinder
    @classmethod
    def _path_hook(cls, path) -> type[_EditableNamespaceFinder]:
        if path == PATH_PLACEHOLDER:
            return cls
        raise ImportError

    @classmethod
    def _paths(cls, fullname: str) -> list[str]:
        paths = NAMESPACES[fullname]
        if not paths and fullname in MAPPING:
            paths = [MAPPING[fullname]]
        # Always add placeholder, for 2 reasons:
        # 1. __path__ cannot be empty for the spec to be considered namespace.
        # 2. In the case of nested namespaces, we need to force
        #    import machinery to query _EditableNamespaceFinder again.
        return [*paths, PATH_PLACEHOLDER]

    @classmethod
    def find_spec(cls, fullname: str, target=None) -> ModuleSpec | None:  # type: ignore
        if fullname in NAMESPACES:
            spec = ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = cls._paths(fullname)
            return spec
        return None

    @classmethod
    def find_module(cls, _fullname) -> None:
        return None


def install():
    if not any(finder == _EditableFinder for finder in sys.meta_path):
        sys.meta_path.append(_EditableFinder)

    if not NAMESPACES:
        return

    if not any(hook == _EditableNamespaceFinder._path_hook for hook in sys.path_hooks):
        # PathEntryFinder is needed to create NamespaceSpec without private APIS
        sys.path_hooks.append(_EditableNamespaceFinder._path_hook)
    if PATH_PLACEHOLDER not in sys.path:
        sys.path.append(PATH_PLACEHOLDER)  # Used just to trigger the path hook
"""



def editable_files(name: str, version: str, mapping: dict[str, str]) -> dict[str, str]:
    """The ``.pth`` and finder an editable install of *name* *version* puts in site-packages,
    each top-level name of *mapping* sent to its folder."""
    label = f"__editable__.{name}-{version}.finder"
    finder = re.sub(r"\W|^(?=\d)", "_", label)
    mapping = dict(sorted(mapping.items()))
    return {f"{finder}.py": FINDER_TEMPLATE.format(name=label, mapping=mapping, namespaces={}),
            f"__editable__.{name}-{version}.pth": f"import {finder}; {finder}.install()"}
