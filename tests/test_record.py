"""lockkit._record: the frozen keyword-only records of the start-up path behave as the
``@dataclass(frozen=True, kw_only=True)`` classes they replace."""

from __future__ import annotations

import dataclasses

import pytest

from lockkit._record import FrozenRecordError, asdict, field, record, replace


@record
class Inner:
    kind: str
    version: str | None = None


@record
class Outer:
    name: str
    inner: Inner
    tags: tuple[str, ...] = ()
    table: dict[str, str] = field(default_factory=dict)
    after_default: int  # kw-only: a field without a default may follow one


@dataclasses.dataclass(frozen=True, kw_only=True)
class Twin:
    name: str
    inner: Inner
    tags: tuple[str, ...] = ()
    table: dict[str, str] = dataclasses.field(default_factory=dict)
    after_default: int


def make(**over: object) -> Outer:
    values: dict = {"name": "a", "inner": Inner(kind="cpu"), "after_default": 1, **over}
    return Outer(**values)


def test_keyword_only_with_defaults_and_fresh_factories():
    one, two = make(), make()
    assert one.tags == () and one.table == {} and one.inner.version is None
    assert one.table is not two.table  # made anew for each record
    with pytest.raises(TypeError):
        Outer("a", Inner(kind="cpu"), (), {}, 1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="after_default"):
        Outer(name="a", inner=Inner(kind="cpu"))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="nope"):
        Outer(name="a", inner=Inner(kind="cpu"), after_default=1, nope=2)  # type: ignore[call-arg]


def test_frozen_equal_hashable_and_repr_as_a_dataclass():
    one = make(tags=("x",))
    with pytest.raises(FrozenRecordError):
        one.name = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del one.name
    assert one == make(tags=("x",)) and one != make(tags=("y",))
    assert Inner(kind="cpu") != Twin(name="a", inner=Inner(kind="cpu"), after_default=1)
    assert hash(Inner(kind="cpu", version="1")) == hash(Inner(kind="cpu", version="1"))
    assert len({Inner(kind="cpu"), Inner(kind="cpu"), Inner(kind="rocm")}) == 2
    twin = Twin(name="a", inner=Inner(kind="cpu"), tags=("x",), after_default=1)
    assert repr(one).replace("Outer(", "Twin(") == repr(twin)


def test_replace_and_asdict_match_dataclasses():
    one = make(tags=("x",), table={"k": "v"})
    twin = Twin(name="a", inner=Inner(kind="cpu"), tags=("x",), table={"k": "v"},
                after_default=1)
    changed = replace(one, name="b")
    assert changed.name == "b" and changed.inner is one.inner and one.name == "a"
    with pytest.raises(TypeError, match="nope"):
        replace(one, nope=1)
    plain = asdict(one)
    assert plain == {**dataclasses.asdict(twin), "inner": {"kind": "cpu", "version": None}}
    plain["table"]["k"] = "changed"  # a copy: the record is untouched
    assert one.table == {"k": "v"}
    with pytest.raises(TypeError):
        asdict({"not": "a record"})
