"""Platform definitions: data files validated strictly on load.

Shipped files live in ``lockkit/_platforms`` when installed (the repository's ``platforms/``
folder in a checkout); a project's own ``platforms/`` folder adds or overrides them by name.

``[torch]`` and ``[gpu]`` are optional: a platform without ``[torch]`` (a service that needs
no PyTorch) has no PyTorch index and no torch family, so every package comes from the
default index; without ``[gpu]`` its device is the CPU. Such a file means exactly what
``[torch] packages = []`` and ``[gpu] device = "cpu"`` meant before, so its locks stay fresh.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from lockkit._internal.compat import tomllib
from lockkit._internal.keys import KeyReader, did_you_mean
from lockkit._internal.parse import parse_toml
from lockkit.errors import ConfigError, PlatformError
from lockkit.platforms.folders import own_folder, shipped_dir

__all__ = ["Backend", "Catalog", "Kind", "Platform", "closest_platform", "load_catalog",
           "load_platforms", "markdown_table", "select_platforms", "unknown_platform"]

Kind = Literal["cpu", "cuda", "rocm", "xpu", "mps"]  # a platform's backend
KINDS: tuple[Kind, ...] = get_args(Kind)
DEVICES = ("cpu", "cuda", "xpu", "mps")
OSES = ("linux", "macos", "windows")
_TOP = {"name", "os", "arch", "python", "python-platform", "backend", "torch", "gpu", "description",
        "macos-deployment-target", "alias-of"}
_ALIAS_TOP = {"alias-of", "description"}
_REQUIRED = ("os", "arch", "python", "python-platform", "backend")
# each table's keys, and those it requires when it is there ([torch] and [gpu] are optional)
_TABLES = {"backend": ({"kind", "version"}, ("kind",)),
           "torch": ({"index", "packages", "file-hosts", "releases"}, ("packages",)),
           "gpu": ({"device", "cuda", "hip"}, ("device",))}
# platform_machine per os, as the target's interpreter reports it (compared ignoring case:
# Windows says AMD64, lockkit.platforms.targets lowercases it for wheel tags).
ARCHES = {"linux": ("x86_64", "aarch64", "ppc64le", "s390x"),
          "macos": ("arm64", "x86_64"),
          "windows": ("AMD64", "ARM64", "x86")}
_PYTHON = re.compile(r"3\.\d+")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_MACOS_TARGET = re.compile(r"\d+\.\d+")


@dataclass(frozen=True, kw_only=True)
class Backend:
    kind: Kind
    version: str | None


@dataclass(frozen=True, kw_only=True)
class Platform:
    name: str
    os: str
    arch: str
    python: str
    python_platform: str
    backend: Backend
    torch_index: str | None
    torch_packages: tuple[str, ...]
    # Every other host the PyTorch index links files on (the official index links its
    # torch-family wheels on download-r2.pytorch.org); --mirror can map each of them.
    torch_file_hosts: tuple[str, ...] = ()
    gpu_device: str
    gpu_cuda: str | None
    gpu_hip: str | None
    macos_target: str | None = None  # uv reads MACOSX_DEPLOYMENT_TARGET for macOS tags
    description: str = ""
    source: str = ""
    # The torch releases the index serves for this backend (``[torch] releases``), as a
    # specifier: what the docs' table and ``platforms --json`` show. Not a resolver input.
    torch_releases: str = ""
    # Set on a family name (``linux-rocm6``): the platform it stands for today.
    alias_of: str | None = None

    def to_dict(self) -> dict[str, object]:
        """What decides a lock (the fingerprint's input): not where the file was, not the
        documentation keys, so adding ``releases`` or an alias leaves existing locks fresh."""
        data = asdict(self)
        for key in ("source", "torch_releases", "alias_of"):
            data.pop(key)
        data["torch_packages"] = list(self.torch_packages)
        data["torch_file_hosts"] = list(self.torch_file_hosts)
        return data

    def summary(self) -> dict[str, object]:
        """What ``lockkit platforms --json`` prints: a CI matrix entry."""
        return {"name": self.name, "os": self.os, "arch": self.arch, "python": self.python,
                "python_platform": self.python_platform,
                "backend": {"kind": self.backend.kind, "version": self.backend.version},
                "torch_index": self.torch_index, "torch_packages": list(self.torch_packages),
                "torch_releases": self.torch_releases or None, "alias_of": self.alias_of,
                "gpu": {"device": self.gpu_device, "cuda": self.gpu_cuda, "hip": self.gpu_hip}}

    @property
    def has_torch(self) -> bool:
        """Whether the platform routes a torch family (``[torch] packages``): without one,
        nothing goes to a PyTorch index and a lock without torch is what it should be."""
        return bool(self.torch_packages)

    @property
    def backend_label(self) -> str:
        return self.backend.kind + (f" {self.backend.version}" if self.backend.version else "")

    @property
    def fingerprint(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()

    @property
    def marker(self) -> str:
        """The PEP 508 environment this platform's locks are for: OS and architecture, so
        that pip and uv refuse a lock on another CPU before they fetch anything.
        ``platform_machine`` is spelled as the target's interpreter reports it (installers
        compare it exactly): the :data:`ARCHES` spelling that *arch* names, ignoring case."""
        from lockkit.platforms.arch import platform_machine

        sys_platform = {"linux": "linux", "macos": "darwin", "windows": "win32"}[self.os]
        machine = platform_machine(self.arch, ARCHES[self.os])
        return f"sys_platform == '{sys_platform}' and platform_machine == '{machine}'"


def _read(path: Path) -> dict[str, Any]:
    try:
        return parse_toml(path.read_text(encoding="utf-8"), path)
    except ConfigError as exc:  # nested too deeply: that line, as a platform file's error
        raise PlatformError(str(exc)) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PlatformError(f"{path}: cannot read platform file: {exc}") from exc


def parse_platform(path: Path) -> Platform | _Alias:
    """One platform file, every problem of it raised together, each named by its key."""
    data = _read(path)
    r = KeyReader(path, unknown="path: unknown field")
    if "alias-of" in data:
        return _parse_alias(r, data, path)
    r.unknown(data, _TOP)
    r.require(data, _REQUIRED, why=None)
    tables = {key: r.table(data, key) for key in _TABLES}
    for key, (known, required) in _TABLES.items():
        r.at(key).unknown(tables[key], known)
        if isinstance(data.get(key), dict):
            r.at(key).require(tables[key], required, why=None)
    backend, torch, gpu = (r.at(key) for key in ("backend", "torch", "gpu"))
    name = r.typed("name", data.get("name"), str) or path.stem
    _check_name(r, name)
    os_ = r.choice("os", r.typed("os", data.get("os"), str), OSES, says="is not one of")
    arch = r.typed("arch", data.get("arch"), str)
    _check_arch(r, os_, arch)
    python = r.typed("python", data.get("python"), str)
    if python is not None and not _PYTHON.fullmatch(python):
        r.fail("python", f"{python!r} is not a version such as '3.11'")
    kind = backend.choice("kind", backend.typed("kind", tables["backend"].get("kind"), str),
                          KINDS, says="is not one of")
    version = backend.typed("version", tables["backend"].get("version"), str)
    if kind in ("cuda", "rocm") and not version:
        backend.fail("version", f"required for kind {kind!r}")
    index, packages, hosts, releases = _torch(torch, tables["torch"])
    device = gpu.choice("device", gpu.typed("device", tables["gpu"].get("device"), str),
                        DEVICES, says="is not one of")
    if "gpu" not in data and "torch" in data and kind not in (None, "cpu"):
        r.fail("gpu", f"missing (required with [torch] and backend kind {kind!r}: the "
                      "device its GPU check runs on)")
    cuda, hip = (gpu.typed(key, tables["gpu"].get(key), str) for key in ("cuda", "hip"))
    macos_target = r.typed("macos-deployment-target", data.get("macos-deployment-target"), str)
    if macos_target is not None and not _MACOS_TARGET.fullmatch(macos_target):
        r.fail("macos-deployment-target", f"{macos_target!r} is not a version such as '14.0'")
    python_platform = r.typed("python-platform", data.get("python-platform"), str)
    if found := r.problems():
        raise PlatformError(found.message, hint=found.hint)
    return Platform(
        name=name, os=os_, arch=arch, python=python, python_platform=python_platform,
        backend=Backend(kind=kind, version=version), torch_index=index,
        torch_packages=packages, torch_file_hosts=hosts,
        gpu_device=device or "cpu", gpu_cuda=cuda, gpu_hip=hip,
        macos_target=macos_target, torch_releases=releases,
        description=data.get("description", ""), source=str(path),
    )


def _torch(r: KeyReader, torch: Mapping[str, Any]
           ) -> tuple[str | None, tuple[str, ...], tuple[str, ...], str]:
    """``[torch]``: the index, the packages it serves, the other hosts it links files on,
    and the releases it serves; *r* reads at ``torch``."""
    index = r.typed("index", torch.get("index"), str)
    packages = r.typed("packages", torch.get("packages"), list) or []
    if not all(isinstance(p, str) for p in packages):
        r.fail("packages", "expected a list of package names")
    hosts = r.typed("file-hosts", torch.get("file-hosts"), list) or []
    for i, host in enumerate(hosts):
        parts = urllib.parse.urlsplit(host) if isinstance(host, str) else None
        if not parts or parts.scheme not in ("http", "https") or not parts.netloc \
                or parts.path.strip("/") or "@" in parts.netloc:
            r.fail(f"file-hosts[{i}]", f"{host!r} is not a scheme://host URL")
    if hosts and not index:
        r.fail("file-hosts", "needs torch.index")
    releases = r.typed("releases", torch.get("releases"), str) or ""
    if not _valid_specifier(releases):
        r.fail("releases", f"{releases!r} is not a version specifier such as '>=2.9'")
    return (index.rstrip("/") if index else None,
            tuple(sorted(str(p).lower() for p in packages)),
            tuple(str(h).rstrip("/") for h in hosts), releases)


def _check_arch(r: KeyReader, os_: str | None, arch: str | None) -> None:
    if os_ is None or arch is None:
        return  # already reported
    known = ARCHES[os_]
    if arch.lower() not in {a.lower() for a in known}:
        r.fail("arch", f"{arch!r} is not one of {', '.join(known)} for os {os_!r}"
                       + did_you_mean(arch, known))


@dataclass(frozen=True, kw_only=True)
class _Alias:
    """A family name's file: ``alias-of = "<platform>"``, resolved once every file is read."""

    name: str
    target: str
    description: str
    source: Path


