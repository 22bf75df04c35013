"""The wheelhouse's CycloneDX SBOM: schema-valid, complete, reproducible, no secrets.

The schema check is the library's own strict validator (cyclonedx-python-lib
``cyclonedx/validation/json.py``, ``JsonStrictValidator``, which loads the CycloneDX 1.6
JSON schema it ships and rejects unknown properties).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from packageurl import PackageURL

from lockkit import __version__
from lockkit._internal.compat import tomllib
from lockkit._internal.redact import NO_SECRETS
from lockkit.cli import main
from lockkit.errors import ConfigError
from lockkit.index.urls import expand, secrets_of
from lockkit.wheelhouse import sbom
from tests.support.project import OFFICIAL
from tests.support.pytorch_index import R2
from tests.support.wheelhouse import build_cli, build_lib, compiled, with_sdist

SHA = "ab" * 32


def valid(text: str) -> dict[str, Any]:
    """*text* checked against the CycloneDX 1.6 schema, as a dict."""
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    assert error is None, error
    return json.loads(text)


def lock_urls(lock: Path) -> dict[str, str]:
    """file name -> the lock's URL for it (wheels and sdists), read from the lock itself."""
    data = tomllib.loads(lock.read_text())
    urls = {w["name"]: w["url"] for p in data["packages"] for w in p.get("wheels", [])}
    urls.update({p["sdist"]["name"]: p["sdist"]["url"] for p in data["packages"]
                 if "sdist" in p})
    return urls


def by_path(bom: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {prop["value"]: c for c in bom["components"] for prop in c["properties"]
            if prop["name"] == "lockkit:path"}


def refs(component: dict[str, Any], kind: str) -> list[str]:
    return [r["url"] for r in component.get("externalReferences", []) if r["type"] == kind]


def test_validator_rejects_what_the_schema_forbids():
    """The check the other tests lean on can fail: an unknown component type is refused."""
    text = sbom.render([sbom.File(name="a", version="1", path="a-1-py3-none-any.whl",
                                  sha256=SHA, size=1, source_url="http://127.0.0.1/a.whl")],
                       platform="p", lock={}, lock_sha256=SHA, secrets=NO_SECRETS)
    bad = json.loads(text)
    bad["components"][0]["type"] = "wheel"
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(bad)) is not None


