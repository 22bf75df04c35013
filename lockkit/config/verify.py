"""The [verify] tables of lockkit.toml, validated when the project loads.

``[verify.embedding]`` declares the application check that ``verify`` runs last. It is
read here, with every key checked and every problem collected, by ``load_project``: a
mistake in it ends the command in under a second, before minutes of install, not at
the step that uses it. ``lockkit.verify.checks.embedding.verdict`` runs the check this
table declares. The rules every check's table shares are here too (:func:`command`,
:func:`relative_path`, :func:`fingerprints`): ``lockkit.verify.checks.application.config``
and ``lockkit.verify.checks.resume.config`` read their tables with them, every key through
the one key-path reader (:class:`lockkit._internal.keys.KeyReader`).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from lockkit._internal.keys import KeyReader
from lockkit.errors import ConfigError

__all__ = ["DEVICE_USE", "EMBEDDING_HINT", "EmbeddingConfig", "command", "embedding_problems",
           "fingerprints", "load_embedding_config", "relative_path"]

EMBEDDING_HINT = "see examples/embeddings/lockkit.toml for a complete table"

_REQUIRED = ("command", "embeddings", "ids", "sample", "reference", "reference-ids",
             "dtype", "dim", "reason", "fingerprints")
_OPTIONAL = ("key", "atol", "rtol", "min-cosine", "timeout")
_DTYPES = ("float16", "float32", "float64")
_PLACEHOLDERS = ("python", "out", "device")
# Where the commands run: {device} is the platform's torch device (``cpu``, ``cuda:0`` on a
# CUDA or ROCm platform, ``xpu:0``, ``mps``), filled in by verify (``Options.device``).
DEVICE_USE = "{device} (the platform's torch device: cpu, cuda:0, xpu:0 or mps)"
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True, kw_only=True)
class EmbeddingConfig:
    """The validated [verify.embedding] table; paths are relative (project or output)."""

    command: tuple[str, ...]
    embeddings: str
    ids: str
    sample: str
    reference: str
    reference_ids: str
    dtype: str
    dim: int
    reason: str
    fingerprints: tuple[tuple[str, str], ...]
    key: str | None = None
    atol: float | None = None
    rtol: float | None = None
    min_cosine: float | None = None
    timeout: float = 600.0

    @classmethod
    def from_table(cls, project_root: Path, table: Any, *,
                   source: str = "lockkit.toml") -> EmbeddingConfig:
        """Validate every key, collect every error, raise them together."""
        r = _reader(source)
        values = _read(r, project_root, table)
        r.raise_if_any(hint=EMBEDDING_HINT)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The table as written in lockkit.toml, for the dossier."""
        out: dict[str, Any] = {"command": list(self.command)}
        for name in _REQUIRED[1:-1] + _OPTIONAL:
            value = getattr(self, name.replace("-", "_"))
            if value is not None:
                out[name] = value
        out["fingerprints"] = dict(self.fingerprints)
        return out


def embedding_problems(project_root: Path,
                       table: Any) -> tuple[EmbeddingConfig | None, list[str]]:
    """The validated table, or None and every problem, each naming its key path
    (``verify.embedding.dim: ...``) for the caller to prefix with the file."""
    r = _reader(None)
    values = _read(r, project_root, table)
    return (None, r.errors) if r.errors else (EmbeddingConfig(**values), [])


def _reader(source: str | None) -> KeyReader:
    return KeyReader(source, where="verify.embedding", unknown="path: unknown key")


def _read(r: KeyReader, project_root: Path, table: Any) -> dict[str, Any]:
    """The table's values by :class:`EmbeddingConfig` field; every problem recorded."""
    if not isinstance(table, dict):
        r.fail("", f"expected a table, got {table!r}")
        return {}
    r.unknown(table, _REQUIRED + _OPTIONAL)
    r.require(table, _REQUIRED)
    root, get = project_root.resolve(), table.get
    values = {
        "command": command(r, get("command"), _PLACEHOLDERS,
                           use="use {python}, {out} and " + DEVICE_USE,
                           needed=("out",),
                           why="the application must write into the folder lockkit re-reads"),
        "embeddings": relative_path(r, "embeddings", get("embeddings"), None),
        "ids": relative_path(r, "ids", get("ids"), None),
        "sample": relative_path(r, "sample", get("sample"), root),
        "reference": relative_path(r, "reference", get("reference"), root),
        "reference_ids": relative_path(r, "reference-ids", get("reference-ids"), root),
        "dtype": r.choice("dtype", get("dtype"), _DTYPES),
        "dim": r.number("dim", get("dim"), 1, integer=True),
        "reason": r.text("reason", get("reason")),
        "key": r.text("key", get("key")),
        "atol": r.number("atol", get("atol"), 0),
        "rtol": r.number("rtol", get("rtol"), 0),
        "min_cosine": r.number("min-cosine", get("min-cosine"), -1, 1),
        "timeout": r.number("timeout", get("timeout"), 1e-9),
    }
    _criteria(r, table)
    read = [values[k] for k in ("sample", "reference", "reference_ids") if values[k]]
    values["fingerprints"] = fingerprints(r, get("fingerprints"), root, read, "the check")
    return {k: v for k, v in values.items() if v is not None}


