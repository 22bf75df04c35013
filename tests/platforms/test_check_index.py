"""Issue 36, point 2: ``lockkit platforms --check-index`` against the loopback replica of the
PyTorch index (its root listing as manage_v2.py renders it, or PEP 691 JSON from a proxy)."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.errors import IndexUnreadable
from lockkit.platforms.definitions import load_platforms, parse_platform
from lockkit.platforms.draft import backend_of, platform_name
from tests.support.pytorch_index import PyTorchIndex
from tests.support.pytorch_variants import ARM, AS_OF_2_14, X86, fill_as_of_2_14

ROOT = Path(__file__).parents[2]
# torch 2.15 as the nightly matrix builds it (generate_binary_build_matrix.py "nightly",
# 2026-08-12): CUDA 13.4 on Linux x86_64 and aarch64, no Windows build; ROCm 7.14.
AS_OF_2_15 = (*AS_OF_2_14, ("cu134", ("2.15.0",), (X86, ARM)),
              ("rocm7.14", ("2.15.0",), (X86,)), ("cu132", ("2.15.0",), (X86, ARM)),
              ("cu130", ("2.15.0",), (X86, ARM)), ("cpu", ("2.15.0",), (X86,)),
              ("xpu", ("2.15.0",), (X86,)), ("cu126", ("2.15.0",), (X86,)),
              ("rocm7.2", ("2.15.0",), (X86,)))


@pytest.fixture
def pt(tmp_path_factory):
    with PyTorchIndex(tmp_path_factory.mktemp("pytorch")) as index:
        yield index


@pytest.fixture
def proj(tmp_path):
    """A project of its own (only the shipped platforms, until a test adds one)."""
    root = tmp_path / "proj"
    (root / "platforms").mkdir(parents=True)
    (root / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    return root


def check(proj: Path, url: str | None, *more: str) -> int:
    args = ["platforms", "--check-index", "--project", str(proj), *more]
    return main(args + (["--index-url", url] if url else []))


@pytest.mark.parametrize("root,form", [("/pt/whl", "html"), ("/rw/simple", "json")])
def test_shipped_platforms_are_up_to_date_with_the_index_as_of_torch_2_14(pt, proj, capsys,
                                                                           root, form):
    """The bucket's pages (HTML whatever is asked) and a proxy's PEP 691 JSON agree."""
    fill_as_of_2_14(pt)
    assert check(proj, pt.url + root) == 0
    out = capsys.readouterr().out
    assert f"(newest torch 2.14, read as {form})" in out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln[:1] in "cxr"}
    assert "linux-cu132, linux-cu132-aarch64, windows-cu132" in rows["cu132"]
    assert "linux-rocm7, linux-rocm72" in rows["rocm7.2"]
    assert "stopped at 2.11.0" in rows["cu128"]
    assert "cu118" not in rows and "rocm7.0" not in rows  # old folders no platform names
    assert "2 older variant folders serve no torch 2.14" in out
    assert out.rstrip().splitlines()[-1].startswith("up to date:")


def test_check_index_names_the_variants_the_shipped_platforms_lack_with_files_to_add(
        pt, proj, capsys):
    fill_as_of_2_14(pt, AS_OF_2_15)
    assert check(proj, pt.main + "/whl") == 1
    out = capsys.readouterr().out
    assert "missing: cu134 serves torch 2.15.0 to 2.15.0 and no platform names it; add:" in out
    assert "missing: rocm7.14 serves torch 2.15.0" in out
    assert out.rstrip().splitlines()[-1] == (
        "behind the index: 2 variant(s) no platform names: cu134, rocm7.14; "
        "1 stale releases range(s): linux-rocm71")  # 2.15 drops ROCm 7.1
    assert "whl/rocm7.1 stopped at torch 2.14.0 (add '<2.15')" in out
    files = dict(part.split(".toml\n", 1) for part in out.split("\n# platforms/")[1:])
    assert sorted(files) == ["linux-cu134", "linux-cu134-aarch64", "linux-rocm714"]  # no Windows
    for name, text in files.items():  # each printed file is a platform file lockkit loads
        (proj / "platforms" / f"{name}.toml").write_text(text.split("\nmissing:")[0]
                                                         .split("\nbehind the index:")[0])
    plats = load_platforms(proj)
    cu134, arm, rocm = plats["linux-cu134"], plats["linux-cu134-aarch64"], plats["linux-rocm714"]
    assert (cu134.backend.kind, cu134.backend.version, cu134.gpu_cuda) == ("cuda", "13.4", "13.4")
    assert cu134.torch_index == "https://download.pytorch.org/whl/cu134"
    assert cu134.torch_releases == ">=2.15" and cu134.torch_packages == \
        plats["linux-cu132"].torch_packages
    assert (arm.arch, arm.python_platform) == ("aarch64", "aarch64-unknown-linux-gnu")
    assert (rocm.backend.kind, rocm.gpu_hip, rocm.gpu_device) == ("rocm", "7.14", "cuda")
    assert rocm.torch_packages == plats["linux-rocm72"].torch_packages
    shipped = (ROOT / "platforms" / "linux-rocm71.toml").read_text()
    (proj / "platforms" / "linux-rocm71.toml").write_text(
        shipped.replace('releases = ">=2.10"', 'releases = ">=2.10,<2.15"'))
    assert check(proj, pt.main + "/whl") == 0  # with the files and the bound added


def test_json_output_lists_variants_missing_gone_and_the_files(pt, proj, capsys):
    fill_as_of_2_14(pt, AS_OF_2_15)
    assert check(proj, pt.main + "/whl", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["newest"] == "2.15" and doc["form"] == "html" and not doc["up_to_date"]
    assert doc["missing"] == ["cu134", "rocm7.14"] and doc["gone"] == []
    assert sorted(doc["files"]["cu134"]) == ["linux-cu134", "linux-cu134-aarch64"]
    cu128 = next(v for v in doc["variants"] if v["name"] == "cu128")
    assert cu128["torch"] == ["2.7.0", "2.11.0"] and not cu128["current"]
    assert cu128["platforms"] == ["linux-cu128", "linux-cu128-aarch64", "windows-cu128"]


def test_platforms_whose_index_has_gone_are_named(pt, proj, capsys):
    fill_as_of_2_14(pt, tuple(r for r in AS_OF_2_14 if r[0] not in ("cu128", "rocm6.4")))
    assert check(proj, pt.main + "/whl") == 1
    out = capsys.readouterr().out
    assert ("gone: linux-cu128: https://download.pytorch.org/whl/cu128: the index serves no "
            "torch there") in out
    assert "gone: linux-rocm6: https://download.pytorch.org/whl/rocm6.4" in out  # the alias too
    assert out.rstrip().splitlines()[-1] == (
        "behind the index: 5 platform(s) whose index has gone: linux-cu128, "
        "linux-cu128-aarch64, linux-rocm6, linux-rocm64, windows-cu128")


@pytest.mark.parametrize("platform,releases,problem", [
    ("linux-cu128", ">=2.7", "releases '>=2.7' admits torch 2.12.0, but whl/cu128 stopped at "
                             "torch 2.11.0 (add '<2.12')"),
    ("linux-cu130", ">=2.9,<2.14", "releases '>=2.9,<2.14' leaves out torch 2.14.0, which "
                                   "whl/cu130 serves"),
])
def test_a_releases_range_the_index_contradicts_is_stale(pt, proj, capsys, platform, releases,
                                                         problem):
    fill_as_of_2_14(pt)
    shipped = (ROOT / "platforms" / f"{platform}.toml").read_text()
    line = next(ln for ln in shipped.splitlines() if ln.startswith("releases = "))
    (proj / "platforms" / f"{platform}.toml").write_text(
        shipped.replace(line, f'releases = "{releases}"'))
    assert check(proj, pt.main + "/whl") == 1
    out = capsys.readouterr().out
    assert f"stale releases: {platform} ({proj / 'platforms' / platform}.toml): {problem}" in out


def test_without_index_url_the_platform_files_root_is_read_through_the_mirrors(pt, proj,
                                                                               capsys):
    fill_as_of_2_14(pt)
    (proj / "lockkit.toml").write_text(
        f'platforms = ["linux-cpu"]\n[mirrors]\n"https://download.pytorch.org" = "{pt.main}"\n')
    pt.requests.clear()
    assert check(proj, None) == 0
    assert pt.requests[:2] == ["/pt/whl/", "/pt/whl/torch/"]
    assert f"reading the PyTorch index at {pt.main}/whl" in capsys.readouterr().err


def test_credentials_in_the_index_url_are_sent_and_never_shown(pt, proj, capsys, monkeypatch):
    fill_as_of_2_14(pt)
    pt.auth = ("reader", "s3cret-token-for-the-mirror")
    monkeypatch.setenv("LOCKKIT_TEST_INDEX", pt.main.replace("http://", "http://reader:"
                                                              "s3cret-token-for-the-mirror@"))
    assert check(proj, "${LOCKKIT_TEST_INDEX}/whl") == 0
    captured = capsys.readouterr()
    assert "s3cret-token" not in captured.out + captured.err
    assert "--check-index ${LOCKKIT_TEST_INDEX}/whl/ (newest torch 2.14" in captured.out


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/whl"


class _HugePage(http.server.BaseHTTPRequestHandler):
    """Every path: a 2 MiB HTML page (a project's max-page-size of 1 MiB refuses it)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b"<!-- " + b"x" * (2 << 20) + b" -->"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client stops at its limit: what it must do
            self.wfile.write(body)


@pytest.fixture
def huge() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HugePage)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/whl"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("where,message", [
    ("no-torch", "/whl/: its root listing names no torch project: not a PyTorch index root"),
    ("missing", "/pt/nowhere/: HTTP 403: not a page of a PyTorch index root"),
    ("closed", "cannot fetch http://127.0.0.1:"),
    ("huge", "/whl/: the page is larger than 1 MiB"),
])
def test_an_index_that_cannot_be_read_is_one_line_and_exit_3_never_1(
        pt, proj, tmp_path, capsys, huge, where, message):
    """Exit 1 says "behind the index": CI must tell a broken, hostile or unreachable index
    from a stale platform list. Before: a page past max-page-size was a traceback, exit 1."""
    fill_as_of_2_14(pt)
    (proj / "lockkit.toml").write_text('platforms = ["linux-cpu"]\nmax-page-size = 1\n')
    with PyTorchIndex(tmp_path / "bare") as bare:
        bare.add(None, "setuptools", "70.2.0")  # a root listing without torch
        url = {"no-torch": bare.main + "/whl", "missing": pt.main + "/nowhere",
               "closed": _closed_port(), "huge": huge}[where]
        assert check(proj, url) == IndexUnreadable.exit_code == 3
    captured = capsys.readouterr()
    errors = [ln for ln in captured.err.splitlines() if ln.startswith("lockkit: error:")]
    assert len(errors) == 1 and message in errors[0], captured.err
    assert url.rstrip("/") in errors[0]  # the URL read, named
    assert "Traceback" not in captured.err and captured.out == ""
    if where == "huge":
        assert "hint: if this index's pages are meant to be that large" in captured.err


