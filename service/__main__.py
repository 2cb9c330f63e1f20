"""``python -m service`` runs the command line."""

from __future__ import annotations

from service.cli.main import main

main()
