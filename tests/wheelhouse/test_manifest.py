"""``manifest.json`` read as untrusted data: every key an entry may hold is checked for its
type when the manifest is parsed, so the readers (pack, unpack, the trust checks, the SBOM)
meet :class:`~lockkit.wheelhouse.manifest.Entry` values, never a number where a name goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockkit.errors import ArchiveError
from lockkit.wheelhouse.manifest import ENTRY_KINDS, Manifest

SHA = "0" * 64
WHEEL = {"path": "a-1-py3-none-any.whl", "size": 3, "sha256": SHA, "kind": "wheel",
         "package": "a", "version": "1", "source": "http://127.0.0.1:9/a.whl"}
BUILT = {**WHEEL, "path": "b-1-py3-none-any.whl", "package": "b",
         "built_from": {"sdist": "b-1.tar.gz", "sha256": SHA}}


def _parse(*files: dict) -> Manifest:
    raw = json.dumps({"platform": "linux-cpu", "files": list(files)}).encode()
    return Manifest.parse(raw, Path("wh/manifest.json"))


def test_every_kind_lockkit_writes_parses_and_entries_are_by_path():
    files = [{"path": f"{kind}.txt", "size": 0, "sha256": SHA, "kind": kind}
             for kind in ENTRY_KINDS]
    entries = _parse(WHEEL, BUILT, *files).entries
    assert list(entries) == [WHEEL["path"], BUILT["path"], "wheel.txt", "meta.txt", "tool.txt"]
    assert entries[BUILT["path"]]["built_from"] == {"sdist": "b-1.tar.gz", "sha256": SHA}


@pytest.mark.parametrize(("change", "words"), [
    ({"kind": "sdist"}, "kind 'sdist' is not one of wheel, meta, tool"),
    ({"package": 5}, "bad package 5"),
    ({"version": ["1"]}, "bad version ['1']"),
    ({"source": None}, "bad source None"),
    ({"built_from": "b-1.tar.gz"}, "bad built_from 'b-1.tar.gz'"),
    ({"built_from": {"sha256": 1}}, "bad built_from {'sha256': 1}"),
])
def test_an_entry_key_of_the_wrong_type_is_one_error_naming_the_file(change, words):
    with pytest.raises(ArchiveError) as raised:
        _parse(WHEEL, {**BUILT, **change})
    message = str(raised.value)
    assert message.startswith("wh/manifest.json: files[1]: b-1-py3-none-any.whl: ")
    assert words in message and WHEEL["path"] not in message


def test_all_the_problems_of_a_manifest_are_named_at_once():
    with pytest.raises(ArchiveError) as raised:
        _parse({**WHEEL, "kind": 1}, {**BUILT, "size": -1, "package": 2})
    message = str(raised.value)
    assert "files[0]: a-1-py3-none-any.whl: kind 1" in message
    assert "files[1]: b-1-py3-none-any.whl: bad size -1" in message
    assert "files[1]: b-1-py3-none-any.whl: bad package 2" in message
