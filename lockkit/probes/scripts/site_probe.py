"""Read, without running any of it, what an interpreter runs at start-up and imports.

Standalone on purpose: ``verify --existing`` runs it as ``python -I -S -B site_probe.py``
inside an environment it did not build, before anything else starts that interpreter.
``-S`` keeps the :mod:`site` module from running, so no ``.pth`` line, ``sitecustomize``
or ``usercustomize`` runs while it is being judged; ``-B`` writes no bytecode. What
:mod:`site` would do is read instead, by its own rules (CPython's ``Lib/site.py``):

- the venv: a ``pyvenv.cfg`` beside the executable or one folder up makes that folder the
  prefix (``site.venv``, which cannot be called: it processes the ``.pth`` files), with
  the base prefixes too when it includes the system site packages;
- the site folders: :func:`site.getsitepackages` of those prefixes;
- each ``.pth`` file of a site folder, in the order ``site.addsitedir`` reads them (sorted
  names, not hidden): a line starting ``import`` plus a space or tab is code ``site``
  executes; another (not a comment, not blank) is a folder it appends when it exists;
- the ``sitecustomize`` and ``usercustomize`` modules on the resulting path, found by
  :class:`importlib.machinery.PathFinder` (finding runs no module);
- for each module a ``.pth`` line imports (``import a, b``): its file, and where it is an
  editable finder of setuptools (``MAPPING = {...}``), the names it maps, read with
  :func:`ast.literal_eval`;
- the distributions on the path (:mod:`importlib.metadata`), each with its RECORD.

Prints one JSON object: ``facts`` (as the host step's), ``sites``, ``path``, ``code``
(``[file, line number, line, [[module, file or null], ...]]``), ``added`` (``[file, line
number, folder]``), ``mappings`` (``[finder file, name, target]``), ``customize``
(``[module, file]``) and ``dists`` (``[name, version, base folder, RECORD or null]``).
"""

from __future__ import annotations

import ast
import json
import os
import platform
import site
import sys
import sysconfig
from importlib import metadata
from importlib.machinery import PathFinder


def venv() -> tuple[str | None, bool]:
    """The venv's prefix (None: not a venv) and whether it includes the system site."""
    executable = sys.executable
    if sys.platform == "darwin" and "__PYVENV_LAUNCHER__" in os.environ:
        executable = os.environ["__PYVENV_LAUNCHER__"]
    exe_dir = os.path.dirname(os.path.abspath(executable))
    prefix = os.path.dirname(exe_dir)
    for conf in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(prefix, "pyvenv.cfg")):
        if os.path.isfile(conf):
            with open(conf, encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, sep, value = line.partition("=")
                    if sep and key.strip().lower() == "include-system-site-packages":
                        return prefix, value.strip().lower() == "true"
            return prefix, False
    return None, True


def read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def imported(line: str) -> list[str]:
    """The top-level modules an ``import`` line imports by statement (best effort)."""
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    return list(dict.fromkeys(names))


def mapping(path: str) -> dict[str, str]:
    """The ``MAPPING`` of a setuptools editable finder at *path* ({} when none)."""
    text = read_text(path) if path.endswith(".py") else None
    try:
        tree = ast.parse(text or "")
    except SyntaxError:
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, expr = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, expr = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "MAPPING":
            try:
                value = ast.literal_eval(expr)
            except ValueError:
                return {}
            if isinstance(value, dict):
                return {str(k): str(v) for k, v in value.items()}
    return {}


def read_site(sites: list[str], path: list[str], out: dict) -> None:
    """The ``.pth`` files of *sites*, as ``site.addsitedir`` would process them."""
    for folder in sites:
        if not os.path.isdir(folder):
            continue
        if folder not in path:
            path.append(folder)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".pth") or name.startswith("."):
                continue
            file = os.path.join(folder, name)
            for n, line in enumerate((read_text(file) or "").splitlines(), 1):
                if line.startswith("#") or not line.strip():
                    continue
                if line.startswith(("import ", "import\t")):
                    out["code"].append([file, n, line, imported(line)])
                    continue
                added = os.path.abspath(os.path.join(folder, line.rstrip()))
                if os.path.exists(added) and added not in path:
                    path.append(added)
                    out["added"].append([file, n, added])


def main() -> None:
    prefix, system = venv()
    prefixes = ([prefix] if prefix else []) + (list(site.PREFIXES) if system else [])
    sites = site.getsitepackages(prefixes)
    path = list(sys.path)
    out: dict = {"code": [], "added": [], "mappings": [], "customize": []}
    read_site(sites, path, out)
    for entry in out["code"]:
        found = []
        for module in entry[3]:
            spec = PathFinder.find_spec(module, path)
            origin = spec.origin if spec is not None and spec.has_location else None
            found.append([module, origin])
            out["mappings"] += [[origin, k, v] for k, v in mapping(origin or "").items()]
        entry[3] = found
    for module in ("sitecustomize", "usercustomize"):
        spec = PathFinder.find_spec(module, path)
        if spec is not None and spec.origin:
            out["customize"].append([module, spec.origin])
    dists = [[d.metadata["Name"], d.version, str(d.locate_file("")), d.read_text("RECORD")]
             for d in metadata.distributions(path=path)]
    facts = {"version": "{}.{}".format(*sys.version_info[:2]), "full": platform.python_version(),
             "implementation": sys.implementation.name, "platform": sysconfig.get_platform(),
             "executable": sys.executable, "prefix": prefix or sys.prefix,
             "in_venv": prefix is not None}
    print(json.dumps({"facts": facts, "sites": sites, "path": path, "dists": dists, **out}))


if __name__ == "__main__":
    main()
