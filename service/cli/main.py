"""The command line: parses argv, dispatches to the commands, exits.

Commands follow design/interface.md; each command module adds its own subcommands.
Every command exits non-zero with a one-line reason on bad input or failure.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from service.cli import health, operating_context, portability, queue, serve, tenants, usage
from service.cli.runtime import CliError
from service.config import load_settings
from service.errors import ServiceError
from service.logs import configure_logging

COMMAND_MODULES = (serve, tenants, operating_context, queue, health, portability, usage)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cpersona-service",
        description="Hosted, multi-tenant memory for AI agents over MCP. Settings are "
        "environment variables (see the README's settings table).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.add_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(os.environ, stderr_is_tty=sys.stderr.isatty())
        configure_logging(settings)
        args.run(settings, args)
    except (ServiceError, CliError) as exc:
        print(f"cpersona-service: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
