"""Issue 17: today's platforms, family names, the CUDA guard both ways, "no such torch"."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit._internal.redact import NO_SECRETS
from lockkit.cli import main
from lockkit.errors import GuardError, IndexError_, PlatformError
from lockkit.index.urls import Indexes
from lockkit.lock.lockfile import _backend_problems, check_guards, cuda_majors
from lockkit.platforms.definitions import (
    load_platforms,
    markdown_table,
    parse_platform,
)
from lockkit.platforms.folders import shipped_dir
from tests.support import terminal
from tests.support.project import assert_conforms
from tests.support.pytorch_variants import ARM, WIN, X86, fill_current

ROOT = Path(__file__).parents[2]
NEW = ["linux-cu130", "linux-rocm64", "linux-rocm71", "linux-xpu", "linux-cpu-aarch64",
       "linux-cu128-aarch64", "linux-cu130-aarch64", "linux-cuda-default", "windows-cu128",
       "windows-xpu", "linux-cu132", "linux-cu132-aarch64", "windows-cu132", "linux-rocm72"]


@pytest.fixture
def current(project, indexes):
    """The project, its indexes also serving today's variants and a CUDA 13 torch on the
    default index; requirements any platform can satisfy (numpy has no aarch64 wheel here)."""
    fill_current(indexes.pt, indexes.default)
    (project / "requirements.in").write_text("torch>=2.8\n")
    return project


def lock_of(project: Path, platform: str) -> dict:
    lock = tomllib.loads((project / "locks" / f"pylock.{platform}.toml").read_text())
    assert_conforms(lock, platform, project)
    return lock


# --- the platform files ---------------------------------------------------------------------

def test_platforms_json_lists_new_platforms_with_backend_index_and_torch_range(capsys):
    assert main(["platforms", "--json", "--project", str(ROOT)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(NEW) <= set(rows)
    assert rows["linux-cu130"]["backend"] == {"kind": "cuda", "version": "13.0"}
    assert rows["linux-cu130"]["torch_index"] == "https://download.pytorch.org/whl/cu130"
    assert rows["linux-cu130"]["torch_releases"] == ">=2.9"
    assert rows["linux-cuda-default"]["torch_index"] is None
    assert rows["linux-cuda-default"]["backend"] == {"kind": "cuda", "version": "13.0"}
    assert rows["linux-xpu"]["gpu"]["device"] == "xpu"
    assert rows["linux-cu130-aarch64"]["arch"] == "aarch64"
    assert all(r["torch_releases"] for r in rows.values())
    # issue 36: 2.12 dropped cu128 and added cu132; ROCm went to 7.2
    assert rows["linux-cu128"]["torch_releases"] == ">=2.7,<2.12"
    assert rows["windows-cu132"]["backend"] == {"kind": "cuda", "version": "13.2"}
    assert rows["linux-cu132-aarch64"]["torch_index"] == "https://download.pytorch.org/whl/cu132"
    assert rows["linux-rocm7"]["alias_of"] == "linux-rocm72"


def test_family_names_are_aliases_of_the_newest_index(capsys):
    plats = load_platforms()
    rocm6 = plats["linux-rocm6"]
    assert rocm6.alias_of == "linux-rocm64"
    assert rocm6.torch_index == "https://download.pytorch.org/whl/rocm6.4"
    assert rocm6.backend == plats["linux-rocm64"].backend
    assert main(["platforms", "--project", str(ROOT)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("linux-rocm6 "))
    assert "alias of linux-rocm64" in line


def test_the_docs_platform_table_is_generated_from_the_files():
    page = (ROOT / "docs" / "reference" / "platform-file.md").read_text()
    block = re.search(r"<!-- platforms:begin -->\n(.*?)<!-- platforms:end -->", page, re.DOTALL)
    assert block, "docs/reference/platform-file.md has no <!-- platforms:begin/end --> block"
    assert block[1] == markdown_table(load_platforms()), \
        "regenerate it: lockkit platforms --markdown"


@pytest.mark.parametrize("text,message", [
    ('alias-of = "linux-rocm9"\n',
     "alias-of: 'linux-rocm9' is not a known platform (did you mean 'linux-rocm72'?)"),
    ('alias-of = "linux-rocm6"\n', "alias-of: 'linux-rocm6' is itself an alias"),
    ('alias-of = "linux-cpu"\nos = "linux"\n', "os: unknown field"),
])
def test_bad_alias_names_file_and_key(tmp_path, capsys, text, message):
    (tmp_path / "platforms").mkdir()
    (tmp_path / "platforms" / "fam.toml").write_text(text)
    assert main(["platforms", "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "fam.toml" in err and message in err and "Traceback" not in err


def test_bad_releases_names_the_key(tmp_path, capsys):
    src = (ROOT / "platforms" / "linux-cpu.toml").read_text()
    (tmp_path / "platforms").mkdir()
    (tmp_path / "platforms" / "x.toml").write_text(src.replace('">=2.0"', '"newest"'))
    assert main(["platforms", "--project", str(tmp_path)]) == 2
    assert "x.toml: torch.releases: 'newest' is not a version specifier" in capsys.readouterr().err


@pytest.mark.parametrize("text,message", [
    ('alias-of = "linux-cpu"\nos = "linux"\n', "os: unknown field"),
    ('name = "x"\n', "os: missing"),
])
def test_a_bad_platform_file_is_a_platform_error_with_the_platforms_hint(tmp_path, text,
                                                                         message):
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(PlatformError) as err:
        parse_platform(path)
    assert type(err.value) is PlatformError and err.value.exit_code == 2
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert err.value.advice == PlatformError.default_hint  # no problem brought a hint


# --- the CUDA guard, both directions --------------------------------------------------------

def doc(torch: str, **deps: str) -> dict:
    packages = [{"name": "torch", "version": torch, "wheels": [{"url": "u"}]}]
    packages += [{"name": n.replace("_", "-"), "version": v, "wheels": [{"url": "u"}]}
                 for n, v in deps.items()]
    return {"packages": packages}


CU13 = {"cuda_toolkit": "13.0.3", "cuda_bindings": "13.0.3", "nvidia_cublas": "13.1.0.3",
        "nvidia_cudnn_cu13": "9.24.0.43", "triton": "3.7.0"}
CU12 = {"nvidia_cublas_cu12": "12.8.4.1", "nvidia_cudnn_cu12": "9.10.2.21", "triton": "3.4.0"}


def test_cuda_major_is_read_from_the_dependencies():
    versions = {n.replace("_", "-"): v for n, v in CU13.items()}
    assert cuda_majors(versions) == {"cuda-toolkit": "13", "cuda-bindings": "13",
                                     "nvidia-cudnn-cu13": "13"}


@pytest.mark.parametrize("platform,build,problem", [
    ("linux-cuda-default", doc("2.14.1", **CU13), None),
    ("linux-cu130", doc("2.9.1+cu130"), None),
    ("linux-cuda-default", doc("2.8.0", **CU12),
     ("torch 2.8.0 is a CUDA 12 build (by its dependencies: nvidia-cublas-cu12 12.8.4.1, "
     "nvidia-cudnn-cu12 9.10.2.21), where CUDA 13 was asked")),
    ("linux-cuda-default", doc("2.14.1"),
     ("torch 2.14.1 is not a CUDA 13.0 build (no +cu label and no CUDA dependencies: "
     "a CPU build)")),
    ("linux-cuda-default", doc("2.14.1+cpu"), "is not a CUDA 13.0 build (expected +cu130)"),
    ("linux-cu130", doc("2.9.1+cu128"), "is not a CUDA 13.0 build (expected +cu130)"),
    ("linux-cpu", doc("2.14.1", **CU13),
     ("torch 2.14.1 is not a CPU build: a CUDA 13 build by its dependencies (cuda-bindings "
     "13.0.3, cuda-toolkit 13.0.3, nvidia-cudnn-cu13 9.24.0.43)")),
    ("linux-cpu", doc("2.9.1+cu130"), "torch 2.9.1+cu130 is not a CPU build"),
    ("linux-cpu", doc("2.9.1+cpu"), None),
    ("linux-cpu-aarch64", doc("2.9.1+cpu"), None),
    ("linux-xpu", doc("2.9.1+xpu"), None),
    ("linux-xpu", doc("2.9.1+cpu"), "torch 2.9.1+cpu is not an XPU build (expected +xpu)"),
    ("linux-rocm6", doc("2.9.1+rocm6.4"), None),
    ("linux-rocm6", doc("2.5.1+rocm6.2"), "is not a ROCm 6.4 build (expected +rocm6.4)"),
    ("macos-arm64", doc("2.9.1"), None),
])
def test_backend_guard(platform, build, problem):
    got = _backend_problems(build, load_platforms()[platform])
    assert got == ([] if problem is None else [got[0]])
    if problem:
        assert problem in got[0]


def test_guards_collect_every_problem_before_raising():
    """A stray family file no longer hides the backend and sdist problems found with it."""
    class Routing:
        def listed(self, name, url):
            return None

    build = doc("2.9.1+cu128")
    build["packages"].append({"name": "oldpkg", "version": "1.0", "sdist": {"url": "s"}})
    plat = load_platforms()["linux-cu130"]
    indexes = Indexes.for_platform(plat, {}, None, NO_SECRETS)
    with pytest.raises(IndexError_) as err:
        check_guards(build, plat, indexes, (), Routing())  # type: ignore[arg-type]
    msg = str(err.value)
    assert "torch must come from the PyTorch index" in msg
    assert "oldpkg 1.0 has no wheel" in msg and "is not a CUDA 13.0 build" in msg
    with pytest.raises(GuardError):
        check_guards(build, plat, indexes, (), None)


# --- compiling each new platform against the replica ---------------------------------------

@pytest.mark.parametrize("platform,torch,family,tag", [
    ("linux-cu130", "2.9.1+cu130", "triton", X86),
    ("linux-rocm64", "2.9.1+rocm6.4", "pytorch-triton-rocm", X86),
    ("linux-rocm6", "2.9.1+rocm6.4", "pytorch-triton-rocm", X86),
    ("linux-rocm71", "2.10.0+rocm7.1", "triton-rocm", X86),
    ("linux-xpu", "2.9.1+xpu", "pytorch-triton-xpu", X86),
    ("linux-cpu-aarch64", "2.9.1+cpu", None, ARM),
    ("linux-cu128-aarch64", "2.9.1+cu128", "triton", ARM),
    ("linux-cu130-aarch64", "2.9.1+cu130", "triton", ARM),
    ("windows-cu128", "2.9.1+cu128", None, WIN),
    ("windows-xpu", "2.9.1+xpu", None, WIN),
    ("linux-cu132", "2.12.0+cu132", "triton", X86),  # issue 36
    ("linux-cu132-aarch64", "2.12.0+cu132", "triton", ARM),
    ("windows-cu132", "2.12.0+cu132", None, WIN),
    ("linux-rocm72", "2.12.0+rocm7.2", "triton-rocm", X86),
    ("linux-rocm7", "2.12.0+rocm7.2", "triton-rocm", X86),
])
def test_each_new_platform_compiles_its_own_build(current, platform, torch, family, tag):
    if platform == "linux-rocm6":
        (current / "platforms" / "linux-rocm6.toml").unlink()  # the shipped alias, not conftest's
    assert main(["compile", "--project", str(current), "--platform", platform]) == 0
    lock = lock_of(current, platform)
    packages = {p["name"]: p for p in lock["packages"]}
    plat = load_platforms(current)[platform]
    assert packages["torch"]["version"] == torch
    assert packages["torch"]["index"] == plat.torch_index
    assert packages["torch"]["wheels"][0]["name"] == f"torch-{torch}-{tag}.whl"
    assert set(packages) == {"torch", "filelock"} | ({family} if family else set())
    if family:
        assert packages[family]["index"] == plat.torch_index


def test_default_index_cuda_13_torch_compiles_with_its_nvidia_dependencies(current):
    assert main(["compile", "--project", str(current), "--platform", "linux-cuda-default"]) == 0
    packages = {p["name"]: p for p in lock_of(current, "linux-cuda-default")["packages"]}
    assert packages["torch"]["version"] == "2.14.1"
    assert {"cuda-toolkit", "cuda-bindings", "nvidia-cublas", "nvidia-cuda-runtime",
            "nvidia-cuda-nvrtc", "nvidia-cudnn-cu13", "nvidia-nccl-cu13", "triton"} <= set(packages)
    assert all("pytorch.org" not in w["url"] for p in packages.values() for w in p["wheels"])


def test_cpu_platform_refuses_the_default_index_cuda_torch(current, capsys):
    """A project's CPU platform without a PyTorch index gets the CUDA 13 torch: refused."""
    src = (ROOT / "platforms" / "linux-cuda-default.toml").read_text()
    (current / "platforms" / "plain-cpu.toml").write_text(
        src.replace('kind = "cuda"\nversion = "13.0"', 'kind = "cpu"').replace(
            'device = "cuda"\ncuda = "13.0"', 'device = "cpu"'))
    assert main(["compile", "--project", str(current), "--platform", "plain-cpu"]) == 1
    err = capsys.readouterr().err
    assert "plain-cpu: torch 2.14.1 is not a CPU build: a CUDA 13 build by its dependencies" in err


