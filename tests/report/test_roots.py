"""Portable dossiers: paths written relative to the run's named roots, listed once at the
top of dossier.json, dossier.md and the JUnit report; ``absolute`` restores today's form."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from lockkit._internal.redact import NO_SECRETS
from lockkit.report import json as json_format
from lockkit.report import junit, markdown, write_folder
from lockkit.report.model import Dossier
from lockkit.report.records import SchemaError
from lockkit.report.roots import absolute, named_roots, relative_text, with_report

SHA = "c52bccd5c63c4f09ef3e2c6e26fb790015edee1f98e11df72f60a7d529716d2d"
ROOTS = named_roots(project="/srv/proj", venv="/srv/cache/verify/venvs/linux-cpu",
                    wheelhouse="/srv/proj/wheelhouse/linux-cpu", cache="/srv/cache",
                    tmp="/scratch/lockkit-verify-x1")


@pytest.mark.parametrize("given,written", [
    ("/srv/proj", "<project>"),
    ("/srv/proj/locks/pylock.linux-cpu.toml", "<project>/locks/pylock.linux-cpu.toml"),
    # nested roots: the longest wins
    ("/srv/proj/wheelhouse/linux-cpu/torch.whl", "<wheelhouse>/torch.whl"),
    ("/srv/cache/verify/venvs/linux-cpu/bin/python", "<venv>/bin/python"),
    ("/srv/cache/verify/venvs/linux-cpu2/bin/python", "<cache>/verify/venvs/linux-cpu2/bin/python"),
    # embedded in free text: options, error lines, a log's tail
    ("-X pycache_prefix=/srv/cache/verify/pyc x.py", "-X pycache_prefix=<cache>/verify/pyc x.py"),
    ("Using Python 3.11 environment at: /srv/cache/verify/venvs/linux-cpu\nChecked 1",
     "Using Python 3.11 environment at: <venv>\nChecked 1"),
    ("error: '/scratch/lockkit-verify-x1/app/out.npy' missing; see /srv/proj.",
     "error: '<tmp>/app/out.npy' missing; see <project>."),
    # only whole path components: a neighbour's folder is not a root's
    ("/srv/project2/x /home/srv/proj/x /srv/proj.old", "/srv/project2/x /home/srv/proj/x "
                                                      "/srv/proj.old"),
    # never a URL, never a hash
    ("file:///srv/proj/wheelhouse/linux-cpu/a.whl", "file:///srv/proj/wheelhouse/linux-cpu/a.whl"),
    ("--find-links file:///srv/cache/x -r /srv/cache/x", "--find-links file:///srv/cache/x "
                                                         "-r <cache>/x"),
    (f"/srv/cache/verify/wheels/{SHA} sha256 {SHA}", f"<cache>/verify/wheels/{SHA} sha256 {SHA}"),
])
def test_paths_are_written_relative_to_the_longest_root(given, written):
    assert relative_text(given, ROOTS) == written


def test_named_roots_leave_out_absent_and_filesystem_roots_and_keep_the_first_name():
    assert named_roots(project="/a/p", venv=None, wheelhouse="/a/p", cache="/", tmp="/t") == {
        "project": "/a/p", "tmp": "/t"}


def _dossier(**changes) -> Dossier:
    venv = ROOTS["venv"]
    return Dossier(
        kind="verify", lockkit_version="0", started="x", result="failed",
        command_line=("lockkit", "verify", "--project", "/srv/proj"), platform="linux-cpu",
        lock="/srv/proj/locks/pylock.linux-cpu.toml", lock_sha256=SHA,
        interpreter="/usr/bin/python3.11", wheelhouse=ROOTS["wheelhouse"],
        first_error=f"system: {venv}/bin/python exited 1",
        steps=Dossier.from_dict({"kind": "verify", "steps": [
            {"name": "venv", "status": "passed", "detail": {"path": venv}},
            {"name": "system", "status": "failed",
             "error": f"{venv}/bin/python exited 1"}]}).steps,
        **changes)


def test_the_json_document_lists_the_roots_once_at_the_top():
    d = _dossier(roots=ROOTS)
    text = json_format.render(d, NO_SECRETS)
    doc = json.loads(text)
    assert list(doc)[:3] == ["schema_version", "kind", "roots"] and doc["roots"] == ROOTS
    assert doc["lock"] == "<project>/locks/pylock.linux-cpu.toml"
    assert doc["wheelhouse"] == "<wheelhouse>" and doc["lock_sha256"] == SHA
    assert doc["command_line"][-1] == "<project>"
    assert doc["first_error"] == "system: <venv>/bin/python exited 1"
    assert doc["steps"][0]["detail"]["path"] == "<venv>"
    assert doc["interpreter"] == "/usr/bin/python3.11"  # under no root: as it is
    rest = json.dumps({k: v for k, v in doc.items() if k != "roots"})
    assert not [path for path in ROOTS.values() if path in rest]
    again = Dossier.from_dict(doc)
    assert again.roots == ROOTS and again.to_dict() == doc


def test_the_markdown_lists_the_roots_in_one_line():
    md = markdown.render(_dossier(roots=ROOTS), NO_SECRETS)
    (line,) = [ln for ln in md.splitlines() if "/srv/" in ln or "/scratch/" in ln]
    assert line.startswith("- paths relative to: `<project>` = `/srv/proj`, `<venv>` = ")
    assert "- lock: `<project>/locks/pylock.linux-cpu.toml`" in md
    assert "first error: system: <venv>/bin/python exited 1" in md
    assert md.index(line) < md.index("- lock:")


def test_absolute_restores_todays_form():
    portable = Dossier.from_dict(_dossier(roots=ROOTS).to_dict())
    assert absolute(portable).to_dict() == _dossier().to_dict()
    assert "roots" not in absolute(_dossier(roots=ROOTS)).to_dict()
    assert "paths relative to" not in markdown.render(absolute(portable), NO_SECRETS)
    assert "/srv/proj/locks" in markdown.render(absolute(portable), NO_SECRETS)


def test_junit_carries_the_relative_messages_and_the_roots(tmp_path):
    props = {p.get("name"): p.get("value")
             for p in ET.fromstring(junit.render(_dossier(roots=ROOTS), NO_SECRETS))
             .iter("property")}
    assert props["first_error"] == "system: <venv>/bin/python exited 1"
    assert {k: v for k, v in props.items() if k.startswith("root.")} == {
        f"root.{name}": path for name, path in ROOTS.items()}
    failure = ET.fromstring(junit.render(_dossier(roots=ROOTS), NO_SECRETS)).find(".//failure")
    assert failure is not None and failure.get("message") == "<venv>/bin/python exited 1"
    absolute_form = junit.render(_dossier(), NO_SECRETS).encode()
    assert b"/srv/cache/verify/venvs/linux-cpu/bin/python" in absolute_form
    assert b"root." not in absolute_form and b"&lt;venv&gt;" not in absolute_form


def test_the_report_folder_is_portable_attachments_included(tmp_path):
    write_folder(tmp_path, _dossier(roots=ROOTS),
                 {"app.log": f"wrote /scratch/lockkit-verify-x1/app/out.npy with {SHA}\n"},
                 NO_SECRETS)
    assert (tmp_path / "app.log").read_text() == f"wrote <tmp>/app/out.npy with {SHA}\n"
    doc = json.loads((tmp_path / "dossier.json").read_text())
    assert doc["roots"] == ROOTS and doc["lock"].startswith("<project>/")
    assert (tmp_path / "dossier.md").read_text().count("/srv/proj") == 2  # project, wheelhouse


def test_the_report_folder_is_a_root_listed_after_the_runs_own_and_absolute_drops_it():
    """Issue 36: ``--report-dir /out/r --junit /out/r/junit.xml`` is written ``<report>``;
    the roots keep their reading order (the run's folders, then the report folder, then
    lockkit's own), and ``--absolute-paths`` writes the folder back as it was given."""
    command = ("lockkit", "verify", "--report-dir", "/out/r", "--junit", "/out/r/junit.xml")
    own = named_roots(tools="/opt/lk/bin", lockkit="/opt/lk/lib/lockkit")
    d = with_report(replace(_dossier(roots={**ROOTS, **own}), command_line=command), "/out/r")
    assert list(d.roots) == [*ROOTS, "report", "lockkit", "tools"]
    assert d.roots["report"] == "/out/r"
    assert d.to_dict()["command_line"][2:] == ["--report-dir", "<report>", "--junit",
                                               "<report>/junit.xml"]
    assert absolute(d).to_dict()["command_line"] == list(command)
    assert with_report(_dossier(), "/out/r").roots == {}  # the absolute form stays so


@pytest.mark.parametrize("roots", [["/srv/proj"], {"project": 1}])
def test_malformed_roots_are_refused_naming_the_key(roots):
    doc = _dossier().to_dict()
    with pytest.raises(SchemaError, match="^roots: expected an object of name -> absolute"):
        Dossier.from_dict({**doc, "roots": roots})
