"""Recall cursors: what they carry, who may open them, and that any change breaks them."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from typing import cast

import pytest

from service.config import Settings
from service.db.pool import Database
from service.errors import Refused
from service.memory import cursor
from service.memory.library import Library
from service.models import TenantId


@pytest.fixture
def lib(settings: Settings) -> Library:
    """A library for cursors only: they read the settings and the signing key, never the
    database (none is opened)."""
    return Library(cast(Database, None), settings)


BINDING = cursor.Binding(TenantId(uuid.uuid4()), "cpk_0123456789ab", "a", "recall", "otters")
REST = cursor.Cursor(
    refs=(("mem", 12), ("ep", 7), ("mem", 2**40)), full_content=True, novel_only=False,
    max_tokens=500,
)  # fmt: skip


def test_a_cursor_round_trips_its_refs_and_options(lib: Library) -> None:
    token = cursor.issue(lib, BINDING, REST)
    assert cursor.open_cursor(lib, BINDING, token) == REST
    plain = cursor.Cursor(refs=(("mem", 1),))
    assert cursor.open_cursor(lib, BINDING, cursor.issue(lib, BINDING, plain)) == plain


def test_a_hundred_refs_fit_in_a_few_hundred_characters(lib: Library) -> None:
    refs: tuple[tuple[cursor.Kind, int], ...] = tuple(("mem", 10_000 + i * 37) for i in range(100))
    token = cursor.issue(lib, BINDING, cursor.Cursor(refs=refs, max_tokens=500))
    assert len(token) < 450
    assert cursor.open_cursor(lib, BINDING, token).refs == refs


@pytest.mark.parametrize(
    "other",
    [
        dataclasses.replace(BINDING, tenant_id=TenantId(uuid.uuid4())),
        dataclasses.replace(BINDING, key_id="cpk_ba9876543210"),
        dataclasses.replace(BINDING, agent_id="b"),
        dataclasses.replace(BINDING, tool="recall_with_context"),
        dataclasses.replace(BINDING, query="otters!"),
    ],
    ids=["tenant", "key", "agent", "tool", "query"],
)
def test_a_cursor_opens_only_for_its_exact_binding(lib: Library, other: cursor.Binding) -> None:
    token = cursor.issue(lib, BINDING, REST)
    with pytest.raises(Refused, match=r"^invalid cursor"):
        cursor.open_cursor(lib, other, token)


def test_changing_any_byte_of_a_cursor_breaks_it(lib: Library) -> None:
    raw = bytearray(base64.urlsafe_b64decode(cursor.issue(lib, BINDING, REST) + "=="))
    for position in range(len(raw)):
        changed = bytearray(raw)
        changed[position] ^= 0x01
        token = base64.urlsafe_b64encode(bytes(changed)).rstrip(b"=").decode()
        with pytest.raises(Refused, match=r"^invalid cursor"):
            cursor.open_cursor(lib, BINDING, token)


@pytest.mark.parametrize("token", ["", "x", "!!!!", "A" * 5000, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
def test_garbage_is_an_invalid_cursor_not_an_error(lib: Library, token: str) -> None:
    with pytest.raises(Refused, match=r"^invalid cursor"):
        cursor.open_cursor(lib, BINDING, token)


def test_an_expired_cursor_says_so_but_only_to_its_owner(lib: Library) -> None:
    instant = Library(lib.db, dataclasses.replace(lib.settings, recall_cursor_ttl=0))
    token = cursor.issue(instant, BINDING, REST)
    with pytest.raises(Refused, match=r"^cursor expired"):
        cursor.open_cursor(instant, BINDING, token)
    with pytest.raises(Refused, match=r"^invalid cursor"):
        cursor.open_cursor(instant, dataclasses.replace(BINDING, agent_id="b"), token)


def test_a_cursor_of_another_signing_key_is_invalid(lib: Library) -> None:
    token = cursor.issue(lib, BINDING, REST)
    other = Library(lib.db, dataclasses.replace(lib.settings, signing_key="k" * 40))
    with pytest.raises(Refused, match=r"^invalid cursor"):
        cursor.open_cursor(other, BINDING, token)
