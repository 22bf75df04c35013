"""The built docs site survives copy-paste (issue 42): docutils' "smartquotes" turned the
flags of the generated reference and the exit-code table into en dashes (``--check`` read
as an en dash and ``check``) and quotes around commands into curly ones. The site is built
here with CI's own command (``DOCS_BUILD`` in noxfile.py), into a temp folder."""

from __future__ import annotations

import ast
import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMART = "\u2013\u2014\u2018\u2019\u201c\u201d"  # en and em dash, curly single and double quotes

pytestmark = pytest.mark.slow


def _docs_build() -> list[str]:
    """noxfile.py's DOCS_BUILD, read from the file (nox need not be installed)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    found = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "DOCS_BUILD" for t in node.targets))
    return list(ast.literal_eval(found))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict[str, str]:
    """Every page of the built site: its path and its text (tags removed, entities read)."""
    out = tmp_path_factory.mktemp("site")
    command = _docs_build()
    assert command[0] == "sphinx-build" and command[-1] == "docs/_build/html", command
    subprocess.run([sys.executable, "-m", "sphinx", *command[1:-1], str(out)], cwd=ROOT,
                   check=True, capture_output=True, text=True)
    pages = {str(p.relative_to(out)): p.read_text() for p in out.rglob("*.html")}
    assert "reference/exit-codes.html" in pages and "reference/commands/compile.html" in pages
    return pages


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_no_flag_in_the_built_site_has_its_dashes_turned_into_one(site):
    """A dash glued to the word after it is a ``--flag`` (or ``-o``) that lost its hyphens."""
    turned = {(name, m[0]) for name, page in site.items()
              for m in re.finditer(r"\S*[\u2013\u2014][A-Za-z]\S*", _text(page))}
    assert not turned, sorted(turned)
    for flag in ("--check", "--find-links", "--locked"):
        assert any(flag in _text(page) for name, page in site.items()
                   if name.startswith("reference/")), flag


def test_no_quote_in_the_built_site_is_curled(site):
    """The pages are written with straight quotes: none may come out curled."""
    curled = {(name, m[0]) for name, page in site.items()
              for m in re.finditer(r".{0,30}[\u2018\u2019\u201c\u201d].{0,30}", _text(page))}
    assert not curled, sorted(curled)


def test_no_literal_or_command_in_the_built_site_holds_a_smart_character(site):
    """Code, command lines and the usage blocks: what a reader pastes."""
    literals = {(name, html.unescape(re.sub(r"<[^>]+>", "", m[1])))
                for name, page in site.items()
                for m in re.finditer(r"<(?:code|pre)[^>]*>(.*?)</(?:code|pre)>", page, re.S)}
    smart = sorted((name, text) for name, text in literals if set(text) & set(SMART))
    assert not smart, smart
    assert any("--check" in text for _, text in literals)
