"""The bundled example's embedding check, as its lockkit.toml declares it: the table as
written and the config lockkit reads from it (the config and verify tests share them)."""

from __future__ import annotations

from pathlib import Path

from lockkit._internal.compat import tomllib
from lockkit.config.checks.embedding import EmbeddingConfig
from lockkit.config.project import load_project

__all__ = ["EXAMPLE", "example_config", "example_table"]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embeddings"


def example_table() -> dict:
    return tomllib.loads((EXAMPLE / "lockkit.toml").read_text(encoding="utf-8"))["verify"][
        "embedding"]


def example_config() -> EmbeddingConfig:
    cfg = load_project(EXAMPLE).verify.get("embedding", EmbeddingConfig)
    assert cfg is not None
    return cfg
