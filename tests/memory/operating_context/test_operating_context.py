"""The operating context: parsing, validation, the project gate, rendering, storage."""

from __future__ import annotations

import uuid
from types import MappingProxyType

import asyncpg
import pytest
from hypothesis import given, strategies as st

from service.db import operating_context as operating_context_queries
from service.db.pool import Database
from service.errors import InvalidInput, NotFound, Refused
from service.memory import tenants
from service.memory.library import Library
from service.memory.operating_context import describe, gate, model, parse, storage, toml
from service.models import TenantId

EXAMPLE = """\
version = 1
context_revision = "2026-11-r3"

[instructions]
summary = "Store decisions under your project. Read doctrine 'naming' before naming things."

[registry]
project_ids = ["atlas", "borealis"]
enforce = "reject"

[defaults]
alpha = "atlas"
beta = ""

[[doctrine]]
name = "naming"
body = '''
Names are nouns.
Never abbreviate.'''

[[doctrine]]
name = "archiving"
body = "Archive an episode at the end of every session."
"""


def context(
    enforce: model.Enforce = "warn",
    project_ids: tuple[str, ...] = ("atlas", "borealis"),
    defaults: dict[str, str] | None = None,
) -> model.OperatingContext:
    return model.OperatingContext(
        revision="r7",
        summary="be kind",
        project_ids=project_ids,
        enforce=enforce,
        defaults=MappingProxyType(defaults if defaults is not None else {"alpha": "atlas"}),
        doctrine=(model.Doctrine("b-section", "B"), model.Doctrine("a-section", "A")),
    )


# --- parsing -------------------------------------------------------------------------------


def test_a_full_file_parses_into_every_field() -> None:
    parsed = parse.parse(EXAMPLE)
    ctx = parsed.context
    assert parsed.warnings == ()
    assert ctx.revision == "2026-11-r3"
    assert ctx.summary.startswith("Store decisions")
    assert ctx.project_ids == ("atlas", "borealis")
    assert ctx.enforce == "reject"
    assert dict(ctx.defaults) == {"alpha": "atlas", "beta": ""}
    assert ctx.doctrine == (
        model.Doctrine("naming", "Names are nouns.\nNever abbreviate."),
        model.Doctrine("archiving", "Archive an episode at the end of every session."),
    )
    assert ctx.section_names == ["archiving", "naming"]


def test_a_minimal_file_is_an_empty_context_that_warns_by_default() -> None:
    ctx = parse.parse("version = 1\n").context
    assert ctx == model.OperatingContext("", "", (), "warn", MappingProxyType({}), ())


