"""The same lock gives the same archive, byte for byte, whatever the cache, mirror,
find-links folder, output folder or umask (issue 15), and a wheel built from an sdist is
the same wheel every time."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from lockkit.cache.store import Cache
from lockkit.config.project import load_project
from lockkit.download.fetch import Item, Want
from lockkit.platforms.definitions import load_platforms
from lockkit.wheelhouse import archive
from lockkit.wheelhouse import build as wheelhouse
from lockkit.wheelhouse.wheelzip import MIN_EPOCH, normalize_wheel, source_epoch
from tests.support.pytorch_index import R2
from tests.support.wheelhouse import build_cli, compiled, wheel_requests

# An in-tree backend that writes its wheel the way pypa/wheel's WheelFile does
# (src/wheel/wheelfile.py: write_files walks the tree sorted, dist-info deferred; write()
# takes the date from the file's mtime unless SOURCE_DATE_EPOCH is set, get_zipinfo_datetime
# clamps it to 1980, and external_attr from the file's st_mode -- so the builder's umask
# shows in the zip). The files are made at build time, as bdist_wheel makes dist-info.
_WHEEL_STYLE_BACKEND = '''
import base64, hashlib, os, stat, tempfile, time, zipfile

NAME, VERSION = {name!r}, {version!r}


def get_requires_for_build_wheel(config_settings=None):
    return []


def _zipinfo_datetime(mtime):
    return time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", mtime)), 315532800))[:6]


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = f"{{NAME}}-{{VERSION}}.dist-info"
    tree = tempfile.mkdtemp()
    files = {{f"{{NAME}}/__init__.py": f"__version__ = {{VERSION!r}}\\n",
             f"{{NAME}}/data.txt": "some data\\n",
             f"{{info}}/METADATA":
                 f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n",
             f"{{info}}/WHEEL": "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\n"
                             "Tag: py3-none-any\\n"}}
    record = []
    for arc, text in files.items():
        os.makedirs(os.path.join(tree, os.path.dirname(arc)), exist_ok=True)
        with open(os.path.join(tree, arc), "w") as fh:
            fh.write(text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{{arc}},sha256={{digest.decode()}},{{len(text.encode())}}")
    with open(os.path.join(tree, info, "RECORD"), "w") as fh:
        fh.write("\\n".join(record + [f"{{info}}/RECORD,,"]) + "\\n")
    name = f"{{NAME}}-{{VERSION}}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        deferred = []
        for root, dirs, names in os.walk(tree):
            dirs.sort()
            for n in sorted(names):
                path = os.path.join(root, n)
                arc = os.path.relpath(path, tree).replace(os.sep, "/")
                if root.endswith(".dist-info"):
                    deferred.append((path, arc))
                else:
                    _write(zf, path, arc)
        for path, arc in sorted(deferred):
            _write(zf, path, arc)
    return name


def _write(zf, path, arc):
    st = os.stat(path)
    zi = zipfile.ZipInfo(arc, date_time=_zipinfo_datetime(st.st_mtime))
    zi.external_attr = (stat.S_IMODE(st.st_mode) | stat.S_IFMT(st.st_mode)) << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    with open(path, "rb") as fh:
        zf.writestr(zi, fh.read())
'''


def _sdist(dest: Path, name: str, version: str, members: dict[str, str]) -> Path:
    """``name-version.tar.gz`` with one top folder and PKG-INFO, as sdists are (PEP 625)."""
    base = f"{name}-{version}"
    members = {"PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
               **members}
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for arc, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{arc}")
            info.size, info.mtime, info.mode = len(data), 1577836800, 0o644
            tf.addfile(info, io.BytesIO(data))
    return path


def wheel_style_sdist(dest: Path, name: str = "wheelstyle", version: str = "1.0") -> Path:
    return _sdist(dest, name, version, {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                          'backend-path = ["."]\n',
        "backend.py": _WHEEL_STYLE_BACKEND.format(name=name, version=version)})


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def meta_text(folder: Path) -> str:
    return "".join(p.read_text() for p in sorted(folder.rglob("*"))
                   if p.is_file() and p.suffix != ".whl")


def test_same_lock_packs_to_identical_bytes_from_any_source(project, indexes, tmp_path):
    indexes.default.put(wheel_style_sdist(tmp_path / "sdists"))
    (project / "requirements.in").write_text("torch==2.5.1\nnumpy\nwheelstyle\n")
    (project / "lockkit.toml").write_text('allow-sdist = ["wheelstyle"]\n'
                                          + (project / "lockkit.toml").read_text())
    compiled(project, indexes)
    one, two = tmp_path / "one", tmp_path / "two"
    # machine one: its own cache, torch through a loopback mirror of the PyTorch host
    assert build_cli(project, one / "cache", "--mirror", f"{R2}={indexes.pt.r2}",
                     "--out", str(one / "wh")) == 0
    # machine two: another cache, every file from a find-links folder, another umask
    proj = load_project(project)
    _, items = wheelhouse.plan(proj, load_platforms(proj.root)["linux-cpu"])
    (two / "links").mkdir(parents=True)
    for item in items:
        shutil.copyfile(Cache(one / "cache").path(item.want.sha256),
                        two / "links" / item.want.filename)
    indexes.forget_requests()
    old = os.umask(0o027)
    try:
        assert build_cli(project, two / "cache", "--find-links", str(two / "links"),
                         "--out", str(two / "wh")) == 0
    finally:
        os.umask(old)
    assert wheel_requests(indexes) == []
    built = "wheelstyle-1.0-py3-none-any.whl"
    assert sha256(one / "wh" / built) == sha256(two / "wh" / built)
    a = archive.pack(one / "wh", one / "linux-cpu.wheelhouse.tar")
    b = archive.pack(two / "wh", two / "linux-cpu.wheelhouse.tar")
    assert sha256(a) == sha256(b)
    for where in (indexes.pt.r2, str(tmp_path), '"origin"'):  # mirror, caches, links
        assert where not in meta_text(one / "wh")


def _item(sdist: Path, name: str, entry: dict | None = None) -> Item:
    want = Want(filename=sdist.name, sha256=sha256(sdist), size=sdist.stat().st_size, urls=(),
                source=f"http://127.0.0.1/{sdist.name}")
    return Item(package=name, version="1.0", kind="sdist", want=want,
                entry=entry or {})


def _build_twice(tmp_path: Path, sdist: Path, name: str, version: str = "1.0") -> list[Path]:
    """Build *sdist* as the wheelhouse does, under umask 022 then 027."""
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    proj = load_project(project)  # no index-url: uv's default index, for a real backend
    built = []
    for mask in (0o022, 0o027):
        stage = tmp_path / f"stage{mask:o}"
        stage.mkdir()
        old = os.umask(mask)
        try:
            built.append(wheelhouse._build_sdist(proj, _item(sdist, name), sdist, stage))
        finally:
            os.umask(old)
    return built


def assert_normal(wheel: Path) -> None:
    """Sorted, dist-info last, RECORD last of all, one date, 0644 files; RECORD still true."""
    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        info_dir = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        head = [n for n in names if not n.startswith(info_dir + "/")]
        tail = [n for n in names if n.startswith(info_dir + "/")]
        assert names == sorted(head) + sorted(tail[:-1]) + [f"{info_dir}/RECORD"]
        assert {(i.date_time, i.external_attr >> 16, i.compress_type, i.create_system)
                for i in infos} == {((1980, 1, 1, 0, 0, 0), 0o100644, zipfile.ZIP_DEFLATED, 3)}
        rows = list(csv.reader(io.StringIO(zf.read(f"{info_dir}/RECORD").decode())))
        for path, digest, size in rows:
            if path == f"{info_dir}/RECORD":
                continue
            data = zf.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert (digest, int(size)) == (f"sha256={want.decode()}", len(data)), path
        assert {r[0] for r in rows} == set(names)


def test_wheel_style_backend_builds_the_same_wheel_under_two_umasks(tmp_path):
    first, second = _build_twice(tmp_path, wheel_style_sdist(tmp_path / "sdists"), "wheelstyle")
    assert sha256(first) == sha256(second)
    assert_normal(first)


def test_normalize_wheel_keeps_an_executable_bit_and_the_bytes(tmp_path):
    src = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(src, "w") as zf:
        for arc, mode in [("x-1.0.data/scripts/run", 0o100775), ("x/__init__.py", 0o100600),
                          ("x-1.0.dist-info/RECORD", 0o100600), ("x-1.0.dist-info/WHEEL", 0)]:
            zi = zipfile.ZipInfo(arc, date_time=(2024, 5, 6, 7, 8, 10))
            zi.external_attr = mode << 16
            zf.writestr(zi, f"bytes of {arc}\n")
    out = normalize_wheel(src, tmp_path / "out.whl", 1700000000)
    with zipfile.ZipFile(out) as zf, zipfile.ZipFile(src) as zsrc:
        got = [(i.filename, i.external_attr >> 16, i.date_time) for i in zf.infolist()]
        assert all(zf.read(n) == zsrc.read(n) for n in zsrc.namelist())
    assert got == [("x-1.0.data/scripts/run", 0o100755, (2023, 11, 14, 22, 13, 20)),
                   ("x/__init__.py", 0o100644, (2023, 11, 14, 22, 13, 20)),
                   ("x-1.0.dist-info/WHEEL", 0o100644, (2023, 11, 14, 22, 13, 20)),
                   ("x-1.0.dist-info/RECORD", 0o100644, (2023, 11, 14, 22, 13, 20))]


def test_source_epoch_is_the_sdists_upload_time_else_1980():
    import datetime as dt

    uploaded = dt.datetime(2021, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
    assert source_epoch({"sdist": {"upload-time": uploaded}}) == int(uploaded.timestamp())
    assert source_epoch({"sdist": {"name": "x.tar.gz"}}) == MIN_EPOCH
    assert source_epoch({"sdist": {"upload-time": dt.datetime(1970, 1, 2)}}) == MIN_EPOCH


@pytest.mark.slow
@pytest.mark.network
def test_setuptools_sdist_builds_to_the_same_wheel_twice(tmp_path):
    """A real backend (setuptools, from the default index) through uv build."""
    sdist = _sdist(tmp_path / "sdists", "tinysetup", "1.0", {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools>=70"]\n'
                          'build-backend = "setuptools.build_meta"\n'
                          '[project]\nname = "tinysetup"\nversion = "1.0"\n',
        "tinysetup/__init__.py": "VALUE = 1\n"})
    first, second = _build_twice(tmp_path, sdist, "tinysetup")
    assert sha256(first) == sha256(second)
    assert_normal(first)
