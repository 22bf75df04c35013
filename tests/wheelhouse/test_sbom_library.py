"""The SBOM lockkit writes with ``json`` is the document cyclonedx-python-lib renders for the
same files: the library, a test dependency only, is the reference implementation.

:func:`library_bom` builds the library's model of a wheelhouse (a component per file, the
lock's URL as an external reference, an sdist as the pedigree ancestor, lockkit as the
tool, the lock's dependencies registered between the wheels) and its own JSON outputter
writes it; each test holds lockkit's text equal to that, key for key after ``json.loads``,
and valid under the library's strict CycloneDX 1.6 validator. A cold ``wheelhouse build``
process never imports the library.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest
from cyclonedx.model import (
    ExternalReference,
    ExternalReferenceType,
    HashAlgorithm,
    HashType,
    Property,
    XsUri,
)
from cyclonedx.model.bom import Bom, BomMetaData
from cyclonedx.model.component import Component, ComponentType, Pedigree
from cyclonedx.model.tool import ToolRepository
from cyclonedx.output.json import JsonV1Dot6
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from packageurl import PackageURL
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lockkit import __version__
from lockkit._internal.compat import tomllib
from lockkit._internal.redact import NO_SECRETS, Secrets, masked, strip_credentials
from lockkit.index.urls import expand, secrets_of
from lockkit.wheelhouse import sbom
from tests.support.project import OFFICIAL
from tests.support.pytorch_index import R2
from tests.support.wheelhouse import build_cli, compiled, with_sdist

SHA, SDIST_SHA = "ab" * 32, "cd" * 32


def published(url: str) -> str:
    """A URL as the SBOM may show it: no user info at all."""
    return strip_credentials(masked(url))


def library_bom(files: Sequence[sbom.File], *, platform: str, lock: Mapping[str, Any],
                lock_sha256: str, secrets: Secrets) -> dict[str, Any]:
    """What cyclonedx-python-lib writes for *files*: lockkit's model, the library's JSON
    (the timestamp only from ``SOURCE_DATE_EPOCH``, where the library takes the clock)."""
    torch_index = lock.get("tool", {}).get("lockkit", {}).get("torch-index")
    torch_index = torch_index and secrets.conceal(torch_index)
    shown = sorted((replace(f, source_url=secrets.conceal(f.source_url),
                            index=f.index and secrets.conceal(f.index)) for f in files),
                   key=lambda f: f.path)  # a lock's name given twice: the last path's wheel
    components = [_component(f, torch_index) for f in shown]
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    epoch = datetime.fromtimestamp(int(raw), tz=timezone.utc) if raw else None
    tool = Component(type=ComponentType.APPLICATION, name="lockkit", version=__version__,
                     bom_ref=f"lockkit@{__version__}")
    metadata = BomMetaData(tools=ToolRepository(components=[tool]), timestamp=epoch,
                           properties=[Property(name="lockkit:platform", value=platform),
                                       Property(name="lockkit:lock_sha256", value=lock_sha256)])
    bom = Bom(serial_number=sbom.serial_number(platform, lock_sha256), metadata=metadata,
              components=components)
    wheels = {canonicalize_name(c.name): c for f, c in zip(shown, components, strict=True)
              if f.kind == "wheel"}
    for package in lock.get("packages", []):
        needs = [wheels[canonicalize_name(d["name"])] for d in package.get("dependencies", [])
                 if canonicalize_name(d["name"]) in wheels]
        if canonicalize_name(package["name"]) in wheels and needs:
            bom.register_dependency(wheels[canonicalize_name(package["name"])], needs)
    data = json.loads(JsonV1Dot6(bom).output_as_string())
    if epoch is None:
        del data["metadata"]["timestamp"]
    return _unknown_graph_said(data, {wheels[n].bom_ref.value for p in lock.get("packages", [])
                                      if "dependencies" in p
                                      and (n := canonicalize_name(p["name"])) in wheels})


def _unknown_graph_said(data: dict[str, Any], known: set[str | None]) -> dict[str, Any]:
    """The library's document with CycloneDX 1.6's rule for an unknown graph: the library
    writes every component as an empty ``dependencies`` element (``Bom.validate``), which
    reads as "no dependencies"; only the *known* components' entries stay, and the others
    are listed in an ``unknown`` composition (the library has no model of compositions)."""
    graph = [d for d in data.pop("dependencies", []) if d["ref"] in known]
    unknown = sorted(c["bom-ref"] for c in data.get("components", [])
                     if c["bom-ref"] not in known)
    if graph:
        data["dependencies"] = graph
    if unknown:
        data["compositions"] = [{"aggregate": "unknown", "dependencies": unknown}]
    return data


def _component(f: sbom.File, torch_index: str | None) -> Component:
    repository = published(f.index) if f.index and torch_index and (
        f.index.rstrip("/") == torch_index.rstrip("/")) else None
    refs = []
    if f.source_url:
        refs.append(ExternalReference(
            type=ExternalReferenceType.SOURCE_DISTRIBUTION if f.built_from
            else ExternalReferenceType.DISTRIBUTION, url=XsUri(published(f.source_url)),
            hashes=[_sha(f.built_from["sha256"] if f.built_from else f.sha256)]))
    pedigree = None
    if f.built_from:
        pedigree = Pedigree(ancestors=[Component(
            type=ComponentType.LIBRARY, name=f.name, version=f.version,
            purl=_purl(f, f.built_from["sdist"], repository),
            bom_ref=f"{f.path} built from {f.built_from['sdist']}",
            hashes=[_sha(f.built_from["sha256"])])])
    return Component(
        type=ComponentType.LIBRARY, name=f.name, version=f.version, bom_ref=f.path,
        purl=_purl(f, f.filename, repository), hashes=[_sha(f.sha256)],
        external_references=refs, pedigree=pedigree,
        properties=[Property(name="lockkit:path", value=f.path),
                    Property(name="lockkit:kind", value=f.kind),
                    Property(name="lockkit:size", value=str(f.size))])


def _sha(hexdigest: str) -> HashType:
    return HashType(alg=HashAlgorithm.SHA_256, content=hexdigest)


def _purl(f: sbom.File, filename: str, repository: str | None) -> PackageURL:
    qualifiers = {"file_name": filename} | ({"repository_url": repository} if repository
                                            else {})
    return PackageURL(type="pypi", name=f.name.lower().replace("_", "-"), version=f.version,
                      qualifiers=qualifiers)


def same_as_the_library(text: str, files: Sequence[sbom.File], **facts: Any) -> dict[str, Any]:
    """*text* (lockkit's SBOM of *files*): valid CycloneDX 1.6, written as lockkit writes
    JSON, and equal to the library's document; the document."""
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    assert error is None, error
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert doc == library_bom(files, **facts)
    return doc


def test_a_built_wheelhouse_is_the_librarys_document(project, indexes, tmp_path,
                                                     monkeypatch):
    """A real build: wheels of the default index, the PyTorch index's torch (its purl
    names the index), a wheel built from an sdist (its pedigree), fetched through a
    mirror whose URL holds credentials (the lock's official URLs are written)."""
    with_sdist(project, indexes, "purepkg", "py3-none-any")
    lock = compiled(project, indexes)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    mirror = f"{R2}=http://lockkit:s3cret-token@{indexes.pt.r2.split('://')[1]}"
    assert build_cli(project, tmp_path / "cache", "--mirror", mirror) == 0
    out = project / "wheelhouse" / "linux-cpu"
    text = (out / sbom.FILENAME).read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    data = tomllib.loads(lock.read_text())
    files = sbom.files_of_manifest(manifest, data, out / "manifest.json")
    doc = same_as_the_library(text, files, platform="linux-cpu", lock=data,
                              lock_sha256=manifest["lock_sha256"], secrets=NO_SECRETS)
    assert "s3cret" not in text
    kinds = {c["name"]: c for c in doc["components"]}
    assert "pedigree" in kinds["purepkg"]
    assert f"repository_url={OFFICIAL}/cpu" in kinds["torch"]["purl"]
    assert "repository_url" not in kinds["filelock"]["purl"]  # the default index


_TOOLS: list[tuple[str, str, Literal["wheel", "tool"]]] = [
    ("App", "", "wheel"), ("file_lock", "", "wheel"), ("zeta", "", "wheel"),
    ("file_lock", "tools/", "tool"), ("lockkit", "tools/", "tool")]


@pytest.mark.parametrize("epoch", [None, "1700000000"])
def test_tools_credentials_and_dependencies_are_the_librarys(monkeypatch, epoch):
    """Tool wheels beside a wheel of the same package; user info and a ``${VAR}``'s value
    in URLs (user info dropped, the value concealed, the characters a URI cannot hold
    encoded as the library encodes them); a wheel built from an sdist of the PyTorch
    index; the lock's dependencies, named in any case and spelling."""
    if epoch is None:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    else:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    monkeypatch.setenv("LOCKKIT_SBOM_TOKEN", "tok-s3cret-value")
    index = expand("https://${LOCKKIT_SBOM_TOKEN}@127.0.0.1:9/whl/cpu")
    files = [sbom.File(name=n, version="1", path=f"{d}{n}-1-py3-none-any.whl", sha256=SHA,
                       size=7, kind=k, source_url=f"http://127.0.0.1:9/{n}-1-py3-none-any.whl")
             for n, d, k in _TOOLS]
    files += [
        sbom.File(name="torch", version="2.5.1+cpu", path="torch-2.5.1+cpu-x.whl", sha256=SHA,
                  size=3, index=index,
                  source_url="http://user:pa55word@127.0.0.1:9/torch-2.5.1%2Bcpu-x.whl"),
        sbom.File(name="Odd.Name", version="1.0", path="Odd.Name-1.0-py3-none-any.whl",
                  sha256=SHA, size=3, index=index + "/",
                  source_url=expand("http://127.0.0.1:9/${LOCKKIT_SBOM_TOKEN}/a b/{x}"
                                    "/[odd].name-1.0.tar.gz?q='1'&é=<2>#frag"),
                  built_from={"sdist": "odd.name-1.0.tar.gz", "sha256": SDIST_SHA})]
    lock = {"tool": {"lockkit": {"torch-index": index}},
            "packages": [{"name": "app", "dependencies": [
                {"name": "File-Lock"}, {"name": "absent"}, {"name": "ZETA"}, {"name": "app"}]},
                {"name": "zeta", "dependencies": [{"name": "odd-name"}, {"name": "torch"}]},
                {"name": "odd-name"}, {"name": "lockkit", "dependencies": [{"name": "app"}]}]}
    secrets = secrets_of(["${LOCKKIT_SBOM_TOKEN}"])
    facts: dict[str, Any] = {"platform": "linux-cpu", "lock": lock, "lock_sha256": SHA,
                             "secrets": secrets}
    text = sbom.render(files, **facts)
    doc = same_as_the_library(text, files, **facts)
    assert "s3cret" not in text and "pa55word" not in text and "user" not in text
    graph = {d["ref"]: d.get("dependsOn", []) for d in doc["dependencies"]}
    assert graph["App-1-py3-none-any.whl"] == [
        "App-1-py3-none-any.whl", "file_lock-1-py3-none-any.whl", "zeta-1-py3-none-any.whl"]
    unknown = doc["compositions"][0]["dependencies"]  # a tool is no lock package
    assert "tools/lockkit-1-py3-none-any.whl" in unknown and "torch-2.5.1+cpu-x.whl" in unknown
    assert "tools/lockkit-1-py3-none-any.whl" not in graph
    if epoch:
        assert doc["metadata"]["timestamp"] == datetime.fromtimestamp(
            int(epoch), tz=timezone.utc).isoformat()


def test_no_files_is_the_librarys_document_too(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    facts: dict[str, Any] = {"platform": "p", "lock": {}, "lock_sha256": SHA,
                             "secrets": NO_SECRETS}
    doc = same_as_the_library(sbom.render([], **facts), [], **facts)
    assert "components" not in doc and "dependencies" not in doc and "compositions" not in doc


def test_a_url_the_library_refuses_is_written_as_a_valid_uri():
    """A ``%`` that starts no escape and a second ``#`` (the library raised on them):
    percent-encoded, the document valid."""
    text = one_file_sbom("http://127.0.0.1:9/a%zz/100%/b-1.whl#x#y")
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    assert error is None, error
    assert url_of(text) == "http://127.0.0.1:9/a%25zz/100%25/b-1.whl#x%23y"


@pytest.mark.parametrize(("url", "written"), [
    ("http://[::1]:9/[b]/b-1.whl?q=[1]", "http://[::1]:9/%5Bb%5D/b-1.whl?q=%5B1%5D"),
    ("http://u:p@[::1]/b-1.whl", "http://[::1]/b-1.whl")])
def test_an_ipv6_host_keeps_its_brackets(url, written):
    """The library writes ``http://%5B::1%5D/...``, which names no host; brackets outside
    the host are encoded as it encodes them. (The validator's IRI check, rfc3987-syntax
    1.1, refuses every IPv6 literal, bracketed or not, so no document here validates.)"""
    assert url_of(one_file_sbom(url)) == written
    assert urlsplit(written).hostname == "::1"


def one_file_sbom(url: str) -> str:
    return sbom.render([sbom.File(name="b", version="1", path="b-1-py3-none-any.whl",
                                  sha256=SHA, size=1, source_url=url)],
                       platform="p", lock={}, lock_sha256=SHA, secrets=NO_SECRETS)


def url_of(text: str) -> str:
    (ref,) = json.loads(text)["components"][0]["externalReferences"]
    return str(ref["url"])


def test_a_cold_build_never_imports_the_library(project, indexes, tmp_path):
    """A whole ``wheelhouse build`` process on an empty cache: the SBOM is written, and
    neither cyclonedx-python-lib nor one of its own dependencies is imported."""
    compiled(project, indexes)
    argv = [sys.executable, "-X", "importtime", "-m", "lockkit", "wheelhouse", "build",
            "--project", str(project), "--platform", "linux-cpu", "--cache-dir",
            str(tmp_path / "cache"), "--no-tools"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (project / "wheelhouse" / "linux-cpu" / sbom.FILENAME).is_file()
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert {"lockkit.wheelhouse.sbom", "packageurl"} <= imported  # the list is the build's
    roots = {name.split(".")[0] for name in imported}
    for heavy in ("cyclonedx", "py_serializable", "serializable", "sortedcontainers",
                  "license_expression", "boolean", "jsonschema", "lxml"):
        assert heavy not in roots, heavy


def test_the_shipped_runtime_dependencies_leave_the_library_out():
    """pyproject.toml: cyclonedx-python-lib is a test dependency, packageurl-python a
    runtime one (sbom.py imports it when it writes)."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    runtime = {canonicalize_name(Requirement(r).name)
               for r in pyproject["project"]["dependencies"]}
    assert "packageurl-python" in runtime and "cyclonedx-python-lib" not in runtime
    test = [Requirement(r) for r in pyproject["project"]["optional-dependencies"]["test"]]
    assert any(r.name == "cyclonedx-python-lib" and "json-validation" in r.extras
               for r in test)