def test_no_such_torch_names_platform_index_and_served_versions(current, capsys):
    (current / "requirements.in").write_text("torch>=2.11\n")
    assert main(["compile", "--project", str(current), "--platform", "linux-cu128"]) == 1
    err = capsys.readouterr().err.splitlines()
    at = next(i for i, ln in enumerate(err) if ln.startswith("lockkit: error:"))
    assert err[at] == ("lockkit: error: linux-cu128: no resolution: no torch matching "
                       "torch>=2.11 on the PyTorch index https://download.pytorch.org/whl/cu128; "
                       "it serves torch 2.9.1+cu128, 2.8.0+cu128")
    assert "change the torch requirement" in err[at + 1]


# --- renaming a platform never breaks a lock silently --------------------------------------

def test_check_names_a_family_name_that_moved_to_a_new_index(current, capsys):
    """A lock compiled when linux-rocm6 meant rocm6.2 is stale once it means rocm6.4."""
    (current / "requirements.in").write_text("torch==2.5.1\n")
    assert main(["compile", "--project", str(current), "--platform", "linux-rocm6"]) == 0
    (current / "platforms" / "linux-rocm6.toml").unlink()  # now the shipped alias
    capsys.readouterr()
    assert main(["compile", "--check", "--project", str(current), "--platform",
                 "linux-rocm6"]) == 1
    out = capsys.readouterr()
    line = next(ln for ln in (out.out + out.err).splitlines() if ln.startswith("linux-rocm6:"))
    assert "stale" in line
    assert ("linux-rocm6 is now an alias of linux-rocm64; torch index "
            "https://download.pytorch.org/whl/rocm6.2 -> https://download.pytorch.org/whl/"
            "rocm6.4; backend rocm 6.2 -> rocm 6.4") in line