def _check_name(r: KeyReader, name: str) -> None:
    """A platform's lock is ``pylock.<name>.toml``, and PEP 751 allows no dot in <name>
    (pip and uv refuse such a file): ROCm 6.4 is ``linux-rocm64``, as CUDA 12.6 is cu126."""
    if not _NAME.fullmatch(name):
        r.fail("name", f"{name!r} cannot name a lock file pylock.<name>.toml (PEP 751: "
                        "letters, digits, '-' and '_', no dot), e.g. linux-rocm64")


def _parse_alias(r: KeyReader, data: Mapping[str, Any], path: Path) -> _Alias:
    _check_name(r, path.stem)
    r.unknown(data, _ALIAS_TOP)
    target = r.typed("alias-of", data["alias-of"], str)
    if found := r.problems():
        raise PlatformError(found.message, hint=found.hint)
    return _Alias(name=path.stem, target=target, description=data.get("description", ""),
                  source=path)


def _resolve_alias(alias: _Alias, found: dict[str, Platform], broken: Iterable[str]) -> Platform:
    """The alias is the target's definition under the family name, saying which it stands for
    (a lock compiled under the family name stays where it was: ``pylock.<alias>.toml``)."""
    target = found.get(alias.target)
    if target is None or target.alias_of:
        known = sorted(n for n, p in found.items() if not p.alias_of)
        why = "is itself an alias" if target else (
            "is a malformed platform file" if alias.target in broken else "is not a known platform")
        raise PlatformError(f"{alias.source}: alias-of: {alias.target!r} {why}"
                            + did_you_mean(alias.target, known))
    return replace(target, name=alias.name, alias_of=target.name, source=str(alias.source),
                   description=alias.description or f"alias of {target.name}")


