"""Frozen keyword-only records for the start-up path, without importing ``dataclasses``.

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``): about 6 ms
of every command's start-up, more than reading a project's config and all its locks. The
modules every command imports (config, platforms, freshness, configcheck, resolve) declare
their records with :func:`record` instead: the same frozen, keyword-only class a
``@dataclass(frozen=True, kw_only=True)`` makes (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, assignment refused), fields from the class's own annotations in order,
defaults from class attributes or :func:`field`'s ``default_factory``. ``replace`` and
``asdict`` are the ``dataclasses`` functions of the same names, for records.

Type checkers see a dataclass (PEP 681 ``dataclass_transform``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["FrozenRecordError", "asdict", "field", "record", "replace"]

T = TypeVar("T")
_FIELDS = "__record_fields__"


class FrozenRecordError(AttributeError):
    """An assignment to a field of a record (as ``dataclasses.FrozenInstanceError``)."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A field whose default is made anew for each record (``dataclasses.field``)."""
    return _Factory(default_factory)  # type: ignore[return-value]


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[T], T]:
        return lambda decorated: decorated


def _frozen(self: Any, name: str, value: Any = None) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r} of {type(self).__name__}")


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
def record(cls: type[T]) -> type[T]:
    """Make *cls* a frozen keyword-only record of its annotated fields."""
    names = [n for n, kind in cls.__dict__.get("__annotations__", {}).items()
             if not str(kind).startswith(("ClassVar", "typing.ClassVar"))]
    defaults: dict[str, Any] = {}
    params, body = [], []
    for name in names:
        default = cls.__dict__.get(name, _FIELDS)
        if default is _FIELDS:
            params.append(name)
        else:
            defaults[name] = default
            params.append(f"{name}=_d[{name!r}]")
            if isinstance(default, _Factory):
                delattr(cls, name)
        if isinstance(default, _Factory):
            body.append(f"  _set(self, {name!r}, _d[{name!r}].make() "
                        f"if {name} is _d[{name!r}] else {name})")
        else:
            body.append(f"  _set(self, {name!r}, {name})")
    source = (f"def __init__(self, *, {', '.join(params)}):\n"
              + "\n".join(body or ["  pass"]) + "\n")
    scope: dict[str, Any] = {"_d": defaults, "_set": object.__setattr__}
    exec(source, scope)  # noqa: S102 - the dataclasses way: a real signature, no **kwargs
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"

    def values(self: Any) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in names)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    def __hash__(self: Any) -> int:
        return hash(values(self))

    for attr, value in (("__init__", init), ("__repr__", __repr__), ("__eq__", __eq__),
                        ("__hash__", __hash__), ("__setattr__", _frozen),
                        ("__delattr__", _frozen), (_FIELDS, tuple(names))):
        setattr(cls, attr, value)
    return cls


def asdict(obj: Any) -> dict[str, Any]:
    """*obj*'s fields as a dict, records inside it (also in lists, tuples, dicts) as
    dicts too, every container copied (``dataclasses.asdict``)."""
    if hasattr(type(obj), _FIELDS):
        return {n: _plain(getattr(obj, n)) for n in getattr(type(obj), _FIELDS)}
    raise TypeError(f"asdict() should be called on a record, not {type(obj).__name__}")


def _plain(value: Any) -> Any:
    if hasattr(type(value), _FIELDS):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


def replace(obj: T, **changes: Any) -> T:
    """A copy of record *obj* with *changes* (``dataclasses.replace``)."""
    names = getattr(type(obj), _FIELDS)
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    return type(obj)(**{n: changes.get(n, getattr(obj, n)) for n in names})
