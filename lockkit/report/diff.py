"""``lockkit diff``: which layer a difference comes from.

Each side (a dossier, a lock, or a wheelhouse manifest) is reduced to the layers of a
rebuild, in the order a reference answers for them:

    code       code and parameters: git revision, dirty tree, options, the check's settings
    data       data and weights: the fingerprints of the files the result depends on
    packages   Python and packages: versions (local labels included), indexes, hashes
    system     system and backend: OS, driver, CUDA/HIP, devices, precision settings
    result     outcomes: the result, each step's status, each check's verdict

Only stable facts enter a layer: no timings, temp paths or timestamps. Numbers that vary
within a tolerance (the embedding's largest difference) are shown, never counted: the
outcome against the tolerance is what counts. A variant recorded by ``verify --variant``
declares the layers it meant to change; those differences are listed apart.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, get_args

from packaging.utils import canonicalize_name

from lockkit._internal.compat import tomllib
from lockkit._internal.parse import parse_json
from lockkit.errors import ConfigError, DiffError
from lockkit.lock.meta import LockMeta
from lockkit.lock.model import lock_tables
from lockkit.report.checks.application import APPLICATION
from lockkit.report.model import Dossier
from lockkit.report.records import GitState, SchemaError, Variant
from lockkit.report.shapes import Json

__all__ = ["LAYERS", "Difference", "DifferenceDoc", "Facts", "Layer", "Side", "compare",
           "load_side"]

Layer = Literal["code", "data", "packages", "system", "result"]
LAYERS: tuple[Layer, ...] = get_args(Layer)
Facts = dict[str, Json]  # a layer: flat key -> a stable fact (a number, a string, None)
_INPUTS = "lock.inputs."  # a code-layer key per input file of a lock


@dataclass(frozen=True, kw_only=True)
class Side:
    path: Path
    kind: Literal["dossier", "lock", "manifest"]
    layers: dict[Layer, Facts]
    info: Facts  # shown, never compared
    variant: Variant | None = None
    inputs: dict[str, list[str]] = field(default_factory=dict)  # a lock's, per input file


class DifferenceDoc(TypedDict):
    layer: Layer
    key: str
    a: Json
    b: Json
    declared: bool
    said: list[str]


@dataclass(frozen=True, kw_only=True)
class Difference:
    layer: Layer
    key: str
    a: Json
    b: Json
    declared: bool = False
    said: tuple[str, ...] = ()  # an input file's requirements that changed, in words

    def to_dict(self) -> DifferenceDoc:
        return {"layer": self.layer, "key": self.key, "a": self.a, "b": self.b,
                "declared": self.declared, "said": list(self.said)}


@dataclass(frozen=True)
class _Row:
    """A package as each side names it: a dossier's installed row, a lock's or a
    manifest's entry (a manifest names no index)."""

    name: str
    version: str | None
    sha256: tuple[str, ...]
    index: str | None = None


def load_side(path: Path) -> Side:
    """Read *path*: a dossier.json (or its folder), a pylock TOML, a manifest.json (or its
    wheelhouse folder)."""
    if path.is_dir():
        for name in ("dossier.json", "manifest.json"):
            if (path / name).is_file():
                return load_side(path / name)
        raise DiffError(f"{path}: no dossier.json or manifest.json in this folder")
    if not path.is_file():
        raise DiffError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DiffError(f"{path}: unreadable: {exc}") from None
    if path.suffix == ".toml":
        try:
            data = lock_tables(text, path)
        except tomllib.TOMLDecodeError as exc:
            raise DiffError(f"{path}: not valid TOML: {exc}") from None
        except ConfigError as exc:  # nested too deeply: that line, as diff's error
            raise DiffError(str(exc)) from None
        return _from_lock(path, data)
    try:
        doc = parse_json(text, path)
    except json.JSONDecodeError as exc:
        raise DiffError(f"{path}: not valid JSON: {exc}") from None
    except ConfigError as exc:
        raise DiffError(str(exc)) from None
    if not isinstance(doc, dict):
        raise DiffError(f"{path}: expected a JSON object")
    if doc.get("kind") in ("verify", "diagnose") and "steps" in doc:
        return _from_dossier(path, doc)
    if "files" in doc and "lock_sha256" in doc:
        return _from_manifest(path, doc)
    raise DiffError(f"{path}: neither a lockkit dossier nor a wheelhouse manifest "
                    "(no 'steps' or 'files')")


