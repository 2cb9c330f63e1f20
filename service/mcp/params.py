"""A tool's parameters as a frozen dataclass, read once per call from its validated arguments.

Every tool declares a ``Params`` dataclass (``kw_only``, ``frozen``, ``slots``) whose
fields are the properties of the JSON Schema it advertises, one to one, and its handler
takes that record instead of a dict. The dispatcher validates the arguments against the
schema, applies the schema's defaults, then reads them into the record here, so a handler
never indexes a dict and mypy checks every use of a parameter.

The reading is planned once per class (at registration, not per call) from the field
annotations:

- a nested dataclass reads a JSON object (``store``'s ``message``);
- ``tuple[X, ...]`` reads a JSON array, each item as ``X`` (a dataclass item is read
  as above);
- ``X | None`` passes ``None`` through (an optional property left out);
- anything else (``str``, ``int``, ``bool``, ``float``, ``JsonObject``) is taken as is:
  the schema has already checked it.

A property the call left out takes the field's default; a field without one must be
required by the schema or carry a schema default (``tests/mcp/test_params.py`` checks
each tool's record against its schema).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

P = TypeVar("P")
Convert = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _optional(convert: Convert) -> Convert:
    def read(value: Any) -> Any:
        return None if value is None else convert(value)

    return read


def _items(convert: Convert) -> Convert:
    def read(value: Any) -> tuple[Any, ...]:
        return tuple(convert(item) for item in value)

    return read


def converter(annotation: Any) -> Convert:
    """How a JSON value becomes a value of ``annotation`` (see the module docstring)."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return ParamsReader(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        rest = [arg for arg in args if arg is not type(None)]
        inner = converter(rest[0]) if len(rest) == 1 else _identity
        return inner if inner is _identity else _optional(inner)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _items(converter(args[0]))
    return _identity


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    convert: Convert
    has_default: bool


class ParamsReader(Generic[P]):
    """Reads a mapping of validated arguments into a ``cls`` record (planned once)."""

    def __init__(self, cls: type[P]) -> None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} is not a dataclass")
        hints = typing.get_type_hints(cls)
        self.cls = cls
        self._fields = tuple(
            _Field(
                field.name,
                converter(hints[field.name]),
                field.default is not dataclasses.MISSING
                or field.default_factory is not dataclasses.MISSING,
            )
            for field in dataclasses.fields(cls)
        )

    def __call__(self, args: Mapping[str, Any]) -> P:
        values: dict[str, Any] = {}
        for field in self._fields:
            if field.name in args:
                value = args[field.name]
                values[field.name] = value if field.convert is _identity else field.convert(value)
            elif not field.has_default:
                raise MissingParameter(self.cls.__name__, field.name)
        return self.cls(**values)


class MissingParameter(TypeError):
    """A parameter with neither a value nor a default: the record and the schema disagree
    (a bug of the tool's declaration, never the caller's)."""

    def __init__(self, record: str, name: str) -> None:
        super().__init__(f"{record}.{name} has no value and no default")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NoParams:
    """The record of a tool that takes no parameters."""
