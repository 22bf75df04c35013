"""A wheel built from an sdist, rewritten so the same sdist gives the same bytes anywhere.

A build backend writes what it finds on disk: pypa/wheel's ``WheelFile.write`` (used by
setuptools' ``bdist_wheel``) takes each member's date from the file's mtime unless
``SOURCE_DATE_EPOCH`` is set, and its ``external_attr`` from the file's mode -- which the
builder's umask decides (flit's ``doc/reproducible.rst`` names the same trap). So the
wheelhouse sets ``SOURCE_DATE_EPOCH`` for the build and then rewrites the zip with:

- members in the order ``WheelFile.write_files`` gives: everything else sorted, then the
  ``.dist-info`` files sorted, ``RECORD`` last (the wheel spec asks for dist-info at the end);
- one date for every member, from the same epoch;
- ``external_attr`` 0644, or 0755 for a file that had any execute bit (flit's rule);
- ZIP_DEFLATED at zlib's default level (6), Unix as the creating system, no comment or
  extra fields.

The members' bytes are copied unchanged, so ``RECORD`` (path, hash, size: no times or
modes) stays true. The deflate stream is zlib's: two machines with different zlib builds
(zlib-ng) may still differ, which a stored (uncompressed) zip would not.
"""

from __future__ import annotations

import datetime
import shutil
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["MIN_EPOCH", "normalize_wheel", "source_epoch"]

MIN_EPOCH = 315532800  # 1980-01-01 00:00:00 UTC: the earliest date a zip can hold


def source_epoch(entry: Mapping[str, Any]) -> int:
    """``SOURCE_DATE_EPOCH`` for a lock's package entry: its sdist's ``upload-time``
    (PEP 751) if the lock has one, else 1980-01-01 -- a date of the sdist, never of the
    build."""
    sdist = entry.get("sdist")
    uploaded = sdist.get("upload-time") if isinstance(sdist, dict) else None
    if isinstance(uploaded, datetime.datetime):
        if uploaded.tzinfo is None:
            uploaded = uploaded.replace(tzinfo=datetime.timezone.utc)
        return max(MIN_EPOCH, int(uploaded.timestamp()))
    return MIN_EPOCH


def normalize_wheel(src: Path, dest: Path, epoch: int = MIN_EPOCH) -> Path:
    """Write *src* (a wheel) to *dest* (a new file) in the reproducible form above."""
    date_time = time.gmtime(max(epoch, MIN_EPOCH))[:6]
    with zipfile.ZipFile(src) as zin, \
            zipfile.ZipFile(dest, "x", zipfile.ZIP_DEFLATED) as zout:
        for info in sorted(zin.infolist(), key=_order):
            out = zipfile.ZipInfo(info.filename, date_time=date_time)
            out.create_system = 3  # Unix: external_attr holds a Unix mode
            out.compress_type = zipfile.ZIP_DEFLATED
            out.external_attr = _mode(info) << 16
            out.file_size = info.file_size  # decides zip64 up front, as the size says
            if info.is_dir():
                zout.writestr(out, b"")
                continue
            with zin.open(info) as fin, zout.open(out, "w") as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
    return dest


def _order(info: zipfile.ZipInfo) -> tuple[int, str]:
    top = info.filename.split("/", 1)[0]
    if not top.endswith(".dist-info"):
        return 0, info.filename
    return (2 if info.filename == f"{top}/RECORD" else 1), info.filename


def _mode(info: zipfile.ZipInfo) -> int:
    if info.is_dir():
        return 0o40755
    executable = (info.external_attr >> 16) & 0o111
    return 0o100755 if executable else 0o100644