@dataclass(frozen=True)
class Catalog:
    """Every platform file read: the valid platforms, and each malformed file's error under
    its name (the file's stem), so one broken file stops only what needs that platform."""

    platforms: dict[str, Platform]
    broken: dict[str, PlatformError]

    def error(self, names: Collection[str] | None = None) -> PlatformError | None:
        """The error of the malformed files among *names* (all of them when None)."""
        errors = [e for n, e in self.broken.items() if names is None or n in names]
        if len(errors) > 1:
            return PlatformError("; ".join(str(e) for e in errors))
        return errors[0] if errors else None

    def select(self, names: Sequence[str], all_: bool, configured: Sequence[str],
               source: Path | str | None = None) -> list[Platform]:
        """:func:`select_platforms`, after the errors of the malformed files it asks for
        (``--all`` asks for every one)."""
        error = self.error(None if all_ else list(names) or list(configured))
        if error is not None:
            raise error
        return select_platforms(self.platforms, names, all_, configured, source)


def load_catalog(project_dir: Path | None = None) -> Catalog:
    """Shipped platforms, then the project's ``platforms/*.toml`` overriding by name (a
    malformed file too: its name is then broken, not the shipped one); family names
    (``alias-of``) resolved last, so a project may point one at its own platform."""
    folders = [shipped_dir()]
    if project_dir is not None and own_folder(project_dir).is_dir():
        folders.append(own_folder(project_dir))
    found: dict[str, Platform] = {}
    aliases: dict[str, _Alias] = {}
    broken: dict[str, PlatformError] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.toml")):
            try:
                plat = parse_platform(path)
            except PlatformError as exc:
                plat, broken[path.stem] = None, exc  # broken under its file's name
            name = plat.name if plat else path.stem
            for table in (found, aliases, broken if plat else {}):  # what it overrides
                table.pop(name, None)
            if isinstance(plat, _Alias):
                aliases[name] = plat
            elif plat is not None:
                found[name] = plat
    for alias in aliases.values():
        try:
            found[alias.name] = _resolve_alias(alias, found, broken)
        except PlatformError as exc:
            broken[alias.name] = exc
    return Catalog(platforms=dict(sorted(found.items())), broken=dict(sorted(broken.items())))


