"""``[verify.embedding]``: the application check's specialised form for an embedding model,
validated when the project loads.

``[verify.embedding]`` declares the application check that ``verify`` runs last. It is
read here, with every key checked and every problem collected, by ``load_project``: a
mistake in it ends the command in under a second, before minutes of install, not at
the step that uses it. ``lockkit.verify.checks.embedding.verdict`` runs the check this
table declares. Its ``command``, paths and ``fingerprints`` follow the rules every check's
table shares (:mod:`lockkit.config.checks.rules`), every key through the one key-path
reader (:class:`lockkit._internal.keys.KeyReader`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lockkit._internal.keys import KeyReader
from lockkit.config.checks.rules import (
    DEVICE_USE,
    Check,
    Fields,
    command,
    fingerprints,
    relative_path,
)
from lockkit.errors import ConfigError

__all__ = ["CHECK", "EMBEDDING_HINT", "EmbeddingConfig", "embedding_problems",
           "load_embedding_config"]

EMBEDDING_HINT = "see examples/embeddings/lockkit.toml for a complete table"

_REQUIRED = ("command", "embeddings", "ids", "sample", "reference", "reference-ids",
             "dtype", "dim", "reason", "fingerprints")
_OPTIONAL = ("key", "atol", "rtol", "min-cosine", "timeout")
_DTYPES = ("float16", "float32", "float64")
_PLACEHOLDERS = ("python", "out", "device")


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
    def from_table(cls, project_root: Path, table: object, *,
                   source: str = "lockkit.toml") -> EmbeddingConfig:
        """Validate every key, collect every error, raise them together."""
        r = _reader(source)
        config = _read(r, project_root, table)
        r.raise_if_any(hint=EMBEDDING_HINT)
        assert config is not None  # a table read without a problem is a config
        return config

    def to_dict(self) -> dict[str, object]:
        """The table as written in lockkit.toml, for the dossier."""
        out: dict[str, object] = {"command": list(self.command)}
        for name in _REQUIRED[1:-1] + _OPTIONAL:
            value = getattr(self, name.replace("-", "_"))
            if value is not None:
                out[name] = value
        out["fingerprints"] = dict(self.fingerprints)
        return out


def embedding_problems(project_root: Path,
                       table: object) -> tuple[EmbeddingConfig | None, list[str]]:
    """The validated table, or None and every problem, each naming its key path
    (``verify.embedding.dim: ...``) for the caller to prefix with the file."""
    r = _reader(None)
    config = _read(r, project_root, table)
    return (None, r.errors) if config is None else (config, [])


def _reader(source: str | None) -> KeyReader:
    return KeyReader(source, where="verify.embedding", unknown="path: unknown key")


def _read(r: KeyReader, project_root: Path, table: object) -> EmbeddingConfig | None:
    """The table as an :class:`EmbeddingConfig`; None when it has a problem, every
    problem recorded on *r*."""
    if not isinstance(table, dict):
        r.fail("", f"expected a table, got {table!r}")
        return None
    r.unknown(table, _REQUIRED + _OPTIONAL)
    r.require(table, _REQUIRED)
    root, get = project_root.resolve(), table.get
    argv = command(r, get("command"), _PLACEHOLDERS, use="use {python}, {out} and " + DEVICE_USE,
                   needed=("out",),
                   why="the application must write into the folder lockkit re-reads")
    embeddings = relative_path(r, "embeddings", get("embeddings"), None)
    ids = relative_path(r, "ids", get("ids"), None)
    sample = relative_path(r, "sample", get("sample"), root)
    reference = relative_path(r, "reference", get("reference"), root)
    reference_ids = relative_path(r, "reference-ids", get("reference-ids"), root)
    dtype = r.choice("dtype", get("dtype"), _DTYPES)
    dim = r.number("dim", get("dim"), 1, integer=True)
    reason = r.text("reason", get("reason"))
    key = r.text("key", get("key"))
    atol = r.number("atol", get("atol"), 0)
    rtol = r.number("rtol", get("rtol"), 0)
    min_cosine = r.number("min-cosine", get("min-cosine"), -1, 1)
    timeout = r.number("timeout", get("timeout"), 1e-9)
    _criteria(r, table)
    read = [p for p in (sample, reference, reference_ids) if p]
    pairs = fingerprints(r, get("fingerprints"), root, read, "the check")
    if r.errors or argv is None or embeddings is None or ids is None or sample is None \
            or reference is None or reference_ids is None or reason is None:
        return None
    config = EmbeddingConfig(command=argv, embeddings=embeddings, ids=ids, sample=sample,
                             reference=reference, reference_ids=reference_ids, dtype=dtype,
                             dim=dim, reason=reason, fingerprints=pairs, key=key, atol=atol,
                             rtol=rtol, min_cosine=min_cosine)
    return config if timeout is None else dataclasses.replace(config, timeout=timeout)


def _criteria(r: KeyReader, table: Mapping[str, object]) -> None:
    """No default tolerance: the user declares one and says why."""
    if ("atol" in table) != ("rtol" in table):
        missing = "rtol" if "atol" in table else "atol"
        r.fail(missing, "required with atol/rtol (write 0 to disable one of them)")
    if not any(k in table for k in ("atol", "rtol", "min-cosine")):
        r.fail("atol", "no criterion: set atol and rtol, or min-cosine, or both")


def load_embedding_config(project_root: Path, verify: object, *,
                          source: str = "lockkit.toml") -> EmbeddingConfig | None:
    """The project's embedding check, or None when it declares none."""
    if not isinstance(verify, dict):
        raise ConfigError(f"{source}: verify: expected a table, got {verify!r}")
    if "embedding" not in verify:
        return None
    return EmbeddingConfig.from_table(project_root, verify["embedding"], source=source)


def _read_check(root: Path, verify: Mapping[str, object]) -> tuple[Fields, list[str]]:
    if "embedding" not in verify:
        return {}, []
    config, problems = embedding_problems(root, verify["embedding"])
    return {"embedding": config}, problems


CHECK = Check(key="embedding", read=_read_check, hint=EMBEDDING_HINT,
              fields={"embedding": EmbeddingConfig})
