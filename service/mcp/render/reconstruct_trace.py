"""reconstruct's ``trace`` on the wire (docs/tools.md, "reconstruct"): refs, ranks,
counts and the caller's own query words of an answer, never stored text."""

from __future__ import annotations

import dataclasses

from service.mcp.render.reconstruct_cut import Cut, claim_record, kept_refs, shows
from service.mcp.shaping.compact import compact_reason
from service.mcp.shaping.reconstruct import quote
from service.mcp.shaping.reconstruct.records import Record
from service.memory.recall import query_terms
from service.memory.reconstruct.records import Reconstruction
from service.models import JsonObject


def trace(result: Reconstruction, cut: Cut) -> JsonObject:
    """Refs, ranks, counts and the caller's own query words: never stored text.
    ``candidate_refs``, ``clusters``, ``cues`` (with declared names), ``recall`` (the
    candidate recall's rows), ``sequence`` (under a mode), ``node_order`` and
    ``coverage`` (of the records the answer quotes)."""
    facts: JsonObject = {
        "candidate_refs": list(result.trace.candidate_refs),
        "clusters": [list(cluster) for cluster in result.trace.clusters],
    }
    cues = result.trace.cues
    if cues.entities:
        shown: JsonObject = {"entities": list(cues.entities), "terms": list(cues.terms)}
        if cues.terms_omitted:
            shown["terms_omitted"] = cues.terms_omitted
        facts["cues"] = shown
    facts["recall"] = _recall_trace(result)
    if cut.sequence is not None:
        facts["sequence"] = dataclasses.asdict(cut.sequence)
    quoted = _records(cut, claims=False)
    facts["node_order"] = {ref: quote.node_order(record, result.query) for ref, record in quoted}
    facts["coverage"] = _coverage(result.query, _records(cut, claims=True))
    return facts


def _recall_trace(result: Reconstruction) -> JsonObject:
    """The candidate recall: its ``limit`` (``top_k``) and its rows best first, each its
    ``rank`` (from 1), ``ref`` (none for the profile row) and ``match_reason`` (rounded as
    recall shows it)."""
    rows: list[JsonObject] = []
    for rank, row in enumerate(result.trace.recalled, start=1):
        shown: JsonObject = {"rank": rank}
        if row.ref is not None:
            shown["ref"] = row.ref
        if row.match_reason is not None:
            shown["match_reason"] = compact_reason(row.match_reason)
        rows.append(shown)
    return {"limit": result.trace.recall_limit, "returned_count": len(rows), "rows": rows}


def _records(cut: Cut, *, claims: bool) -> list[tuple[str, Record]]:
    """The records the answer quotes (each item's head, then its excerpts), or with
    ``claims`` every record it cites (the head, its shown claims, its excerpts), in answer
    order, each once."""
    cited: dict[str, Record] = {}
    for shown in cut.shown:
        kept = kept_refs(shown)
        texts = {claim.ref: claim_record(claim) for claim in shown.item.relevance}
        refs = [shown.head.ref]
        if claims:
            refs += [c.ref for c in shown.item.claims if shows(kept, c.ref)]
        refs += [q.ref for q in shown.excerpts if shows(kept, q.ref)]
        for ref in refs:
            if ref in texts:
                cited.setdefault(ref, texts[ref])
    return list(cited.items())


def _coverage(query: str, cited: list[tuple[str, Record]]) -> JsonObject:
    """For each word of ``query`` (recall's search words, in query order), the cited
    records whose text holds it as a word (case folded), in answer order: what of the
    question the answer's evidence speaks to, and what it leaves open (``[]``)."""
    parts = list(dict.fromkeys(lexeme for lexeme, _, _ in query_terms.lexeme_spans(query)))
    words = {ref: {w for w, _, _ in query_terms.lexeme_spans(r.text)} for ref, r in cited}
    return {part: [ref for ref, _ in cited if part in words[ref]] for part in parts}