def load_platforms(project_dir: Path | None = None) -> dict[str, Platform]:
    """Every platform of :func:`load_catalog`, a malformed file an error (see Catalog)."""
    catalog = load_catalog(project_dir)
    error = catalog.error()
    if error is not None:
        raise error
    return catalog.platforms


def markdown_table(platforms: dict[str, Platform]) -> str:
    """The docs' platform table, made from the files (``lockkit platforms --markdown``):
    a test keeps docs/reference/platform-file.md equal to it, so the table never tells of
    a platform gone."""
    lines = ["| platform | OS | arch | backend | torch from | torch releases |",
             "|---|---|---|---|---|---|"]
    for p in platforms.values():
        where = p.torch_index or ("the default index" if p.has_torch else "no torch")
        if p.alias_of:
            where = f"alias of `{p.alias_of}`"
        lines.append(f"| `{p.name}` | {p.os} | {p.arch} | {p.backend_label} | {where} | "
                     f"{p.torch_releases or 'any'} |")
    return "\n".join(lines) + "\n"


def select_platforms(known: dict[str, Platform], names: Sequence[str], all_: bool,
                     configured: Sequence[str], source: Path | str | None = None
                     ) -> list[Platform]:
    """The platforms a command works on: every known one (``--all``), the named ones
    (``--platform``), else the project's configured list, whose unknown names are traced
    to *source* (the config file) by key path. An unknown name is exit 2, with the known
    name it most likely means."""
    if all_:
        return list(known.values())
    traced = not names and source is not None
    wanted = list(names) or list(configured)
    unknown = [unknown_platform(n, known, f"platforms[{i}]: " if traced else "")
               for i, n in enumerate(wanted) if n not in known]
    if unknown:
        raise PlatformError((f"{source}: " if traced else "") + "; ".join(unknown))
    return [known[n] for n in dict.fromkeys(wanted)]


def unknown_platform(name: str, known: Iterable[str], where: str = "") -> str:
    """``unknown platform 'linux-cpuu'; did you mean 'linux-cpu'?`` (or the known names,
    when none is close), after *where* (``lockkit.toml: platforms[0]: ``)."""
    known = list(known)
    close = closest_platform(name, known)
    tail = f"did you mean {close!r}?" if close else f"known: {', '.join(known)}"
    return f"{where}unknown platform {name!r}; {tail}"


def closest_platform(name: str, known: Iterable[str]) -> str | None:
    """The known platform *name* most likely means: names compared lowercased and with
    '_' read as '-' (``macos_arm64`` is ``macos-arm64``), then by difflib's ratio."""
    import difflib

    def folded(text: str) -> str:
        return text.lower().replace("_", "-")

    by_fold = {folded(k): k for k in known}
    close = difflib.get_close_matches(folded(name), list(by_fold), n=1)
    return by_fold[close[0]] if close else None


def _valid_specifier(text: str) -> bool:
    """Whether *text* is a PEP 440 specifier set, as packaging reads one."""
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return True
