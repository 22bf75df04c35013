"""lockkit._internal.redact: each project conceals its own ``${VAR}`` values, no registry.

Two projects read in one process (a test run, a library caller, two commands in a row) each
hand their own :class:`Secrets` to what prints or writes: a value one of them filled in is
concealed in its own output and never turns up as a placeholder in the other's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockkit._internal.redact import NO_SECRETS, Secrets, masked
from lockkit.cli import main
from lockkit.config.project import load_project

ALPHA = "alpha-t0ken-91c2"  # ${LK_ALPHA_TOKEN}: project A's secret
BRAVO = "bravo-t0ken-07ee"  # ${LK_BRAVO_TOKEN}: project B's secret


def _project(root: Path, variable: str, requirements: str) -> Path:
    root.mkdir()
    (root / "lockkit.toml").write_text(
        'platforms = ["linux-cpu"]\n'
        f'index-url = "http://deploy:${{{variable}}}@127.0.0.1:9/simple"\n')
    (root / "requirements.in").write_text(requirements)
    return root


@pytest.fixture
def tokens(monkeypatch):
    monkeypatch.setenv("LK_ALPHA_TOKEN", ALPHA)
    monkeypatch.setenv("LK_BRAVO_TOKEN", BRAVO)


def test_a_value_is_put_back_in_every_form_a_message_holds_it():
    secrets = Secrets.of({"${T}": "a/b c\\d"})
    for form in ("a/b c\\d", "a%2Fb%20c%5Cd", "a/b%20c%5Cd", "a/b c\\\\d"):
        assert secrets.conceal(f"<{form}>") == "<${T}>", form
    assert secrets.redact("http://u:a/b c\\d@h/") == "http://***@h/"
    assert Secrets.of({"${SHORT}": "cpu"}).conceal("cpu") == "cpu"  # too short to be one
    assert NO_SECRETS.conceal("a/b c\\d") == "a/b c\\d"
    assert masked("see https://u:p@h.test/x and http://h.test/") == \
        "see https://***@h.test/x and http://h.test/"
    assert "a/b c" not in repr(secrets) and "a/b c" not in str(secrets)


def test_two_projects_loaded_in_one_process_conceal_only_their_own_values(tmp_path, tokens):
    """Library use: each project's secrets conceal its own value in what it renders; the
    other project's value is text like any other there (a registry would turn it into
    the other's placeholder, or leave it in after the other project was read)."""
    from lockkit.report import json as json_format
    from lockkit.report.model import Dossier

    a = load_project(_project(tmp_path / "a", "LK_ALPHA_TOKEN", "numpy\n"))
    b = load_project(_project(tmp_path / "b", "LK_BRAVO_TOKEN", "numpy\n"))
    d = Dossier(kind="verify", lockkit_version="0", started="2026-01-01T00:00:00Z",
                result="failed", steps=(), first_error=f"a {ALPHA} b {BRAVO}")
    shown = {name: json.loads(json_format.render(d, p.secrets))["first_error"]
             for name, p in (("a", a), ("b", b))}
    assert shown == {"a": f"a ${{LK_ALPHA_TOKEN}} b {BRAVO}",
                     "b": f"a {ALPHA} b ${{LK_BRAVO_TOKEN}}"}
    assert a.secrets != b.secrets and load_project(tmp_path / "a").secrets == a.secrets


def test_two_commands_in_one_process_each_print_their_own_projects_placeholders(
        tmp_path, tokens, capsys):
    """The command line: project A's compile ends on a refused line holding its token,
    shown as ``${LK_ALPHA_TOKEN}``; then project B's, whose refused line holds both
    tokens: B's own is concealed, A's (no secret of B's) is quoted as written, and B's
    output never names A's variable."""
    a = _project(tmp_path / "a", "LK_ALPHA_TOKEN", f"numpy {ALPHA}\n")
    b = _project(tmp_path / "b", "LK_BRAVO_TOKEN", f"numpy {ALPHA} {BRAVO}\n")
    assert main(["compile", "--project", str(a)]) == 2
    first = capsys.readouterr().err
    assert "numpy ${LK_ALPHA_TOKEN}" in first and ALPHA not in first
    assert main(["compile", "--project", str(b)]) == 2
    second = capsys.readouterr().err
    assert f"numpy {ALPHA} ${{LK_BRAVO_TOKEN}}" in second, second
    assert BRAVO not in second and "LK_ALPHA_TOKEN" not in second


def test_a_token_in_the_projects_own_platform_file_is_concealed_in_its_output(
        tmp_path, monkeypatch, capsys):
    """A private PyTorch index in the project's platforms/ folder holds a ${VAR} too; its
    value is known from the moment the project loads, so an error naming the URL (the
    index is unreachable) shows the placeholder."""
    monkeypatch.setenv("LK_PT_TOKEN", "pt-t0ken-5a1d")
    root = _project(tmp_path / "p", "LK_ALPHA_TOKEN", "torch\n")
    (root / "lockkit.toml").write_text('platforms = ["linux-private"]\n')
    (root / "platforms").mkdir()
    (root / "platforms" / "linux-private.toml").write_text(
        'description = "Linux x86_64, CPU, a private index"\nos = "linux"\n'
        'arch = "x86_64"\npython = "3.11"\npython-platform = "x86_64-unknown-linux-gnu"\n'
        '[backend]\nkind = "cpu"\n[torch]\n'
        'index = "http://ci:${LK_PT_TOKEN}@127.0.0.1:9/whl/cpu"\n'
        'packages = ["torch"]\n')
    project = load_project(root)
    assert project.secrets.redact("GET http://127.0.0.1:9/x?t=pt-t0ken-5a1d") == (
        "GET http://127.0.0.1:9/x?t=${LK_PT_TOKEN}")
    main(["compile", "--project", str(root)])
    out = capsys.readouterr()
    assert "pt-t0ken-5a1d" not in out.out + out.err
