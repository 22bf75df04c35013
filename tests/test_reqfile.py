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
