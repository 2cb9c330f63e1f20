"""Retrieval-quality maths for the LoCoMo recall benchmark: pure functions, no I/O.

The protocol (see ``docs/benchmarks/quality.md``): one corpus per conversation, every
dialogue turn one document ``"<speaker>: <text>"`` (plus `` [shares a photo: <caption>]``),
every question with evidence one query, relevance = the question's evidence turn ids
after :func:`normalise_evidence`. Metrics are binary-relevance NDCG@k, Recall@k, hit@k,
MRR@k and (when a deeper ranking is at hand) Recall@50 per question, averaged per
category, over all questions (micro) and over the categories (macro). :class:`Bm25Index`
is a plain Okapi BM25 used as an offline sanity check of the protocol against the
published reference figure; :class:`StemmedBm25Index` the same over English Snowball stems.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

CATEGORY_NAMES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
    101: "python-faq",  # the held-out benchmark's two agents (bench/quality/heldout.py)
    102: "debian-faq",
}
EVIDENCE_ID = re.compile(r"D:?(\d+):0*(\d+)")
EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
SESSION_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
TOKEN = re.compile(r"\w+")


# --------------------------------------------------------------------------- protocol


def normalise_evidence(raw: Iterable[str], valid: Collection[str]) -> list[str]:
    """Evidence strings → clean turn ids ``D{s}:{t}``, in order, unique, existing only.

    Each string is split on ``;``, ``,`` and whitespace (``"D8:6; D9:17"`` holds two
    ids); each piece must match ``D:?(\\d+):0*(\\d+)`` from its start (``"D:11:26"`` →
    ``D11:26``, ``"D30:05"`` → ``D30:5``); a bare ``"D"`` or an id absent from
    ``valid`` (past the end of a session) is dropped.
    """
    out: list[str] = []
    for item in raw:
        for piece in EVIDENCE_SPLIT.split(item):
            found = EVIDENCE_ID.match(piece)
            if found is None:
                continue
            dia_id = f"D{int(found.group(1))}:{int(found.group(2))}"
            if dia_id in valid and dia_id not in out:
                out.append(dia_id)
    return out


def session_timestamp(text: str) -> str:
    """LoCoMo's session date (``"1:56 pm on 8 May, 2023"``) as ISO-8601 UTC.

    The dataset gives no time zone; the value is read as UTC so every turn of one
    session carries the same, comparable instant.
    """
    moment = datetime.strptime(" ".join(text.split()), SESSION_DATE_FORMAT)  # noqa: DTZ007
    return moment.strftime("%Y-%m-%dT%H:%M:00+00:00")


def turn_content(turn: Mapping[str, object]) -> str:
    """The stored text of one turn: ``"<speaker>: <text>"`` plus the photo caption."""
    content = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption:
        content += f" [shares a photo: {caption}]"
    return content


# --------------------------------------------------------------------------- metrics


def _first_k_unique(ranked: Sequence[str], k: int) -> list[str]:
    """The first ``k`` positions of ``ranked`` with later repeats blanked out."""
    seen: set[str] = set()
    out: list[str] = []
    for item in ranked[:k]:
        out.append("" if item in seen else item)
        seen.add(item)
    return out


def _discount(position: int) -> float:
    return 1.0 / math.log2(position + 2)


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """Binary-relevance NDCG@k; the ideal list holds ``min(|relevant|, k)`` hits.

    ``ranked`` is best first; a repeated id earns nothing the second time. An empty
    ``relevant`` is an error: such questions are skipped, not scored 0.
    """
    if not relevant:
        raise ValueError("no relevant ids")
    gains = _first_k_unique(ranked, k)
    dcg = sum(_discount(i) for i, item in enumerate(gains) if item in relevant)
    ideal = sum(_discount(i) for i in range(min(len(relevant), k)))
    return dcg / ideal


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """Share of the relevant ids found in the first ``k`` positions."""
    if not relevant:
        raise ValueError("no relevant ids")
    return len(set(ranked[:k]) & set(relevant)) / len(set(relevant))


def hit_at_k(ranked: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """1.0 when any relevant id is in the first ``k`` positions, else 0.0."""
    if not relevant:
        raise ValueError("no relevant ids")
    return 1.0 if set(ranked[:k]) & set(relevant) else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """1 / the position of the first relevant id in the first ``k`` (0.0 when none)."""
    if not relevant:
        raise ValueError("no relevant ids")
    for position, item in enumerate(ranked[:k], start=1):
        if item in relevant:
            return 1.0 / position
    return 0.0


DEEP_K = 50
"""The depth of the deeper recall metric (Recall@50)."""


@dataclasses.dataclass(frozen=True)
class Scores:
    """The per-question metrics; ``recall50`` is NaN when no deeper ranking was asked."""

    ndcg: float
    recall: float
    hit: float
    mrr: float = math.nan
    recall50: float = math.nan


def score(
    ranked: Sequence[str],
    relevant: Collection[str],
    k: int = 10,
    deeper: Sequence[str] | None = None,
) -> Scores:
    """NDCG@k, Recall@k, hit@k and MRR@k of one question, and Recall@50 of ``deeper``
    (a ranking at least 50 deep) when given."""
    return Scores(
        ndcg_at_k(ranked, relevant, k),
        recall_at_k(ranked, relevant, k),
        hit_at_k(ranked, relevant, k),
        mrr_at_k(ranked, relevant, k),
        math.nan if deeper is None else recall_at_k(deeper, relevant, DEEP_K),
    )


@dataclasses.dataclass(frozen=True)
class Summary:
    """Mean metrics over a group of questions."""

    count: int
    ndcg: float
    recall: float
    hit: float
    mrr: float = math.nan
    recall50: float = math.nan


METRICS = ("ndcg", "recall", "hit", "mrr", "recall50")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def mean_scores(items: Sequence[Scores]) -> Summary:
    """The mean of each metric (NaN for an empty group)."""
    means = [_mean([getattr(s, name) for s in items]) for name in METRICS]
    return Summary(len(items), *means)


def summarise(per_question: Sequence[tuple[int, Scores]]) -> dict[str, Summary]:
    """Per category (by name), ``overall`` (micro: every question weighs the same) and
    ``macro`` (the unweighted mean of the category means, count = questions)."""
    groups: dict[int, list[Scores]] = {}
    for category, scores in per_question:
        groups.setdefault(category, []).append(scores)
    out = {CATEGORY_NAMES.get(c, f"category-{c}"): mean_scores(groups[c]) for c in sorted(groups)}
    means = list(out.values())
    out["overall"] = mean_scores([s for _, s in per_question])
    if means:
        macro = [_mean([getattr(m, name) for m in means]) for name in METRICS]
        out["macro"] = Summary(len(per_question), *macro)
    return out


# --------------------------------------------------------------------------- BM25 check


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (``\\w+``)."""
    return [t.lower() for t in TOKEN.findall(text)]


