"""Sphinx configuration: Markdown pages (MyST-Parser), the command reference generated from
lockkit's parser (``_ext/clidoc.py``), and a strict build: ``nox -s docs`` runs
``sphinx-build -W --keep-going -n``, so a broken link or reference fails it."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # lockkit from this checkout, installed or not

from lockkit import __version__  # noqa: E402

project = "lockkit"
author = "the lockkit authors"
copyright = "the lockkit authors"
release = version = __version__

extensions = ["myst_parser", "clidoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links to headings down to ###
nitpicky = True
# No smart quotes: docutils' "smartquotes" turned the flags in the generated reference and
# the exit-code table into en dashes (``--check`` shown as an en dash and ``check``) and
# the quotes around commands into curly ones, and a pasted command broke. Pages say what
# they mean with the characters they are written with.
smartquotes = False

try:
    import furo  # noqa: F401

    html_theme = "furo"
except ImportError:  # the default theme, when furo does not install
    html_theme = "alabaster"
html_title = f"lockkit {__version__}"