def compare(a: Side, b: Side) -> tuple[list[Layer], list[Difference]]:
    """The layers both sides have, and every difference in them, in layer order."""
    declared: set[str] = set()
    for side in (a, b):
        if side.variant:
            declared.update(side.variant.changes)
    layers = [name for name in LAYERS if name in a.layers and name in b.layers]
    found = []
    for layer in layers:
        left, right = a.layers[layer], b.layers[layer]
        for key in sorted(set(left) | set(right)):
            if left.get(key) != right.get(key):
                found.append(Difference(layer=layer, key=key, a=left.get(key),
                                        b=right.get(key), declared=layer in declared,
                                        said=_input_said(key, a, b)))
    return layers, found


def _input_said(key: str, a: Side, b: Side) -> tuple[str, ...]:
    """For a lock's ``inputs.<file>`` row, what changed in it: ``requirements.in: changed
    numpy>=2 → numpy>=2.1`` (a file outside the project counted, never quoted)."""
    from lockkit.lock.freshness import input_changes

    if not key.startswith(_INPUTS):
        return ()
    label = key.removeprefix(_INPUTS)
    return tuple(input_changes(label, a.inputs.get(label, []), b.inputs.get(label, [])))


# --- dossiers ---------------------------------------------------------------------------

def _from_dossier(path: Path, doc: Mapping[str, Any]) -> Side:
    try:
        d = Dossier.from_dict(doc)
    except SchemaError as exc:
        raise DiffError(f"{path}: not a dossier lockkit can read: {exc}") from None
    layers: dict[Layer, Facts] = {"code": _code(d), "data": _data(d), "system": _system(d),
                                  "result": _result(d)}
    if d.packages is not None:
        layers["packages"] = _packages(_Row(p.name, p.version, p.sha256, p.index)
                                       for p in d.packages)
    app = APPLICATION.of(d.checks)
    info: Facts = {"platform": d.platform, "started": d.started,
            "max_abs_diff": app.max_abs_diff if app else None,
            "min_cosine": app.min_cosine if app else None,
            "worst_id": app.worst_id if app else None}
    return Side(path=path, kind="dossier", layers=layers, info=info, variant=d.variant)


def _code(d: Dossier) -> Facts:
    code = d.code or GitState(git=False)
    out: Facts = {"git.revision": code.revision, "git.dirty": code.dirty}
    for key, value in d.options.items():
        out[f"option.{key}"] = value
    for key, value in (d.embedding_config or {}).items():
        if key != "fingerprints":  # those are the data layer
            out[f"embedding.{key}"] = value
    return out


def _data(d: Dossier) -> Facts:
    return {f.path: f.actual or "missing" for f in d.fingerprints or ()}


def _packages(rows: Iterable[_Row]) -> Facts:
    out: Facts = {}
    for row in rows:
        name = canonicalize_name(row.name)
        out[f"{name}.version"] = row.version
        if row.index is not None:
            out[f"{name}.index"] = row.index
        if row.sha256:
            out[f"{name}.sha256"] = ",".join(sorted(row.sha256))
    return out


def _system(d: Dossier) -> Facts:
    if d.system is None:
        return {}
    system, torch = d.system, d.system.torch
    os_, driver = system.section("os"), system.section("driver")
    out: Facts = {
        "os": os_.get("system"), "distro": os_.get("distro"), "kernel": os_.get("kernel"),
        "arch": system.raw.get("arch"),
        "libc": json.dumps(system.raw.get("libc"), sort_keys=True),
        "cpu": system.section("cpu").get("model"),
        "python": system.section("python").get("version"),
        "driver.nvidia": _version_of(driver.get("nvidia")),
        "driver.rocm": _version_of(driver.get("rocm")),
        "torch.version.cuda": torch.cuda, "torch.version.hip": torch.hip,
        "torch.build": torch.build, "cudnn": torch.cudnn,
        "miopen": torch.miopen, "device_count": torch.device_count,
    }
    for dev in torch.devices:
        out[f"device{dev.get('index')}"] = f"{dev.get('name')} ({dev.get('capability')})"
    for key, value in system.section("settings").items():
        out[f"settings.{key}"] = json.dumps(value, sort_keys=True) if isinstance(
            value, (dict, list)) else value
    return out


