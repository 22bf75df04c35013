"""Issue 26, item 3: a platform without torch, and one malformed platform file among good ones.

A project platform without ``[torch]`` (a service that needs no PyTorch) has no PyTorch
index and no torch family; without ``[gpu]`` its device is the CPU. It is followed here
through every command that reads a platform, on the loopback indexes; its verify is in
tests/verify/test_verify_torchless.py.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from lockkit._internal.compat import tomllib
from lockkit.ci import workflow as ci
from lockkit.cli import main
from lockkit.config.keys import LockkitRequirement
from lockkit.errors import PlatformError
from lockkit.platforms.definitions import Platform, load_catalog, load_platforms, parse_platform
from tests.support.project import assert_conforms

ROOT = Path(__file__).parents[2]
SERVICE = ROOT / "examples" / "service"
EXAMPLE = SERVICE / "platforms" / "linux-service.toml"
# the documented form that worked before: an empty torch family on the CPU
EXPLICIT = EXAMPLE.read_text() + '\n[torch]\npackages = []\n\n[gpu]\ndevice = "cpu"\n'
BROKEN = 'os = "linux"\narch = "x86_64"\npython = "3.11"\n'  # no python-platform, no backend


def service_project(tmp_path: Path, loopback, *, broken: bool = False) -> Path:
    """A copy of examples/service pointed at the loopback default index (and the PyTorch
    index replica's mirrors, so a request to it would be seen); *broken*: with a second,
    malformed platform file beside the good one."""
    root = tmp_path / "service"
    shutil.copytree(SERVICE, root)
    config = root / "lockkit.toml"
    config.write_text(loopback.config(platforms='["linux-service"]')
                      + config.read_text().split("platforms = ", 1)[1].split("\n", 1)[1])
    if broken:
        (root / "platforms" / "linux-broken.toml").write_text(BROKEN)
    return root


# --- the platform file ------------------------------------------------------------------------

def test_a_platform_without_torch_and_gpu_tables_is_valid():
    plat = parse_platform(EXAMPLE)
    assert isinstance(plat, Platform) and plat.name == "linux-service"
    assert plat.torch_index is None and plat.torch_packages == () and not plat.has_torch
    assert plat.torch_file_hosts == () and plat.gpu_device == "cpu"
    assert plat.gpu_cuda is None and plat.gpu_hip is None


def test_it_means_what_an_empty_torch_family_on_the_cpu_meant(tmp_path):
    """Same fingerprint: a lock compiled with the old spelling stays fresh."""
    old = tmp_path / "linux-service.toml"
    old.write_text(EXPLICIT)
    before, now = parse_platform(old), parse_platform(EXAMPLE)
    assert isinstance(before, Platform) and isinstance(now, Platform)
    assert replace(before, source="") == replace(now, source="")
    assert before.fingerprint == now.fingerprint


@pytest.mark.parametrize("text,message", [
    # a torch family for a GPU backend still needs to say which device its check runs on
    ('os = "linux"\narch = "x86_64"\npython = "3.11"\npython-platform = "x86_64-unknown-linux-gnu"'
     '\n[backend]\nkind = "cuda"\nversion = "12.6"\n[torch]\npackages = ["torch"]\n',
     "x.toml: gpu: missing (required with [torch] and backend kind 'cuda'"),
    # a table that is there keeps its required keys
    (EXAMPLE.read_text() + "\n[torch]\nindex = \"https://example.invalid/whl\"\n",
     "x.toml: torch.packages: missing"),
    (EXAMPLE.read_text() + "\n[gpu]\ncuda = \"12.6\"\n", "x.toml: gpu.device: missing"),
    ('torch = "yes"\n' + EXAMPLE.read_text(), "x.toml: torch: expected a table, got 'yes'"),
])
def test_what_stays_required(tmp_path, text, message):
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(PlatformError) as err:
        parse_platform(path)
    assert message in str(err.value)


# --- listing: the torch-less platform, and one malformed file among good ones ----------------

def test_platforms_lists_the_torchless_platform_from_the_default_index(tmp_path, capsys):
    shutil.copytree(SERVICE / "platforms", tmp_path / "platforms")
    assert main(["platforms", "--project", str(tmp_path)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines()
                if ln.startswith("linux-service "))
    assert "(no torch)" in line
    assert main(["platforms", "--json", "--project", str(tmp_path)]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out) if r["name"] == "linux-service")
    assert row["torch_index"] is None and row["torch_packages"] == []
    assert row["gpu"] == {"device": "cpu", "cuda": None, "hip": None}
    assert main(["platforms", "--markdown", "--project", str(tmp_path)]) == 0
    assert ("| `linux-service` | linux | x86_64 | cpu | no torch | any |"
            in capsys.readouterr().out)


@pytest.mark.parametrize("flag", [[], ["--json"], ["--markdown"], ["--host"]])
def test_a_malformed_platform_is_reported_and_the_others_still_listed(tmp_path, capsys, flag):
    shutil.copytree(SERVICE / "platforms", tmp_path / "platforms")
    (tmp_path / "platforms" / "linux-broken.toml").write_text(BROKEN)
    assert main(["platforms", "--project", str(tmp_path), *flag]) == 2
    out, err = capsys.readouterr()
    assert "linux-service" in out and "linux-cpu" in out and "linux-broken" not in out
    line = err.strip().splitlines()[0]
    assert line == (f"lockkit: error: {tmp_path / 'platforms' / 'linux-broken.toml'}: "
                    "python-platform: missing; backend: missing")


def test_a_malformed_override_hides_the_shipped_file_of_that_name(tmp_path):
    (tmp_path / "platforms").mkdir()
    (tmp_path / "platforms" / "linux-cpu.toml").write_text(BROKEN)
    (tmp_path / "platforms" / "fam.toml").write_text('alias-of = "linux-cpu"\n')
    catalog = load_catalog(tmp_path)
    assert "linux-cpu" not in catalog.platforms and "linux-cu126" in catalog.platforms
    assert set(catalog.broken) == {"linux-cpu", "fam"}
    assert "fam.toml: alias-of: 'linux-cpu' is a malformed platform file" in str(
        catalog.broken["fam"])
    with pytest.raises(PlatformError, match="linux-cpu.toml: python-platform: missing"):
        load_platforms(tmp_path)  # the strict reading, for callers that need every one


# --- the commands on a torch-less platform, on the loopback indexes ---------------------------

def test_compile_takes_everything_from_the_default_index(tmp_path, indexes, capsys):
    root = service_project(tmp_path, indexes)
    assert main(["compile", "--project", str(root)]) == 0, capsys.readouterr().err
    lock = tomllib.loads((root / "locks" / "pylock.linux-service.toml").read_text())
    assert_conforms(lock, "linux-service", root)
    assert {p["name"] for p in lock["packages"]} == {"jinja2", "markupsafe", "numpy",
                                                     "requests"}
    assert {p["index"] for p in lock["packages"]} == {f"{indexes.url}/simple"}
    assert lock["tool"]["lockkit"]["torch-index"] == ""
    assert indexes.pt.requests == []  # the PyTorch index (its replica) was never asked
    assert main(["compile", "--check", "--project", str(root)]) == 0


def test_wheelhouse_and_export_follow_the_lock(tmp_path, indexes, capsys):
    root = service_project(tmp_path, indexes)
    assert main(["compile", "--project", str(root)]) == 0
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-service",
                 "--cache-dir", str(tmp_path / "cache"), "--no-tools"]) == 0
    wheels = sorted(p.name.split("-")[0].lower() for p in
                    (root / "wheelhouse" / "linux-service").glob("*.whl"))
    assert wheels == ["jinja2", "markupsafe", "numpy", "requests"]
    out = tmp_path / "req.txt"
    capsys.readouterr()
    assert main(["export", "--project", str(root), "--platform", "linux-service",
                 "-o", str(out)]) == 0
    text = out.read_text()
    assert re.search(r"^numpy==2\.1\.0 \\$", text, re.MULTILINE), text
    assert "--index-url" in text and "--extra-index-url" not in text


def test_another_platforms_malformed_file_does_not_stop_this_one(tmp_path, indexes, capsys):
    """compile/export/wheelhouse work on the valid platform; naming the broken one (or
    --all) is exit 2 with its file and key, on one line."""
    root = service_project(tmp_path, indexes, broken=True)
    assert main(["compile", "--project", str(root), "--platform", "linux-service"]) == 0
    assert (root / "locks" / "pylock.linux-service.toml").is_file()
    broken = root / "platforms" / "linux-broken.toml"
    for argv in (["compile", "--platform", "linux-broken"], ["compile", "--all"],
                 ["export", "--platform", "linux-broken"],
                 ["wheelhouse", "build", "--platform", "linux-broken"]):
        capsys.readouterr()
        assert main([*argv, "--project", str(root)]) == 2, argv
        line = capsys.readouterr().err.strip().splitlines()[0]
        assert line == (f"lockkit: error: {broken}: python-platform: missing; "
                        "backend: missing"), argv


def test_the_ci_workflow_runs_it_on_a_hosted_runner():
    plat = parse_platform(EXAMPLE)
    assert isinstance(plat, Platform)
    assert ci.default_runner(plat) == "ubuntu-latest"
    own = LockkitRequirement(requirement=".lockkit/ci/lockkit-1.0-py3-none-any.whl",
                             hashes=(f"sha256:{'a' * 64}",), source="path")
    doc = yaml.safe_load(ci.github_workflow([plat], lockkit=own))
    (entry,) = doc["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert entry["platform"] == "linux-service" and entry["runner"] == "ubuntu-latest"


# --- the docs show it with the example's own file ----------------------------------------------

def test_the_docs_show_the_example_platform_file():
    page = (ROOT / "docs" / "howto" / "own-platforms.md").read_text()
    block = re.search(r"<!-- torchless:begin -->\n```toml\n(.*?)```\n<!-- torchless:end -->",
                      page, re.DOTALL)
    assert block, "docs/howto/own-platforms.md has no <!-- torchless:begin/end --> block"
    assert block[1] == EXAMPLE.read_text()
