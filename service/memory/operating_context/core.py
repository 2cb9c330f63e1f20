"""The operating context of a tenant (CPersona 2.5.1 sidecar, spec §9.4), kept in Postgres.

An operator sets it from a TOML file (``cpersona-service context set``); it is
validated here, stored normalised as JSON, and served three ways: by the
``get_operating_context`` tool (:func:`describe`), as the MCP ``instructions``
at initialize (:func:`instructions_for`), and as the project_id gate of the six
project tools (:func:`gate`). A tenant without a context is *dormant*: no
instructions, no gate, ``'@auto'`` stored literally.

Parsing and the gate are pure. The file format is CPersona's, strict on the
shape of known keys (a typo'd value must be visibly refused, never half-applied)
and additive on unknown keys, which are ignored and reported as warnings so a
newer file still loads.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, cast

from service.db import operating_context as store, tenants as tenant_store
from service.db.pool import Connection, Database
from service.errors import InvalidInput, NotFound
from service.logs import get_logger
from service.memory.library import Library
from service.models import TenantId

log = get_logger(__name__)

AUTO = "@auto"
FORMAT_VERSION = 1
Enforce = Literal["off", "warn", "reject"]
ENFORCE_MODES: tuple[Enforce, ...] = ("off", "warn", "reject")
MAX_FILE_CHARS = 1_000_000
MAX_SUMMARY_CHARS = 16_000
MAX_NAME_CHARS = 256
SUMMARY_WARN_CHARS = 3_000
_KNOWN_KEYS: Mapping[str, frozenset[str]] = {
    "": frozenset(
        {"version", "context_revision", "instructions", "registry", "defaults", "doctrine"}
    ),
    "instructions": frozenset({"summary"}),
    "registry": frozenset({"project_ids", "enforce"}),
    "doctrine": frozenset({"name", "body"}),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Doctrine:
    name: str
    body: str


@dataclasses.dataclass(frozen=True, slots=True)
class OperatingContext:
    """A validated context: what the tool serves and the gate enforces."""

    revision: str
    summary: str
    project_ids: tuple[str, ...]
    enforce: Enforce
    defaults: Mapping[str, str]
    doctrine: tuple[Doctrine, ...]

    @property
    def section_names(self) -> list[str]:
        return sorted(section.name for section in self.doctrine)

    def section(self, name: str) -> Doctrine | None:
        return next((section for section in self.doctrine if section.name == name), None)


class Parsed(NamedTuple):
    """A parsed file and what the operator should hear about it (nothing was refused)."""

    context: OperatingContext
    warnings: tuple[str, ...]


# --- parsing and validation (pure) -----------------------------------------------------

_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "boolean"), (str, "string"), (int, "integer"), (float, "float"),
    (list, "array"), (dict, "table"), (datetime, "datetime"),
)  # fmt: skip


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


# --- rendering back to TOML (for `context show`; parse(to_toml(c)).context == c) ----------

_ESCAPES = {
    '"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r",
}  # fmt: skip


def _is_control(char: str) -> bool:
    return ord(char) < 0x20 or ord(char) == 0x7F


def _quoted(value: str) -> str:
    escaped = (_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if _is_control(c) else c) for c in value)
    return '"' + "".join(escaped) + '"'


def _text(value: str) -> str:
    """A multi-line literal block for readable prose when that is exact, else a quoted string."""
    plain = all(c in "\n\t" or not _is_control(c) for c in value)
    if "\n" in value and plain and "'''" not in value and not value.endswith("'"):
        return "'''\n" + value + "'''"
    return _quoted(value)


def to_toml(context: OperatingContext) -> str:
    """The context as a TOML file that ``context set`` accepts unchanged."""
    lines = [f"version = {FORMAT_VERSION}", f"context_revision = {_quoted(context.revision)}"]
    lines += ["", "[instructions]", f"summary = {_text(context.summary)}"]
    projects = ", ".join(_quoted(project) for project in context.project_ids)
    lines += [
        "",
        "[registry]",
        f"project_ids = [{projects}]",
        f"enforce = {_quoted(context.enforce)}",
    ]
    lines += ["", "[defaults]"]
    lines += [
        f"{_quoted(agent)} = {_quoted(project)}" for agent, project in context.defaults.items()
    ]
    for section in context.doctrine:
        lines += [
            "",
            "[[doctrine]]",
            f"name = {_quoted(section.name)}",
            f"body = {_text(section.body)}",
        ]
    return "\n".join(lines) + "\n"


# --- the project_id gate (pure) ------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class GateResult:
    """What the gate decided for one call.

    ``project_id`` is the value to pass on (None = the caller omitted it, or the
    call is refused); ``echo_resolved`` asks the boundary to add
    ``resolved_project_id`` (the caller passed ``'@auto'``).
    """

    project_id: str | None
    warning: str | None = None
    refusal: str | None = None
    echo_resolved: bool = False
    revision: str | None = None


def _unmapped(context: OperatingContext, agent_id: str, is_write: bool) -> GateResult:
    message = (
        f"@auto has no [defaults] mapping for agent_id '{agent_id}' "
        f"(rev {context.revision}); resolved to '' (global pool)"
    )
    if context.enforce == "reject" and is_write:
        return GateResult(None, refusal=message, revision=context.revision)
    warning = None if context.enforce == "off" else message
    return GateResult("", warning=warning, echo_resolved=True, revision=context.revision)


def _registered(context: OperatingContext, project: str, is_write: bool, echo: bool) -> GateResult:
    if context.enforce == "off" or project in context.project_ids:
        return GateResult(project, echo_resolved=echo, revision=context.revision)
    message = f"project_id '{project}' not in registry (rev {context.revision})"
    if context.enforce == "reject" and is_write:
        return GateResult(None, refusal=message, revision=context.revision)
    return GateResult(project, warning=message, echo_resolved=echo, revision=context.revision)


def gate(
    context: OperatingContext | None, agent_id: str, project_id: str | None, is_write: bool
) -> GateResult:
    """Spec §9.4: resolve ``'@auto'``, check the registry, warn or refuse.

    Omitted (None) and ``''`` always pass untouched; explicit values are never
    rewritten; only ``'@auto'`` is resolved, through ``defaults[agent_id]``.
    Reads are only ever warned, even in reject mode: a bad read filter loses
    nothing, a bad write pollutes a bucket. Dormant (no context) passes
    everything through, ``'@auto'`` included (it is then stored literally).
    """
    if context is None or not project_id:
        return GateResult(project_id, echo_resolved=project_id == AUTO)
    if project_id != AUTO:
        return _registered(context, project_id, is_write, echo=False)
    mapped = context.defaults.get(agent_id)
    if mapped is None:
        return _unmapped(context, agent_id, is_write)
    if mapped == "":
        return GateResult("", echo_resolved=True, revision=context.revision)
    return _registered(context, mapped, is_write, echo=True)


# --- tool bodies (pure) --------------------------------------------------------------------


def dormant_message(tenant: str = "SLUG") -> str:
    return (
        "operating context is dormant — no operating context is set for this tenant; an "
        f"operator sets one with `cpersona-service context set --tenant {tenant} FILE.toml`"
    )


def describe(
    context: OperatingContext | None, section: str = "", *, tenant: str = "SLUG"
) -> dict[str, Any]:
    """The ``get_operating_context`` response (spec §2.1): dormant, preview, or one section."""
    if context is None:
        return {"ok": False, "enabled": False, "error": dormant_message(tenant)}
    if section:
        found = context.section(section)
        if found is None:
            return {
                "ok": False,
                "error": f"unknown doctrine section '{section}'",
                "doctrine_sections": context.section_names,
            }
        return {
            "ok": True,
            "context_revision": context.revision,
            "section": section,
            "body": found.body,
        }
    return {
        "ok": True,
        "context_revision": context.revision,
        "instructions_summary": context.summary,
        "registry": {"project_ids": list(context.project_ids), "enforce": context.enforce},
        "defaults": dict(context.defaults),
        "doctrine_sections": context.section_names,
    }


# --- storage -------------------------------------------------------------------------------


async def get_context(lib: Library, tenant_id: TenantId) -> OperatingContext | None:
    """The tenant's context, or None when dormant.

    A stored document that no longer validates (edited by hand in psql) makes the
    tenant dormant and is logged, as an unusable sidecar does in CPersona: a
    broken context must never take memory down.
    """
    async with lib.db.tenant_tx(tenant_id) as conn:
        row = await store.operating_context(conn, tenant_id)
    if row is None:
        return None
    try:
        return parse_document(row.document)
    except InvalidInput as exc:
        log.warning("operating_context_unusable", tenant_id=str(tenant_id), error=exc.message)
        return None


async def instructions_for(lib: Library, tenant_id: TenantId) -> str | None:
    """The MCP ``instructions`` for this tenant's clients; None when dormant or blank."""
    context = await get_context(lib, tenant_id)
    if context is None or not context.summary.strip():
        return None
    return context.summary