def test_the_stored_document_is_normalised_and_parses_back_to_the_same_context() -> None:
    ctx = parse.parse(EXAMPLE + '\n[extra]\nkey = "ignored"\n').context
    document = parse.to_document(ctx)
    assert set(document) == {
        "version",
        "context_revision",
        "instructions",
        "registry",
        "defaults",
        "doctrine",
    }
    assert document["registry"] == {"project_ids": ["atlas", "borealis"], "enforce": "reject"}
    assert document["doctrine"][0] == {"name": "naming", "body": ctx.doctrine[0].body}
    assert parse.parse_document(document) == ctx


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("context_revision = 'x'\n", "version = 1 is required"),
        ("version = 2\n", "version must be 1 (got 2)"),
        ("version = true\n", "version must be 1 (got True)"),
        ("version = \n", "not valid TOML: "),
        ("version = 1\ncontext_revision = 3\n", "context_revision must be a string (got integer)"),
        ("version = 1\ninstructions = 'x'\n", "[instructions] must be a table (got string)"),
        ("version = 1\n[instructions]\nsummary = ['a']\n", "instructions.summary must be a string"),
        (
            'version = 1\n[instructions]\nsummary = "a\\u0000b"\n',
            "instructions.summary contains a NUL",
        ),
        ("version = 1\n[registry]\nenforce = 'strict'\n", 'enforce must be one of "off", "warn"'),
        ("version = 1\n[registry]\nproject_ids = 'a'\n", "project_ids must be an array of strings"),
        ("version = 1\n[registry]\nproject_ids = ['a', 1]\n", "project_ids[1] must be a string"),
        ("version = 1\n[registry]\nproject_ids = ['a', 'a']\n", "lists 'a' twice"),
        (
            "version = 1\n[registry]\nproject_ids = ['@auto']\n",
            "project_ids[0] must not be '@auto'",
        ),
        ("version = 1\n[registry]\nproject_ids = ['']\n", "project_ids[0] must not be ''"),
        ("version = 1\n[defaults]\nalpha = 1\n", "defaults.'alpha' must be a string (got integer)"),
        ("version = 1\n[defaults]\nalpha = '@auto'\n", "must name a project, not '@auto'"),
        ("version = 1\n[defaults]\nalpha = 'x'\n", "defaults.'alpha' = 'x' is not in registry"),
        ("version = 1\ndoctrine = 'x'\n", "doctrine must be an array of tables"),
        ("version = 1\n[[doctrine]]\nname = 'a'\n", "doctrine[0].body is missing"),
        (
            "version = 1\n[[doctrine]]\nname = ''\nbody = 'b'\n",
            "doctrine[0].name must not be empty",
        ),
        (
            "version = 1\n" + "[[doctrine]]\nname = 'a'\nbody = ''\n" * 2,
            "doctrine section name 'a' is used twice",
        ),
        (
            "version = 1\n[instructions]\nsummary = '" + "x" * 16_001 + "'\n",
            "instructions.summary is too long (16001 characters, max 16000)",
        ),
        ("version = 1\n" + "#" * 1_000_000, "file too large"),
    ],
)
def test_an_invalid_file_is_refused_with_one_line_naming_the_problem(
    text: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse.parse(text)
    assert message in refused.value.message
    assert "\n" not in refused.value.message


def test_defaults_outside_the_registry_are_allowed_only_when_the_registry_is_off() -> None:
    ctx = parse.parse("version = 1\n[registry]\nenforce = 'off'\n[defaults]\nalpha = 'x'\n").context
    assert dict(ctx.defaults) == {"alpha": "x"}


def test_unknown_keys_and_a_long_summary_are_accepted_with_warnings() -> None:
    text = (
        "version = 1\nnote = 'x'\n[instructions]\nsummary = '" + "s" * 3001 + "'\ntone = 'x'\n"
        "[registy]\nproject_ids = []\n[[doctrine]]\nname = 'a'\nbody = 'b'\ntitle = 'c'\n"
    )
    parsed = parse.parse(text)
    assert parsed.warnings[0] == (
        "ignored unknown keys: note, registy, instructions.tone, doctrine[0].title"
    )
    assert "3001 characters" in parsed.warnings[1]


# --- rendering -----------------------------------------------------------------------------


def test_rendered_toml_reads_back_as_the_same_context_and_keeps_prose_readable() -> None:
    ctx = parse.parse(EXAMPLE).context
    rendered = toml.to_toml(ctx)
    assert parse.parse(rendered).context == ctx
    assert "body = '''\nNames are nouns.\nNever abbreviate.'''" in rendered


_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)
_NAME = _TEXT.filter(lambda value: value not in ("", model.AUTO))


@st.composite
def valid_contexts(draw: st.DrawFn) -> model.OperatingContext:
    project_ids = tuple(draw(st.lists(_NAME, unique=True, max_size=5)))
    enforce = draw(st.sampled_from(model.ENFORCE_MODES))
    targets = st.sampled_from(("", *project_ids)) if enforce != "off" else _NAME | st.just("")
    defaults = draw(st.dictionaries(_TEXT, targets, max_size=4))
    sections = draw(st.lists(st.tuples(_NAME, _TEXT), max_size=4, unique_by=lambda s: s[0]))
    return model.OperatingContext(
        revision=draw(_TEXT),
        summary=draw(_TEXT),
        project_ids=project_ids,
        enforce=enforce,
        defaults=MappingProxyType(defaults),
        doctrine=tuple(model.Doctrine(name, body) for name, body in sections),
    )


