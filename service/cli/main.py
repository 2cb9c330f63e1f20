"""The command line: parses argv, dispatches to the commands, exits.

Each command module adds its own subcommands (docs/contributing.md). Every command
exits non-zero with a one-line reason on bad input or failure, a bad setting included.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from service import __version__
from service.cli import health, operating_context, portability, queue, serve, tenants, usage
from service.cli.runtime import CliError, shown
from service.config import load_settings
from service.errors import ServiceError
from service.logs import configure_logging

COMMAND_MODULES = (serve, tenants, operating_context, queue, health, portability, usage)
SETTINGS_POINTER = (
    "Settings are environment variables (DATABASE_URL, CPERSONA_DATA_DIR, ...): see the "
    "Configuration table in README.md."
)


def _point_to_settings(parser: argparse.ArgumentParser) -> None:
    """Every command's --help ends by pointing to the README's Configuration table."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.epilog = sub.epilog or SETTINGS_POINTER
                _point_to_settings(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cpersona-service",
        description="Hosted, multi-tenant memory for AI agents over MCP. Settings are "
        "environment variables: see the Configuration table in README.md (DATABASE_URL, "
        "CPERSONA_DATA_DIR, CPERSONA_HTTP_HOST, PORT, ...). Run COMMAND --help for its options.",
    )
    parser.add_argument("--version", action="version", version=f"cpersona-service {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.add_parsers(commands)
    _point_to_settings(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(os.environ, stderr_is_tty=sys.stderr.isatty())
        configure_logging(settings)
        args.run(settings, args)
    except (ServiceError, CliError) as exc:
        print(f"cpersona-service: {shown(exc)}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
