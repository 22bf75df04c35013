"""`lockkit.wheelhouse.archive`: reproducible packs, and unpacks that trust nothing in the
archive."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from lockkit.errors import ArchiveError, ConfigError
from lockkit.wheelhouse.archive import pack, unpack
from lockkit.wheelhouse.manifest import Manifest
from lockkit.wheelhouse.offline import install_hint
from tests.support.archive import FILES, make_folder, manifest_bytes, sha

WHEEL = "demo-1.0-py3-none-any.whl"
TOP = "linux-cpu-wheelhouse/"  # the archive's one folder, <platform>-wheelhouse
Member = tuple[tarfile.TarInfo, "bytes | None"]


def sums_bytes(files: dict[str, bytes]) -> bytes:
    return "".join(f"{sha(files[p])}  {p}\n" for p in sorted(files)).encode()


def member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE,
           linkname: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


def meta(files: dict[str, bytes] = FILES, top: str = TOP) -> list[Member]:
    """The top folder and the two meta files; *top* ``""`` is the layout before issue 15."""
    folder = [member(top.rstrip("/"), kind=tarfile.DIRTYPE)] if top else []
    return folder + [member(f"{top}manifest.json", manifest_bytes(files)),
                     member(f"{top}SHA256SUMS", sums_bytes(files))]


def body(files: dict[str, bytes] = FILES, top: str = TOP) -> list[Member]:
    return [member(top + p, d) for p, d in sorted(files.items())]


def craft(path: Path, members: list[Member]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def hidden(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_pack_is_byte_identical_across_runs_and_mtimes(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "wh")
    first = pack(folder, tmp_path / "a.tar").read_bytes()
    assert pack(folder, tmp_path / "b.tar").read_bytes() == first
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    for i, path in enumerate(sorted(copy.rglob("*"))):
        if path.is_file():
            os.utime(path, (1_000_000 + i * 7919, 1_500_000_000 + i * 104729))
            path.chmod(0o600)
    assert pack(copy, tmp_path / "c.tar").read_bytes() == first
    assert hidden(tmp_path) == []


def test_pack_layout(tmp_path: Path) -> None:
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    with tarfile.open(archive) as tar:
        infos = tar.getmembers()
        assert [i.name for i in infos] == [
            "linux-cpu-wheelhouse", f"{TOP}manifest.json", f"{TOP}SHA256SUMS",
            f"{TOP}demo-1.0-py3-none-any.whl", f"{TOP}pylock.toml", f"{TOP}requirements.txt",
            f"{TOP}simple", f"{TOP}simple/demo", f"{TOP}simple/demo/index.html",
            f"{TOP}simple/index.html", f"{TOP}tiny-0.1-py3-none-any.whl"]
        assert {(i.type, i.mtime, i.uid, i.gid, i.uname, i.gname, i.mode) for i in infos} == {
            (tarfile.REGTYPE, 0, 0, 0, "", "", 0o644), (tarfile.DIRTYPE, 0, 0, 0, "", "", 0o755)}
        assert all(i.isdir() == (i.name in ("linux-cpu-wheelhouse", f"{TOP}simple",
                                            f"{TOP}simple/demo")) for i in infos)
        sums = tar.extractfile(f"{TOP}SHA256SUMS").read()
    assert sums == sums_bytes(FILES)
    assert Manifest.read(archive).data == json.loads(manifest_bytes(FILES))


def test_round_trip(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "wh")
    archive = pack(folder, tmp_path / "wh.tar")
    out = unpack(archive, tmp_path / "restored")
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == {**FILES, "manifest.json": manifest_bytes(FILES),
                   "SHA256SUMS": sums_bytes(FILES)}
    assert hidden(tmp_path) == []
    # the unpacked folder, SHA256SUMS included, packs back to the same bytes
    assert pack(out, tmp_path / "again.tar").read_bytes() == archive.read_bytes()


def test_unpack_into_empty_folder(tmp_path: Path) -> None:
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    (tmp_path / "dest").mkdir()
    unpack(archive, tmp_path / "dest")
    assert (tmp_path / "dest" / WHEEL).read_bytes() == FILES[WHEEL]


def test_unpack_refuses_non_empty_destination(tmp_path: Path) -> None:
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"dest: not empty and not a lockkit wheelhouse "
                       r"for linux-cpu \(holds keep.txt\)"):
        unpack(archive, tmp_path / "dest")
    assert [p.name for p in (tmp_path / "dest").iterdir()] == ["keep.txt"]
    assert hidden(tmp_path) == []


def assert_refused(archive: Path, tmp_path: Path, needle: str) -> ArchiveError:
    out = tmp_path / "dest"
    with pytest.raises(ArchiveError) as info:
        unpack(archive, out)
    assert needle in str(info.value)
    assert str(archive) in str(info.value)
    assert not out.exists()
    assert hidden(tmp_path) == []
    assert not (tmp_path / "evil").exists()
    return info.value


def test_unpack_refuses_tampered_member(tmp_path: Path) -> None:
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    data = archive.read_bytes()
    assert data.count(FILES[WHEEL]) == 1
    archive.write_bytes(data.replace(FILES[WHEEL], FILES[WHEEL].upper()))
    err = assert_refused(archive, tmp_path, repr(TOP + WHEEL))
    assert "sha256" in str(err)


BAD_MEMBERS = [
    (member("extra.txt", b"surprise"), "not in the manifest"),
    (member("../evil", b"x"), "'..'"),
    (member("simple/../../evil", b"x"), "'..'"),
    (member("C:\\evil", b"x"), "backslash"),
    (member(WHEEL, FILES[WHEEL]), "appears twice"),
    (member("simple", kind=tarfile.DIRTYPE), "directory"),  # a second time
    (member("evil", kind=tarfile.DIRTYPE), "directory"),
    (member("evil", kind=tarfile.SYMTYPE, linkname="/etc/passwd"), "symlink"),
    (member("evil", kind=tarfile.LNKTYPE, linkname="pylock.toml"), "hard link"),
    (member("evil", kind=tarfile.FIFOTYPE), "FIFO"),
    (member("evil", kind=tarfile.CHRTYPE), "character device"),
]
BAD_IDS = ["unlisted", "dotdot", "nested-dotdot", "backslash", "duplicate", "duplicate-folder",
           "stray-folder", "symlink", "hardlink", "fifo", "device"]


def _under(top: str, bad: Member) -> Member:
    info, data = bad
    moved = tarfile.TarInfo(top + info.name)
    moved.type, moved.linkname, moved.size = info.type, info.linkname, info.size
    return moved, data


@pytest.mark.parametrize("top", [TOP, ""], ids=["top-folder", "before-issue-15"])
@pytest.mark.parametrize(("extra", "reason"), BAD_MEMBERS, ids=BAD_IDS)
def test_unpack_refuses_bad_member(tmp_path: Path, extra: Member, reason: str,
                                   top: str) -> None:
    extra = _under(top, extra)
    folders = [member(f"{top}simple", kind=tarfile.DIRTYPE)]
    archive = craft(tmp_path / "bad.tar", meta(top=top) + folders + body(top=top) + [extra])
    err = assert_refused(archive, tmp_path, f"refusing member {extra[0].name!r}")
    assert reason in str(err)


@pytest.mark.parametrize("name", ["evil", "/tmp/evil", "linux-cpu-wheelhouse-x/evil",
                                  "other-wheelhouse/pylock.toml", "linux-cpu-wheelhouse"],
                         ids=["sibling", "absolute", "prefix-lookalike", "other-folder",
                              "top-again"])
def test_unpack_refuses_member_outside_the_top_folder(tmp_path: Path, name: str) -> None:
    archive = craft(tmp_path / "bad.tar", meta() + body() + [member(name, b"x")])
    err = assert_refused(archive, tmp_path, f"refusing member {name!r}")
    assert f"outside the archive's folder '{TOP}'" in str(err)


def test_unpack_refuses_a_top_folder_not_of_the_platform(tmp_path: Path) -> None:
    top = "linux-cu126-wheelhouse/"
    archive = craft(tmp_path / "bad.tar", meta(top=top) + body(top=top))
    assert_refused(archive, tmp_path, f"the top folder '{top}' is not the manifest's platform's")


def test_unpack_reads_an_archive_from_before_the_top_folder(tmp_path: Path) -> None:
    archive = craft(tmp_path / "old.tar", meta(top="") + body(top=""))
    out = unpack(archive, tmp_path / "restored")
    assert (out / WHEEL).read_bytes() == FILES[WHEEL]
    assert (out / "simple" / "demo" / "index.html").is_file()


def test_tar_xf_makes_one_folder(tmp_path: Path) -> None:
    """The real ``tar`` binary: everything lands in ``<platform>-wheelhouse/``, and its
    SHA256SUMS checks with ``sha256sum -c`` there."""
    tar = shutil.which("tar")
    if tar is None:
        pytest.skip("no tar binary")
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    here = tmp_path / "here"
    here.mkdir()
    subprocess.run([tar, "xf", str(archive)], cwd=here, check=True)
    assert [p.name for p in here.iterdir()] == ["linux-cpu-wheelhouse"]
    top = here / "linux-cpu-wheelhouse"
    got = {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()}
    assert got == {*FILES, "manifest.json", "SHA256SUMS"}
    if shutil.which("sha256sum"):
        subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=top, check=True)


WITHOUT_WHEEL = {k: v for k, v in FILES.items() if k != WHEEL}


def test_unpack_refuses_link_in_place_of_a_listed_file(tmp_path: Path) -> None:
    link = member(TOP + WHEEL, kind=tarfile.SYMTYPE, linkname="/etc/passwd")
    archive = craft(tmp_path / "bad.tar", meta() + body(WITHOUT_WHEEL) + [link])
    err = assert_refused(archive, tmp_path, f"refusing member {TOP + WHEEL!r}")
    assert "symlink" in str(err)


def test_unpack_refuses_missing_member(tmp_path: Path) -> None:
    archive = craft(tmp_path / "bad.tar", meta() + body(WITHOUT_WHEEL))
    assert_refused(archive, tmp_path, f"not in the archive: {WHEEL}")


@pytest.mark.parametrize(("first", "needle"), [
    (meta()[:1] + body(), f"expected {TOP}manifest.json as the first file, found '{TOP}demo-1"),
    (body(top=""), "expected manifest.json as the first file, found 'demo-1.0"),
    ([meta()[0], meta()[2], meta()[1]],
     f"expected {TOP}manifest.json as the first file, found '{TOP}SHA256SUMS'"),
    (meta()[:2], f"expected {TOP}SHA256SUMS as the next file, found '{TOP}demo-1.0"),
    (meta()[:2] + [member(f"{TOP}SHA256SUMS", b"0" * 64 + b"  x\n")],
     "SHA256SUMS does not match"),
    ([meta()[0], member(f"{TOP}manifest.json", b"{not json"), meta()[2]], "not valid JSON"),
    ([member("a/b", kind=tarfile.DIRTYPE)], "refusing member 'a/b': a nested folder"),
    ([member("..", kind=tarfile.DIRTYPE)], "refusing member '..': '..'"),
], ids=["no-meta", "no-meta-old", "swapped", "no-sums", "bad-sums", "bad-json", "nested-top",
        "dotdot-top"])
def test_unpack_refuses_bad_meta(tmp_path: Path, first: list[Member], needle: str) -> None:
    archive = craft(tmp_path / "bad.tar", first + body())
    assert_refused(archive, tmp_path, needle)


def cut_points(archive: Path) -> list[int]:
    with tarfile.open(archive) as tar:
        infos = tar.getmembers()
    return [0, 100] + [i.offset_data + i.size // 2 for i in infos] + [i.offset + 200
                                                                      for i in infos[1:]]


def test_unpack_refuses_truncated_archive(tmp_path: Path) -> None:
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    data = archive.read_bytes()
    points = cut_points(archive)
    assert len(points) == 2 + 2 * len(FILES) + 3 + 2 * 3  # 3 folders: the top, simple/demo
    for cut in points:
        archive.write_bytes(data[:cut])
        err = assert_refused(archive, tmp_path, "")
        assert re.search("truncated|not a readable tar|end of the archive|not in the archive",
                         str(err)), (cut, str(err))


def test_unpack_refuses_not_a_tar(tmp_path: Path) -> None:
    archive = tmp_path / "x.tar"
    archive.write_bytes(b"PK\x03\x04 this is a zip, not a tar" * 40)
    assert_refused(archive, tmp_path, "not a readable tar archive")


def refuse_tampered(folder: Path) -> None:
    (folder / WHEEL).write_bytes(FILES[WHEEL].upper())


def refuse_resized(folder: Path) -> None:
    (folder / WHEEL).write_bytes(FILES[WHEEL] + b"!")


def refuse_extra(folder: Path) -> None:
    (folder / "simple" / "stray.html").write_text("hi")


def refuse_missing(folder: Path) -> None:
    (folder / WHEEL).unlink()


def refuse_symlink(folder: Path) -> None:
    (folder / WHEEL).unlink()
    (folder / WHEEL).symlink_to(folder / "pylock.toml")


def refuse_no_manifest(folder: Path) -> None:
    (folder / "manifest.json").unlink()


@pytest.mark.parametrize(("spoil", "needle"), [
    (refuse_tampered, f"{WHEEL}: sha256"),
    (refuse_resized, f"{WHEEL}: {len(FILES[WHEEL]) + 1} bytes"),
    (refuse_extra, "simple/stray.html: not in the manifest"),
    (refuse_missing, f"{WHEEL}: listed in the manifest but missing"),
    (refuse_symlink, f"{WHEEL}: is a symlink"),
    (refuse_no_manifest, "no manifest.json"),
], ids=["tampered", "resized", "extra", "missing", "symlink", "no-manifest"])
def test_pack_refuses_folder_not_matching_manifest(tmp_path: Path, spoil, needle: str) -> None:
    folder = make_folder(tmp_path / "wh")
    spoil(folder)
    out = tmp_path / "out" / "wh.tar"
    with pytest.raises(ArchiveError) as info:
        pack(folder, out)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)
    assert not out.exists()
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_pack_leaves_old_archive_on_failure(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "wh")
    out = pack(folder, tmp_path / "wh.tar")
    before = out.read_bytes()
    refuse_tampered(folder)
    with pytest.raises(ArchiveError):
        pack(folder, out)
    assert out.read_bytes() == before
    assert hidden(tmp_path) == []


def test_install_hint_leads_with_the_route_any_pip_takes(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "my wh")
    lines = install_hint(folder).splitlines()
    assert lines[1] == (f"  python3 -m venv v && v/bin/pip install --no-index --find-links "
                        f"'{folder}' --require-hashes -r '{folder}/requirements.txt'")
    assert "pip >= 26.1" in lines[2]
    assert lines[3] == f"  v/bin/pip install --no-index -r '{folder}/pylock.toml'"
    assert lines[4] == (f"  uv pip install --python v/bin/python --offline --no-index "
                        f"-r '{folder}/pylock.toml'")
    (folder / "requirements.txt").write_text("demo==1.0\n")  # no hashes: pip would refuse
    assert "--require-hashes" not in install_hint(folder)


def test_install_hint_names_the_python_the_wheelhouse_lock_is_for(tmp_path: Path) -> None:
    """A bare ``python`` may be another version on the target, where pip then finds no file
    ("from versions: none"): the venv commands name the lock's Python."""
    folder = make_folder(tmp_path / "wh")
    (folder / "pylock.toml").write_text('lock-version = "1.0"\nrequires-python = "==3.12.*"\n'
                                        '[tool.lockkit]\npython = "3.12"\n')
    (folder / "tools").mkdir()
    venvs = [ln for ln in install_hint(folder).splitlines() if " -m venv " in ln]
    assert [ln.split(" -m venv ")[0].strip() for ln in venvs] == ["python3.12", "python3.12"]