@given(valid_contexts())
def test_any_valid_context_survives_rendering_and_storage(ctx: model.OperatingContext) -> None:
    assert parse.parse(toml.to_toml(ctx)) == parse.Parsed(ctx, ())
    assert parse.parse_document(parse.to_document(ctx)) == ctx


# --- describe (the tool bodies) ------------------------------------------------------------


def test_dormant_answer_says_why_and_how_to_set_one() -> None:
    with pytest.raises(Refused) as refused:
        describe.describe(None, "", tenant="acme")
    assert refused.value.message.startswith("operating context is dormant — ")
    assert "cpersona-service context set --tenant acme" in refused.value.message
    assert refused.value.details == {"enabled": False}


def test_preview_section_and_unknown_section_have_the_spec_shapes() -> None:
    ctx = context()
    assert describe.describe(ctx) == describe.Overview(ctx)
    assert describe.describe(ctx, "b-section") == describe.Section(
        "r7", model.Doctrine("b-section", "B")
    )
    with pytest.raises(Refused) as refused:
        describe.describe(ctx, "nope")
    assert refused.value.message == "unknown doctrine section 'nope'"
    assert refused.value.details == {"doctrine_sections": ["a-section", "b-section"]}


# --- the gate ------------------------------------------------------------------------------

WARN_X = "project_id 'x' not in registry (rev r7)"
UNMAPPED = (
    "@auto has no [defaults] mapping for agent_id 'zed' (rev r7); resolved to '' (global pool)"
)


Expected = tuple[str | None, str | None, str | None, bool]  # project, warning, refusal, echo


@pytest.mark.parametrize(
    ("enforce", "agent", "project", "write", "expected"),
    [
        # omitted and '' pass untouched in every mode
        ("reject", "alpha", None, True, (None, None, None, False)),
        ("reject", "alpha", "", True, ("", None, None, False)),
        # registered explicit values pass; explicit values are never rewritten
        ("reject", "alpha", "borealis", True, ("borealis", None, None, False)),
        ("warn", "alpha", "x", True, ("x", WARN_X, None, False)),
        ("warn", "alpha", "x", False, ("x", WARN_X, None, False)),
        ("off", "alpha", "x", True, ("x", None, None, False)),
        ("reject", "alpha", "x", True, (None, None, WARN_X, False)),
        ("reject", "alpha", "x", False, ("x", WARN_X, None, False)),
        # @auto resolves through defaults, is checked like an explicit value, and is echoed
        ("reject", "alpha", "@auto", True, ("atlas", None, None, True)),
        ("reject", "blank", "@auto", True, ("", None, None, True)),
        ("warn", "stray", "@auto", True, ("x", WARN_X, None, True)),
        ("reject", "stray", "@auto", True, (None, None, WARN_X, False)),
        ("reject", "stray", "@auto", False, ("x", WARN_X, None, True)),
        # unmapped @auto: '' plus a warning; refused only for writes in reject mode
        ("warn", "zed", "@auto", True, ("", UNMAPPED, None, True)),
        ("off", "zed", "@auto", True, ("", None, None, True)),
        ("reject", "zed", "@auto", True, (None, None, UNMAPPED, False)),
        ("reject", "zed", "@auto", False, ("", UNMAPPED, None, True)),
    ],
)
def test_gate_truth_table(
    enforce: model.Enforce, agent: str, project: str | None, write: bool, expected: Expected
) -> None:
    ctx = context(enforce, defaults={"alpha": "atlas", "blank": "", "stray": "x"})
    result = gate.gate(ctx, agent, project, write)
    assert (result.project_id, result.warning, result.refusal, result.echo_resolved) == expected
    assert result.revision == (None if not project else "r7")


