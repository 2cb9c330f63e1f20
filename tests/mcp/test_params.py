"""Each tool's parameters record against the JSON Schema it advertises, and the reader.

A handler takes its record (service/mcp/params.py), so a property the schema lists but
the record lacks would be silently dropped, and a record field the schema lacks could
never be set. These tests keep the two one to one, with compatible types, and check that
a field without a default is one the dispatcher always fills (required, or defaulted by
the schema).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest

from service.mcp import tools
from service.mcp.params import MissingParameter, NoParams, ParamsReader
from service.mcp.registry import ToolSpec

SPECS = tools.all_tools()
JSON_TYPES: dict[str, tuple[Any, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (float,),
    "boolean": (bool,),
    "array": (tuple,),
    "object": (dict,),
}


def _without_none(annotation: Any) -> tuple[Any, bool]:
    """``(the annotation without None, whether None was allowed)``."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        rest = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return rest[0], len(rest) < len(typing.get_args(annotation))
    return annotation, False


def _python_type(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is not None:
        return origin
    return dict if dataclasses.is_dataclass(annotation) else annotation


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_tools_record_has_exactly_the_schemas_properties(spec: ToolSpec[Any]) -> None:
    fields = {field.name for field in dataclasses.fields(spec.params)}
    assert fields == set(spec.input_schema.get("properties", {}))


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_field_has_the_schemas_type(spec: ToolSpec[Any]) -> None:
    hints = typing.get_type_hints(spec.params)
    for name, prop in spec.input_schema.get("properties", {}).items():
        annotation, _ = _without_none(hints[name])
        expected = JSON_TYPES[prop["type"]]
        assert _python_type(annotation) in expected, (spec.name, name, annotation)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_a_field_without_a_default_is_always_filled_and_optional_ones_default_to_none(
    spec: ToolSpec[Any],
) -> None:
    schema = spec.input_schema
    required = set(schema.get("required", []))
    hints = typing.get_type_hints(spec.params)
    for field in dataclasses.fields(spec.params):
        prop = schema["properties"][field.name]
        filled = field.name in required or "default" in prop
        has_default = field.default is not dataclasses.MISSING
        if filled:
            assert not has_default, (spec.name, field.name)
        else:
            assert has_default, (spec.name, field.name)
            _, nullable = _without_none(hints[field.name])
            assert nullable or field.default == "", (spec.name, field.name)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_record_is_frozen_with_slots_and_keyword_only(spec: ToolSpec[Any]) -> None:
    params = spec.params
    assert dataclasses.is_dataclass(params)
    assert params.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert hasattr(params, "__slots__")
    assert all(field.kw_only for field in dataclasses.fields(params))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Turn:
    role: str
    content: str = ""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Sample:
    name: str
    tags: tuple[str, ...]
    turns: tuple[_Turn, ...]
    first: _Turn | None = None
    limit: int | None = None


def test_the_reader_reads_nested_records_arrays_as_tuples_and_leaves_defaults() -> None:
    read = ParamsReader(_Sample)
    sample = read(
        {
            "name": "a",
            "tags": ["x", "y"],
            "turns": [{"role": "user", "content": "hi"}, {"role": "agent"}],
            "first": {"role": "user"},
        }
    )
    assert sample == _Sample(
        name="a",
        tags=("x", "y"),
        turns=(_Turn(role="user", content="hi"), _Turn(role="agent")),
        first=_Turn(role="user"),
    )
    assert read({"name": "b", "tags": [], "turns": [], "first": None}).first is None


def test_the_reader_refuses_a_field_with_no_value_and_no_default() -> None:
    with pytest.raises(MissingParameter, match=r"_Sample\.tags"):
        ParamsReader(_Sample)({"name": "a", "turns": []})


def test_a_tool_without_parameters_reads_an_empty_record() -> None:
    assert ParamsReader(NoParams)({}) == NoParams()
