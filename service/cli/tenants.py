"""tenant create|list and key create|list|revoke."""

from __future__ import annotations

import argparse

from service.cli.runtime import Commands, database_url, run_db, shown
from service.config import Settings
from service.errors import InvalidInput
from service.memory import operators, tenants
from service.models import TOOL_SETS


def cmd_tenant_create(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        row = run_db(settings, url, lambda db: tenants.create_tenant(db, args.slug, args.name))
    print(f"created tenant {row.slug} ({row.id})")


def cmd_tenant_list(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        rows = run_db(settings, url, tenants.list_tenants)
    print(f"{'SLUG':<24} {'ACTIVE KEYS':>11}  {'CREATED':<25} NAME")
    for row in rows:
        created = row.created_at.isoformat()
        print(f"{row.slug:<24} {row.active_keys:>11}  {created:<25} {shown(row.name)}")


def cmd_key_create(settings: Settings, args: argparse.Namespace) -> None:
    if args.role == "operator":
        _create_operator_key(settings, args)
        return
    if not args.tenant:
        raise InvalidInput("key create: --tenant SLUG is required (or --role operator)")
    grants = tenants.parse_grants(args.grant or [])
    days = tenants.expiry_days(args.expires_in)  # before the database is even started
    tool_set = tenants.parse_tool_set(args.tools)
    with database_url(settings) as url:
        key = run_db(
            settings,
            url,
            lambda db: tenants.create_key(
                db,
                args.tenant,
                label=args.label,
                grants=grants,
                expires_in_days=days,
                tool_set=tool_set,
            ),
        )
    print(key)


def _create_operator_key(settings: Settings, args: argparse.Namespace) -> None:
    """An operator key: no tenant, grants or tool set (it opens the console's operator view)."""
    if args.tenant or args.grant or args.tools != "all":
        raise InvalidInput("key create --role operator: takes no --tenant, --grant or --tools")
    days = tenants.expiry_days(args.expires_in)
    with database_url(settings) as url:
        key = run_db(
            settings,
            url,
            lambda db: operators.create_operator_key(db, label=args.label, expires_in_days=days),
        )
    print(key)


def _when(value: object) -> str:
    return "-" if value is None else str(value)


def cmd_key_list(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        rows = run_db(settings, url, lambda db: tenants.list_keys(db, args.tenant))
    print(f"{'KEY_ID':<17} {'STATE':<8} {'TOOLS':<9} {'LABEL':<20} {'LAST USED':<33} GRANTS")
    for row in rows:
        state = tenants.key_state(row)
        grants = shown(",".join(f"{agent}={level}" for agent, level in row.grants.items()))
        used = _when(row.last_used_at)
        label = shown(row.label)
        print(f"{row.prefix:<17} {state:<8} {row.tool_set:<9} {label:<20} {used:<33} {grants}")


def cmd_key_revoke(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        when = run_db(settings, url, lambda db: operators.revoke_any_key(db, args.key_id))
    print(f"revoked {shown(args.key_id)} at {when.isoformat()}")


def _add_tenant_parser(commands: Commands) -> None:
    tenant = commands.add_parser("tenant", help="manage tenants")
    sub = tenant.add_subparsers(dest="tenant_command", required=True)
    create = sub.add_parser("create", help="create a tenant")
    create.add_argument(
        "slug", help="1-63 lower-case letters, digits and dashes (the --tenant of other commands)"
    )
    create.add_argument("--name", default="", help="a display name")
    create.set_defaults(run=cmd_tenant_create)
    sub.add_parser("list", help="list tenants").set_defaults(run=cmd_tenant_list)


def _add_key_parser(commands: Commands) -> None:
    key = commands.add_parser("key", help="manage API keys")
    sub = key.add_subparsers(dest="key_command", required=True)
    create = sub.add_parser("create", help="create a key (prints only the key)")
    create.add_argument(
        "--tenant", metavar="SLUG", help="the tenant's slug (required but with --role operator)"
    )
    create.add_argument(
        "--role",
        choices=("tenant", "operator"),
        default="tenant",
        help="tenant (default): a tenant's key; operator: no tenant, opens the web console's "
        "operator view (tenants' counts, usage, queue health, never memory content)",
    )
    create.add_argument("--label", default="", help="what the key is for (shown by key list)")
    create.add_argument(
        "--grant",
        action="append",
        metavar="AGENT=none|read|read-write",
        help="a permission per agent, repeatable; * is every other agent (default: *=read-write)",
    )
    create.add_argument("--expires-in", metavar="DAYS", help="days until the key expires")
    create.add_argument(
        "--tools",
        default="all",
        metavar="|".join(TOOL_SETS),
        help="the tools the key lists and may call: all (default) or everyday (the memory "
        "tools of a session, see docs/tools.md)",
    )
    create.set_defaults(run=cmd_key_create)
    listing = sub.add_parser("list", help="list a tenant's keys")
    listing.add_argument("--tenant", required=True, metavar="SLUG", help="the tenant's slug")
    listing.set_defaults(run=cmd_key_list)
    revoke = sub.add_parser("revoke", help="revoke a key by its KEY_ID")
    revoke.add_argument("key_id", metavar="KEY_ID", help="the cpk_<12 hex> prefix key list shows")
    revoke.set_defaults(run=cmd_key_revoke)


def add_parsers(commands: Commands) -> None:
    _add_tenant_parser(commands)
    _add_key_parser(commands)
