"""The ``[verify.embedding]`` table (:mod:`lockkit.config.checks.embedding`), read from the
bundled example: every missing or bad key named by its key path, all errors collected,
a suggestion for a misspelt key, and a round trip through ``to_dict``."""

from __future__ import annotations

import pytest

from lockkit.config.checks.embedding import EmbeddingConfig, load_embedding_config
from lockkit.errors import ConfigError
from tests.support.example import EXAMPLE, example_config, example_table

# --- configuration errors name the key ---------------------------------------------------


REQUIRED = ("command", "embeddings", "ids", "sample", "reference", "reference-ids", "dtype",
            "dim", "reason", "fingerprints")


@pytest.mark.parametrize("key", REQUIRED)
def test_missing_key_is_named(key):
    table = {k: v for k, v in example_table().items() if k != key}
    with pytest.raises(ConfigError, match=rf"lockkit.toml: verify.embedding.{key}: missing"):
        EmbeddingConfig.from_table(EXAMPLE, table)


@pytest.mark.parametrize("key,value,words", [
    ("dim", "16", "expected an integer"),
    ("dim", 0, "expected an integer"),
    ("dim", True, "expected an integer"),
    ("atol", -1e-5, "expected a number"),
    ("rtol", "1e-4", "expected a number"),
    ("min-cosine", 1.5, "expected a number"),
    ("timeout", 0, "expected a number"),
    ("dtype", "int8", "expected one of float16, float32, float64"),
    ("reason", "", "expected a non-empty string"),
    ("command", "python embed.py", "expected a non-empty list of strings"),
    ("command", ["{python}", "embed.py"], "no {out} placeholder"),
    ("command", ["{pyton}", "embed.py", "{out}"], "unknown placeholder {pyton}"),
    ("command", ["{python}", "embed.py", "{out"], "malformed placeholder"),
    ("sample", "/abs/sample.jsonl", "expected a relative path inside the project"),
    ("reference", "../elsewhere.npy", "expected a relative path inside the project"),
    ("embeddings", "../e.npy", "expected a relative path inside the output folder"),
    ("fingerprints", {}, "expected a table"),
])
def test_bad_value_is_named(key, value, words):
    with pytest.raises(ConfigError) as err:
        EmbeddingConfig.from_table(EXAMPLE, example_table() | {key: value})
    assert f"lockkit.toml: verify.embedding.{key}: " in str(err.value)
    assert words in str(err.value)


def test_unknown_key_gets_a_suggestion():
    table = example_table() | {"min-cosin": 0.99}
    with pytest.raises(ConfigError, match=r"verify.embedding.min-cosin: unknown key "
                                          r"\(did you mean 'min-cosine'\?\)"):
        EmbeddingConfig.from_table(EXAMPLE, table)


def test_bad_fingerprints_are_named():
    fingerprints = dict(example_table()["fingerprints"])
    fingerprints["model/weights.npz"] = "abc"
    del fingerprints["reference/ids.json"]
    with pytest.raises(ConfigError) as err:
        EmbeddingConfig.from_table(EXAMPLE, example_table() | {"fingerprints": fingerprints})
    message = str(err.value)
    assert 'verify.embedding.fingerprints."model/weights.npz": expected 64 hex' in message
    assert "verify.embedding.fingerprints: no entry for 'reference/ids.json'" in message


def test_tolerance_must_be_declared():
    table = {k: v for k, v in example_table().items() if k not in ("atol", "rtol", "min-cosine")}
    with pytest.raises(ConfigError, match="verify.embedding.atol: no criterion"):
        EmbeddingConfig.from_table(EXAMPLE, table)
    with pytest.raises(ConfigError, match="verify.embedding.rtol: required with atol"):
        EmbeddingConfig.from_table(EXAMPLE, {k: v for k, v in example_table().items()
                                             if k != "rtol"})


def test_all_errors_are_collected():
    table = example_table() | {"dim": "x", "dtype": "int8", "bogus": 1}
    with pytest.raises(ConfigError) as err:
        EmbeddingConfig.from_table(EXAMPLE, table)
    for key in ("dim", "dtype", "bogus"):
        assert f"verify.embedding.{key}: " in str(err.value)


def test_embedding_must_be_a_table():
    with pytest.raises(ConfigError, match="verify.embedding: expected a table"):
        load_embedding_config(EXAMPLE, {"embedding": "yes"})


def test_config_round_trips_through_to_dict():
    cfg = example_config()
    assert EmbeddingConfig.from_table(EXAMPLE, cfg.to_dict()) == cfg
    assert cfg.to_dict()["fingerprints"] == example_table()["fingerprints"]
