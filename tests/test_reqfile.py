"""lockkit.reqfile's plain-requirement path prints what packaging prints.

Most requirement lines are a name and version clauses; reqfile normalises those without
importing packaging (~15 ms before compile can start uv). Every line here goes through
both ways: the plain path must give packaging's own ``str(Requirement)`` (name made
canonical, as reqfile does for every line), or leave the line to packaging.
"""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lockkit.reqfile import _plain_requirement, normalize_requirement

PLAIN = ["numpy", "NumPy", "Foo_Bar.baz", "torch==2.5.1", "torch==2.5.1+cpu",
         "torch == 2.5.1+cu126", "x>=1.0,<2", "x >= 1.0 , < 2", "x<2,>=1.0", "x>=1,>=1",
         "x==1.*", "x!=1.0.*", "x~=1.0", "x~=1.4.2", "x>1", "x<=01.2", "x!=2+local.1",
         "a1", "foo.whl"]
OTHERS = ["x[extra]>=1", "x; sys_platform == 'linux'", "x>=1.0.post1", "x==1.0rc1",
          "x===1.0", "x~=1", "x>1.*", "x<=1+cpu", "x==1.0+CPU", "x (>=1)", "x>=1 <2",
          "x==1!2.0", "x @ https://example.invalid/x-1-py3-none-any.whl", "x>=1.0.dev0",
          "x==", "x,>=1", "x >=1, ", "x[a,b]"]


def _by_packaging(spec: str) -> str:
    req = Requirement(spec)
    req.name = canonicalize_name(req.name)
    req.extras = {canonicalize_name(e) for e in req.extras}
    return str(req)


@pytest.mark.parametrize("spec", PLAIN)
def test_plain_lines_print_as_packaging_prints_them(spec):
    assert _plain_requirement(spec) == _by_packaging(spec)
    assert normalize_requirement(spec) == _by_packaging(spec)


@pytest.mark.parametrize("spec", OTHERS)
def test_every_other_line_is_left_to_packaging(spec):
    assert _plain_requirement(spec) is None
    try:
        expected = _by_packaging(spec)
    except Exception:  # noqa: BLE001 - packaging refuses it: so does reqfile
        with pytest.raises(ValueError):
            normalize_requirement(spec)
    else:
        if "@" not in spec:
            assert normalize_requirement(spec) == expected


def test_includes_nest_up_to_the_limit_and_no_deeper(tmp_path):
    """An explicit depth, walked without recursion: MAX_DEPTH files in a chain are read
    (in order, each once), one more is a ConfigError naming the file that includes it."""
    from lockkit.errors import ConfigError
    from lockkit.reqfile import MAX_DEPTH, flatten, read_tree

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
