"""A ``${VAR}`` index-url that names another index makes the lock stale (issue 31).

The lock records the index-url as written (``${IDX}``) and, for a URL with a ``${VAR}``
outside its user info, the sha256 of what it expands to, user info removed: the value
itself, and any credential, is never written or printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.lock.freshness import fingerprint

LOCK = Path("locks") / "pylock.linux-cpu.toml"


def compile_(project: Path, *args: str) -> int:
    return main(["compile", "--project", str(project), "--platform", "linux-cpu", *args])


def check(project: Path, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = compile_(project, "--check")
    err = capsys.readouterr().err
    return code, next(ln for ln in err.splitlines() if ln.startswith("linux-cpu:")), err


@pytest.fixture
def var_project(project, indexes, monkeypatch):
    """The project with ``index-url = "${IDX}"``, IDX naming the default index with a
    user and token (the loopback index asks for none)."""
    config = project / "lockkit.toml"
    config.write_text(re.sub(r'(?m)^index-url = ".*"$', 'index-url = "${IDX}"',
                             config.read_text()))
    monkeypatch.setenv("IDX", indexes.url.replace("http://", "http://alice:first-token@")
                       + "/simple")
    assert compile_(project) == 0
    return project


def test_a_var_index_url_naming_another_index_makes_the_lock_stale(var_project, indexes,
                                                                   capsys, monkeypatch):
    """Before: only the literal ${IDX} was recorded, so the lock stayed fresh."""
    text = (var_project / LOCK).read_text()
    assert 'index-url = "${IDX}"' in text and 'index-url-digest = "sha256:' in text
    assert "first-token" not in text and "alice" not in text
    assert check(var_project, capsys)[:2] == (0, f"linux-cpu: fresh ({LOCK})")
    # a new token in the user info is the same index
    monkeypatch.setenv("IDX", indexes.url.replace("http://", "http://alice:other-token@")
                       + "/simple")
    assert check(var_project, capsys)[:2] == (0, f"linux-cpu: fresh ({LOCK})")
    # another index behind the same variable
    monkeypatch.setenv("IDX", indexes.url + "/other/simple")
    code, line, err = check(var_project, capsys)
    assert code == 1
    assert line == (f"linux-cpu: stale ({LOCK}): index-url changed (its ${{IDX}} now "
                    "expands to another URL)")
    assert indexes.url not in err and "token" not in err and "sha256:" not in err


def test_a_var_index_url_not_set_is_not_fresh_and_says_so(var_project, capsys, monkeypatch):
    monkeypatch.delenv("IDX")
    code, line, _ = check(var_project, capsys)
    assert code == 1
    assert line == (f"linux-cpu: stale ({LOCK}): index-url: ${{IDX}} is not set here, so "
                    "the index it names cannot be compared with the lock's")


def test_a_lock_from_before_the_digest_reads_as_stale_saying_why(var_project, indexes,
                                                                 capsys):
    """A ${VAR} lock written before the digest was recorded is stale, saying why (a
    recompile makes it fresh again); a literal index-url records no digest, so no other
    lock's fingerprint moved."""
    path = var_project / LOCK
    text = path.read_text()
    digest_line = re.search(r'(?m)^index-url-digest = "sha256:[0-9a-f]{64}"\n', text)
    assert digest_line is not None
    old = tomllib.loads(text)["tool"]["lockkit"]
    record = old["inputs"]
    del record["options"]["index-url-digest"]
    path.write_text(text.replace(digest_line[0], "").replace(old["inputs-fingerprint"],
                                                               fingerprint(record)))
    code, line, _ = check(var_project, capsys)
    assert code == 1
    assert line == (f"linux-cpu: stale ({LOCK}): index-url: this lock does not record what "
                    "its ${IDX} expanded to (written by an older lockkit)")
    assert compile_(var_project) == 0
    assert check(var_project, capsys)[0] == 0
    config = var_project / "lockkit.toml"
    config.write_text(config.read_text().replace('"${IDX}"', f'"{indexes.url}/simple"'))
    assert compile_(var_project) == 0
    assert "index-url-digest" not in path.read_text()
