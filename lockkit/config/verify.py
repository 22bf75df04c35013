"""The [verify] tables of lockkit.toml, validated when the project loads.

``[verify.embedding]`` declares the application check that ``verify`` runs last. It is
read here, with every key checked and every problem collected, by ``load_project``: a
mistake in it ends the command in under a second, before minutes of install, not at
the step that uses it. ``lockkit.verify.checks.embedding.verdict`` runs the check this
table declares; ``lockkit.verify.checks.application.config`` reads [verify.application],
the general form, with the same reader.
"""

from __future__ import annotations

import difflib
import math
import re
import string
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from lockkit.errors import ConfigError

__all__ = ["EMBEDDING_HINT", "EmbeddingConfig", "embedding_problems", "load_embedding_config"]

EMBEDDING_HINT = "see examples/embeddings/lockkit.toml for a complete table"

_REQUIRED = ("command", "embeddings", "ids", "sample", "reference", "reference-ids",
             "dtype", "dim", "reason", "fingerprints")
_OPTIONAL = ("key", "atol", "rtol", "min-cosine", "timeout")
_DTYPES = ("float16", "float32", "float64")
_PLACEHOLDERS = ("python", "out")
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
        cfg, problems = embedding_problems(project_root, table)
        if problems or cfg is None:
            raise ConfigError("; ".join(f"{source}: {p}" for p in problems), hint=EMBEDDING_HINT)
        return cfg

    def to_dict(self) -> dict[str, Any]:
        """The table as written in lockkit.toml, for the dossier."""
        out: dict[str, Any] = {"command": list(self.command)}
        for name in _REQUIRED[1:-1] + _OPTIONAL:
            value = getattr(self, name.replace("-", "_"))
            if value is not None:
                out[name] = value
        out["fingerprints"] = dict(self.fingerprints)
        return out


