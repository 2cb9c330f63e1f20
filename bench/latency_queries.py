"""Recall-latency queries: unique realistic texts and corpus-like vectors (pure)."""

from __future__ import annotations

import random

import numpy as np

from bench import scale_texts as corpus

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
