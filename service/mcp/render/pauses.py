"""Wire shapes of the session controls (docs/tools.md, "pause_persistence"): pause_persistence,
resume_persistence, persistence_status, and the mark a paused write's skipped body gets."""

from __future__ import annotations

from service.memory.pauses import ActivePause, PauseLifted, PauseSet, PauseState, Scope
from service.models import JsonObject

ACTION_IDS = ("deleted_id", "updated_id", "locked_id", "unlocked_id", "episode_id")


def _scoped(body: JsonObject, scope: Scope, session_key: str) -> JsonObject:
    """``scope`` after the body, then ``session_key`` for a session's pause."""
    body["scope"] = scope
    if session_key:
        body["session_key"] = session_key
    return body


def pause_set(done: PauseSet) -> JsonObject:
    """``{paused: true, expires_at, ttl_seconds, scope, session_key?}``."""
    body: JsonObject = {
        "paused": True,
        "expires_at": done.expires_at.isoformat(),
        "ttl_seconds": done.ttl_seconds,
    }
    return _scoped(body, done.scope, done.session_key)


def pause_lifted(done: PauseLifted) -> JsonObject:
    """``{paused: false, was_active, scope, session_key?}``."""
    body: JsonObject = {"paused": False, "was_active": done.was_active}
    return _scoped(body, done.scope, done.session_key)


def pause_state(state: PauseState) -> JsonObject:
    """``{paused, expires_at, ttl_remaining_seconds, scope, session_key?, tenant_paused?}``;
    ``tenant_paused`` for a session's scope only."""
    body: JsonObject = {
        "paused": state.paused,
        "expires_at": None if state.expires_at is None else state.expires_at.isoformat(),
        "ttl_remaining_seconds": state.ttl_remaining_seconds,
    }
    _scoped(body, state.scope, state.session_key)
    if state.session_key:
        body["tenant_paused"] = state.tenant_paused
    return body


def skipped_body(default: JsonObject, tool: str, active: ActivePause) -> JsonObject:
    """A write tool's answer under a pause: its success shape with nothing done.

    ``id`` becomes ``"no-persist"``, every action id (``deleted_id``,
    ``updated_id``, ``locked_id``, ``unlocked_id``, ``episode_id``) becomes
    null, and ``persisted: false``, ``dry_run: true`` and a ``reason`` naming
    the tool and the time left are added.
    """
    body = dict(default)
    if "id" in body:
        body["id"] = "no-persist"
    for key in ACTION_IDS:
        if key in body:
            body[key] = None
    body.update(persisted=False, dry_run=True, reason=active.reason(tool))
    return body