def test_every_shipped_platform_names_a_lock_file_pep_751_accepts(tmp_path):
    """`pylock.<name>.toml` with a dot in <name> is refused by pip and uv (PEP 751, as
    packaging.pylock.is_valid_pylock_path enforces it): ROCm 6.4 is linux-rocm64."""
    from packaging.pylock import is_valid_pylock_path

    from lockkit.config.project import load_project

    project = load_project(tmp_path)
    for name in load_platforms(None):
        assert is_valid_pylock_path(project.lock_path(name)), name


def test_a_platform_name_with_a_dot_is_refused_naming_the_file(tmp_path, capsys):
    (tmp_path / "platforms").mkdir()
    (tmp_path / "platforms" / "linux-rocm6.3.toml").write_text(
        (shipped_dir() / "linux-rocm64.toml").read_text())
    assert main(["platforms", "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "linux-rocm6.3.toml: name: 'linux-rocm6.3' cannot name a lock file" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("text", ["", ">=2.5", ">=2.5,<3", "==2.5.*", ">=2.*", "~=2", "~=2.5",
                                  "<3 , >= 2.1", "2.5", "==2.5.1.*", "!=2.*", ">2.5.*", "===2",
                                  "== 2.5", " >=2 ", ">=2.5,", ",>=2", ">=2.5;", ">=v2"])