@pytest.mark.parametrize("project", [None, "", "x", "@auto"])
def test_a_dormant_tenant_has_no_gate_and_auto_stays_literal(project: str | None) -> None:
    result = gate.gate(None, "alpha", project, True)
    assert result == gate.GateResult(project, echo_resolved=project == "@auto")


_VALUES = st.sampled_from(["atlas", "borealis", "x", "y", "", model.AUTO])


@st.composite
def any_contexts(draw: st.DrawFn) -> model.OperatingContext:
    registry = draw(st.lists(st.sampled_from(["atlas", "borealis", "x"]), unique=True))
    defaults = draw(st.dictionaries(st.sampled_from(["alpha", "beta", ""]), _VALUES))
    return context(draw(st.sampled_from(model.ENFORCE_MODES)), tuple(registry), defaults)


@given(any_contexts(), st.sampled_from(["alpha", "beta", ""]), _VALUES | st.none(), st.booleans())
def test_gate_properties_hold_for_any_registry_and_value(
    ctx: model.OperatingContext, agent: str, project: str | None, write: bool
) -> None:
    result = gate.gate(ctx, agent, project, write)
    resolved = ctx.defaults.get(agent, "") if project == model.AUTO else project
    unregistered = bool(resolved) and resolved not in ctx.project_ids and ctx.enforce != "off"
    unmapped = project == model.AUTO and agent not in ctx.defaults and ctx.enforce != "off"
    if result.refusal is not None:
        assert write
        assert ctx.enforce == "reject"
        assert result.project_id is None
        assert result.warning is None
        assert "(rev r7)" in result.refusal
        return
    assert not (write and ctx.enforce == "reject" and (unregistered or unmapped))
    assert result.project_id == resolved
    assert result.echo_resolved == (project == model.AUTO)
    assert (result.warning is not None) == (unregistered or unmapped)
    if not project:
        assert result == gate.GateResult(project)


# --- storage (real Postgres) ---------------------------------------------------------------


async def test_set_get_and_clear_through_the_library(lib: Library) -> None:
    tenant = await tenants.create_tenant(lib.db, "acme")
    tenant_id = TenantId(tenant.id)
    assert await storage.get_context(lib, tenant_id) is None
    assert await storage.instructions_for(lib, tenant_id) is None
    stored = await storage.set_context(lib.db, "acme", EXAMPLE)
    assert (
        await storage.get_context(lib, tenant_id) == stored.context == parse.parse(EXAMPLE).context
    )
    assert await storage.instructions_for(lib, tenant_id) == stored.context.summary
    shown = await storage.show_context(lib.db, "acme")
    assert shown is not None
    assert shown.context == stored.context
    assert shown.updated_at == stored.updated_at
    assert await storage.clear_context(lib.db, "acme") == "2026-11-r3"
    assert await storage.clear_context(lib.db, "acme") is None
    assert await storage.get_context(lib, tenant_id) is None
    assert await storage.show_context(lib.db, "acme") is None


async def test_setting_again_replaces_the_context_and_blank_summaries_send_no_instructions(
    lib: Library,
) -> None:
    tenant = await tenants.create_tenant(lib.db, "acme")
    await storage.set_context(lib.db, "acme", EXAMPLE)
    await storage.set_context(lib.db, "acme", "version = 1\ncontext_revision = 'r2'\n")
    ctx = await storage.get_context(lib, TenantId(tenant.id))
    assert ctx is not None
    assert ctx.revision == "r2"
    assert ctx.doctrine == ()
    assert await storage.instructions_for(lib, TenantId(tenant.id)) is None
    async with lib.db.admin_tx() as conn:
        assert await conn.fetchval("SELECT count(*) FROM operating_contexts") == 1


