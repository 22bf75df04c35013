"""Deep nesting in any TOML or JSON lockkit reads is one line naming the file, exit 2.

Python's parsers descend once per level, so ``[[[[...`` a hundred thousand deep (100 KB)
was a RecursionError traceback and exit 1 wherever lockkit read a file: its config, a
platform file, a lock, an archive's manifest, a ``diff`` input. Each case runs the real
CLI on such a file.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from lockkit._internal.parse import parse_json, parse_toml
from lockkit.errors import ConfigError, DiffError
from tests.support.project import lockkit

DEPTH = 100_000
DEEP_TOML = "deep = " + "[" * DEPTH + "]" * DEPTH + "\n"
DEEP_JSON = "[" * DEPTH + "]" * DEPTH


def test_parse_toml_and_json_turn_deep_nesting_into_one_config_error():
    with pytest.raises(ConfigError, match=r"^here\.toml: TOML nested too deeply"):
        parse_toml(DEEP_TOML, "here.toml")
    with pytest.raises(ConfigError, match=r"^there\.json: JSON nested too deeply"):
        parse_json(DEEP_JSON, "there.json")
    inline = "t = " + "{a = " * DEPTH + "1" + "}" * DEPTH + "\n"
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_toml(inline, "inline.toml")
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_json('{"a": ' * DEPTH + "1" + "}" * DEPTH, "object.json")


def test_a_caller_with_its_own_error_raises_it_with_the_same_line(tmp_path):
    from lockkit.env.install import _check_wheelhouse
    from lockkit.report.diff import load_side
    from lockkit.steps.engine import StepFailed

    (tmp_path / "a.json").write_text(DEEP_JSON)
    with pytest.raises(DiffError, match=r"a\.json: JSON nested too deeply") as err:
        load_side(tmp_path / "a.json")
    assert type(err.value) is DiffError and err.value.hint is None  # diff's own hint shows
    (tmp_path / "manifest.json").write_text(DEEP_JSON)
    with pytest.raises(StepFailed, match=rf"^{tmp_path}: JSON nested too deeply"):
        _check_wheelhouse(tmp_path, None)  # type: ignore[arg-type]  # read before the lock


def test_parse_keeps_decode_errors_and_shallow_documents_as_they_were():
    assert parse_toml("a = [[1], [2]]\n", "x") == {"a": [[1], [2]]}
    assert parse_json(b'{"a": [[1]]}', "x") == {"a": [[1]]}
    with pytest.raises(json.JSONDecodeError):
        parse_json("[1,", "x")


def test_a_probe_printing_deep_json_is_a_probe_failure_not_a_traceback():
    from lockkit.probes import probe

    data, why = probe._parse(DEEP_JSON.encode() + b"\n")
    assert data is None and why is not None and why.startswith("the probe printed no JSON")


def _project(root: Path, config: str = 'platforms = ["linux-cpu"]\n') -> Path:
    (root / "requirements.in").write_text("demo\n")
    (root / "lockkit.toml").write_text(config)
    return root


def _deep_lockkit_toml(root: Path) -> tuple[list[str], str]:
    _project(root, 'platforms = ["linux-cpu"]\n' + DEEP_TOML)
    return ["compile", "--check", "--project", str(root)], "lockkit.toml"


def _deep_pyproject(root: Path) -> tuple[list[str], str]:
    (root / "requirements.in").write_text("demo\n")
    (root / "pyproject.toml").write_text('[tool.lockkit]\nplatforms = ["linux-cpu"]\n' + DEEP_TOML)
    return ["compile", "--check", "--project", str(root)], "pyproject.toml"


def _deep_platform_file(root: Path) -> tuple[list[str], str]:
    _project(root, 'platforms = ["mine"]\n')
    (root / "platforms").mkdir()
    (root / "platforms" / "mine.toml").write_text('name = "mine"\n' + DEEP_TOML)
    return ["compile", "--check", "--project", str(root)], "mine.toml"


def _deep_lock(root: Path) -> tuple[list[str], str]:
    _project(root)
    (root / "locks").mkdir()
    (root / "locks" / "pylock.linux-cpu.toml").write_text('lock-version = "1.0"\n' + DEEP_TOML)
    return ["compile", "--check", "--project", str(root)], "pylock.linux-cpu.toml"


def _deep_manifest(root: Path) -> tuple[list[str], str]:
    archive = root / "linux-cpu.wheelhouse.tar"
    with tarfile.open(archive, "w") as tar:
        for name, data in (("manifest.json", DEEP_JSON.encode()), ("SHA256SUMS", b"")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return ["wheelhouse", "unpack", str(archive), "--out", str(root / "out")], "manifest.json"


def _deep_diff_input(root: Path) -> tuple[list[str], str]:
    (root / "a.json").write_text(DEEP_JSON)
    (root / "b.json").write_text("{}")
    return ["diff", str(root / "a.json"), str(root / "b.json")], "a.json"


@pytest.mark.parametrize("make", [_deep_lockkit_toml, _deep_pyproject, _deep_platform_file,
                                  _deep_lock, _deep_manifest, _deep_diff_input],
                         ids=lambda f: f.__name__.removeprefix("_deep_"))
def test_deep_nesting_in_an_input_is_one_line_naming_it_and_exit_2(make, tmp_path):
    argv, name = make(tmp_path)
    result = lockkit(*argv)
    assert "Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert name in first and "nested too deeply" in first, result.stderr
    assert not (tmp_path / "out").exists()