def test_the_specifier_check_agrees_with_packaging(text):
    """torch.releases is read by packaging: what it accepts, the platform file accepts."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from lockkit.platforms.definitions import _valid_specifier
    try:
        SpecifierSet(text)
        valid = True
    except InvalidSpecifier:
        valid = False
    assert _valid_specifier(text) is valid


# --- an unknown platform: the name meant, and where it was written (issue 24) -------------------

def _one_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("lockkit: error: ") and len(lines) <= 2, lines  # and a hint
    return lines[0]


@pytest.mark.parametrize("typed,meant", [("linux-cpuu", "linux-cpu"),
                                         ("macos_arm64", "macos-arm64"),
                                         ("Linux_CU128", "linux-cu128")])
def test_an_unknown_platform_flag_gets_the_known_name_it_most_likely_means(tmp_path, capsys,
                                                                           typed, meant):
    (tmp_path / "requirements.in").write_text("torch\n")
    assert main(["compile", "--project", str(tmp_path), "--platform", typed]) == 2
    assert _one_line(capsys) == (f"lockkit: error: unknown platform {typed!r}; did you mean "
                                 f"{meant!r}?")
    assert not (tmp_path / "locks").exists()


def test_an_unknown_platform_in_lockkit_toml_is_traced_to_the_file_and_key(tmp_path, capsys):
    config = tmp_path / "lockkit.toml"
    config.write_text('platforms = ["linux-cpu", "linux-cpuu", "macos_arm64"]\n')
    (tmp_path / "requirements.in").write_text("torch\n")
    assert main(["compile", "--project", str(tmp_path)]) == 2
    assert _one_line(capsys) == (
        f"lockkit: error: {config}: platforms[1]: unknown platform 'linux-cpuu'; did you mean "
        "'linux-cpu'?; platforms[2]: unknown platform 'macos_arm64'; did you mean "
        "'macos-arm64'?")
    # verify and sync take the config's only platform: the same trace
    config.write_text('platforms = "linux-cpuu"\n')
    assert main(["verify", "--project", str(tmp_path)]) == 2
    assert f"{config}: platforms[0]: unknown platform 'linux-cpuu'" in _one_line(capsys)


def test_a_name_far_from_every_platform_lists_the_known_ones(tmp_path, capsys):
    assert main(["compile", "--project", str(tmp_path), "--platform", "zzz"]) == 2
    line = _one_line(capsys)
    assert "unknown platform 'zzz'; known: " in line and "linux-cpu" in line
    assert "did you mean" not in line


@pytest.mark.parametrize("where", ["piped with COLUMNS=80", "terminal of 80 columns"])
def test_the_platforms_table_fits_80_columns_with_every_name_and_url_whole(tmp_path, where):
    """Issue 42: on a terminal rich wrapped the names (``linux-rocm`` / ``6`` read as
    ``linux-rocm`` / ``64``) and cut the URLs; piped, ``COLUMNS=80`` was ignored (lines of
    ~125 characters). Now every line fits, and each name and URL is on one line, whole."""
    env = {**os.environ, "COLUMNS": "80"}
    listed = json.loads(subprocess.run([sys.executable, "-m", "lockkit", "platforms", "--json"],
                                       capture_output=True, text=True, check=True, env=env,
                                       cwd=tmp_path).stdout)
    if where.startswith("piped"):
        run = subprocess.run([sys.executable, "-m", "lockkit", "platforms"], env=env,
                             capture_output=True, text=True, cwd=tmp_path)
        code, out = run.returncode, run.stdout
    else:
        code, out = terminal.run("platforms", "--project", str(tmp_path), columns=80)
    assert code == 0, out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    for p in listed:
        assert re.search(rf"(?<![\w.-]){re.escape(p['name'])}(?![\w.-])", out), (p["name"], out)
        if p["torch_index"]:
            assert re.search(rf"{re.escape(p['torch_index'])}(?![\w.-])", out), out
