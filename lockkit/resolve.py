"""The uv wrapper: constraints + platform -> a raw PEP 751 resolution.

uv resolves for the platform's target (``--python-platform``) and Python without
the target machine. Indexes are passed in priority order with uv's default
``first-index`` strategy: a project that exists on the PyTorch index is taken from
there only, so a higher ``torch`` or a planted ``pytorch-triton-rocm`` on the
default index is never considered (no best match across indexes).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from lockkit._compat import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockkit import _run
from lockkit.errors import IndexError_, ResolutionError
from lockkit.platforms import Platform
from lockkit.redact import redact

__all__ = ["Indexes", "apply_mirrors", "resolve", "uv_bin", "uv_version"]


def uv_bin() -> str:
    import uv  # the uv package ships the binary; never assume one on PATH

    return uv.find_uv_bin()


def uv_version(binary: str | None = None) -> str:
    """The uv version, from the package's metadata when the binary is the package's own."""
    import uv

    binary = binary or uv_bin()
    if Path(binary) == Path(uv.find_uv_bin()):
        from importlib.metadata import version

        return version("uv")  # saves a subprocess per compile
    out = _run.call([binary, "--version"]).stdout.split()
    return out[1] if len(out) > 1 else "unknown"


def apply_mirrors(url: str, mirrors: dict[str, str]) -> str:
    """Rewrite *url* through the longest matching official prefix."""
    for official in sorted(mirrors, key=len, reverse=True):
        if url == official or url.startswith(official + "/"):
            return mirrors[official] + url[len(official):]
    return url


def unapply_mirrors(url: str, mirrors: dict[str, str]) -> str:
    for official, mirror in sorted(mirrors.items(), key=lambda kv: len(kv[1]), reverse=True):
        if url == mirror or url.startswith(mirror + "/"):
            return official + url[len(mirror):]
    return url


def expand(url: str) -> str:
    """Fill ``${VAR}`` placeholders from the environment (for use, never for writing)."""
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: os.environ.get(m.group(1), ""), url)


@dataclass(frozen=True, kw_only=True)
class Indexes:
    """The indexes of one resolution, as the user wrote them and as actually used."""

    torch_official: str | None
    torch_effective: str | None
    default_effective: str | None  # None: uv's own default index

    @classmethod
    def for_platform(cls, platform: Platform, mirrors: dict[str, str],
                     index_url: str | None) -> "Indexes":
        torch = platform.torch_index
        return cls(
            torch_official=torch,
            torch_effective=expand(apply_mirrors(torch, mirrors)) if torch else None,
            default_effective=expand(apply_mirrors(index_url, mirrors)) if index_url else None,
        )


def uv_command(binary: str, requirements: list[Path], platform: Platform, python: str,
               indexes: Indexes, output: Path) -> list[str]:
    argv = [binary, "pip", "compile", "--no-config", "--quiet", "--format", "pylock.toml",
            "--generate-hashes", "--no-header", "--python-platform", platform.python_platform,
            "--python-version", python, "--index-strategy", "first-index", "-o", str(output),
            # An explicit interpreter (used only for sdist builds) spares uv its interpreter
            # discovery, which costs ~0.2 s per call through shims such as pyenv's.
            "--python", sys.executable]
    if indexes.default_effective:
        argv += ["--index-url", indexes.default_effective]
    if indexes.torch_effective:  # uv gives --extra-index-url priority over --index-url
        argv += ["--extra-index-url", indexes.torch_effective]
    return argv + [str(r) for r in requirements]


def _explain(stderr: str) -> str:
    text = redact(stderr.strip())
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " ".join(ln.strip() for ln in lines[:6])[:600] or "uv failed without a message"


def resolve(requirements: list[Path], platform: Platform, python: str, indexes: Indexes,
            binary: str | None = None) -> dict[str, Any]:
    """Run uv and return its pylock document as a dict."""
    with tempfile.TemporaryDirectory(prefix="lockkit-") as tmp:
        out = Path(tmp) / "pylock.toml"
        extra = {"MACOSX_DEPLOYMENT_TARGET": platform.macos_target} if platform.macos_target else {}
        result = _run.call(uv_command(binary or uv_bin(), requirements, platform, python,
                                      indexes, out), timeout=900, env=_run.isolated_env(extra))
        if result.returncode != 0:
            _raise_for(result.stderr, platform, indexes)
        return tomllib.loads(out.read_text(encoding="utf-8"))


def _raise_for(stderr: str, platform: Platform, indexes: Indexes) -> None:
    why = _explain(stderr)
    refused = re.search(r"\b(401|403)\b", stderr)
    if refused and indexes.torch_effective and redact(indexes.torch_effective) in redact(stderr):
        raise IndexError_(
            f"{platform.name}: the PyTorch index {redact(indexes.torch_official or '')} "
            f"refused access ({refused.group(1)}); lockkit never falls back to the default index",
            hint="check the credentials or the --mirror for that index")
    if re.search(r"(Connection refused|dns error|connect error|timed out|Failed to fetch)",
                 stderr, re.I):
        raise IndexError_(f"{platform.name}: an index is unreachable: {why}",
                          hint="check --index-url / --mirror, or the network")
    raise ResolutionError(f"{platform.name}: no resolution: {why}")