@pytest.mark.parametrize("name", ["a\nb.whl", "x.whl\r", "tab\there.whl", "ls\u2028x.whl"],
                         ids=["newline", "carriage-return", "tab", "line-separator"])
def test_unpack_refuses_control_characters_in_member_names(tmp_path: Path, name: str) -> None:
    """A newline in a listed name would forge a line of the unpacked SHA256SUMS."""
    files = {**FILES, name: b"forged"}
    archive = craft(tmp_path / "bad.tar", meta(files) + body(files))
    assert_refused(archive, tmp_path, "a control character or line break in the path")


def test_unpack_prints_the_install_commands_for_the_manifests_platform(tmp_path, capsys):
    """Before: ``lockkit verify ... --platform <platform> --project <project>``, though the
    manifest names the platform."""
    from lockkit.cli import main

    files = {**FILES, "tools/lockkit-1.0-py3-none-any.whl": b"PK\x03\x04 lockkit"}
    archive = craft(tmp_path / "from-the-usb-stick.tar", meta(files) + body(files))
    dest = tmp_path / "wh"
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(dest)]) == 0
    err = capsys.readouterr().err
    assert f"  lk/bin/lockkit verify --wheelhouse {dest} --platform linux-cpu\n" in err
    assert "<" not in err


def test_pack_and_unpack_report_every_file_byte_for_a_progress_bar(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "wh")
    packed: list[int] = []
    archive = pack(folder, tmp_path / "wh.tar", on_bytes=packed.append)
    assert min(packed) > 0 and sum(packed) == sum(len(b) for b in FILES.values())
    unpacked: list[int] = []
    unpack(archive, tmp_path / "restored", on_bytes=unpacked.append)
    assert min(unpacked) > 0 and sum(unpacked) == sum(packed)