class Bm25Index:
    """Okapi BM25 over a small in-memory corpus of ``(id, text)`` documents.

    Tokens are lower-cased ``\\w+`` runs minus ``stopwords``. IDF is
    ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative); documents sharing no term
    with the query are never returned.
    """

    def __init__(
        self,
        docs: Sequence[tuple[str, str]],
        stopwords: Collection[str] = (),
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self.stopwords = frozenset(stopwords)
        self.ids = [doc_id for doc_id, _ in docs]
        self.bags = [Counter(self.terms(text)) for _, text in docs]
        self.lengths = [sum(bag.values()) for bag in self.bags]
        self.average = (sum(self.lengths) / len(self.bags) if self.bags else 0.0) or 1.0
        self.df: Counter[str] = Counter(term for bag in self.bags for term in bag)
        self.k1, self.b = k1, b

    def terms(self, text: str) -> list[str]:
        """The text's tokens without stopwords."""
        return [t for t in tokens(text) if t not in self.stopwords]

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1 + (len(self.bags) - df + 0.5) / (df + 0.5))

    def rank(self, query: str, k: int = 10) -> list[str]:
        """The ids of the ``k`` best documents for ``query``, best first (ties: corpus order)."""
        return list(self.scores(query, k))

    def scores(self, query: str, k: int = 10) -> dict[str, float]:
        """The ``k`` best documents and their BM25 scores, best first (ties: corpus order)."""
        terms = set(self.terms(query))
        weights = {t: self.idf(t) for t in terms}
        scored: list[tuple[float, int]] = []
        for index, bag in enumerate(self.bags):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.average)
            total = sum(
                weights[t] * bag[t] * (self.k1 + 1) / (bag[t] + norm) for t in terms & bag.keys()
            )
            if total > 0:
                scored.append((-total, index))
        scored.sort()
        return {self.ids[index]: -score for score, index in scored[:k]}


class StemmedBm25Index(Bm25Index):
    """:class:`Bm25Index` over English Snowball stems (stop words removed before stemming),
    the offline reference of the service's stemmed channel."""

    def terms(self, text: str) -> list[str]:
        words: list[str] = _english_stemmer().stemWords(super().terms(text))
        return words


@functools.cache
def _english_stemmer() -> Any:
    import snowballstemmer  # bench-only dependency (the dev extra)

    return snowballstemmer.stemmer("english")


# --------------------------------------------------------------------------- fusion what-ifs


def fuse_rrf(
    rankings: Sequence[Sequence[str]],
    k: int = 60,
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> list[str]:
    """Weighted reciprocal-rank fusion of best-first rankings, each cut to ``depth``.

    A document at 0-based position ``r`` of ranking ``i`` earns ``w_i / (k + r + 1)``;
    ties keep first-seen order. With ``depth`` 10 and equal weights this is the
    service's rrf over its ``limit``-deep channels.
    """
    weights = weights if weights is not None else [1.0] * len(rankings)
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, doc in enumerate(ranking[:depth]):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank + 1)
    return sorted(scores, key=lambda d: -scores[d])


def fuse_scores(
    channels: Sequence[Mapping[str, float]], weights: Sequence[float] | None = None
) -> list[str]:
    """Weighted sum of per-channel min-max normalised scores (missing = 0), best first."""
    weights = weights if weights is not None else [1.0] * len(channels)
    total: dict[str, float] = {}
    for channel, weight in zip(channels, weights, strict=True):
        if not channel:
            continue
        lo, hi = min(channel.values()), max(channel.values())
        for doc, value in channel.items():
            norm = (value - lo) / (hi - lo) if hi > lo else 1.0
            total[doc] = total.get(doc, 0.0) + weight * norm
    return sorted(total, key=lambda d: -total[d])
