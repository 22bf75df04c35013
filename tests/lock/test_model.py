"""The lock as one typed value (lockkit.lock.model): [tool.lockkit] round-trips through
LockMeta, a malformed table is one line naming the file and each bad key, and every
command reads and parses each lock once (issue 34: build parsed it 3 times, pack 3,
verify 4)."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.errors import ConfigError
from lockkit.lock.freshness import Verdict, read_lock, read_tables
from lockkit.lock.meta import Backend, LockMeta, with_meta
from lockkit.lock.model import Lock, LockFile, LockTables, PackageTable, foreign_tables
from tests.support.wheelhouse import compiled

TABLE = {  # as compile writes it, in its order
    "platform": "linux-cpu", "platform-fingerprint": "sha256:" + "1" * 64,
    "backend": {"kind": "cpu", "version": ""}, "torch-index": "https://example.invalid/cpu",
    "python": "3.11", "lock-format": 2, "inputs-fingerprint": "sha256:" + "2" * 64,
    "lockkit-version": "0.1", "uv-version": "0.9.0", "hashed-by-lockkit": ["a-1.tar.gz"],
    "packages-digest": "sha256:" + "3" * 64,
    "inputs": {"requirements": {"requirements.in": ["numpy"]}, "options": {"python": "3.11"}},
}

HEAD = ('lock-version = "1.0"\ncreated-by = "lockkit"\nrequires-python = "==3.11.*"\n'
        "packages = []\n")


def test_the_table_round_trips_in_compiles_order():
    meta = LockMeta.from_table(TABLE, "pylock.toml")
    assert meta.platform == "linux-cpu" and meta.lock_format == 2
    assert meta.backend == Backend(kind="cpu", version="")
    assert meta.hashed_by_lockkit == ("a-1.tar.gz",)
    assert meta.to_table() == TABLE and list(meta.to_table()) == list(TABLE)
    assert LockMeta.from_table(meta.to_table(), "pylock.toml") == meta


def test_a_newer_lockkits_keys_are_kept_and_a_foreign_lock_has_none():
    meta = LockMeta.from_table({"platform": "linux-cpu", "new-key": [1]}, "p")
    assert meta.extra == {"new-key": [1]}
    assert meta.to_table() == {"platform": "linux-cpu", "new-key": [1]}
    assert LockMeta.from_table(None, "p") == LockMeta() and LockMeta().to_table() == {}


def test_the_lock_file_reads_back_with_its_bytes_sha256(tmp_path):
    path = tmp_path / "pylock.linux-cpu.toml"
    doc = with_meta(tomllib.loads(HEAD), LockMeta.from_table(TABLE, "t"))
    import tomli_w

    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    lock = Lock.read(path)
    assert lock.meta.to_table() == TABLE and lock.python == "3.11"
    assert lock.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert lock.text == path.read_text(encoding="utf-8") and lock.pylock.packages == []
    with pytest.raises(ConfigError, match="lock is for platform 'linux-cpu', not 'mac'"):
        lock.of_platform("mac")


@pytest.mark.parametrize("tool,said", [
    ('python = 3.12\nlock-format = "2"\n',
     ['tool.lockkit.python: expected a version such as "3.12", got 3.12',
      "tool.lockkit.lock-format: expected an integer, got '2'"]),
    ('backend = "cpu"\n', ["tool.lockkit.backend: expected a table with kind and version"]),
    ('backend = {kind = "tpu", version = "1"}\n',
     ["tool.lockkit.backend: expected a table with kind and version, kind one of cpu, cuda, "
      "rocm, xpu, mps, got {'kind': 'tpu', 'version': '1'}"]),
    ('hashed-by-lockkit = "x.whl"\n', ["tool.lockkit.hashed-by-lockkit: expected a list"]),
    ('platform = 1\ninputs = "x"\n', ["tool.lockkit.platform: expected a platform name",
                                       "tool.lockkit.inputs: expected a table"]),
], ids=["python-and-format", "backend", "backend-kind", "hashed", "platform-and-inputs"])
def test_a_malformed_table_is_one_line_naming_the_file_and_each_key(tmp_path, tool, said):
    path = tmp_path / "pylock.linux-cpu.toml"
    path.write_text(HEAD + "[tool.lockkit]\n" + tool, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        Lock.read(path)
    msg = str(caught.value)
    assert "\n" not in msg and msg.startswith(f"{path}: ")
    assert all(s in msg for s in said), msg
    assert caught.value.exit_code == 2 and caught.value.hint == "compile the lock again"


def test_a_table_that_is_no_table_is_named(tmp_path):
    path = tmp_path / "pylock.linux-cpu.toml"
    path.write_text(HEAD + "tool = {lockkit = 1}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tool\.lockkit: not a table \(1\)"):
        Lock.read(path)


def test_a_malformed_table_stops_a_command_with_exit_2(project, indexes, tmp_path, capsys):
    lock = compiled(project)
    text = lock.read_text().replace('python = "3.11"', "python = 3.11", 1)
    assert text != lock.read_text()
    lock.write_text(text)
    capsys.readouterr()
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", "linux-cpu",
                 "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert f"{lock}: tool.lockkit.python: expected a version" in err and "Traceback" not in err


_V2 = "pylock version 2.0 is not supported"  # packaging's words for lock-version 2.0


def test_the_tables_are_read_without_pep_751_and_the_lock_with_it(tmp_path):
    """LockTables.read (what compile --check judges) does not validate PEP 751; Lock.read,
    which every command that uses the packages reads, refuses such a lock in one line."""
    path = tmp_path / "pylock.linux-cpu.toml"
    path.write_text(HEAD.replace('"1.0"', '"2.0"') + '[tool.lockkit]\npython = "3.11"\n',
                    encoding="utf-8")
    tables = LockTables.read(path)
    assert tables.data["lock-version"] == "2.0" and tables.meta.python == "3.11"
    assert tables.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(ConfigError) as caught:
        Lock.read(path)
    assert str(caught.value) == f"{path}: invalid PEP 751 lock: {_V2}"
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("command,code", [
    (["wheelhouse", "build", "--cache-dir", "{tmp}/cache"], 2),
    (["export"], 2),
    (["cache", "info", "--cache-dir", "{tmp}/cache"], 2),
    # the rebuild's first step reads the lock, and fails as that step, with the same line
    (["verify", "--no-gpu", "--cache-dir", "{tmp}/cache", "--report-dir", "{tmp}/report"], 1),
    (["sync", "--venv", "{tmp}/venv"], 1),
    # --check finds it fresh (its digests hold); --locked cannot compare with it
    (["compile", "--locked"], 2),
], ids=["wheelhouse build", "export", "cache info", "verify", "sync", "compile --locked"])
def test_a_command_that_uses_the_packages_refuses_an_invalid_pep_751_lock(
        project, indexes, tmp_path, capsys, command, code):
    """The PEP 751 validation compile --check spares: every command that takes the
    packages from the lock still refuses one that is not PEP 751, in one line."""
    lock = compiled(project)
    lock.write_text(lock.read_text().replace('lock-version = "1.0"', 'lock-version = "2.0"'))
    capsys.readouterr()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in command]
    if argv[0] != "cache":
        argv += ["--platform", "linux-cpu"]
    assert main([*argv, "--project", str(project)]) == code
    err = capsys.readouterr().err
    said = f"{lock}: invalid PEP 751 lock: {_V2}"
    assert (f"lockkit: error: {said}\n" if code == 2 else said) in err, err
    assert "Traceback" not in err
    if argv[0] == "compile":  # the gate's verdict on the same lock: fresh
        assert main(["compile", "--check", "--platform", "linux-cpu", "--project",
                     str(project)]) == 0


# --- one parse per lock per command ------------------------------------------------------

@contextlib.contextmanager
def parses_of(lock: Path) -> Iterator[list[str]]:
    """Each TOML parse of *lock*'s text while the block runs (every reader goes through
    ``tomllib.loads``, however it names it)."""
    text, real, seen = lock.read_text(encoding="utf-8"), tomllib.loads, []

    def counting(s: str, /, **kw):
        if s == text:
            seen.append(s)
        return real(s, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tomllib, "loads", counting)
        yield seen


def test_each_command_parses_its_lock_once(project, indexes, tmp_path, capsys):
    lock = compiled(project)
    cache, base = str(tmp_path / "cache"), ["--project", str(project)]
    counts = {}
    with parses_of(lock) as seen:  # no wheelhouse yet: verify fetches the lock's files
        main(["verify", *base, "--platform", "linux-cpu", "--no-gpu", "--cache-dir", cache,
              "--report-dir", str(tmp_path / "report")])
    counts["verify (fetching)"] = len(seen)
    runs = {
        "wheelhouse build": ["wheelhouse", "build", *base, "--platform", "linux-cpu",
                             "--cache-dir", cache],
        "verify": ["verify", *base, "--platform", "linux-cpu", "--no-gpu",
                   "--report-dir", str(tmp_path / "report2")],
        "sync": ["sync", *base, "--platform", "linux-cpu", "--venv", str(tmp_path / "venv")],
        "wheelhouse pack": ["wheelhouse", "pack", *base, "--platform", "linux-cpu",
                            "-o", str(tmp_path / "wh.tar")],
        "wheelhouse unpack --lock": ["wheelhouse", "unpack", str(tmp_path / "wh.tar"),
                                     "--lock", str(lock), "--out", str(tmp_path / "out")],
        "wheelhouse sbom": ["wheelhouse", "sbom", *base, "--platform", "linux-cpu"],
        "export": ["export", *base, "--platform", "linux-cpu"],
        "cache info": ["cache", "info", *base, "--cache-dir", cache],
        "compile --check": ["compile", *base, "--check"],
        "compile --locked": ["compile", *base, "--locked"],
        "diff": ["diff", str(lock), str(lock)],
    }
    for name, argv in runs.items():
        with parses_of(lock) as seen:
            code = main(argv)
        counts[name] = len(seen)
        if name != "verify":  # verify's verdict is the fake torch's; its reads are counted
            assert code == 0, (name, capsys.readouterr().err)
    assert counts == {name: 2 if name == "diff" else 1 for name in counts}, counts


# --- the lock compile builds: Lock.built ---------------------------------------------------

URL = "https://files.example.invalid/packages"
MARKER = "sys_platform == 'linux' and platform_machine == 'x86_64'"  # uv's quotes


def built(tmp_path: Path, *packages: PackageTable) -> Lock:
    return Lock.built(tmp_path / "pylock.linux-cpu.toml", environments=[MARKER],
                      packages=list(packages), meta=LockMeta.from_table(TABLE, "t"))


def numpy(wheel: str = "numpy-2.1.0-cp311-cp311-linux_x86_64.whl") -> PackageTable:
    return {"name": "numpy", "version": "2.1.0", "index": "https://index.example.invalid/simple",
            "marker": "python_full_version >= '3.10'", "requires-python": ">=3.10, <4",
            "dependencies": [{"name": "six"}],
            "wheels": [{"name": wheel, "url": f"{URL}/{wheel}", "hashes": {"sha256": "a" * 64},
                        "size": 1234,
                        "upload-time": datetime(2024, 8, 18, 21, 42, 31, tzinfo=timezone.utc)}]}


def test_a_built_lock_is_what_reading_its_text_gives(tmp_path):
    """compile's Lock is the one every reader gets from the file it writes: the same data
    (dates and integers included), sha256, Pylock and [tool.lockkit]."""
    lock = built(tmp_path, numpy())
    lock.path.write_text(lock.text, encoding="utf-8")
    read = Lock.read(lock.path)
    assert read.data == lock.data and read.sha256 == lock.sha256 and read.meta == lock.meta
    assert read.pylock == lock.pylock and lock.pylock.packages[0].name == "numpy"
    assert lock.text.startswith("# Generated by lockkit; edit the inputs and recompile")
    assert lock.python == "3.11" and lock.data["requires-python"] == "==3.11.*"


def test_a_built_lock_keeps_the_text_and_order_a_pylock_would_change(tmp_path):
    """Why the text comes from the tables (Lock.built): packaging prints a marker with
    double quotes, sorts a specifier set and orders keys by its fields."""
    text = built(tmp_path, numpy()).text
    assert f'environments = [\n    "{MARKER}",\n]' in text
    assert "marker = \"python_full_version >= '3.10'\"" in text
    assert 'requires-python = ">=3.10, <4"' in text
    assert text.index("index = ") < text.index("marker = ")
    from packaging.pylock import Pylock

    normalised = Pylock.from_dict(tomllib.loads(text)).to_dict()
    assert normalised["environments"] != [MARKER]  # what to_dict() would have written
    assert list(normalised["packages"][0])[:3] == ["name", "version", "marker"]


def test_a_built_lock_that_is_no_pep_751_lock_is_refused(tmp_path):
    """A file whose name is another package's: refused as a read lock would be (compile
    says so as a guard failure and writes nothing)."""
    from packaging.pylock import PylockValidationError

    with pytest.raises(PylockValidationError, match="not consistent with package name"):
        built(tmp_path, numpy(wheel="scipy-1.0-py3-none-any.whl"))


def test_a_lock_found_once_is_judged_from_the_text_read_not_the_file_again(tmp_path):
    """compile reads the lock on disk once (LockFile) and judges that very text: a file
    changed after the reading is not seen, validated or not."""
    path = tmp_path / "pylock.linux-cpu.toml"
    path.write_text(with_text(HEAD, TABLE), encoding="utf-8")
    found = LockFile.read(path)
    path.write_text("not = [a lock", encoding="utf-8")
    tables, lock = read_tables(found), read_lock(found)
    assert isinstance(tables, LockTables) and isinstance(lock, Lock)
    assert tables.text == lock.text == found.text and lock.meta.platform == "linux-cpu"
    assert tables.sha256 == hashlib.sha256(str(found.text).encode()).hexdigest()
    gate = read_tables(path)  # --check reads the path itself: the file as it is now
    assert isinstance(gate, Verdict) and gate.status == "modified"
    assert "invalid TOML" in gate.detail
    assert read_tables(LockFile.read(tmp_path / "none.toml")) == Verdict(status="missing")


@pytest.mark.parametrize("make,said", [
    (lambda p: p.write_bytes(b"\xff\xfe"), "pylock.toml: not a TOML file: 'utf-8' codec"),
    (lambda p: p.write_text("a = [", encoding="utf-8"), "pylock.toml: not a TOML file: "),
    (lambda p: p.write_text("a = " + "[" * 100_000, encoding="utf-8"),
     "pylock.toml: not a TOML file: pylock.toml: TOML nested too deeply to read"),
], ids=["not-utf8", "not-toml", "too-deep"])
def test_a_foreign_lock_that_is_no_toml_is_one_line_naming_it(tmp_path, make, said):
    path = tmp_path / "pylock.toml"
    make(path)
    with pytest.raises(ConfigError) as caught:
        foreign_tables(path, "pylock.toml")
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)


def test_a_foreign_lock_is_read_as_tables_and_a_link_or_nothing_is_none(tmp_path):
    path = tmp_path / "pylock.toml"
    assert foreign_tables(path, "pylock.toml") is None
    path.write_text(HEAD, encoding="utf-8")
    assert foreign_tables(path, "pylock.toml") == tomllib.loads(HEAD)
    (tmp_path / "link.toml").symlink_to(path)
    assert foreign_tables(tmp_path / "link.toml", "link.toml") is None


def with_text(head: str, table: dict) -> str:
    import tomli_w

    return head + tomli_w.dumps({"tool": {"lockkit": table}})
