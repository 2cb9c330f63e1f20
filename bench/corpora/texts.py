"""Deterministic memory texts: sentences from word lists, or real dialogue turns.

Nothing is downloaded. ``short`` and ``medium`` are synthetic sentences built from word
lists; ``dialogue`` draws the turns of the LoCoMo conversations (``data/locomo``, the
same texts the recall benchmarks store), in an order shuffled by the seed. A
:class:`TextSource` built with the same seed produces the same sequence, and it never
returns the same text twice, so no store in a benchmark is skipped by the service's
content dedup.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from bench.corpora.locomo import DEFAULT_DATA
from bench.corpora.words import CITIES, NAMES

Size = Literal["short", "medium", "dialogue"]
SIZES: dict[str, Size] = {  # by command-line name
    "short": "short",
    "medium": "medium",
    "dialogue": "dialogue",
}

DRINKS = ("green tea", "espresso", "oat latte", "sparkling water", "rooibos", "flat white")
TIMES = ("morning", "afternoon", "late evening", "first hour of the day", "weekend")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
PROJECTS = (
    "billing migration",
    "mobile onboarding",
    "search relevance",
    "data warehouse",
    "checkout redesign",
    "partner API",
    "support chatbot",
    "pricing page",
    "audit log",
    "offline sync",
    "identity service",
    "reporting dashboard",
)
TEAMS = ("platform", "growth", "payments", "infrastructure", "design", "research", "support")
TOOLS = ("Grafana", "Terraform", "Postgres", "Figma", "Jira", "Sentry", "Kafka", "Redis")
ACTIVITIES = (
    "incident reviews",
    "capacity planning",
    "release notes",
    "load testing",
    "schema changes",
    "user interviews",
    "on-call handovers",
    "cost reports",
)
ENVIRONMENTS = ("staging", "production", "the EU region", "the canary cluster")
RELATIONS = ("daughter", "son", "partner", "manager", "sister", "flatmate")
ALLERGENS = ("peanuts", "shellfish", "gluten", "cats", "pollen", "penicillin")
REASONS = (
    "the vendor contract ends",
    "the error budget is spent",
    "legal asked for a review",
    "two customers reported timeouts",
    "the migration needs a freeze",
    "traffic doubled",
)
METRICS = ("p95 latency", "signup conversion", "monthly churn", "cache hit rate", "error rate")

TEMPLATES = (
    "{name} prefers {drink} over {drink2} in the {time}.",
    "{name} moved the {project} launch to {weekday} because {reason}.",
    "The {team} team uses {tool} for {activity}; {name} owns the runbook.",
    "{name}'s {relation} is allergic to {allergen}, so order accordingly.",
    "Deploys of the {project} to {env} need sign-off from {name} since {month}.",
    "{name} will be in {city} from {day} {month} and prefers calls after {hour}:00.",
    "{name} asked to be reminded about the {project} budget every {weekday}.",
    "The {metric} for the {project} dropped by {percent}% after {name}'s change.",
    "{name} and {name2} agreed to pair on {activity} for the {team} team.",
    "{name} keeps the {project} credentials in the {team} vault, never in chat.",
    "The {project} retro is on {weekday} at {hour}:30; {name} takes notes.",
    "{name} switched from {tool} to {tool2} for {activity} in {month}.",
)

SHORT_RANGE = (1, 1)
MEDIUM_RANGE = (4, 8)
MAX_ATTEMPTS = 50


def _fill(rng: random.Random, template: str) -> str:
    """One sentence from ``template`` with every slot drawn from ``rng``."""
    name, name2 = rng.sample(NAMES, 2)
    drink, drink2 = rng.sample(DRINKS, 2)
    tool, tool2 = rng.sample(TOOLS, 2)
    return template.format(
        name=name,
        name2=name2,
        drink=drink,
        drink2=drink2,
        tool=tool,
        tool2=tool2,
        time=rng.choice(TIMES),
        weekday=rng.choice(WEEKDAYS),
        month=rng.choice(MONTHS),
        project=rng.choice(PROJECTS),
        team=rng.choice(TEAMS),
        activity=rng.choice(ACTIVITIES),
        env=rng.choice(ENVIRONMENTS),
        relation=rng.choice(RELATIONS),
        allergen=rng.choice(ALLERGENS),
        city=rng.choice(CITIES),
        reason=rng.choice(REASONS),
        metric=rng.choice(METRICS),
        day=rng.randint(1, 28),
        hour=rng.randint(8, 18),
        percent=rng.randint(2, 40),
    )


def sentence(rng: random.Random) -> str:
    """One realistic memory sentence."""
    return _fill(rng, rng.choice(TEMPLATES))


def paragraph(rng: random.Random, sentences: tuple[int, int]) -> str:
    """Between ``sentences[0]`` and ``sentences[1]`` sentences joined by spaces."""
    count = rng.randint(*sentences)
    return " ".join(sentence(rng) for _ in range(count))


class TextSource:
    """Unique texts of a given size, reproducible from ``seed``; ``dialogue`` turns come
    from ``data`` (read on first use, so the synthetic sizes need no data set)."""

    def __init__(self, seed: int = 20261130, data: Path = DEFAULT_DATA) -> None:
        self._seed = seed
        self._rng = random.Random(seed)
        self._seen: set[str] = set()
        self._serial = 0
        self._data = data
        self._turns: list[str] | None = None
        self._turn = 0

    def next(self, size: Size) -> str:
        """The next text of ``size`` never returned before by this source."""
        if size == "dialogue":
            return self._next_turn()
        bounds = SHORT_RANGE if size == "short" else MEDIUM_RANGE
        for _ in range(MAX_ATTEMPTS):
            candidate = paragraph(self._rng, bounds)
            if candidate not in self._seen:
                return self._remember(candidate)
        self._serial += 1
        return self._remember(f"{paragraph(self._rng, bounds)} (note {self._serial})")

    def batch(self, size: Size, count: int) -> list[str]:
        """``count`` unique texts of ``size``."""
        return [self.next(size) for _ in range(count)]

    def _next_turn(self) -> str:
        """The next unused dialogue turn; once all are used, one again with a serial."""
        turns = self._dialogue()
        while self._turn < len(turns):
            self._turn += 1
            if turns[self._turn - 1] not in self._seen:
                return self._remember(turns[self._turn - 1])
        self._serial += 1
        return self._remember(f"{turns[self._serial % len(turns)]} (note {self._serial})")

    def _dialogue(self) -> list[str]:
        """The data set's distinct turns in the seed's order (read once); shuffled by a
        generator of their own, so drawing turns leaves the synthetic sequences as they are."""
        if self._turns is None:
            from bench.latency.corpus import turns  # reads the data set

            self._turns = list(turns(self._data))
            if not self._turns:
                raise ValueError(f"no dialogue turns in {self._data}")
            random.Random(self._seed).shuffle(self._turns)
        return self._turns

    def _remember(self, text: str) -> str:
        self._seen.add(text)
        return text


def mean_length(texts: Sequence[str]) -> float:
    """Average length in characters (0 for no texts)."""
    return sum(len(t) for t in texts) / len(texts) if texts else 0.0
