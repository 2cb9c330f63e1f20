"""What a careful agent declares about one LoCoMo turn: its people, places and things.

Deterministic and documented in docs/benchmarks/reconstruct.md. For a turn
``"<speaker>: <text>"`` (the photo caption included) of a conversation:

- **Names** are runs of capitalised words (``[A-Z][\\w'&-]*``, a typographic apostrophe
  counting as ``'``, joined by single spaces) in the turn's own text, possessive ``'s``
  dropped. A run that starts a sentence (the
  text's start, or after ``.``, ``!``, ``?``, ``:``, a quote or a dash) loses its leading
  words that the conversation also writes in lower case (so "Yeah" and "Congrats" are
  dropped, "Hey Caroline" becomes "Caroline", "Paris" is kept); the interjections of
  :data:`INTERJECTIONS` count as written in lower case. A word with an apostrophe left
  after the possessive is dropped ("I'm", "You'd", "We're" are never names), and so is
  ``I``. Names are deduplicated case-insensitively, in order of appearance.
- **Entities** declared: the speaker, then the names (at most 64, the declaration bound).
- **Relations**: ``<speaker> —mentions→ <name>`` for every name other than the speaker.

Nothing comes from the question or the answer; every entity is anchored on the turn's
record by the ``store`` rider.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

MAX_ITEMS = 64
_APOSTROPHES = "'\u2019"
_WORD = rf"[A-Z][\w{_APOSTROPHES}&-]*"
_RUN = re.compile(rf"{_WORD}(?: {_WORD})*")
_LOWER_WORD = re.compile(rf"\b[a-z][\w{_APOSTROPHES}-]*")
_SENTENCE_START = re.compile('(?:^|[.!?:;"\u201c\u201d(\u2014\u2013-]\\s*)$')
INTERJECTIONS = frozenset(
    {
        *("hey", "hi", "hello", "wow", "yeah", "yep", "yes", "no", "oh", "ooh", "aw", "aww"),
        *("ah", "thanks", "thank", "ok", "okay", "sure", "congrats", "congratulations"),
        *("haha", "hmm", "um", "well", "so", "omg", "lol", "cool", "great", "nice"),
        *("awesome", "totally", "absolutely", "definitely", "really", "gosh", "whoa"),
        *("amazing", "good", "bye", "cheers"),
    }
)
_POSSESSIVE = re.compile(rf"[{_APOSTROPHES}]s$")


def lower_words(texts: Iterable[str]) -> frozenset[str]:
    """Every word the texts write in lower case (the conversation's common words)."""
    return frozenset(w for text in texts for w in _LOWER_WORD.findall(text))


def _words(run: str) -> list[str]:
    """The words of a run, possessive dropped, contractions and ``I`` removed."""
    words = [_POSSESSIVE.sub("", w).rstrip(f"{_APOSTROPHES}-&") for w in run.split(" ")]
    return [w for w in words if w and w != "I" and not set(w) & set(_APOSTROPHES)]


def names(text: str, common: Collection[str]) -> list[str]:
    """The capitalised names of ``text`` under the rules of this module, in order, unique."""
    found: list[str] = []
    for match in _RUN.finditer(text):
        words = _words(match.group())
        starts = bool(_SENTENCE_START.search(text[: match.start()]))
        while (
            words and starts and (words[0].lower() in common or words[0].lower() in INTERJECTIONS)
        ):
            words = words[1:]
        name = " ".join(words)
        if len(name) < 2 or name.lower() in (f.lower() for f in found):
            continue
        found.append(name)
    return found


def declaration(speaker: str, text: str, common: Collection[str]) -> dict[str, Any]:
    """The ``associations`` object for one turn of ``speaker`` (see the module's rules)."""
    things = [n for n in names(text, common) if n.lower() != speaker.lower()]
    entities = [{"name": speaker}] + [{"name": n} for n in things]
    relations = [{"subject": speaker, "predicate": "mentions", "object": n} for n in things]
    return {"entities": entities[:MAX_ITEMS], "relations": relations[:MAX_ITEMS]}
