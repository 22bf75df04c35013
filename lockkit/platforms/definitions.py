"""Platform definitions: data files validated strictly on load.

Shipped files live in ``lockkit/_platforms`` when installed (the repository's
``platforms/`` folder in a checkout); a project's own ``platforms/`` folder adds
or overrides them by name.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from lockkit._internal.compat import tomllib
from lockkit.errors import PlatformError

__all__ = ["Backend", "Platform", "closest_platform", "load_platforms", "markdown_table",
           "select_platforms", "shipped_dir", "unknown_platform"]

KINDS = ("cpu", "cuda", "rocm", "xpu", "mps")
DEVICES = ("cpu", "cuda", "xpu", "mps")
OSES = ("linux", "macos", "windows")
_TOP = {"name", "os", "arch", "python", "python-platform", "backend", "torch", "gpu", "description",
        "macos-deployment-target", "alias-of"}
_ALIAS_TOP = {"alias-of", "description"}
_BACKEND = {"kind", "version"}
_TORCH = {"index", "packages", "file-hosts", "releases"}
_GPU = {"device", "cuda", "hip"}
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
    kind: str
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
    # specifier: what the README table and ``platforms --json`` show. Not a resolver input.
    torch_releases: str = ""
    # Set on a family name (``linux-rocm6``): the platform it stands for today.
    alias_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """What decides a lock (the fingerprint's input): not where the file was, not the
        documentation keys, so adding ``releases`` or an alias leaves existing locks fresh."""
        data = asdict(self)
        for key in ("source", "torch_releases", "alias_of"):
            data.pop(key)
        data["torch_packages"] = list(self.torch_packages)
        data["torch_file_hosts"] = list(self.torch_file_hosts)
        return data

    def summary(self) -> dict[str, Any]:
        """What ``lockkit platforms --json`` prints: a CI matrix entry."""
        return {"name": self.name, "os": self.os, "arch": self.arch, "python": self.python,
                "python_platform": self.python_platform,
                "backend": {"kind": self.backend.kind, "version": self.backend.version},
                "torch_index": self.torch_index, "torch_packages": list(self.torch_packages),
                "torch_releases": self.torch_releases or None, "alias_of": self.alias_of,
                "gpu": {"device": self.gpu_device, "cuda": self.gpu_cuda, "hip": self.gpu_hip}}

    @property
    def backend_label(self) -> str:
        return self.backend.kind + (f" {self.backend.version}" if self.backend.version else "")

    @property
    def fingerprint(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()

    @property
    def marker(self) -> str:
        """The PEP 508 environment this platform's locks are for."""
        sys_platform = {"linux": "linux", "macos": "darwin", "windows": "win32"}[self.os]
        return f"sys_platform == '{sys_platform}'"


def shipped_dir() -> Path:
    package = Path(__file__).resolve().parents[1]  # lockkit/
    packaged = package / "_platforms"  # in a wheel (pyproject's force-include)
    return packaged if packaged.is_dir() else package.parent / "platforms"  # a source tree


class _Checker:
    """Collects every problem of one file before raising, naming the field."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[str] = []

    def unknown(self, table: dict, allowed: set[str], where: str) -> None:
        for key in sorted(set(table) - allowed):
            import difflib

            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            tip = f" (did you mean '{close[0]}'?)" if close else ""
            self.errors.append(f"{where}{key}: unknown field{tip}")

    def get(self, table: dict, key: str, kind: type, where: str, required: bool = True,
            choices: tuple[str, ...] | None = None) -> Any:
        if key not in table:
            if required:
                self.errors.append(f"{where}{key}: missing")
            return None
        value = table[key]
        if not isinstance(value, kind):
            self.errors.append(f"{where}{key}: expected {kind.__name__}, got {value!r}")
            return None
        if choices and value not in choices:
            self.errors.append(f"{where}{key}: {value!r} is not one of {', '.join(choices)}")
            return None
        return value

    def table(self, data: dict, key: str) -> dict:
        value = self.get(data, key, dict, "")
        return value if isinstance(value, dict) else {}

    def raise_if_any(self) -> None:
        if self.errors:
            raise PlatformError(f"{self.path}: " + "; ".join(self.errors))


def parse_platform(path: Path) -> Platform | _Alias:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PlatformError(f"{path}: cannot read platform file: {exc}") from exc
    c = _Checker(path)
    if "alias-of" in data:
        return _parse_alias(c, data, path)
    c.unknown(data, _TOP, "")
    backend, torch, gpu = c.table(data, "backend"), c.table(data, "torch"), c.table(data, "gpu")
    c.unknown(backend, _BACKEND, "backend.")
    c.unknown(torch, _TORCH, "torch.")
    c.unknown(gpu, _GPU, "gpu.")
    name = c.get(data, "name", str, "", required=False) or path.stem
    _check_name(c, name)
    fields = dict(
        os=c.get(data, "os", str, "", choices=OSES), arch=c.get(data, "arch", str, ""),
        python=c.get(data, "python", str, ""),
        python_platform=c.get(data, "python-platform", str, ""),
        kind=c.get(backend, "kind", str, "backend.", choices=KINDS),
        version=c.get(backend, "version", str, "backend.", required=False),
        index=c.get(torch, "index", str, "torch.", required=False),
        packages=c.get(torch, "packages", list, "torch."),
        device=c.get(gpu, "device", str, "gpu.", choices=DEVICES),
    )
    _check_arch(c, fields["os"], fields["arch"])
    if fields["python"] is not None and not _PYTHON.fullmatch(fields["python"]):
        c.errors.append(f"python: {fields['python']!r} is not a version such as '3.11'")
    cuda = c.get(gpu, "cuda", str, "gpu.", required=False)
    hip = c.get(gpu, "hip", str, "gpu.", required=False)
    if fields["kind"] in ("cuda", "rocm") and not fields["version"]:
        c.errors.append(f"backend.version: required for kind {fields['kind']!r}")
    if fields["packages"] is not None and not all(isinstance(p, str) for p in fields["packages"]):
        c.errors.append("torch.packages: expected a list of package names")
    hosts = c.get(torch, "file-hosts", list, "torch.", required=False) or []
    for i, host in enumerate(hosts):
        parts = urllib.parse.urlsplit(host) if isinstance(host, str) else None
        if not parts or parts.scheme not in ("http", "https") or not parts.netloc \
                or parts.path.strip("/") or "@" in parts.netloc:
            c.errors.append(f"torch.file-hosts[{i}]: {host!r} is not a scheme://host URL")
    if hosts and not fields["index"]:
        c.errors.append("torch.file-hosts: needs torch.index")
    releases = c.get(torch, "releases", str, "torch.", required=False) or ""
    if not _valid_specifier(releases):
        c.errors.append(f"torch.releases: {releases!r} is not a version specifier such as '>=2.9'")
    macos_target = c.get(data, "macos-deployment-target", str, "", required=False)
    if macos_target is not None and not _MACOS_TARGET.fullmatch(macos_target):
        c.errors.append(f"macos-deployment-target: {macos_target!r} is not a version such "
                        "as '14.0'")
    c.raise_if_any()
    return Platform(
        name=name, os=fields["os"], arch=fields["arch"], python=fields["python"],
        python_platform=fields["python_platform"],
        backend=Backend(kind=fields["kind"], version=fields["version"]),
        torch_index=fields["index"].rstrip("/") if fields["index"] else None,
        torch_packages=tuple(sorted(p.lower() for p in fields["packages"])),
        torch_file_hosts=tuple(h.rstrip("/") for h in hosts),
        gpu_device=fields["device"], gpu_cuda=cuda, gpu_hip=hip,
        macos_target=macos_target, torch_releases=releases,
        description=data.get("description", ""), source=str(path),
    )


def _check_arch(c: _Checker, os_: str | None, arch: str | None) -> None:
    if os_ is None or arch is None:
        return  # already reported
    known = ARCHES[os_]
    if arch.lower() not in {a.lower() for a in known}:
        import difflib

        close = difflib.get_close_matches(arch, known, n=1)
        tip = f" (did you mean '{close[0]}'?)" if close else ""
        c.errors.append(f"arch: {arch!r} is not one of {', '.join(known)} for os {os_!r}{tip}")


@dataclass(frozen=True, kw_only=True)
class _Alias:
    """A family name's file: ``alias-of = "<platform>"``, resolved once every file is read."""

    name: str
    target: str
    description: str
    source: Path


def _check_name(c: _Checker, name: str) -> None:
    """A platform's lock is ``pylock.<name>.toml``, and PEP 751 allows no dot in <name>
    (pip and uv refuse such a file): ROCm 6.4 is ``linux-rocm64``, as CUDA 12.6 is cu126."""
    if not _NAME.fullmatch(name):
        c.errors.append(f"name: {name!r} cannot name a lock file pylock.<name>.toml (PEP 751: "
                        "letters, digits, '-' and '_', no dot), e.g. linux-rocm64")


def _parse_alias(c: _Checker, data: dict, path: Path) -> _Alias:
    _check_name(c, path.stem)
    c.unknown(data, _ALIAS_TOP, "")
    target = c.get(data, "alias-of", str, "")
    c.raise_if_any()
    return _Alias(name=path.stem, target=target, description=data.get("description", ""),
                  source=path)


def _resolve_alias(alias: _Alias, found: dict[str, Platform]) -> Platform:
    """The alias is the target's definition under the family name, saying which it stands for
    (a lock compiled under the family name stays where it was: ``pylock.<alias>.toml``)."""
    target = found.get(alias.target)
    if target is None or target.alias_of:
        known = sorted(n for n, p in found.items() if not p.alias_of)
        import difflib

        close = difflib.get_close_matches(alias.target, known, n=1)
        tip = f" (did you mean '{close[0]}'?)" if close else ""
        why = "is itself an alias" if target else "is not a known platform"
        raise PlatformError(f"{alias.source}: alias-of: {alias.target!r} {why}{tip}")
    return replace(target, name=alias.name, alias_of=target.name, source=str(alias.source),
                   description=alias.description or f"alias of {target.name}")


def load_platforms(project_dir: Path | None = None) -> dict[str, Platform]:
    """Shipped platforms, then the project's ``platforms/*.toml`` overriding by name; family
    names (``alias-of``) resolved last, so a project may point one at its own platform."""
    folders = [shipped_dir()]
    if project_dir is not None and (project_dir / "platforms").is_dir():
        folders.append(project_dir / "platforms")
    found: dict[str, Platform] = {}
    aliases: dict[str, _Alias] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.toml")):
            plat = parse_platform(path)
            if isinstance(plat, _Alias):
                found.pop(plat.name, None)
                aliases[plat.name] = plat
            else:
                aliases.pop(plat.name, None)
                found[plat.name] = plat
    for alias in aliases.values():
        found[alias.name] = _resolve_alias(alias, found)
    return dict(sorted(found.items()))


def markdown_table(platforms: dict[str, Platform]) -> str:
    """The README's platform table, made from the files (``lockkit platforms --markdown``):
    a test keeps the README equal to it, so the table never tells of a platform gone."""
    lines = ["| platform | OS | arch | backend | torch from | torch releases |",
             "|---|---|---|---|---|---|"]
    for p in platforms.values():
        where = p.torch_index or "the default index"
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


_ONE_SPEC = (r"(?:(?:==|!=)\s*\d+(?:\.\d+)*(?:\.\*)?|(?:<=|>=|<|>)\s*\d+(?:\.\d+)*"
             r"|~=\s*\d+(?:\.\d+)+)")
_PLAIN_SPECIFIERS = re.compile(rf"\s*(?:{_ONE_SPEC}\s*(?:,\s*{_ONE_SPEC}\s*)*)?")


def _valid_specifier(text: str) -> bool:
    """Whether *text* is a PEP 440 specifier set. The plain forms platform files use are
    accepted by a pattern (each of them packaging accepts too); anything else is asked of
    packaging, whose import the ``compile --check`` gate would otherwise pay for."""
    if _PLAIN_SPECIFIERS.fullmatch(text):
        return True
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return True
