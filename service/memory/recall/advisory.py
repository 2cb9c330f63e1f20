"""The degraded-recall advisory (docs/tools.md, "Degraded advisory"), with its state kept per
tenant.

When recall cannot use embeddings — they are switched off (``hint``) or the
embedding provider failed (``fault``) — responses carry ``advisory`` so the
agent can tell its user that semantic recall is degraded. The first advisory
of a degraded episode carries the long runbook (it asks the agent to notify
the user), later ones a short reminder; a healthy recall re-arms the long
form. The state lives in Postgres so every replica agrees.
"""

from __future__ import annotations

from service.memory.recall.records import Advisory, Severity

_REASONS: dict[Severity, tuple[str, str]] = {
    "hint": (
        "embeddings are switched off (CPERSONA_EMBEDDING_MODE=none): recall matches words only",
        "embedding mode none",
    ),
    "fault": (
        "the embedding provider failed for this query: recall fell back to word matching",
        "query embedding failed",
    ),
}
_LONG_RUNBOOK = (
    "Notify the user that memory recall is running in a degraded, lexical-only mode: "
    "memories are found only when the query shares words with them, so paraphrased "
    "questions may miss relevant memories. Ask the operator to enable embeddings "
    "(CPERSONA_EMBEDDING_MODE=local, or http/openai with CPERSONA_EMBEDDING_URL) or to "
    "restore the embedding provider, then restart the service; rows stored meanwhile are "
    "embedded by the background queue. Until then, phrase recall queries with the exact "
    "words you expect in the stored memories."
)
_SHORT_RUNBOOK = "Recall is still lexical-only (see the earlier advisory); use exact words."


def advisory(severity: Severity, *, long_form: bool) -> Advisory:
    """The advisory of a degraded recall (the boundary renders it as ``advisory``)."""
    reason, evidence = _REASONS[severity]
    return Advisory(severity, reason, evidence, _LONG_RUNBOOK if long_form else _SHORT_RUNBOOK)