class TableReader:
    """Reads one key at a time; every problem becomes one message naming its key path
    (``<where>.<key>``). ``lockkit.verify.checks.application.config`` reads
    [verify.application] with it too."""

    def __init__(self, root: Path, where: str = "verify.embedding") -> None:
        self.root = root.resolve()
        self.where = where
        self.errors: list[str] = []

    def fail(self, key: str, message: str) -> None:
        self.errors.append(f"{self.where}.{key}: {message}")

    def unknown(self, table: dict[str, Any]) -> None:
        for key in sorted(set(table) - set(_REQUIRED + _OPTIONAL)):
            close = difflib.get_close_matches(key, _REQUIRED + _OPTIONAL, n=1)
            self.fail(key, "unknown key" + (f" (did you mean '{close[0]}'?)" if close else ""))

    def read_all(self, table: dict[str, Any]) -> dict[str, Any]:
        for key in _REQUIRED:
            if key not in table:
                self.fail(key, "missing (required)")
        get = table.get
        values = {
            "command": self.command(get("command")),
            "embeddings": self.path("embeddings", get("embeddings"), in_project=False),
            "ids": self.path("ids", get("ids"), in_project=False),
            "sample": self.path("sample", get("sample")),
            "reference": self.path("reference", get("reference")),
            "reference_ids": self.path("reference-ids", get("reference-ids")),
            "dtype": self.choice("dtype", get("dtype"), _DTYPES),
            "dim": self.number("dim", get("dim"), 1, math.inf, integer=True),
            "reason": self.text("reason", get("reason")),
            "key": self.text("key", get("key")),
            "atol": self.number("atol", get("atol"), 0, math.inf),
            "rtol": self.number("rtol", get("rtol"), 0, math.inf),
            "min_cosine": self.number("min-cosine", get("min-cosine"), -1, 1),
            "timeout": self.number("timeout", get("timeout"), 1e-9, math.inf),
        }
        self.criteria(table)
        values["fingerprints"] = self.fingerprints(get("fingerprints"), values)
        return values

    def text(self, key: str, value: Any) -> str | None:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            self.fail(key, f"expected a non-empty string, got {value!r}")
            return None
        return value

    def choice(self, key: str, value: Any, allowed: tuple[str, ...]) -> str | None:
        if value is not None and value not in allowed:
            self.fail(key, f"expected one of {', '.join(allowed)}, got {value!r}")
            return None
        return value

    def number(self, key: str, value: Any, low: float, high: float, *,
               integer: bool = False) -> Any:
        kinds = (int,) if integer else (int, float)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
            kind = "an integer" if integer else "a number"
            self.fail(key, f"expected {kind} in [{low:g}, {high:g}], got {value!r}")
            return None
        return value if integer else float(value)

    def path(self, key: str, value: Any, *, in_project: bool = True) -> str | None:
        """A relative path that stays inside its folder: the check must run from a copy."""
        if self.text(key, value) is None:
            return None
        escapes = ".." in PurePosixPath(value.replace("\\", "/")).parts
        absolute = PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()
        if not escapes and not absolute and in_project:
            escapes = not (self.root / value).resolve().is_relative_to(self.root)
        if escapes or absolute:
            self.fail(key, f"expected a relative path inside the "
                           f"{'project' if in_project else 'output folder'}, got {value!r}")
            return None
        return value

    def command(self, value: Any) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            self.fail("command", f"expected a non-empty list of strings, got {value!r}")
            return None
        try:
            fields = [f for part in value for _, f, spec, conv in string.Formatter().parse(part)
                      if f is not None and (spec or conv or f not in _PLACEHOLDERS)]
        except ValueError as exc:
            self.fail("command", f"malformed placeholder: {exc} (write {{{{ for a brace)")
            return None
        if fields:
            self.fail("command", f"unknown placeholder {{{fields[0]}}}: "
                                 f"use {{python}} and {{out}}")
        elif not any("{out}" in part for part in value):
            self.fail("command", "no {out} placeholder: the application must write into "
                                 "the folder lockkit re-reads")
        return None if fields else tuple(value)

    def criteria(self, table: dict[str, Any]) -> None:
        """No default tolerance: the user declares one and says why."""
        if ("atol" in table) != ("rtol" in table):
            missing = "rtol" if "atol" in table else "atol"
            self.fail(missing, "required with atol/rtol (write 0 to disable one of them)")
        if not any(k in table for k in ("atol", "rtol", "min-cosine")):
            self.fail("atol", "no criterion: set atol and rtol, or min-cosine, or both")

    def fingerprints(self, value: Any, values: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        if value is None:
            return ()
        if not isinstance(value, dict) or not value:
            self.fail("fingerprints", "expected a table of 'path' = 'sha256 hex digest'")
            return ()
        pairs = []
        for path, digest in value.items():
            if self.path(f'fingerprints."{path}"', path) is None:
                continue
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                self.fail(f'fingerprints."{path}"', f"expected 64 hex digits, got {digest!r}")
                continue
            pairs.append((path, digest.lower()))
        for key in ("sample", "reference", "reference_ids"):
            if values.get(key) and values[key] not in value:
                self.fail("fingerprints", f"no entry for {values[key]!r}: the check reads it, "
                                          "so it needs an identity")
        return tuple(pairs)


def embedding_problems(project_root: Path,
                       table: Any) -> tuple[EmbeddingConfig | None, list[str]]:
    """The validated table, or None and every problem, each naming its key path
    (``verify.embedding.dim: ...``) for the caller to prefix with the file."""
    if not isinstance(table, dict):
        return None, [f"verify.embedding: expected a table, got {table!r}"]
    reader = TableReader(project_root)
    reader.unknown(table)
    values = {attr: value for attr, value in reader.read_all(table).items() if value is not None}
    if reader.errors:
        return None, reader.errors
    return EmbeddingConfig(**values), []


def load_embedding_config(project_root: Path, verify: Any, *,
                          source: str = "lockkit.toml") -> EmbeddingConfig | None:
    """The project's embedding check, or None when it declares none."""
    if not isinstance(verify, dict):
        raise ConfigError(f"{source}: verify: expected a table, got {verify!r}")
    if "embedding" not in verify:
        return None
    return EmbeddingConfig.from_table(project_root, verify["embedding"], source=source)


