"""The projects the benchmarks compile: synthetic, on a ``_harness.FastIndex``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from _harness import FastIndex, lockkit_argv, run, synthetic_wheel

__all__ = ["synthetic_project", "wheel_project"]

_TAGS = {"x86_64-unknown-linux-gnu": "cp311-cp311-manylinux_2_17_x86_64",
         "aarch64-unknown-linux-gnu": "cp311-cp311-manylinux_2_17_aarch64",
         "x86_64-pc-windows-msvc": "cp311-cp311-win_amd64",
         "aarch64-apple-darwin": "cp311-cp311-macosx_11_0_arm64"}


def synthetic_project(work: Path, index: FastIndex, packages: int) -> Path:
    """A project asking for torch and ``packages - 1`` others, for every shipped platform:
    torch (a tiny wheel of the platform's tag) on the platform's PyTorch index, mirrored
    to *index*, or on the default index where the platform has none; the others, half of
    them needing the next one, on the default index."""
    from lockkit.platforms.definitions import load_platforms

    wheels = work / "wheels"
    deps = [f"bench-pkg-{i:03d}" for i in range(packages - 1)]
    for i, dep in enumerate(deps):
        needs = [f"{deps[i + 1]}>=1"] if i % 2 == 0 and i + 1 < len(deps) else []
        index.add("/simple", synthetic_wheel(wheels, dep, "1.0.0", requires=needs))
    # the default index's Linux torch is a CUDA 13 build, known by its CUDA dependency
    index.add("/simple", synthetic_wheel(wheels, "nvidia-cuda-runtime-cu13", "13.0.0"))
    cuda13 = ["nvidia-cuda-runtime-cu13>=13; sys_platform == 'linux'"]
    mirrors: dict[str, str] = {}
    platforms = load_platforms()
    for plat in platforms.values():
        prefix, version, needs = "/simple", "2.5.1", deps[:3] + cuda13
        if plat.torch_index:
            official, local = plat.torch_index.rsplit("/", 1)
            mirrors[official] = f"{index.url}/whl"
            prefix, version, needs = f"/whl/{local}", f"2.5.1+{local}", deps[:3]
        folder = wheels / prefix.strip("/").replace("/", "_")
        index.add(prefix, synthetic_wheel(folder, "torch", version, requires=needs,
                                          tag=_TAGS[plat.python_platform]))
    project = work / "project"
    project.mkdir()
    (project / "requirements.in").write_text("".join(f"{d}\n" for d in ["torch==2.5.1", *deps]))
    table = "".join(f'"{k}" = "{v}"\n' for k, v in mirrors.items())
    names = ", ".join(f'"{n}"' for n in platforms)
    (project / "lockkit.toml").write_text(f'index-url = "{index.url}/simple"\n'
                                          f"platforms = [{names}]\n[mirrors]\n{table}")
    return project


def wheel_project(work: Path, index: FastIndex, sizes: Sequence[int],
                  env: dict[str, str], prefix: str = "bench-big") -> tuple[Path, list[str]]:
    """A linux-cpu project locking one wheel per size (bytes of random payload), named
    *prefix*-00, -01...; compiled against *index*; returns the project and the files' URLs."""
    names = [f"{prefix}-{i:02d}" for i in range(len(sizes))]
    urls = [index.add("/simple", synthetic_wheel(work / "wheels", name, "1.0.0", size=size))
            for name, size in zip(names, sizes, strict=True)]
    project = work / "project"
    project.mkdir()
    (project / "requirements.in").write_text("".join(f"{n}\n" for n in names))
    (project / "lockkit.toml").write_text(f'index-url = "{index.url}/simple"\n'
                                          'platforms = ["linux-cpu"]\n')
    run([*lockkit_argv(), "compile", "--platform", "linux-cpu", "--project", str(project)],
        env)
    return project, urls