def test_build_writes_a_valid_sbom_of_every_wheel(project, indexes, tmp_path):
    lock = compiled(project, indexes)
    assert build_cli(project, tmp_path / "cache") == 0
    out = project / "wheelhouse" / "linux-cpu"
    text = (out / sbom.FILENAME).read_text()
    bom = valid(text)
    manifest = json.loads((out / "manifest.json").read_text())
    wheels = [f for f in manifest["files"] if f["kind"] == "wheel"]
    components = by_path(bom)
    assert sorted(components) == sorted(f["path"] for f in wheels)
    urls = lock_urls(lock)
    for f in wheels:
        c = components[f["path"]]
        assert c["hashes"] == [{"alg": "SHA-256", "content": f["sha256"]}]
        assert f["sha256"] == hashlib.sha256((out / f["path"]).read_bytes()).hexdigest()
        assert refs(c, "distribution") == [urls[f["path"]]]
        assert (c["name"], c["version"], c["type"]) == (f["package"], f["version"], "library")
        purl = PackageURL.from_string(c["purl"])
        assert (purl.type, purl.name, purl.version) == ("pypi", f["package"], f["version"])
        assert purl.qualifiers["file_name"] == f["path"]
    # the PyTorch index is named where the purl spec puts a non-default repository
    torch = PackageURL.from_string(components[next(p for p in components
                                                   if p.startswith("torch-"))]["purl"])
    assert torch.qualifiers["repository_url"] == f"{OFFICIAL}/cpu"
    numpy = next(c for c in bom["components"] if c["name"] == "numpy")
    assert "repository_url" not in PackageURL.from_string(numpy["purl"]).qualifiers
    meta = {p["name"]: p["value"] for p in bom["metadata"]["properties"]}
    assert meta == {"lockkit:platform": "linux-cpu",
                    "lockkit:lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest()}
    assert bom["metadata"]["tools"]["components"][0]["name"] == "lockkit"
    # the SBOM is a meta file of the manifest, with its hash
    (entry,) = [f for f in manifest["files"] if f["path"] == sbom.FILENAME]
    assert entry["kind"] == "meta"
    assert entry["sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_two_builds_on_different_caches_write_identical_bytes(project, indexes, tmp_path,
                                                              monkeypatch):
    lock = compiled(project, indexes)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    first = build_lib(project, tmp_path / "cache1", tmp_path / "a").folder / sbom.FILENAME
    second = build_lib(project, tmp_path / "cache2", tmp_path / "b").folder / sbom.FILENAME
    assert first.read_bytes() == second.read_bytes()
    bom = valid(first.read_text())
    assert "timestamp" not in bom["metadata"]  # no wall clock
    lock_sha = hashlib.sha256(lock.read_bytes()).hexdigest()
    assert bom["serialNumber"] == sbom.serial_number("linux-cpu", lock_sha).urn
    assert uuid.UUID(bom["serialNumber"]).version == 5

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    third = build_lib(project, tmp_path / "cache1", tmp_path / "c").folder / sbom.FILENAME
    dated = valid(third.read_text())
    assert dated["metadata"]["timestamp"] == "2023-11-14T22:13:20+00:00"
    assert dated["serialNumber"] == bom["serialNumber"]


def test_a_credentialed_mirror_never_reaches_the_sbom(project, indexes, tmp_path):
    lock = compiled(project, indexes)
    secret_mirror = f"{R2}=http://lockkit:s3cret-token@{indexes.pt.r2.split('://')[1]}"
    assert build_cli(project, tmp_path / "cache", "--mirror", secret_mirror) == 0
    text = (project / "wheelhouse" / "linux-cpu" / sbom.FILENAME).read_text()
    assert "s3cret" not in text
    (path, torch), = [(p, c) for p, c in by_path(valid(text)).items() if c["name"] == "torch"]
    (url,) = refs(torch, "distribution")
    assert url == lock_urls(lock)[path]
    assert url.startswith(f"{R2}/whl/cpu/")  # the lock's official URL, not the mirror's


def test_credentials_and_variable_values_are_dropped_from_urls(monkeypatch):
    monkeypatch.setenv("LOCKKIT_SBOM_TOKEN", "tok-s3cret-value")
    index = expand("https://${LOCKKIT_SBOM_TOKEN}@mirror.example/whl/cpu")  # as a fetch did
    files = [sbom.File(name="torch", version="2.5.1+cpu", path="torch-2.5.1+cpu-x.whl",
                       sha256=SHA, size=3, index=index,
                       source_url="https://user:pa55word@files.example/torch-2.5.1%2Bcpu-x.whl"),
             sbom.File(name="tool", version="1", path="tool-1-py3-none-any.whl", sha256=SHA,
                       size=3, source_url=expand("https://files.example/${LOCKKIT_SBOM_TOKEN}/t"
                                                 "/tool-1-py3-none-any.whl"))]
    lock = {"tool": {"lockkit": {"torch-index": index}}}
    secrets = secrets_of(["${LOCKKIT_SBOM_TOKEN}"])  # a project whose index-url names it
    text = sbom.render(files, platform="p", lock=lock, lock_sha256=SHA, secrets=secrets)
    assert "s3cret" not in text and "pa55word" not in text and "user" not in text
    components = by_path(valid(text))
    torch = components["torch-2.5.1+cpu-x.whl"]
    assert refs(torch, "distribution") == [
        "https://files.example/torch-2.5.1%2Bcpu-x.whl"]
    assert PackageURL.from_string(torch["purl"]).qualifiers["repository_url"] == (
        "https://mirror.example/whl/cpu")
    # the placeholder stays (percent-encoded, as the library writes braces in a URI)
    assert refs(components["tool-1-py3-none-any.whl"], "distribution") == [
        "https://files.example/$%7BLOCKKIT_SBOM_TOKEN%7D/t/tool-1-py3-none-any.whl"]


def test_a_wheel_built_from_an_sdist_names_its_sdist(project, indexes, tmp_path):
    with_sdist(project, indexes, "purepkg", "py3-none-any")
    lock = compiled(project, indexes)
    assert build_cli(project, tmp_path / "cache") == 0
    out = project / "wheelhouse" / "linux-cpu"
    bom = valid((out / sbom.FILENAME).read_text())
    built = by_path(bom)["purepkg-1.0-py3-none-any.whl"]
    wheel = out / "purepkg-1.0-py3-none-any.whl"
    assert built["hashes"][0]["content"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert refs(built, "distribution") == []  # no URL serves the wheel built here
    assert refs(built, "source-distribution") == [lock_urls(lock)["purepkg-1.0.tar.gz"]]
    (ancestor,) = built["pedigree"]["ancestors"]
    (entry,) = [p for p in tomllib.loads(lock.read_text())["packages"]
                if p["name"] == "purepkg"]
    assert ancestor["hashes"][0]["content"] == entry["sdist"]["hashes"]["sha256"]
    assert PackageURL.from_string(ancestor["purl"]).qualifiers == {
        "file_name": "purepkg-1.0.tar.gz"}


_FILES: list[tuple[str, str, Literal["wheel", "tool"]]] = [
    ("app", "", "wheel"), ("filelock", "", "wheel"), ("filelock", "tools/", "tool"),
    ("lockkit", "tools/", "tool")]


def test_tools_and_the_locks_dependencies():
    """tools/ files are components of their own (a wheel may also be a tool: distinct
    bom-refs); the lock's ``packages[].dependencies`` (PEP 751: tables naming a package)
    become the graph between the wheels; a wheel whose table has no such key, and every
    tool, is listed as unknown (a composition), never as an entry that says "none"."""
    files = [sbom.File(name=n, version="1", path=f"{d}{n}-1-py3-none-any.whl", sha256=SHA,
                       size=1, kind=k, source_url=f"http://127.0.0.1/{n}-1-py3-none-any.whl")
             for n, d, k in _FILES]
    lock = {"packages": [{"name": "App", "version": "1",
                          "dependencies": [{"name": "FileLock"}, {"name": "absent"}]}]}
    bom = valid(sbom.render(files, platform="p", lock=lock, lock_sha256=SHA,
                            secrets=NO_SECRETS))
    paths = by_path(bom)
    assert sorted(paths) == sorted(f.path for f in files)
    assert paths["tools/filelock-1-py3-none-any.whl"]["bom-ref"] != (
        paths["filelock-1-py3-none-any.whl"]["bom-ref"])
    kinds = {p: {x["name"]: x["value"] for x in c["properties"]}["lockkit:kind"]
             for p, c in paths.items()}
    assert kinds["tools/lockkit-1-py3-none-any.whl"] == "tool"
    graph = {d["ref"]: d.get("dependsOn", []) for d in bom["dependencies"]}
    assert graph == {"app-1-py3-none-any.whl": ["filelock-1-py3-none-any.whl"]}
    assert bom["compositions"] == [{"aggregate": "unknown", "dependencies": [
        "filelock-1-py3-none-any.whl", "tools/filelock-1-py3-none-any.whl",
        "tools/lockkit-1-py3-none-any.whl"]}]


def test_a_lock_without_a_graph_writes_no_dependencies_array():
    """uv's locks carry no ``packages[].dependencies``: no entry may claim "no
    dependencies", so the array is left out and every component is unknown; a key the
    lock has, even empty, is written as it says."""
    files = [sbom.File(name=n, version="1", path=f"{n}-1-py3-none-any.whl", sha256=SHA,
                       size=1, source_url="") for n in ("a", "b")]
    bom = valid(sbom.render(files, platform="p", lock={"packages": [{"name": "a"}]},
                            lock_sha256=SHA, secrets=NO_SECRETS))
    assert "dependencies" not in bom
    assert bom["compositions"] == [{"aggregate": "unknown", "dependencies": [
        "a-1-py3-none-any.whl", "b-1-py3-none-any.whl"]}]
    empty = valid(sbom.render(files, platform="p", lock={"packages": [
        {"name": "a", "dependencies": []}]}, lock_sha256=SHA, secrets=NO_SECRETS))
    assert empty["dependencies"] == [{"ref": "a-1-py3-none-any.whl"}]
    assert empty["compositions"][0]["dependencies"] == ["b-1-py3-none-any.whl"]


_RENDER = """
import sys
from lockkit._internal.redact import NO_SECRETS
from lockkit.wheelhouse import sbom
files = [sbom.File(name=f"p{i}", version="1", path=f"p{i}-1-py3-none-any.whl",
                   sha256=f"{i:064x}", size=i, source_url=f"http://127.0.0.1/p{i}.whl",
                   built_from={"sdist": f"p{i}-1.tar.gz", "sha256": "ab" * 32} if i % 5 else None)
         for i in range(40)]
lock = {"packages": [{"name": f"p{i}", "dependencies": [{"name": f"p{j}"} for j in range(i)]}
                     for i in range(40)]}
order = files[::-1] if sys.argv[1:] == ["reversed"] else files
sys.stdout.write(sbom.render(order, platform="p", lock=lock, lock_sha256="cd" * 32,
                             secrets=NO_SECRETS))
"""


def test_the_bytes_do_not_depend_on_hash_seed_or_order():
    """The sets of dependencies must not leak Python's per-process hash seed."""
    texts = {subprocess.run([sys.executable, "-c", _RENDER, order], capture_output=True,
                            text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": seed}).stdout
             for seed, order in (("1", "reversed"), ("2", "given"), ("3", "given"))}
    (text,) = texts
    assert len(valid(text)["components"]) == 40


def test_a_bad_source_date_epoch_is_a_config_error(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(ConfigError, match="SOURCE_DATE_EPOCH"):
        sbom.render([], platform="p", lock={}, lock_sha256=SHA, secrets=NO_SECRETS)


def test_the_library_is_imported_only_to_write():
    code = ("import sys, lockkit.wheelhouse.sbom, lockkit.wheelhouse.build; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'cyclonedx', 'packageurl', 'jsonschema'}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == "[]"


def test_serial_number_follows_the_lock_platform_and_version():
    base = sbom.serial_number("linux-cpu", SHA)
    assert base == sbom.serial_number("linux-cpu", SHA)
    assert base != sbom.serial_number("linux-cuda", SHA)
    assert base != sbom.serial_number("linux-cpu", "cd" * 32)
    assert base == uuid.uuid5(sbom._NAMESPACE, f"linux-cpu\n{SHA}\n{__version__}")


# --- lockkit wheelhouse sbom: an existing folder --------------------------------------------

def test_sbom_command_rewrites_an_older_folder_as_a_build_would(project, indexes, tmp_path,
                                                                capsys):
    compiled(project, indexes)
    assert build_cli(project, tmp_path / "cache") == 0
    out = project / "wheelhouse" / "linux-cpu"
    fresh_sbom, fresh_manifest = (out / sbom.FILENAME).read_bytes(), (
        out / "manifest.json").read_bytes()
    # a folder built before the SBOM existed: no file, no manifest entry
    (out / sbom.FILENAME).unlink()
    manifest = json.loads(fresh_manifest)
    manifest["files"] = [f for f in manifest["files"] if f["path"] != sbom.FILENAME]
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    capsys.readouterr()

    assert main(["wheelhouse", "sbom", "--platform", "linux-cpu", "--project",
                 str(project)]) == 0
    assert capsys.readouterr().out.strip() == str(out / sbom.FILENAME)
    assert (out / sbom.FILENAME).read_bytes() == fresh_sbom
    assert (out / "manifest.json").read_bytes() == fresh_manifest
    assert main(["wheelhouse", "pack", "--platform", "linux-cpu", "--project",
                 str(project), "-o", str(tmp_path / "w.tar")]) == 0  # the folder is consistent


def test_sbom_command_writes_elsewhere_and_refuses_another_lock(project, indexes, tmp_path,
                                                                capsys):
    lock = compiled(project, indexes)
    assert build_cli(project, tmp_path / "cache") == 0
    out = project / "wheelhouse" / "linux-cpu"
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    copy = tmp_path / "review" / "linux-cpu.cdx.json"
    assert main(["wheelhouse", "sbom", "--platform", "linux-cpu", "--project", str(project),
                 "-o", str(copy)]) == 0
    assert copy.read_bytes() == before[out / sbom.FILENAME]
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before

    other = tmp_path / "other.toml"
    other.write_bytes(lock.read_bytes() + b"# edited\n")
    capsys.readouterr()
    assert main(["wheelhouse", "sbom", "--platform", "linux-cpu", "--project", str(project),
                 "--lock", str(other)]) == 2
    err = capsys.readouterr().err
    assert f"{other}: not the lock" in err and "Traceback" not in err
    assert main(["wheelhouse", "sbom", "--platform", "linux-cuda", "--project",
                 str(project)]) == 2
    assert "no wheelhouse folder" in capsys.readouterr().err