def _version_of(driver: Any) -> Any:
    return driver.get("version") if isinstance(driver, dict) else driver


def _result(d: Dossier) -> Facts:
    out: Facts = {"result": d.result}
    for step in d.steps:
        out[f"step.{step.name}"] = step.status
    for name, check in ((d.gpu or {}).get("checks") or {}).items():
        if isinstance(check, dict):
            out[f"gpu.{name}"] = check.get("status")
    for c in app.checks if (app := APPLICATION.of(d.checks)) else ():
        out[f"application.{c.name}"] = "passed" if c.passed else "failed"
    return out


# --- locks and manifests ----------------------------------------------------------------

def _from_lock(path: Path, lock: Mapping[str, Any]) -> Side:
    if "packages" not in lock or "lock-version" not in lock:
        raise DiffError(f"{path}: not a PEP 751 lock (no lock-version/packages)")
    if not isinstance(lock["packages"], list):
        raise DiffError(f"{path}: packages: not an array of tables")
    rows = []
    for i, pkg in enumerate(lock["packages"]):
        try:
            files = pkg.get("wheels", []) + ([pkg["sdist"]] if "sdist" in pkg else [])
            rows.append(_Row(_text(pkg["name"]), version=pkg.get("version"),
                             index=pkg.get("index"),
                             sha256=tuple(f.get("hashes", {}).get("sha256", "") for f in files)))
        except (AttributeError, KeyError, TypeError):
            raise DiffError(f"{path}: packages[{i}]: not a PEP 751 package table (a name, "
                            f"wheels and sdist as tables)") from None
    try:
        meta = LockMeta.of(lock, path)
    except ConfigError as exc:
        raise DiffError(str(exc)) from None
    code: Facts = {f"lock.{k}": v for k, v in meta.identity().items()}
    inputs = _lock_inputs(meta)
    code.update({f"{_INPUTS}{label}": _shown(reqs) for label, reqs in inputs.items()})
    return Side(path=path, kind="lock", layers={"code": code, "packages": _packages(rows)},
                info={"platform": meta.platform}, inputs=inputs)


def _lock_inputs(meta: LockMeta) -> dict[str, list[str]]:
    """The normalised requirements per input file that ``[tool.lockkit] inputs`` records
    (none from a lock without them, or of another shape)."""
    record = meta.inputs or {}
    reqs = record.get("requirements")
    if not isinstance(reqs, dict):
        return {}
    return {str(label): [str(r) for r in lines] for label, lines in reqs.items()
            if isinstance(lines, list)}


def _shown(reqs: list[str]) -> str:
    """An input's requirements as a table cell: counted and digested, never quoted (a file
    outside the project keeps its lines to itself; the changes are said in words)."""
    digest = hashlib.sha256("\n".join(reqs).encode()).hexdigest()[:12]
    return f"{len(reqs)} requirement(s), sha256 {digest}"


def _text(value: object) -> str:
    """A package name from the file as read: a string, or the TypeError its reader names."""
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


def _from_manifest(path: Path, manifest: Mapping[str, Any]) -> Side:
    try:
        rows = [_Row(_text(f["package"]), version=f.get("version"), sha256=(f["sha256"],))
                for f in manifest.get("files", []) if f.get("kind") == "wheel"]
    except (AttributeError, KeyError, TypeError):
        raise DiffError(f"{path}: files: not a list of file entries (package, sha256, "
                        f"kind)") from None
    code: Facts = {"manifest.platform": manifest.get("platform"),
            "manifest.lock_sha256": manifest.get("lock_sha256")}
    return Side(path=path, kind="manifest", layers={"code": code, "packages": _packages(rows)},
                info={"platform": manifest.get("platform")})
