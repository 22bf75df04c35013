"""The SBOM is derived, not carried (issue 41): ``pack``, ``unpack --lock`` and verify's
install step write ``sbom.cdx.json`` again from the committed lock and the hashed files
and refuse one that differs, as they refuse an edited ``pylock.toml``.

A genuine archive packed by lockkit over loopback has its SBOM edited as a forger would
(a torch version and hash rewritten, an invented "audited" component added) and its
manifest entry updated to match, so the folder still agrees with itself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.errors import TrustError
from lockkit.lock.model import Lock
from lockkit.wheelhouse import sbom
from lockkit.wheelhouse.archive import pack, unpack
from lockkit.wheelhouse.implied import check_wheelhouse
from lockkit.wheelhouse.trust import committed
from tests.support.archive import relist
from tests.support.project import lockkit
from tests.support.pytorch_index import R2
from tests.support.wheelhouse import build_cli, compiled, with_sdist

PLATFORM = "linux-cpu"
REFUSED = "sbom.cdx.json: not what the lock and the wheels give"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def genuine(project: Path, tmp_path: Path) -> Path:
    """The project's lock compiled, its wheelhouse (with tools/) built and packed."""
    compiled(project, platform=PLATFORM)
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM]) == 0
    return project / "wheelhouse" / f"{PLATFORM}.wheelhouse.tar"


def edit_sbom(folder: Path) -> None:
    """torch's version and hash rewritten, an "audited" component invented, and the
    manifest's entry of the SBOM updated to the new bytes."""
    path = folder / sbom.FILENAME
    doc = json.loads(path.read_text())
    torch = next(c for c in doc["components"] if c["name"] == "torch")
    torch["version"] = "2.6.0+cpu"
    torch["hashes"] = [{"alg": "SHA-256", "content": "e" * 64}]
    doc["components"].append({"type": "library", "name": "audited-crypto", "version": "1.0",
                              "bom-ref": "audited_crypto-1.0-py3-none-any.whl"})
    path.unlink()
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    relist(folder, {})


def error_line(err: str) -> str:
    (line,) = [ln for ln in err.splitlines() if ln.startswith("lockkit: error: ")]
    return line


def test_an_edited_sbom_with_its_manifest_entry_is_refused_by_pack(project, genuine,
                                                                    tmp_path, capsys):
    folder = project / "wheelhouse" / PLATFORM
    edit_sbom(folder)
    out = tmp_path / "edited.tar"
    capsys.readouterr()
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM,
                 "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert REFUSED in error_line(err) and "Traceback" not in err
    assert not out.exists() and not Path(f"{out}.sha256").exists()


def test_an_edited_sbom_is_refused_by_unpack_lock_with_the_forgers_sha256(project, genuine,
                                                                           tmp_path, capsys):
    """The forger repacks and sends the new archive's sha256: the archive is the one
    sent, and the committed lock still refuses its SBOM; nothing is extracted."""
    folder = unpack(genuine, tmp_path / "copy")
    edit_sbom(folder)
    forged = pack(folder, tmp_path / f"{PLATFORM}.wheelhouse.tar")
    out = tmp_path / "received"
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(forged), "--out", str(out), "--sha256",
                 sha(forged), "--lock", str(project / "locks" / f"pylock.{PLATFORM}.toml")]) == 1
    err = capsys.readouterr().err
    assert REFUSED in error_line(err) and str(forged) in error_line(err)
    assert "wheelhouse build" not in err and "get the archive again from the sender" in err
    assert not out.exists()


def test_an_edited_sbom_fails_verify_with_the_wheelhouse_before_any_install(project, genuine,
                                                                             tmp_path):
    folder = unpack(genuine, tmp_path / "copy")
    edit_sbom(folder)
    reports = tmp_path / "report"
    run = lockkit("verify", "--project", str(project), "--platform", PLATFORM, "--no-gpu",
                  "--wheelhouse", str(folder), "--report-dir", str(reports), network=False)
    doc = json.loads((reports / "dossier.json").read_text())
    steps = {s["name"]: s["status"] for s in doc["steps"]}
    assert run.returncode == 1 and steps["install"] == "failed"
    assert REFUSED in doc["first_error"]
    assert not [c for c in doc["commands"] if c["step"] == "install"]


def test_the_untouched_wheelhouse_passes_and_its_sbom_is_derived_again(project, genuine,
                                                                      tmp_path, monkeypatch):
    """Packed, then unpacked with the lock and the sha256; its SBOM checked on a machine
    whose SOURCE_DATE_EPOCH differs (the file's own timestamp is read back)."""
    lock = project / "locks" / f"pylock.{PLATFORM}.toml"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    out = tmp_path / "received"
    assert main(["wheelhouse", "unpack", str(genuine), "--out", str(out), "--sha256",
                 sha(genuine), "--lock", str(lock)]) == 0
    read = Lock.read(lock)
    assert check_wheelhouse(out, read, committed(read, project))


def test_a_rewritten_timestamp_is_read_back_and_any_other_edit_refused(project, genuine,
                                                                      tmp_path, monkeypatch):
    """``wheelhouse sbom`` under another SOURCE_DATE_EPOCH writes a new timestamp, which
    pack reads back; a timestamp that is not a whole UTC second is not lockkit's form."""
    folder = project / "wheelhouse" / PLATFORM
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert main(["wheelhouse", "sbom", "--platform", PLATFORM, "--project", str(project)]) == 0
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert '"timestamp": "2023-11-14T22:13:20+00:00"' in (folder / sbom.FILENAME).read_text()
    read = Lock.read(project / "locks" / f"pylock.{PLATFORM}.toml")
    assert check_wheelhouse(folder, read, committed(read, project))
    path = folder / sbom.FILENAME
    path.write_text(path.read_text().replace("22:13:20+00:00", "22:13:20.5+00:00"))
    relist(folder, {})
    with pytest.raises(TrustError, match=REFUSED):
        check_wheelhouse(folder, read, committed(read, project))


def test_a_wheelhouse_without_its_sbom_is_refused(project, genuine, tmp_path):
    folder = unpack(genuine, tmp_path / "copy")
    (folder / sbom.FILENAME).unlink()
    relist(folder, {})
    read = Lock.read(project / "locks" / f"pylock.{PLATFORM}.toml")
    with pytest.raises(TrustError, match=REFUSED):
        check_wheelhouse(folder, read, committed(read, project))


def test_a_wheel_built_from_an_sdist_through_a_credentialed_mirror_derives_the_same_sbom(
        project, indexes, tmp_path):
    """The SBOM names the sdist (its URL and hash, from the lock) and the lock's official
    URLs, never the mirror the files came through: derived again, byte for byte."""
    with_sdist(project, indexes, "purepkg", "py3-none-any")
    lock = compiled(project, indexes)
    mirror = f"{R2}=http://lockkit:s3cret-token@{indexes.pt.r2.split('://')[1]}"
    assert build_cli(project, tmp_path / "cache", "--mirror", mirror) == 0
    folder = project / "wheelhouse" / PLATFORM
    assert '"type": "source-distribution"' in (folder / sbom.FILENAME).read_text()
    read = Lock.read(lock)
    assert check_wheelhouse(folder, read, committed(read, project))