@dataclasses.dataclass(frozen=True, slots=True)
class Stored:
    """A context as the operator set it."""

    context: OperatingContext
    updated_at: datetime
    warnings: tuple[str, ...] = ()


async def _tenant_id(conn: Connection, slug: str) -> TenantId:
    row = await tenant_store.tenant_by_slug(conn, slug)
    if row is None:
        raise NotFound(f"no tenant {slug!r}")
    tenant_id = TenantId(row.id)
    await store.scope_admin_to_tenant(conn, tenant_id)
    return tenant_id


async def set_context(db: Database, slug: str, toml_text: str) -> Stored:
    """Validate ``toml_text`` and make it tenant ``slug``'s context (replacing any).

    Validation happens before the database is touched, so an invalid file
    stores nothing.
    """
    parsed = parse(toml_text)
    context = parsed.context
    async with db.admin_tx() as conn:
        tenant_id = await _tenant_id(conn, slug)
        updated_at = await store.upsert_operating_context(
            conn, tenant_id, context.revision, to_document(context)
        )
    return Stored(context, updated_at, parsed.warnings)


async def show_context(db: Database, slug: str) -> Stored | None:
    """Tenant ``slug``'s stored context for the operator; None when dormant."""
    async with db.admin_tx() as conn:
        row = await store.operating_context(conn, await _tenant_id(conn, slug))
    return None if row is None else Stored(parse_document(row.document), row.updated_at)


async def clear_context(db: Database, slug: str) -> str | None:
    """Remove tenant ``slug``'s context (it becomes dormant); the removed revision, or None."""
    async with db.admin_tx() as conn:
        return await store.delete_operating_context(conn, await _tenant_id(conn, slug))
