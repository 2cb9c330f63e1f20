"""Pages of the console rendered from Jinja2 templates, autoescaped everywhere.

Memory text, agent names and everything else a client stored are untrusted: the
environment escapes every value (``autoescape=True`` for all templates, whatever their
name), no template marks a value safe, and a name a template forgot is an error
(``StrictUndefined``), never an empty string. Every answer carries the console's
headers (:data:`service.app.console.security.HEADERS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Final

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.responses import HTMLResponse, RedirectResponse, Response

from service.app.console.security import HEADERS, PREFIX

PACKAGE: Final = resources.files("service.app.console")
_ENV = Environment(
    loader=FileSystemLoader(str(PACKAGE / "templates")),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def when(moment: datetime | None) -> str:
    """A timestamp as the console shows it (UTC, to the minute); an em dash for none."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else "\u2014"


_ENV.filters["when"] = when


def page(
    template: str,
    context: Mapping[str, Any],
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """``template`` rendered with ``context`` (plus the defaults every page reads)."""
    values = {"prefix": PREFIX, "session": None, "notice": "", "error": "", "page": "", **context}
    body = _ENV.get_template(template).render(values)
    return HTMLResponse(body, status, headers={**HEADERS, **(headers or {})})


def error_page(
    heading: str, message: str, status: int, session: object | None = None
) -> HTMLResponse:
    return page(
        "error.html", {"heading": heading, "message": message, "session": session}, status=status
    )


def redirect(path: str) -> Response:
    """303 to a console path (after a post, the browser gets the page with GET)."""
    return RedirectResponse(PREFIX + path, 303, headers=HEADERS)


def static(name: str) -> bytes:
    """A file of ``static/`` (read once, when the routes are built)."""
    return (PACKAGE / "static" / name).read_bytes()
