"""The embeddings example and lockkit's application check.

The first tests run the example's real embed.py with real CPU torch, from a copy in
a clean folder with an empty environment; the failure paths are built from copies
of the committed files with numpy alone. (The ``[verify.embedding]`` table itself:
``tests/config/test_embedding.py``.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lockkit.config.checks.embedding import EmbeddingConfig, load_embedding_config
from lockkit.verify.checks.embedding.verdict import check_fingerprints, check_outputs, command
from tests.support.example import EXAMPLE, example_config, example_table

COMMITTED = ("embed.py", "lockkit.toml", "model", "data", "reference")



@pytest.fixture
def copy(tmp_path) -> Path:
    """The committed example files, and nothing else, in a clean folder."""
    root = tmp_path / "project"
    root.mkdir()
    for name in COMMITTED:
        source = EXAMPLE / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, root / name)
    return root


@pytest.fixture
def out(tmp_path) -> Path:
    """An output folder holding exactly the reference: the check passes on it."""
    folder = tmp_path / "out"
    folder.mkdir()
    shutil.copy2(EXAMPLE / "reference" / "embeddings.npy", folder / "embeddings.npy")
    shutil.copy2(EXAMPLE / "reference" / "ids.json", folder / "ids.json")
    return folder


def reference() -> tuple[np.ndarray, list[str]]:
    vectors = np.load(EXAMPLE / "reference" / "embeddings.npy", allow_pickle=False)
    return vectors, json.loads((EXAMPLE / "reference" / "ids.json").read_text())


def run_embed(python: Path, root: Path, out: Path) -> subprocess.CompletedProcess:
    """The configured command, from the project copy, with an empty environment."""
    cfg = example_config()
    env = {"SYSTEMROOT": os.environ["SYSTEMROOT"]} if os.name == "nt" else {}
    return subprocess.run(command(cfg, python, out, "cpu"), cwd=root, env=env,
                          capture_output=True, text=True, timeout=cfg.timeout, check=True)


# --- the real application, real torch --------------------------------------------------


def test_embed_in_a_clean_folder_matches_the_committed_reference(torch_venv, copy, tmp_path):
    out = tmp_path / "run"
    proc = run_embed(torch_venv, copy, out)
    assert proc.stdout.startswith("embedded 12 texts -> ")
    result = check_outputs(example_config(), copy, out)
    assert result.passed, result.first_error
    assert result.max_abs_diff is not None and result.max_abs_diff <= 1e-6
    assert result.min_cosine is not None and result.min_cosine >= 1 - 1e-6
    assert [c.name for c in result.checks] == [
        "files", "count", "ids", "dim", "dtype", "finite", "reference", "tolerance"]
    run = json.loads((out / "run.json").read_text())
    assert run["deterministic"] is True and run["threads"] == 1
    # issue 26: what decides the numbers on a GPU is recorded too (CPU torch has the flags)
    assert run["device"] == "cpu" and run["tf32"] == {"cuda.matmul": False, "cudnn": True}
    assert run["float32_matmul_precision"] == "highest"
    json.dumps(result.to_dict())  # the dossier can hold it


def test_embed_is_bitwise_repeatable(torch_venv, copy, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    run_embed(torch_venv, copy, first)
    run_embed(torch_venv, copy, second)
    assert (first / "embeddings.npy").read_bytes() == (second / "embeddings.npy").read_bytes()


def test_a_small_weight_change_is_outside_the_declared_tolerance(torch_venv, copy, tmp_path):
    """The tolerance must be able to fail: +1e-3 on one projection weight is caught."""
    path = copy / "model" / "weights.npz"
    with np.load(path, allow_pickle=False) as archive:
        weights = {name: archive[name] for name in archive.files}
    weights["projection"][0, 0] += 1e-3
    np.savez(path, **weights)
    cfg = example_config()
    failed = [c for c in check_fingerprints(cfg, copy) if not c.passed]
    assert [c.name for c in failed] == ["fingerprint model/weights.npz"]
    run_embed(torch_venv, copy, tmp_path / "run")
    result = check_outputs(cfg, copy, tmp_path / "run")
    assert not result.passed and result.checks[-1].name == "tolerance"
    assert result.max_abs_diff is not None and 1e-4 < result.max_abs_diff < 1e-2


# --- the committed example -----------------------------------------------------------


def test_committed_fingerprints_all_match():
    cfg = example_config()
    checks = check_fingerprints(cfg, EXAMPLE)
    assert checks and all(c.passed for c in checks), [c.detail for c in checks]
    assert {p for p, _ in cfg.fingerprints} >= {
        "embed.py", "model/weights.npz", "data/sample.jsonl",
        "reference/embeddings.npy", "reference/ids.json"}


def test_make_weights_regenerates_the_committed_weights(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLE / "make_weights.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    with np.load(tmp_path / "weights.npz") as new, \
            np.load(EXAMPLE / "model" / "weights.npz") as old:
        assert new.files == old.files
        for name in old.files:
            assert new[name].dtype == np.float32
            np.testing.assert_array_equal(new[name], old[name])


def test_the_reference_itself_passes(copy, out):
    result = check_outputs(example_config(), copy, out)
    assert result.passed and result.max_abs_diff == 0.0 and result.first_error is None


def test_command_substitutes_placeholders():
    argv = command(example_config(), Path("venv") / "bin" / "python", Path("o"), "cuda:0")
    assert argv == [str(Path("venv/bin/python")), "embed.py", "--out", "o", "--device",
                    "cuda:0"]


def test_no_embedding_table_means_no_check(tmp_path):
    assert load_embedding_config(tmp_path, {}) is None
    assert load_embedding_config(tmp_path, {"other": {}}) is None


# --- fingerprints ----------------------------------------------------------------------


def test_tampered_weights_fail_naming_the_file(copy):
    path = copy / "model" / "weights.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one weight
    path.write_bytes(bytes(data))
    checks = {c.name: c for c in check_fingerprints(example_config(), copy)}
    bad = checks["fingerprint model/weights.npz"]
    assert not bad.passed and "model/weights.npz" in bad.detail and "expected" in bad.detail
    assert all(c.passed for name, c in checks.items() if name != bad.name)


def test_missing_fingerprinted_file_fails(copy):
    (copy / "data" / "sample.jsonl").unlink()
    failed = [c for c in check_fingerprints(example_config(), copy) if not c.passed]
    assert len(failed) == 1 and "data/sample.jsonl: missing" in failed[0].detail


# --- the output checks, in their order ---------------------------------------------------


def save(out: Path, vectors: np.ndarray | None = None, ids: list[str] | None = None) -> None:
    ref, ref_ids = reference()
    np.save(out / "embeddings.npy", ref if vectors is None else vectors, allow_pickle=False)
    (out / "ids.json").write_text(json.dumps(ref_ids if ids is None else ids))


def with_nan(vectors: np.ndarray) -> np.ndarray:
    vectors = vectors.copy()
    vectors[3, 5] = np.nan
    vectors[8, 0] = np.inf
    return vectors


def swapped(ids: list[str]) -> list[str]:
    return ids[:2] + [ids[3], ids[2]] + ids[4:]


@pytest.mark.parametrize("case,name,words", [
    ("no-embeddings", "files", ["missing: output embeddings.npy"]),
    ("no-ids", "files", ["missing: output ids.json"]),
    ("pickled", "files", ["unreadable output embeddings.npy", "allow_pickle"]),
    ("fewer-vectors", "count", ["12 sample identifiers, 11 vectors, 12 output identifiers"]),
    ("fewer-ids", "count", ["12 sample identifiers, 12 vectors, 11 output identifiers"]),
    ("out-of-order", "ids", ["row 2: expected 'doc-03', got 'doc-04'"]),
    ("wrong-dim", "dim", ["expected [12, 16], got [12, 15]"]),
    ("3-d", "dim", ["expected [12, 16], got [12, 16, 1]"]),
    ("wrong-dtype", "dtype", ["expected float32, got float64"]),
    ("nan", "finite", ["2 non-finite values", "first in 'doc-04' (row 3)"]),
])
def test_output_failures_stop_at_the_first(copy, out, case, name, words):
    ref, ids = reference()
    if case == "no-embeddings":
        (out / "embeddings.npy").unlink()
    elif case == "no-ids":
        (out / "ids.json").unlink()
    elif case == "pickled":
        np.save(out / "embeddings.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    else:
        vectors, new_ids = {
            "fewer-vectors": (ref[:-1], None), "fewer-ids": (None, ids[:-1]),
            "out-of-order": (None, swapped(ids)), "wrong-dim": (ref[:, :15], None),
            "3-d": (ref[:, :, None], None), "wrong-dtype": (ref.astype(np.float64), None),
            "nan": (with_nan(ref), None)}[case]
        save(out, vectors, new_ids)
    result = check_outputs(example_config(), copy, out)
    assert not result.passed and result.checks[-1].name == name
    assert all(c.passed for c in result.checks[:-1])
    assert result.first_error is not None and result.first_error.startswith(name + ": ")
    for word in words:
        assert word in result.first_error
    assert result.max_abs_diff is None and result.worst_id is None


def test_structure_is_judged_before_values(copy, out):
    """Wrong dtype and NaN together: the report names the dtype and stops there."""
    ref, _ = reference()
    save(out, with_nan(ref).astype(np.float64))
    result = check_outputs(example_config(), copy, out)
    assert [c.name for c in result.checks][-1] == "dtype"
    assert "finite" not in [c.name for c in result.checks]


def test_outside_tolerance_names_the_worst_id_and_its_diff(copy, out):
    ref, ids = reference()
    moved = ref.copy()
    moved[6, 2] += 1e-3
    moved[9, 4] -= 2e-4
    save(out, moved)
    result = check_outputs(example_config(), copy, out)
    assert not result.passed and result.worst_id == "doc-07"
    assert result.max_abs_diff == pytest.approx(1e-3, rel=1e-3)
    assert "2 of 12 identifiers outside" in result.first_error
    assert "worst 'doc-07': max |diff| 1.000e-03" in result.first_error


def test_float32_rounding_noise_is_within_tolerance(copy, out):
    ref, _ = reference()
    save(out, ref + np.float32(2e-7) * np.sign(ref))
    result = check_outputs(example_config(), copy, out)
    assert result.passed, result.first_error
    assert 1e-7 < result.max_abs_diff < 1e-6


def test_cosine_only_criterion(copy, out):
    table = {k: v for k, v in example_table().items() if k not in ("atol", "rtol")}
    table["min-cosine"] = 0.999
    cfg = EmbeddingConfig.from_table(copy, table)
    ref, _ = reference()
    flipped = ref.copy()
    flipped[4] = -flipped[4]
    save(out, flipped)
    result = check_outputs(cfg, copy, out)
    assert not result.passed and result.worst_id == "doc-05"
    assert result.min_cosine == pytest.approx(-1.0)
    assert "allowed" not in result.first_error and "(min 0.999)" in result.first_error


def test_npz_output_with_key(copy, out):
    table = example_table() | {"embeddings": "result.npz", "key": "vectors"}
    cfg = EmbeddingConfig.from_table(copy, table)
    ref, _ = reference()
    np.savez(out / "result.npz", vectors=ref, other=ref[:1])
    assert check_outputs(cfg, copy, out).passed


def test_a_reference_that_does_not_belong_to_the_sample(copy, out):
    ids_path = copy / "reference" / "ids.json"
    ids_path.write_text(json.dumps(swapped(json.loads(ids_path.read_text()))))
    result = check_outputs(example_config(), copy, out)
    assert result.checks[-1].name == "reference"
    assert "reference does not match the sample: row 2" in result.first_error
