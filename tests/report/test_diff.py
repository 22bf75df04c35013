"""`lockkit diff` on dossiers of real verify runs that differ in one layer each."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from lockkit.cli import main
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer
from tests.support.project import hello_project, lockkit
from tests.support.pytorch_index import PyTorchIndex


def run_verify(project: Path, *extra: str) -> Path:
    """Verify offline; return the report folder (whatever the outcome)."""
    reports = project / "report"
    lockkit("verify", "--project", str(project), "--report-dir", str(reports),
            "--platform", "linux-cpu", *extra, network=False)
    assert (reports / "dossier.json").is_file()
    return reports


def diff(a: Path, b: Path) -> tuple[int, dict]:
    run = lockkit("diff", str(a), str(b), "--json")
    return run.returncode, json.loads(run.stdout)


def nudge_weights(project: Path, delta: float) -> None:
    """Change one projection weight by *delta* and record the new fingerprint."""
    path = project / "model" / "weights.npz"
    arrays = dict(np.load(path))
    arrays["projection"][0, 0] += delta
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, value in arrays.items():
            member = io.BytesIO()
            np.save(member, value)
            zf.writestr(zipfile.ZipInfo(f"{name}.npy", (1980, 1, 1, 0, 0, 0)), member.getvalue())
    path.unlink()  # a new file, not a write into whatever the old name pointed at
    path.write_bytes(buf.getvalue())
    toml = project / "lockkit.toml"
    text = toml.read_text()
    old = next(line for line in text.splitlines() if line.startswith('"model/weights.npz"'))
    toml.write_text(text.replace(
        old, f'"model/weights.npz" = "{hashlib.sha256(path.read_bytes()).hexdigest()}"'))


@pytest.fixture(scope="module")
def baseline(example, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("baseline") / "embeddings"
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns(".lockkit"))
    return run_verify(dest)


def test_same_run_twice_has_no_difference(baseline, copy_of):
    code, out = diff(baseline, run_verify(copy_of()))
    assert code == 0 and out["differences"] == [], out["differences"]
    assert out["layers_compared"] == ["code", "data", "packages", "system", "result"]


def test_changed_weights_within_tolerance_is_the_data_layer_only(baseline, copy_of):
    project = copy_of()
    nudge_weights(project, 1e-7)
    code, out = diff(baseline, run_verify(project))
    assert code == 1 and out["layers_differing"] == ["data"]
    assert [d["key"] for d in out["differences"]] == ["model/weights.npz"]
    assert out["info"]["b"]["max_abs_diff"] > 0  # shown, not counted


def test_weights_beyond_tolerance_change_the_outcome(baseline, copy_of):
    project = copy_of()
    nudge_weights(project, 1e-2)
    code, out = diff(baseline, run_verify(project))
    assert code == 1 and out["layers_differing"] == ["data", "result"]
    result = {d["key"]: (d["a"], d["b"]) for d in out["differences"] if d["layer"] == "result"}
    assert result["result"] == ("passed", "failed")
    assert result["step.application"] == ("passed", "failed")
    assert any(k.startswith("application.") and v == ("passed", "failed")
               for k, v in result.items() if k != "step.application")


def test_declared_variant_is_apart_and_exits_zero(baseline, copy_of, capsys):
    project = copy_of()
    variant = run_verify(project, "--installer", "pip", "--variant", "plain-pip",
                         "--reason", "the documented pip procedure", "--changes", "code")
    code, out = diff(baseline, variant)
    assert code == 0 and out["layers_differing"] == ["code"], out["differences"]
    assert [(d["key"], d["declared"]) for d in out["differences"]] == \
        [("option.installer", True)]
    assert out["variants"][0]["reason"] == "the documented pip procedure"
    text = lockkit("diff", str(baseline), str(variant)).stdout
    assert text.splitlines()[0] == "differs in: code (declared by variant: code)"


def _fake_cpu_runs(tmp_path: Path, *builds: tuple[str, str]) -> list[Path]:
    """Linux-cpu projects with a fake torch build and a filelock version each, resolved
    one after the other against the same loopback indexes; returns their report folders."""
    reports = []
    server = IndexServer(tmp_path / "index")
    default = server.index("/simple")
    with server:
        for i, (torch_version, filelock) in enumerate(builds):
            shutil.rmtree(default.root)
            default.root.mkdir()
            default.add("filelock", filelock)
            pt = PyTorchIndex(tmp_path / f"pytorch{i}")  # one torch build per replica
            pt.put("cpu", build_fake_torch(tmp_path / f"built{i}", version=torch_version,
                                           cuda=None))
            root = tmp_path / f"proj{i}"
            root.mkdir()
            (root / "requirements.in").write_text("torch==2.5.1\nfilelock\n")
            mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())
            (root / "lockkit.toml").write_text(
                f'index-url = "{server.url}/simple"\n[mirrors]\n{mirrors}')
            with pt:
                assert main(["compile", "--project", str(root)]) == 0
                assert main(["wheelhouse", "build", "--project", str(root), "--platform",
                             "linux-cpu", "--cache-dir", str(tmp_path / "cache")]) == 0
            reports.append(run_verify(root))
    return reports


@pytest.mark.parametrize("b_torch,b_filelock,keys", [
    ("2.5.1+cpu", "3.16.2", {"filelock.version", "filelock.sha256"}),
    ("2.5.1", "3.16.1", {"torch.version", "torch.sha256"}),  # only the local label differs
])
@pytest.mark.slow
def test_package_changes_are_the_packages_layer_only(tmp_path, b_torch, b_filelock, keys):
    a, b = _fake_cpu_runs(tmp_path, ("2.5.1+cpu", "3.16.1"), (b_torch, b_filelock))
    code, out = diff(a, b)
    assert code == 1 and out["layers_differing"] == ["packages"]
    assert {d["key"] for d in out["differences"]} == keys


def test_locks_and_manifests_compare_their_packages(example, tmp_path):
    lock = example / "locks" / "pylock.linux-cpu.toml"
    changed = tmp_path / "pylock.linux-cpu.toml"
    changed.write_text(lock.read_text().replace('version = "2.13.0+cpu"', 'version = "2.13.0"'))
    code, out = diff(lock, changed)
    assert code == 1 and [d["key"] for d in out["differences"]] == ["torch.version"]
    manifest = example / "wheelhouse" / "linux-cpu"
    code, out = diff(manifest, manifest / "manifest.json")
    assert code == 0 and out["kinds"] == ["manifest", "manifest"]


@pytest.mark.parametrize("content,words", [
    (None, "no such file"),
    ("{not json", "not valid JSON"),
    ('{"hello": 1}', "neither a lockkit dossier nor a wheelhouse manifest"),
    ("[1, 2]", "expected a JSON object"),
])
def test_unreadable_input_exits_2_naming_the_file(tmp_path, capsys, content, words):
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    good = tmp_path / "good.json"
    good.write_text('{"kind": "diagnose", "steps": []}')
    assert main(["diff", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and words in err


@pytest.mark.parametrize("name,content,words", [
    ("bad.toml", 'lock-version = "1.0"\npackages = [[1]]\n',
     "packages[0]: not a PEP 751 package table"),
    ("bad.toml", 'lock-version = "1.0"\npackages = 3\n', "packages: not an array of tables"),
    ("bad.toml", 'lock-version = "1.0"\npackages = []\ntool = {lockkit = 1}\n',
     "tool.lockkit: not a table"),
    ("bad.json", '{"files": [1], "lock_sha256": "x"}', "files: not a list of file entries"),
    ("bad.toml", 'lock-version = "1.0"\n[[packages]]\nname = 5\n',
     "packages[0]: not a PEP 751 package table"),
    ("bad.json", '{"files": [{"kind": "wheel", "package": 5, "sha256": "x"}], '
                 '"lock_sha256": "x"}', "files: not a list of file entries"),
])
def test_a_lock_or_manifest_of_the_wrong_shape_exits_2_naming_the_key(tmp_path, capsys, name,
                                                                      content, words):
    bad = tmp_path / name
    bad.write_text(content)
    assert main(["diff", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and words in err and "Traceback" not in err


def test_dossiers_of_runs_without_an_application_print_no_none_rows(tmp_path, indexes, capsys):
    """Two runs that stopped before the application step (no torch here) have no embedding
    numbers: the diff says nothing of them, never ``None (None)``."""
    root = hello_project(tmp_path / "proj", indexes, tmp_path / "cache")
    for name in ("a", "b"):
        main(["verify", "--project", str(root), "--platform", "linux-cpu", "--report-dir",
              str(tmp_path / name)])
    capsys.readouterr()
    main(["diff", str(tmp_path / "a" / "dossier.json"), str(tmp_path / "b" / "dossier.json")])
    out = capsys.readouterr().out
    assert out.startswith(("no differences", "differs in")) and "None" not in out, out
