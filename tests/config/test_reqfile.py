"""lockkit.config.reqfile reads requirement lines as packaging does.

Every requirement line goes through packaging: the normalised form is packaging's own
``str(Requirement)`` with the names made canonical, and a line packaging refuses is
refused (in lockkit's words: see the end of this file).
"""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lockkit.config.reqfile import normalize_requirement

LINES = ["numpy", "NumPy", "Foo_Bar.baz", "torch==2.5.1", "torch==2.5.1+cpu",
         "torch == 2.5.1+cu126", "x>=1.0,<2", "x >= 1.0 , < 2", "x<2,>=1.0", "x>=1,>=1",
         "x==1.*", "x!=1.0.*", "x~=1.0", "x~=1.4.2", "x>1", "x<=01.2", "x!=2+local.1",
         "a1", "foo.whl",
         "x[extra]>=1", "x; sys_platform == 'linux'", "x>=1.0.post1", "x==1.0rc1",
         "x===1.0", "x~=1", "x>1.*", "x<=1+cpu", "x==1.0+CPU", "x (>=1)", "x>=1 <2",
         "x==1!2.0", "x @ https://example.invalid/x-1-py3-none-any.whl", "x>=1.0.dev0",
         "x==", "x,>=1", "x >=1, ", "x[a,b]", "X[B_c,A]>=1; python_version >= '3.10'"]


def _by_packaging(spec: str) -> str:
    req = Requirement(spec)
    req.name = canonicalize_name(req.name)
    req.extras = {canonicalize_name(e) for e in req.extras}
    return str(req)


@pytest.mark.parametrize("spec", LINES)
def test_every_line_prints_as_packaging_prints_it(spec):
    try:
        expected = _by_packaging(spec)
    except Exception:  # noqa: BLE001 - packaging refuses it: so does reqfile
        with pytest.raises(ValueError):
            normalize_requirement(spec)
    else:
        if "@" in spec:  # a direct URL: lockkit locks from indexes
            with pytest.raises(ValueError, match="is a direct URL"):
                normalize_requirement(spec)
        else:
            assert normalize_requirement(spec) == expected


def test_includes_nest_up_to_the_limit_and_no_deeper(tmp_path):
    """An explicit depth, walked without recursion: MAX_DEPTH files in a chain are read
    (in order, each once), one more is a ConfigError naming the file that includes it."""
    from lockkit.config.reqfile import MAX_DEPTH, flatten, read_tree
    from lockkit.errors import ConfigError

    for i in range(MAX_DEPTH):
        (tmp_path / f"r{i}.txt").write_text(f"-c c.txt\npkg{i}\n-r r{i + 1}.txt\n")
    (tmp_path / f"r{MAX_DEPTH - 1}.txt").write_text(f"-c c.txt\npkg{MAX_DEPTH - 1}\n")
    (tmp_path / "c.txt").write_text("pkg0<2\n")
    files = read_tree(tmp_path / "r0.txt")
    assert [f.path.name for f in files] == \
        ["r0.txt", "c.txt"] + [f"r{i}.txt" for i in range(1, MAX_DEPTH)]
    assert flatten([tmp_path / "r0.txt"]) == ([f"pkg{i}" for i in range(MAX_DEPTH)],
                                              ["pkg0<2"])
    (tmp_path / f"r{MAX_DEPTH - 1}.txt").write_text(f"-r r{MAX_DEPTH}.txt\n")
    (tmp_path / f"r{MAX_DEPTH}.txt").write_text("last\n")
    for walk in (read_tree, lambda p: flatten([p])):
        with pytest.raises(ConfigError, match=f"r{MAX_DEPTH - 1}.txt: includes "
                                              f"r{MAX_DEPTH}.txt, which is more than"):
            walk(tmp_path / "r0.txt")


# --- a refused line explained in lockkit's words (issue 24) -------------------------------------

@pytest.mark.parametrize("line,why", [
    ("torch>=", "a version is missing after '>='"),
    ("numpy==banana", "'banana' is not a version"),
    ("torch>=2,<", "a version is missing after '<'"),
    ("torch=2.5", "'=' is not an operator; write '==2.5'"),
    ("torch 2.5", "'2.5' has no operator; write e.g. '==2.5'"),
    ("numpy >=2 <3", "'>=2 <3': separate version clauses with ','"),
    ("torch>=2.*", "'.*' is allowed after '==' and '!=' only, not after '>='"),
    ("torch>=2.5+cpu", "a local version ('+label') is allowed after '==' and '!=' only"),
    ("torch~=2", "'~=' needs a version of two parts or more, e.g. '~=2.0'"),
    ("torch[cuda>=2", "'[' opens a list of extras that no ']' closes"),
    ("torch ;", "nothing follows ';', where an environment marker was expected"),
    ("my package", "'package' after 'my' is not a version clause"),
], ids=lambda v: v if "'" not in v else None)
def test_a_bad_requirement_line_is_explained_naming_file_and_line(tmp_path, capsys, line, why):
    """Before: packaging's "Expected semicolon (after name with no version specifier)"."""
    from lockkit.cli import main

    reqs = tmp_path / "requirements.in"
    reqs.write_text(f"# the project\nrequests\n{line}\n")
    assert main(["compile", "--project", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"lockkit: error: {reqs}:3: {line!r}: {why}")
    assert "Expected" not in lines[0]
