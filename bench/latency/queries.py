"""Recall-latency queries: unique realistic texts and corpus-like vectors (pure)."""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from bench.latency import synthetic as corpus

SHARED_TEMPLATES = (
    "When did {name} book the {noun}?",
    "What did {name} say about the {noun} in {place}?",
    "How much did {name} spend on the {noun}?",
    "Who is worried about the {noun}?",
    "{name} {noun} plans {when}",
    "Does {name} prefer the {noun} or the {noun2}?",
)
FOREIGN_TEMPLATES = (
    "What is a good way to {task} before a {event}?",
    "Which {thing} did we pick for the {event}?",
    "Remind me of the {thing} issue from the {event}",
    "How do I {task} when the {thing} keeps failing?",
)
FOREIGN_WORDS = {
    "task": (
        "tune a saxophone",
        "repot an orchid",
        "calibrate a telescope",
        "descale a kettle",
        "wax a snowboard",
        "proofread a sonnet",
        "brew kombucha",
        "bleed a radiator",
    ),
    "event": (
        "regatta",
        "hackathon",
        "solstice party",
        "chess olympiad",
        "volcano tour",
        "quiz night",
        "harvest festival",
        "eclipse",
    ),
    "thing": (
        "drone",
        "kayak",
        "synthesizer",
        "aquarium",
        "3d printer",
        "sextant",
        "espalier",
        "theremin",
    ),
}


def query_texts(count: int, seed: int) -> list[str]:
    """``count`` unique realistic queries (so the embedding cache never answers one):
    half share words with the corpus, half do not."""
    rng = random.Random(seed)
    texts: list[str] = []
    seen: set[str] = set()
    for index in range(count * 20):
        if len(texts) >= count:
            break
        if index % 2 == 0:
            nouns = corpus.topic_words(rng.randrange(corpus.TOPICS))
            text = rng.choice(SHARED_TEMPLATES).format(
                name=rng.choice(corpus.NAMES),
                noun=rng.choice(nouns),
                noun2=rng.choice(nouns),
                place=rng.choice(corpus.PLACES),
                when=rng.choice(corpus.WHEN),
            )
        else:
            words = {k: rng.choice(v) for k, v in FOREIGN_WORDS.items()}
            text = rng.choice(FOREIGN_TEMPLATES).format(**words)
            text += f" ({rng.choice(corpus.NAMES)} asked)" if rng.random() < 0.7 else ""
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def corpus_like_vectors(count: int, seed: int) -> list[list[float]]:
    """Query vectors drawn like corpus rows (a topic centroid plus noise)."""
    rng = np.random.default_rng(seed + 11)
    topics = [int(t) for t in rng.integers(0, corpus.TOPICS, count)]
    return [list(map(float, row)) for row in corpus.clustered(rng, corpus.centroids(seed), topics)]


COMMON_WORDS = 15
"""How many of the corpus's most widespread words the common-word queries draw from."""
_WORD = re.compile(r"[a-z]+")


def common_word_queries(
    texts: Sequence[str], count: int, seed: int, lexeme: Callable[[str], str | None]
) -> list[str]:
    """``count`` unique three-word queries drawn from the ``COMMON_WORDS`` words found in
    the most ``texts`` (a word counts once per text; stop words, for which ``lexeme``
    gives None, are skipped): the lexical channel's worst case, every posting list long.
    Why: the issue's "common-word query at 100k" target, measured through MCP as users
    send it instead of in a scratch client."""
    spread: Counter[str] = Counter()
    for text in texts:
        spread.update({w for w in _WORD.findall(text.lower()) if lexeme(w) is not None})
    words = [word for word, _ in spread.most_common(COMMON_WORDS)]
    triples = [" ".join(t) for t in itertools.permutations(words, 3)]
    random.Random(seed).shuffle(triples)
    return triples[:count]
