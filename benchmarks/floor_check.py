"""The floor of `lockkit compile --check`: the same check of up-to-date locks, stdlib only.

What lockkit's check path does (lockkit/compile/compiler.py check_platforms,
lockkit/lock/freshness.py check), done with nothing but the standard library, so its time is
what the work costs
once Python has started: read lockkit.toml; read each requirement file and normalise it
(comments, blanks and spacing gone, names canonical); read each platform's file (an alias
as its target under its own name); build the inputs record and hash it; read each lock
(tomllib), hash its packages table, compare both digests with what the lock recorded.

It handles the plain projects the benchmarks make (requirement lines ``name[spec]``, no
options, no pyproject.toml inputs) and refuses anything else (exit 2): it is a floor to
measure against, not a second implementation. Exit 0 when every lock is fresh, 1 if not.
``benchmarks/startup.py`` checks that it finds the locks fresh, as lockkit does, before
timing it: if lockkit's record format changes, the floor must follow.

    python benchmarks/floor_check.py --project DIR --platforms <lockkit's platforms folder>
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the benchmarks run on 3.11+
    import tomli as tomllib

LOCK_FORMAT = 2  # lockkit.lock.freshness.LOCK_FORMAT
_COMMENT = re.compile(r"(^|\s+)#.*$")  # lockkit.config.reqfile: pip's comment rule
_LINE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*([<>=!~][^;#]*)?$")
_KNOWN = {"requirements", "platforms", "python", "index-url", "mirrors", "allow-sdist",
          "exclude-newer", "verify", "ci"}


class Refused(Exception):
    """The project uses something this floor does not implement."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines(path: Path) -> list[str]:
    """A plain requirement file's entries, normalised as lockkit records them."""
    found = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise Refused(f"{path}: {line!r} is not a plain requirement")
        found.append(canonical(match[1]) + re.sub(r"\s+", "", match[2] or ""))
    return sorted(found)


def platform_dict(name: str, folders: list[Path]) -> dict[str, Any]:
    """lockkit.platforms.definitions.Platform.to_dict() of *name*, from its TOML file (the project's
    platforms/ over the shipped ones); an alias is its target's under the alias's name."""
    path = next((f / f"{name}.toml" for f in reversed(folders) if (f / f"{name}.toml").is_file()),
                None)
    if path is None:
        raise Refused(f"no platform file for {name}")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if "alias-of" in data:
        target = platform_dict(data["alias-of"], folders)
        return {**target, "name": name,
                "description": data.get("description") or f"alias of {data['alias-of']}"}
    backend, torch, gpu = data["backend"], data["torch"], data["gpu"]
    index = torch.get("index")
    return {"name": data.get("name") or name, "os": data["os"], "arch": data["arch"],
            "python": data["python"], "python_platform": data["python-platform"],
            "backend": {"kind": backend["kind"], "version": backend.get("version")},
            "torch_index": index.rstrip("/") if index else None,
            "torch_packages": sorted(p.lower() for p in torch["packages"]),
            "torch_file_hosts": [h.rstrip("/") for h in torch.get("file-hosts", [])],
            "gpu_device": gpu["device"], "gpu_cuda": gpu.get("cuda"), "gpu_hip": gpu.get("hip"),
            "macos_target": data.get("macos-deployment-target"),
            "description": data.get("description", "")}


def sha256_json(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def check(project: Path, shipped: Path) -> list[tuple[str, str]]:
    """(platform, "fresh" | "stale" | "modified" | "missing") for each configured platform."""
    config = tomllib.loads((project / "lockkit.toml").read_text(encoding="utf-8"))
    unknown = set(config) - _KNOWN
    if unknown or config.get("allow-sdist") or config.get("exclude-newer"):
        raise Refused(f"lockkit.toml: keys this floor does not implement: {sorted(unknown)}")
    files = config.get("requirements", ["requirements.in"])
    if any(f.endswith(".toml") for f in files):
        raise Refused("pyproject.toml inputs are not implemented by this floor")
    requirements = {f: requirement_lines(project / f) for f in files}
    index_url = re.sub(r"//[^/@]*@", "//", config.get("index-url", ""))
    folders = [shipped, project / "platforms"]
    verdicts = []
    for name in config.get("platforms", ["linux-cpu"]):
        plat = platform_dict(name, folders)
        record = {"requirements": requirements, "options": {
            "platform": sha256_json(plat), "python": config.get("python") or plat["python"],
            "index-url": index_url, "allow-sdist": [], "exclude-newer": "",
            "lock-format": LOCK_FORMAT}}
        verdicts.append((name, lock_state(project / "locks" / f"pylock.{name}.toml",
                                          sha256_json(record))))
    return verdicts


def lock_state(path: Path, fingerprint: str) -> str:
    if not path.is_file():
        return "missing"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tool = data["tool"]["lockkit"]
    if sha256_json(data["packages"]) != tool.get("packages-digest"):
        return "modified"
    if tool.get("inputs-fingerprint") != fingerprint:
        return "stale"
    # lockkit.lock.freshness._old_form: an arch-less environments, an sdist (no allow-sdist)
    envs = data.get("environments") or []
    old_form = not any("platform_machine" in str(e) for e in envs) or any(
        "sdist" in p for p in data["packages"])
    return "stale" if old_form else "fresh"


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] != "--project" or argv[2] != "--platforms":
        print("usage: floor_check.py --project DIR --platforms DIR", file=sys.stderr)
        return 2
    try:
        verdicts = check(Path(argv[1]), Path(argv[3]))
    except (Refused, OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        print(f"floor_check: {exc}", file=sys.stderr)
        return 2
    for name, state in verdicts:
        print(f"{name}: {state}", file=sys.stderr)
    return 0 if all(state == "fresh" for _, state in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
