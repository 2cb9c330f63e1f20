"""Synthetic memories for the recall-latency corpus: texts and clustered vectors (pure).

Everything is reproducible from a seed:

* text: one to three sentences from templates and word lists; each of the 200 topics
  has its own nouns, so rows of one topic share vocabulary (and long posting lists
  exist for the common words, as in real corpora); unique per agent (the content
  dedup index is unique per agent);
* vectors: 200 random centroids on the 384-d unit sphere; a row is its topic's
  centroid plus gaussian noise of the same norm, normalised (cosine ~0.7 to its
  centroid, ~0.5 between rows of one topic, ~0 across topics).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bench.corpora import words

SEED = 20261130
DIMENSION = 384  # the local model's width (checked against it when loading)
TOPICS = 200
NAMES = (*words.NAMES, "Amara", "Bjorn", "Carmen", "Dmitri")
PLACES = (
    *words.CITIES,
    "Lagos",
    "Porto",
    "Krakow",
    "Hanoi",
    "Austin",
    "Bergen",
    "Cusco",
    "Dublin",
    "Perth",
    "Quito",
)
DOMAINS = {
    "work": ("deadline", "roadmap", "standup", "budget", "contract", "invoice", "launch"),
    "health": ("allergy", "physio", "dentist", "prescription", "sleep", "migraine", "diet"),
    "food": ("ramen", "sourdough", "espresso", "curry", "tapas", "dumplings", "granola"),
    "travel": ("flight", "visa", "hostel", "layover", "passport", "itinerary", "ferry"),
    "family": ("daughter", "nephew", "grandmother", "wedding", "birthday", "reunion", "twins"),
    "hobby": ("pottery", "climbing", "chess", "guitar", "knitting", "photography", "surfing"),
    "home": ("lease", "plumber", "garden", "mortgage", "heating", "balcony", "furniture"),
    "tech": ("laptop", "router", "backup", "firmware", "keyboard", "monitor", "password"),
    "money": ("savings", "pension", "taxes", "refund", "subscription", "loan", "receipt"),
    "learning": ("course", "exam", "thesis", "lecture", "flashcards", "tutor", "workshop"),
}
VERBS = (
    "booked",
    "cancelled",
    "moved",
    "asked about",
    "forgot",
    "finished",
    "planned",
    "complained about",
    "recommended",
    "paid for",
    "postponed",
    "looked into",
)
WHEN = (
    "on Monday",
    "next week",
    "last weekend",
    "in March",
    "before the holidays",
    "every Friday",
    "tomorrow morning",
    "after lunch",
    "in the autumn",
)
TEMPLATES = (
    "{name} {verb} the {noun} {when}.",
    "{name} prefers the {noun2} over the {noun} since moving to {place}.",
    "Reminder: {name}'s {noun} is due {when}; the {noun2} can wait.",
    "{name} said the {noun} in {place} was better than expected.",
    "{name} and {name2} {verb} the {noun} together {when}.",
    "The {noun} problem came up again; {name} thinks the {noun2} is the cause.",
    "{name} wants to hear about the {noun} {when}, not by email.",
    "{name} spent {amount} euros on the {noun} {when}.",
    "{name} mentioned a new {noun2} and is worried about the {noun}.",
)
FloatArray = npt.NDArray[np.float32]


# --------------------------------------------------------------------------- generation


def topic_words(topic: int) -> tuple[str, ...]:
    """The nouns of a topic: its domain's words, rotated so topics differ in emphasis."""
    words = list(DOMAINS.values())[topic % len(DOMAINS)]
    shift = topic // len(DOMAINS) % len(words)
    return words[shift:] + words[:shift]


def sentence(rng: random.Random, topic: int) -> str:
    """One template sentence about ``topic`` (its nouns), names and places drawn at random."""
    nouns = topic_words(topic)
    name, name2 = rng.sample(NAMES, 2)
    return rng.choice(TEMPLATES).format(
        name=name,
        name2=name2,
        verb=rng.choice(VERBS),
        when=rng.choice(WHEN),
        noun=rng.choice(nouns[:4]),
        noun2=rng.choice(nouns[3:]),
        place=rng.choice(PLACES),
        amount=rng.randint(5, 900),
    )


def memory_text(rng: random.Random, topic: int) -> str:
    """One memory: one to three sentences, the first about ``topic``."""
    extra = [sentence(rng, rng.randrange(TOPICS)) for _ in range(rng.randint(0, 2))]
    return " ".join([sentence(rng, topic), *extra])


def unique_texts(rng: random.Random, topics: Sequence[int], seen: set[str]) -> list[str]:
    """One text per topic, never one already in ``seen`` (the agent's texts so far)."""
    out = []
    for topic in topics:
        text = memory_text(rng, topic)
        for attempt in range(1, 1000):
            if text not in seen:
                break
            text = f"{memory_text(rng, topic)} (#{attempt})"
        seen.add(text)
        out.append(text)
    return out


def centroids(seed: int = SEED) -> FloatArray:
    """``TOPICS`` random unit vectors of ``DIMENSION`` dimensions."""
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((TOPICS, DIMENSION), dtype=np.float32)
    unit: FloatArray = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    return unit


def clustered(rng: np.random.Generator, centres: FloatArray, topics: Sequence[int]) -> FloatArray:
    """Unit vectors: each topic's centroid plus noise of unit expected norm, normalised."""
    noise = rng.standard_normal((len(topics), DIMENSION), dtype=np.float32)
    noise /= np.float32(np.sqrt(DIMENSION))
    rows = centres[np.asarray(topics)] + noise
    unit: FloatArray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


def vector_bytes(rows: FloatArray) -> list[bytes]:
    """pgvector's binary form of each row (dimension, unused, big-endian float4s)."""
    header = struct.pack(">HH", rows.shape[1], 0)
    raw = rows.astype(">f4").tobytes()
    width = rows.shape[1] * 4
    return [header + raw[i * width : (i + 1) * width] for i in range(rows.shape[0])]
