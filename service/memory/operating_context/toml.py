"""Rendering an operating context back to TOML, for ``context show``:
``parse(to_toml(c)).context == c``."""

from __future__ import annotations

from service.memory.operating_context.model import FORMAT_VERSION, OperatingContext

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


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
