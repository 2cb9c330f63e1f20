"""Wire shapes of the write tools (docs/tools.md, "Writes"): store, update_memory,
lock_memory, unlock_memory, delete_memory, archive_episode, delete_episode, get_profile,
update_profile, delete_agent_data, and their skipped bodies under a persistence pause.

Each function takes the library's record and returns the tool's JSON object, keys in wire
order; optional keys (``truncated``, a skipped store's ``id``) appear only when they say
something, as CPersona answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.mcp.render import associations
from service.memory.agents import AgentDataDeleted
from service.memory.episodes import Archived, EpisodeDeleted
from service.memory.memories.edits import Deleted, LockSet, Updated
from service.memory.memories.store import Skipped, Stored, StoreOutcome
from service.memory.profiles import Profile, ProfileUnchanged, ProfileUpdate
from service.memory.superseding import Superseding
from service.memory.supersession import Relinked, ref_text
from service.models import JsonObject

# Skipped bodies (registry ``PausePolicy.body``): each tool's success shape with nothing
# done, which ``service.mcp.render.pauses.skipped_body`` then marks skipped.
STORE_PAUSED: JsonObject = {"ok": True, "result": "skipped", "id": 0, "embedded": False}
UPDATE_PAUSED: JsonObject = {"ok": True, "updated_id": None}
LOCK_PAUSED: JsonObject = {"ok": True, "locked_id": None}
UNLOCK_PAUSED: JsonObject = {"ok": True, "unlocked_id": None}
DELETE_PAUSED: JsonObject = {"ok": True, "deleted_id": None}
ARCHIVE_PAUSED: JsonObject = {
    "ok": True,
    "queued": False,
    "task_id": None,
    "episode_id": None,
    "id": 0,
}
PROFILE_PAUSED: JsonObject = {"ok": True, "profiles_updated": 0}


def _truncated(body: JsonObject, truncated: bool) -> JsonObject:
    """``truncated: true`` last, only when content was cut."""
    if truncated:
        body["truncated"] = True
    return body


def store_outcome(outcome: StoreOutcome) -> JsonObject:
    """``{ok, result: stored, id, embedded, truncated?}`` or ``{ok, result: skipped, reason,
    id?}``, then ``associations`` when the store carried a rider, ``locked`` when it
    asked for ``lock`` and ``timestamp_ahead_of_clock`` when its timestamp lay past the
    allowance ahead of the server's clock."""
    body = _skipped(outcome) if isinstance(outcome, Skipped) else _stored(outcome)
    if outcome.associations is not None:
        body["associations"] = associations.rider(outcome.associations)
    if outcome.locked is not None:
        body["locked"] = outcome.locked
    if isinstance(outcome, Stored) and outcome.ahead_of_clock is not None:
        body["timestamp_ahead_of_clock"] = dataclasses.asdict(outcome.ahead_of_clock)
    if outcome.supersedes is not None:
        body["supersedes"] = superseded(outcome.supersedes)
    return body


def superseded(done: Superseding) -> JsonObject:
    """A ``supersedes`` list's answer: ``{relations: [ids], dropped: [{item, reason}]}``."""
    return {
        "relations": list(done.relations),
        "dropped": [{"item": d.item, "reason": d.reason} for d in done.dropped],
    }


def _stored(outcome: Stored) -> JsonObject:
    body: JsonObject = {
        "ok": True,
        "result": "stored",
        "id": outcome.memory_id,
        "embedded": outcome.embedded,
    }
    return _truncated(body, outcome.truncated)


def _skipped(outcome: Skipped) -> JsonObject:
    body: JsonObject = {"ok": True, "result": "skipped", "reason": outcome.reason}
    if outcome.existing_id is not None:
        body["id"] = outcome.existing_id
    return body


def store_rejected(message: str) -> JsonObject:
    """store's failure shape (docs/tools.md, "Store steps"): the reason, not an ``error`` key."""
    return {"ok": False, "result": "rejected", "reason": message}


def memory_updated(update: Updated) -> JsonObject:
    """``{ok, updated_id, truncated?}``; with keep_history also ``new_id`` (the new record)
    and ``relation`` (the supersession's id) before ``truncated``."""
    body: JsonObject = {"ok": True, "updated_id": update.memory_id}
    if update.new_id is not None:
        body["new_id"] = update.new_id
        body["relation"] = update.relation
    return _truncated(body, update.truncated)


def lock_set(lock: LockSet) -> JsonObject:
    """``locked_id`` for lock_memory, ``unlocked_id`` for unlock_memory."""
    return {"ok": True, "locked_id" if lock.locked else "unlocked_id": lock.memory_id}


def memory_deleted(deleted: Deleted) -> JsonObject:
    return _relinked({"ok": True, "deleted_id": deleted.memory_id}, deleted.relinked)


def _relinked(body: JsonObject, relinked: Sequence[Relinked]) -> JsonObject:
    """``relinked: [{relation, subject, object}]`` when a delete bridged a supersession
    chain (docs/tools.md, "Facts that change"), absent otherwise."""
    if relinked:
        body["relinked"] = [
            {
                "relation": link.relation,
                "subject": ref_text(link.newer),
                "object": ref_text(link.older),
            }
            for link in relinked
        ]
    return body


def episode_archived(archived: Archived) -> JsonObject:
    """``{ok, episode_id, truncated?, timestamp_ahead_of_clock?, supersedes?}``."""
    body = _truncated({"ok": True, "episode_id": archived.episode_id}, archived.truncated)
    if archived.ahead_of_clock is not None:
        body["timestamp_ahead_of_clock"] = dataclasses.asdict(archived.ahead_of_clock)
    if archived.supersedes is not None:
        body["supersedes"] = superseded(archived.supersedes)
    return body


def episode_refused(message: str) -> JsonObject:
    """archive_episode's failure shape: the spec's ``error`` with a null ``episode_id``."""
    return {"ok": False, "episode_id": None, "error": message}


def episode_deleted(deleted: EpisodeDeleted) -> JsonObject:
    return _relinked({"ok": True, "deleted_id": deleted.episode_id}, deleted.relinked)


def profile(found: Profile) -> JsonObject:
    return {"profile": found.text}


def profile_update(update: ProfileUpdate) -> JsonObject:
    """``{ok, profiles_updated: 1, truncated?}``, or 0 with the ``reason`` nothing changed."""
    if isinstance(update, ProfileUnchanged):
        return {"ok": True, "profiles_updated": 0, "reason": update.reason}
    return _truncated({"ok": True, "profiles_updated": 1}, update.truncated)


def agent_data_deleted(deleted: AgentDataDeleted) -> JsonObject:
    return {
        "ok": True,
        "agent_id": deleted.agent_id,
        "deleted_memories": deleted.memories,
        "deleted_profiles": deleted.profiles,
        "deleted_episodes": deleted.episodes,
        "deleted_pending_tasks": deleted.pending_tasks,
    }
