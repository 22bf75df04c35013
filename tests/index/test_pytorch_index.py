"""The PyTorch index replica answers, over real HTTP, what download.pytorch.org answers."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pytorch_index import OFFICIAL, R2, PyTorchIndex

LINUX = "cp311-cp311-linux_x86_64"
MANYLINUX = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"
TORCH = f"torch-2.5.1%2Bcu126-{LINUX}.whl"
DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n'
          b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message>")


def get(url: str, accept: str = "text/html") -> tuple[int, bytes, str]:
    req = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read(), resp.headers["Content-Type"]
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.headers["Content-Type"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def idx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyTorchIndex]:
    with PyTorchIndex(tmp_path_factory.mktemp("pt")) as index:
        index.add("cu126", "torch", "2.5.1+cu126", tag=LINUX)
        index.add("cu128", "torch", "2.7.0+cu128", tag=LINUX)
        index.add("cpu", "torch", "2.5.1+cpu", tag=LINUX, metadata=False, upload_time=None)
        index.add(None, "MarkupSafe", "3.0.2", tag=MANYLINUX)
        index.add("cu126", "markupsafe", "2.1.5", tag=MANYLINUX, upload_time="2024-01-02T03:04:05Z")
        index.add("cu126", "torchvision", "0.20.1+cu126", tag=LINUX)
        index.without_hashes("cu126", "torchvision")
        index.copy_page("numpy", index.add(None, "numpy", "2.1.2", tag=MANYLINUX))
        index.add("nightly/cu128", "torch", "2.8.0.dev20250301+cu128", tag=LINUX)
        index.add("test/cu126", "torch", "2.6.0+cu126", tag=LINUX)
        yield index


def test_torch_page_is_what_manage_v2_writes(idx: PyTorchIndex) -> None:
    json = "application/vnd.pypi.simple.v1+json"
    status, body, ctype = get(f"{idx.main}/whl/cu126/torch/", accept=json)
    assert (status, ctype) == (200, "text/html")  # no JSON API, whatever the client asks
    wheel = get(f"{idx.r2}/whl/cu126/{TORCH}")[1]
    meta = get(f"{idx.r2}/whl/cu126/{TORCH}.metadata")[1]
    assert meta.startswith(b"Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu126\n")
    assert body.decode().split("\n") == [
        "<!DOCTYPE html>",
        "<html>",
        "  <body>",
        "    <h1>Links for torch</h1>",
        (f'    <a href="{R2}/whl/cu126/{TORCH}#sha256={sha(wheel)}"'
         f' data-dist-info-metadata="sha256={sha(meta)}" data-core-metadata="sha256={sha(meta)}"'
         f' data-upload-time="2024-10-29T17:03:22Z">torch-2.5.1+cu126-{LINUX}.whl</a><br/>'),
        "  </body>",
        "</html>",
        f"<!--TIMESTAMP {idx.timestamp}-->",
    ]
    assert body.decode() == idx.page("cu126", "torch")
    # no .metadata and no upload time: a bare link, and the .metadata key is 403
    cpu = f"{R2}/whl/cpu/torch-2.5.1%2Bcpu-{LINUX}.whl"
    link = rf'<a href="{re.escape(cpu)}#sha256=[0-9a-f]{{64}}">'
    assert re.search(link, idx.page("cpu", "torch"))
    assert get(f"{idx.r2}/whl/cpu/torch-2.5.1%2Bcpu-{LINUX}.whl.metadata")[0] == 403


def test_nightly_and_test_channels(idx: PyTorchIndex) -> None:
    nightly = idx.page("nightly/cu128", "torch")  # R2, and never a hash on nightly
    assert f'href="{R2}/whl/nightly/cu128/torch-2.8.0.dev20250301%2Bcu128-' in nightly
    assert "#sha256=" not in nightly
    assert 'href="/whl/test/cu126/torch-2.6.0%2Bcu126-' in idx.page("test/cu126", "torch")
    with pytest.raises(ValueError):
        idx.add("cu126_full", "torch", "2.5.1")  # NOT_ACCEPTED_SUBDIR_PATTERNS


def test_root_copy_is_listed_on_every_variant(idx: PyTorchIndex) -> None:
    root = f"MarkupSafe-3.0.2-{MANYLINUX}.whl"
    data = get(f"{idx.main}/whl/{root}")[1]
    for variant in ("cu126", "cu128"):
        page = get(f"{idx.main}/whl/{variant}/markupsafe/")[1].decode()
        assert f'<a href="/whl/{root}#sha256={sha(data)}" data-dist-info-metadata=' in page
        assert "<h1>Links for markupsafe</h1>" in page
    lines = idx.page("cu126", "MarkupSafe").split("\n")  # sorted by key: "whl/M" < "whl/c"
    assert lines[4].startswith(f'    <a href="/whl/{root}#')
    assert lines[5].startswith('    <a href="/whl/cu126/markupsafe-2.1.5-')
    assert lines[5].endswith('data-upload-time="2024-01-02T03:04:05Z">'
                             f"markupsafe-2.1.5-{MANYLINUX}.whl</a><br/>")


def test_copied_numpy_page_points_at_another_host(idx: PyTorchIndex) -> None:
    page = get(f"{idx.main}/whl/cu128/numpy/")[1].decode()
    assert page == get(f"{idx.main}/whl/cu126/numpy/")[1].decode() == idx.page("cpu", "numpy")
    (href,) = re.findall(r'href="([^"]+)"', page)
    url, digest = href.split("#sha256=")
    assert url.startswith(f"{idx.ext}/packages/{digest[:2]}/{digest[2:4]}/numpy-2.1.2-")
    assert sha(get(url)[1]) == digest
    assert get(url + ".metadata")[0] == 200
    assert "/whl/numpy-" not in page  # the root numpy wheel never makes the links page


def test_page_without_hashes(idx: PyTorchIndex) -> None:
    page = get(f"{idx.main}/whl/cu126/torchvision/")[1].decode()
    href = f"{R2}/whl/cu126/torchvision-0.20.1%2Bcu126-{LINUX}.whl"
    assert f'<a href="{href}" data-dist-info-metadata=' in page
    assert "#sha256=" not in page


@pytest.mark.parametrize("path", [
    "/whl/cu126/torch", "/whl/cu126", "/whl/cu126/nosuchproject/", "/whl/cu126/Torch/",
    "/whl/cu999/torch/", f"/whl/cu126/{TORCH.replace('%2B', '+')}",  # S3: "+" is a space
])
def test_403_with_s3_xml(idx: PyTorchIndex, path: str) -> None:
    status, body, ctype = get(idx.main + path)
    assert (status, ctype) == (403, "application/xml")
    assert body.startswith(DENIED)


def test_r2_serves_bucket_keys(idx: PyTorchIndex) -> None:
    status, body, _ = get(f"{idx.r2}/whl/cu126/{TORCH}")
    assert status == 200 and body[:2] == b"PK"
    assert f"/r2/whl/cu126/{TORCH}" in idx.requests
    assert idx.mirrors() == {OFFICIAL: idx.main, R2: idx.r2}


def test_variant_root_lists_projects(idx: PyTorchIndex) -> None:
    lines = get(f"{idx.main}/whl/cu126/")[1].decode().split("\n")
    assert lines[3:-3] == [f'    <a href="{p}/">{p}</a><br/>'
                           for p in ("markupsafe", "numpy", "torch", "torchvision")]
    assert lines[-1] == f"<!--TIMESTAMP {idx.timestamp}-->"


def test_rewriting_mirror(idx: PyTorchIndex) -> None:
    simple = idx.rewriting("cu126")
    for page_url in (f"{simple}/torch/", f"{simple}/Torch"):  # normalised, slash or not
        status, body, _ = get(page_url)
        assert status == 200
        (href,) = re.findall(r'href="([^"]+)"', body.decode())
        assert href.startswith("../../packages/") and "%2B" in href
        url, digest = urllib.parse.urljoin(page_url, href).split("#sha256=")
        assert sha(get(url)[1]) == digest
        assert get(url + ".metadata")[0] == 200
    numpy = get(f"{simple}/numpy/")[1].decode()
    assert idx.ext not in numpy and "../../packages/" in numpy
    assert get(f"{simple}/nosuchproject/")[0] == 404
    assert b'<a href="torchvision/">' in get(f"{simple}/")[1]


def test_uv_resolves_from_the_rewriting_mirror(tmp_path: Path) -> None:
    uv = pytest.importorskip("uv")
    with PyTorchIndex(tmp_path / "pt") as index:
        wheel = index.add("cu126", "torch", "2.5.1+cu126", tag=LINUX)
        (tmp_path / "req.in").write_text("torch\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
        out = tmp_path / "pylock.toml"
        subprocess.run(
            [uv.find_uv_bin(), "pip", "compile", "--no-config",
             "--index-url", index.rewriting("cu126"), "--python-version", "3.11",
             "--python-platform", "x86_64-unknown-linux-gnu", "--format", "pylock.toml",
             "--generate-hashes", "--cache-dir", str(tmp_path / "cache"),
             "-o", str(out), str(tmp_path / "req.in")],
            env=env, check=True, capture_output=True, timeout=60,
        )
        lock = out.read_text()
        assert 'version = "2.5.1+cu126"' in lock
        assert sha(wheel.read_bytes()) in lock
        assert f"{index.url}/rw/cu126/packages/" in lock
        assert any(p.startswith("/rw/cu126/simple/torch") for p in index.requests)