async def test_an_invalid_file_or_unknown_tenant_stores_nothing(db: Database) -> None:
    await tenants.create_tenant(db, "acme")
    with pytest.raises(InvalidInput, match=r"registry\.enforce"):
        await storage.set_context(db, "acme", "version = 1\n[registry]\nenforce = 'always'\n")
    with pytest.raises(NotFound, match="no tenant 'ghost'"):
        await storage.set_context(db, "ghost", EXAMPLE)
    with pytest.raises(NotFound):
        await storage.clear_context(db, "ghost")
    async with db.admin_tx() as conn:
        assert await conn.fetchval("SELECT count(*) FROM operating_contexts") == 0


async def test_a_tenant_never_sees_another_tenants_context(lib: Library) -> None:
    await tenants.create_tenant(lib.db, "tenant-a")
    other = await tenants.create_tenant(lib.db, "tenant-b")
    await storage.set_context(lib.db, "tenant-a", EXAMPLE)
    assert await storage.get_context(lib, TenantId(other.id)) is None
    async with lib.db.tenant_tx(TenantId(other.id)) as conn:
        assert await conn.fetchval("SELECT count(*) FROM operating_contexts") == 0


async def test_the_app_role_can_read_but_never_write_contexts(lib: Library) -> None:
    tenant = await tenants.create_tenant(lib.db, "acme")
    tenant_id = TenantId(tenant.id)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        async with lib.db.tenant_tx(tenant_id) as conn:
            await operating_context_queries.upsert_operating_context(
                conn, tenant_id, "r", {"version": 1}
            )


async def _upsert_as(db: Database, role: str, tenant_id: TenantId, *, scoped: bool) -> None:
    async with db.admin_tx() as conn:
        await conn.execute(f"SET LOCAL ROLE {role}")
        if scoped:
            await operating_context_queries.scope_admin_to_tenant(conn, tenant_id)
        await operating_context_queries.upsert_operating_context(
            conn, tenant_id, "r", {"version": 1}
        )


async def test_admin_writes_pass_forced_rls_only_once_scoped_to_the_tenant(db: Database) -> None:
    """A non-superuser owner is subject to the forced policy; the scope query admits it."""
    role = f"ctx_owner_{uuid.uuid4().hex[:8]}"
    tenant = await tenants.create_tenant(db, "acme")
    tenant_id = TenantId(tenant.id)
    async with db.admin_tx() as conn:
        if not await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"):
            pytest.skip("needs a superuser test server to create and assume a role")
        await conn.execute(f"CREATE ROLE {role} NOSUPERUSER NOBYPASSRLS")
        await conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON operating_contexts TO {role}")
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await _upsert_as(db, role, tenant_id, scoped=False)
        await _upsert_as(db, role, tenant_id, scoped=True)
        async with db.tenant_tx(tenant_id) as conn:
            row = await operating_context_queries.operating_context(conn, tenant_id)
        assert row is not None
        assert row.document == {"version": 1}
    finally:
        async with db.admin_tx() as conn:
            await conn.execute(f"DROP OWNED BY {role}")
            await conn.execute(f"DROP ROLE {role}")


async def test_a_stored_document_broken_by_hand_makes_the_tenant_dormant(lib: Library) -> None:
    tenant = await tenants.create_tenant(lib.db, "acme")
    await storage.set_context(lib.db, "acme", EXAMPLE)
    async with lib.db.admin_tx() as conn:
        await conn.execute(
            "UPDATE operating_contexts SET document = jsonb_set(document, '{version}', '9')"
        )
    assert await storage.get_context(lib, TenantId(tenant.id)) is None


async def test_deleting_a_tenant_deletes_its_context(db: Database) -> None:
    await tenants.create_tenant(db, "acme")
    await storage.set_context(db, "acme", EXAMPLE)
    async with db.admin_tx() as conn:
        await conn.execute("DELETE FROM tenants WHERE slug = 'acme'")
        assert await conn.fetchval("SELECT count(*) FROM operating_contexts") == 0
