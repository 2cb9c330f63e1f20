"""Parsing and validation of an operating-context TOML file (pure).

The format is CPersona's, strict on the shape of known keys (a typo'd value must be
visibly refused, never half-applied) and additive on unknown keys, which are ignored
and reported as warnings so a newer file still loads."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, NamedTuple, cast

from service.errors import InvalidInput
from service.memory.operating_context.model import (
    _KNOWN_KEYS,
    AUTO,
    ENFORCE_MODES,
    FORMAT_VERSION,
    MAX_FILE_CHARS,
    MAX_NAME_CHARS,
    MAX_SUMMARY_CHARS,
    SUMMARY_WARN_CHARS,
    Doctrine,
    Enforce,
    OperatingContext,
)


class Parsed(NamedTuple):
    """A parsed file and what the operator should hear about it (nothing was refused)."""

    context: OperatingContext
    warnings: tuple[str, ...]


_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (str, "string"),
    (int, "integer"),
    (float, "float"),
    (list, "array"),
    (dict, "table"),
    (datetime, "datetime"),
)


def _kind(value: object) -> str:
    return next((name for kind, name in _KINDS if isinstance(value, kind)), type(value).__name__)


def _string(value: object, path: str, *, limit: int | None = None) -> str:
    if value is None:
        raise InvalidInput(f"{path} is missing")
    if not isinstance(value, str):
        raise InvalidInput(f"{path} must be a string (got {_kind(value)})")
    if "\x00" in value:
        raise InvalidInput(f"{path} contains a NUL character (U+0000), which cannot be stored")
    if limit is not None and len(value) > limit:
        raise InvalidInput(f"{path} is too long ({len(value)} characters, max {limit})")
    return value


def _table(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"[{key}] must be a table (got {_kind(value)})")
    return value


def _version(data: Mapping[str, Any]) -> None:
    version = data.get("version")
    if version is None:
        raise InvalidInput(f"version = {FORMAT_VERSION} is required (first line of the file)")
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise InvalidInput(f"version must be {FORMAT_VERSION} (got {version!r})")


def _project_ids(registry: Mapping[str, Any]) -> tuple[str, ...]:
    values = registry.get("project_ids", [])
    if not isinstance(values, list):
        raise InvalidInput(
            f"registry.project_ids must be an array of strings (got {_kind(values)})"
        )
    seen: list[str] = []
    for index, value in enumerate(values):
        project = _string(value, f"registry.project_ids[{index}]", limit=MAX_NAME_CHARS)
        if project in ("", AUTO):
            raise InvalidInput(f"registry.project_ids[{index}] must not be {project!r}")
        if project in seen:
            raise InvalidInput(f"registry.project_ids lists {project!r} twice")
        seen.append(project)
    return tuple(seen)


def _enforce(registry: Mapping[str, Any]) -> Enforce:
    value = registry.get("enforce", "warn")
    if value not in ENFORCE_MODES:
        modes = ", ".join(f'"{mode}"' for mode in ENFORCE_MODES)
        raise InvalidInput(f"registry.enforce must be one of {modes} (got {value!r})")
    return cast(Enforce, value)


def _defaults(
    data: Mapping[str, Any], project_ids: tuple[str, ...], enforce: Enforce
) -> dict[str, str]:
    defaults: dict[str, str] = {}
    for agent, value in _table(data, "defaults").items():
        path = f"defaults.{agent!r}"
        _string(agent, f"{path} (agent id)", limit=MAX_NAME_CHARS)
        project = _string(value, path, limit=MAX_NAME_CHARS)
        if project == AUTO:
            raise InvalidInput(f"{path} must name a project, not {AUTO!r}")
        if enforce != "off" and project and project not in project_ids:
            raise InvalidInput(f"{path} = {project!r} is not in registry.project_ids")
        defaults[agent] = project
    return defaults


def _doctrine(data: Mapping[str, Any]) -> tuple[Doctrine, ...]:
    entries = data.get("doctrine", [])
    if not isinstance(entries, list):
        raise InvalidInput(
            f"doctrine must be an array of tables [[doctrine]] (got {_kind(entries)})"
        )
    sections: list[Doctrine] = []
    for index, entry in enumerate(entries):
        path = f"doctrine[{index}]"
        if not isinstance(entry, dict):
            raise InvalidInput(f"{path} must be a table with name and body (got {_kind(entry)})")
        name = _string(entry.get("name"), f"{path}.name", limit=MAX_NAME_CHARS)
        if not name:
            raise InvalidInput(f"{path}.name must not be empty")
        if any(section.name == name for section in sections):
            raise InvalidInput(f"doctrine section name {name!r} is used twice")
        sections.append(Doctrine(name, _string(entry.get("body"), f"{path}.body")))
    return tuple(sections)


def parse_document(data: Mapping[str, Any]) -> OperatingContext:
    """Validate parsed TOML tables or the stored JSON; InvalidInput names the problem."""
    _version(data)
    registry = _table(data, "registry")
    project_ids = _project_ids(registry)
    enforce = _enforce(registry)
    summary = _table(data, "instructions").get("summary", "")
    return OperatingContext(
        revision=_string(
            data.get("context_revision", ""), "context_revision", limit=MAX_NAME_CHARS
        ),
        summary=_string(summary, "instructions.summary", limit=MAX_SUMMARY_CHARS),
        project_ids=project_ids,
        enforce=enforce,
        defaults=MappingProxyType(_defaults(data, project_ids, enforce)),
        doctrine=_doctrine(data),
    )


def _unknown_keys(data: Mapping[str, Any]) -> list[str]:
    unknown = [key for key in data if key not in _KNOWN_KEYS[""]]
    for table in ("instructions", "registry"):
        value = data.get(table)
        if isinstance(value, dict):
            unknown += [f"{table}.{key}" for key in value if key not in _KNOWN_KEYS[table]]
    for index, entry in enumerate(data.get("doctrine") or []):
        if isinstance(entry, dict):
            unknown += [f"doctrine[{index}].{k}" for k in entry if k not in _KNOWN_KEYS["doctrine"]]
    return unknown


def _warnings(data: Mapping[str, Any], context: OperatingContext) -> tuple[str, ...]:
    notes: list[str] = []
    unknown = _unknown_keys(data)
    if unknown:
        notes.append(f"ignored unknown keys: {', '.join(unknown)}")
    if len(context.summary) > SUMMARY_WARN_CHARS:
        notes.append(
            f"instructions.summary is {len(context.summary)} characters; every client receives "
            f"it when it connects (keep it under {SUMMARY_WARN_CHARS})"
        )
    return tuple(notes)


def parse(text: str) -> Parsed:
    """Parse and validate an operating-context TOML file; InvalidInput names the problem."""
    if len(text) > MAX_FILE_CHARS:
        raise InvalidInput(f"file too large ({len(text)} characters, max {MAX_FILE_CHARS})")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"not valid TOML: {exc}") from None
    context = parse_document(data)
    return Parsed(context, _warnings(data, context))


def to_document(context: OperatingContext) -> dict[str, Any]:
    """The normalised JSON form stored in ``operating_contexts.document``."""
    return {
        "version": FORMAT_VERSION,
        "context_revision": context.revision,
        "instructions": {"summary": context.summary},
        "registry": {"project_ids": list(context.project_ids), "enforce": context.enforce},
        "defaults": dict(context.defaults),
        "doctrine": [{"name": s.name, "body": s.body} for s in context.doctrine],
    }