@pytest.mark.parametrize("args,message", [
    (["--index-url", "http://127.0.0.1:9/whl"], "--index-url: only with --check-index"),
    (["--check-index", "--host"], "--check-index and --host cannot be given together"),
    (["--check-index", "--markdown"], "--check-index and --markdown cannot be given together"),
    (["--check-index", "--index-url", "ftp://mirror.invalid/whl"],
     "--index-url ftp://mirror.invalid/whl: not an http:// or https:// URL"),
    (["--check-index", "--index-url", "http://127.0.0.1:9/pt/whl/cu126/"],
     "--index-url http://127.0.0.1:9/pt/whl/cu126/: one variant's index, not the index root\n"
     "hint: give the root: --index-url http://127.0.0.1:9/pt/whl"),
])
def test_usage_errors_exit_2_before_any_request(proj, capsys, args, message):
    assert main(["platforms", "--project", str(proj), *args]) == 2
    assert message in capsys.readouterr().err


def test_help_says_the_exit_codes(capsys):
    assert main(["platforms", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exit 0 when they are up to date, 1 when a variant is missing" in text
    assert "3 when the index cannot be read" in text
    assert "--check-index" in text and "--index-url URL" in text


# --- the replica's root listing is what manage_v2.py renders --------------------------------

def test_the_replica_root_lists_projects_and_its_torch_page_every_folder(pt):
    fill_as_of_2_14(pt)
    root = urllib.request.urlopen(pt.main + "/whl/").read().decode()
    assert '    <a href="torch/">torch</a><br/>' in root.splitlines()
    assert "cu126/" not in root  # the index has no listing of its folders
    torch = urllib.request.urlopen(pt.main + "/whl/torch/").read().decode()
    assert ('href="https://download-r2.pytorch.org/whl/cu132/torch-2.12.0%2Bcu132-'
            'cp311-cp311-linux_aarch64.whl#sha256=') in torch
    assert 'href="https://download-r2.pytorch.org/whl/cpu/torch-2.14.0-cp311-none-macosx' in torch
    request = urllib.request.Request(pt.main + "/whl/", headers={
        "Accept": "application/vnd.pypi.simple.v1+json"})
    assert urllib.request.urlopen(request).headers["Content-Type"] == "text/html"  # S3: HTML


def test_the_proxy_answers_pep_691_json_when_asked(pt):
    fill_as_of_2_14(pt)
    request = urllib.request.Request(pt.url + "/rw/simple/torch/", headers={
        "Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    with urllib.request.urlopen(request) as resp:
        assert resp.headers["Content-Type"] == "application/vnd.pypi.simple.v1+json"
        doc = json.loads(resp.read())
    assert doc["meta"] == {"api-version": "1.1"} and doc["name"] == "torch"
    files = {f["filename"]: f for f in doc["files"]}
    cu132 = files["torch-2.12.0+cu132-cp311-cp311-win_amd64.whl"]
    assert cu132["url"].startswith("../../packages/") and len(cu132["hashes"]["sha256"]) == 64
    assert "2.14.0+cu132" in doc["versions"]


# --- drafting a platform file from a variant's name ---------------------------------------

@pytest.mark.parametrize("variant,backend,name", [
    ("cu132", ("cuda", "13.2"), "linux-cu132"), ("cu118", ("cuda", "11.8"), "linux-cu118"),
    ("rocm7.2", ("rocm", "7.2"), "linux-rocm72"), ("rocm7.14", ("rocm", "7.14"), "linux-rocm714"),
    ("xpu", ("xpu", None), "linux-xpu"), ("cpu", ("cpu", None), "linux-cpu"),
])
def test_a_variant_name_gives_the_backend_and_the_shipped_naming(variant, backend, name):
    assert backend_of(variant) == backend
    assert platform_name(variant, "linux", "x86_64") == name
    assert platform_name(variant, "windows", "AMD64") == name.replace("linux", "windows")
    assert platform_name(variant, "linux", "aarch64") == name + "-aarch64"


@pytest.mark.parametrize("name", ["linux-cu132", "linux-cu132-aarch64", "windows-cu132",
                                  "linux-rocm72"])
def test_each_new_shipped_platform_is_the_file_check_index_drafts_for_its_variant(proj, name):
    """What --check-index would have printed before they shipped: drafted from the other
    platforms (a project cannot remove a shipped file), it loads as the shipped one."""
    from lockkit.platforms.draft import draft

    shipped = load_platforms()
    plat = shipped[name]
    index = str(plat.torch_index)
    variant = index.rsplit("/", 1)[1]
    made = draft(variant, index, plat.os, plat.arch,
                 {"cu132": "2.12.0", "rocm7.2": "2.11.0"}[variant],
                 [p for p in shipped.values() if p.torch_index != plat.torch_index])
    path = proj / "platforms" / f"{made.name}.toml"
    path.write_text(made.text)
    drafted = parse_platform(path)
    assert made.name == name
    assert drafted.to_dict() == {**plat.to_dict(), "description": drafted.description}
    assert drafted.torch_releases == plat.torch_releases