def _criteria(r: KeyReader, table: dict[str, Any]) -> None:
    """No default tolerance: the user declares one and says why."""
    if ("atol" in table) != ("rtol" in table):
        missing = "rtol" if "atol" in table else "atol"
        r.fail(missing, "required with atol/rtol (write 0 to disable one of them)")
    if not any(k in table for k in ("atol", "rtol", "min-cosine")):
        r.fail("atol", "no criterion: set atol and rtol, or min-cosine, or both")


# --- the rules every check's table shares (application, embedding, resume) ------------------

def command(r: KeyReader, value: Any, placeholders: tuple[str, ...], *, use: str,
            needed: tuple[str, ...] = (), why: str = "") -> tuple[str, ...] | None:
    """``command``: a non-empty list of strings whose ``{placeholders}`` are all known
    (else the problem ends with *use*) and include each of *needed* (else with *why*)."""
    if value is None:
        return None
    if r.strings("command", value, empty=False) is None:
        return None
    try:
        fields = [(f, spec, conv) for part in value
                  for _, f, spec, conv in string.Formatter().parse(part) if f is not None]
    except ValueError as exc:
        r.fail("command", f"malformed placeholder: {exc} (write {{{{ for a brace)")
        return None
    unknown = [f for f, spec, conv in fields if spec or conv or f not in placeholders]
    missing = [p for p in needed if p not in {f for f, _, _ in fields}]
    if unknown:
        r.fail("command", f"unknown placeholder {{{unknown[0]}}}: {use}")
    elif missing:
        r.fail("command", f"no {{{missing[0]}}} placeholder: {why}")
    return None if unknown or missing else tuple(value)


def relative_path(r: KeyReader, key: str, value: Any, root: Path | None) -> str | None:
    """A relative path that stays inside the project at *root* (None: inside the output
    folder, which does not exist yet): the check must run from a copy."""
    if r.text(key, value) is None:
        return None
    escapes = ".." in PurePosixPath(value.replace("\\", "/")).parts
    absolute = PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()
    if not escapes and not absolute and root is not None:
        escapes = not (root / value).resolve().is_relative_to(root)
    if escapes or absolute:
        where = "project" if root is not None else "output folder"
        r.fail(key, f"expected a relative path inside the {where}, got {value!r}")
        return None
    return value


def fingerprints(r: KeyReader, value: Any, root: Path, read: list[str],
                 reader: str) -> tuple[tuple[str, str], ...]:
    """``fingerprints``: 'path' = 'sha256 hex digest', with an entry for each file the
    check reads (*read*; *reader* says who reads it)."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        r.fail("fingerprints", "expected a table of 'path' = 'sha256 hex digest'")
        return ()
    pairs = []
    for path, digest in value.items():
        if relative_path(r, f'fingerprints."{path}"', path, root) is None:
            continue
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            r.fail(f'fingerprints."{path}"', f"expected 64 hex digits, got {digest!r}")
            continue
        pairs.append((path, digest.lower()))
    for path in read:
        if path not in value:
            r.fail("fingerprints", f"no entry for {path!r}: {reader} reads it, so it needs "
                                   "an identity")
    return tuple(pairs)


def load_embedding_config(project_root: Path, verify: Any, *,
                          source: str = "lockkit.toml") -> EmbeddingConfig | None:
    """The project's embedding check, or None when it declares none."""
    if not isinstance(verify, dict):
        raise ConfigError(f"{source}: verify: expected a table, got {verify!r}")
    if "embedding" not in verify:
        return None
    return EmbeddingConfig.from_table(project_root, verify["embedding"], source=source)


