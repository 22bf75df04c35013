"""Shared by several stages' tests (from test_archive.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

FILES = {
    "demo-1.0-py3-none-any.whl": b"PK\x03\x04 demo wheel bytes",
    "tiny-0.1-py3-none-any.whl": b"PK\x03\x04 tiny wheel bytes, a little longer",
    "pylock.toml": b'lock-version = "1.0"\n',
    "requirements.txt": b"demo==1.0 --hash=sha256:00\n",
    "simple/index.html": b'<a href="demo/">demo</a>\n',
    "simple/demo/index.html": b'<a href="../../demo-1.0-py3-none-any.whl">demo</a>\n',
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_bytes(files: dict[str, bytes]) -> bytes:
    entries = [{"path": p, "size": len(d), "sha256": sha(d),
                "kind": "wheel" if p.endswith(".whl") else "meta"} for p, d in files.items()]
    manifest = {"schema_version": 1, "platform": "linux-cpu", "lock_sha256": "0" * 64,
                "files": sorted(entries, key=lambda e: e["path"])}
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()


def make_folder(path: Path, files: dict[str, bytes] = FILES) -> Path:
    for rel, data in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    (path / "manifest.json").write_bytes(manifest_bytes(files))
    return path


def relist(folder: Path, kinds: dict[str, str]) -> None:
    """Make *folder*'s manifest.json list every file in it again, with its size and sha256,
    as a forger's own tool would; *kinds*: the kind of each new path ("wheel", "tool")."""
    manifest = json.loads((folder / "manifest.json").read_text())
    old = {f["path"]: f for f in manifest["files"]}
    files = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel in ("manifest.json", "SHA256SUMS"):
            continue
        entry = dict(old.get(rel, {"kind": kinds.get(rel, "meta")}))
        entry.update(path=rel, size=path.stat().st_size, sha256=sha(path.read_bytes()))
        files.append(entry)
    manifest["files"] = files
    (folder / "manifest.json").unlink()  # never write through a link to the original
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (folder / "SHA256SUMS").unlink(missing_ok=True)


def plant(folder: Path, scratch: Path) -> dict[str, str]:
    """Trojan a genuine wheelhouse *folder*, keeping it self-consistent: a package ``evil``
    (its wheel runs a ``.pth`` at every start) added to its pylock.toml, requirements.txt
    and simple/ pages, the wheel kept under ``simple/evil/``, not at the top; a planted
    ``tools/`` lockkit with its own ``tools/requirements.txt``; the manifest listing all.
    Returns the planted paths by role."""
    from tests.support.index_server import build_wheel

    owned = {"owned.pth": "import sys; sys.stderr.write('owned\\n')\n"}
    evil = build_wheel(scratch / "evil", "evil", "1.0", files=owned)
    tool = build_wheel(scratch / "tool", "lockkit", "99.0", files=owned)
    wheel = f"simple/evil/{evil.name}"
    (folder / "simple" / "evil").mkdir()
    (folder / wheel).write_bytes(evil.read_bytes())
    digest = sha(evil.read_bytes())
    (folder / "simple" / "evil" / "index.html").write_text(
        f'<a href="{evil.name}#sha256={digest}">{evil.name}</a><br/>\n')
    _append(folder / "simple" / "index.html", '<a href="evil/">evil</a><br/>\n')
    _append(folder / "pylock.toml",
            f'\n[[packages]]\nname = "evil"\nversion = "1.0"\n\n[[packages.wheels]]\n'
            f'name = "{evil.name}"\npath = "{wheel}"\nhashes = {{sha256 = "{digest}"}}\n')
    _append(folder / "requirements.txt", f"evil==1.0 --hash=sha256:{digest}\n")
    (folder / "tools").mkdir(exist_ok=True)
    (folder / "tools" / tool.name).write_bytes(tool.read_bytes())
    (folder / "tools" / "requirements.txt").write_text(
        f"lockkit==99.0 --hash=sha256:{sha(tool.read_bytes())}\n")
    relist(folder, {wheel: "wheel", f"tools/{tool.name}": "tool",
                    "tools/requirements.txt": "tool"})
    manifest = json.loads((folder / "manifest.json").read_text())
    for f in manifest["files"]:  # the tool's entry, as lockkit's own build writes one
        if f["path"] == f"tools/{tool.name}":
            f.update(package="lockkit", version="99.0")
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return {"wheel": wheel, "tool": f"tools/{tool.name}"}


def _append(path: Path, text: str) -> None:
    old = path.read_text()
    path.unlink()  # never write through a link to the original
    path.write_text(old + text)
