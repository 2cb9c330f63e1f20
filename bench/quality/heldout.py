"""A held-out recall benchmark of another shape: FAQ retrieval over documentation notes.

``python -m bench.quality.heldout --docs-root DIR [options of bench.quality.locomo]``

LoCoMo is short chat turns and questions about people; this is long, factual notes about
software and the questions a user asks about them, so a change tuned to LoCoMo's quirks
shows here. It is built at run time from two Debian packages (nothing is committed):

* ``python3.11-doc`` (Python Software Foundation License): the Python FAQ sources
  (``faq/*.rst.txt``). Every section heading that is a question is a query; its answer
  (reStructuredText markup stripped), packed into chunks of at most ~1,000 characters on
  paragraph boundaries, is the set of relevant memories. Every paragraph chunk of the
  tutorial and the HOWTOs of the same package is stored too, as distractors.
* ``debian-faq`` (Software in the Public Interest; verbatim and modified copies permitted
  with the notice): the Debian FAQ (``debian-faq.en.txt.gz``), questions and answer chunks
  the same way, in a second agent (each answer is a distractor for the other questions).

Headings are never stored, so a query is not a copy of its target; the labels are the
FAQ authors' own pairing of question and answer. Metrics as LoCoMo's (every chunk of an
answer is relevant). Fetch the sources once, outside the benchmark::

    mkdir -p heldout-src && cd heldout-src               # any scratch folder
    apt-get download python3.11-doc debian-faq
    for f in *.deb; do dpkg-deb -x "$f" x; done          # then --docs-root heldout-src/x
"""

from __future__ import annotations

import argparse
import gzip
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from bench.corpora.locomo import Conversation, Question, Turn
from bench.quality import locomo

PY_DOCS = Path("usr/share/doc/python3.11/html/_sources")
DEB_FAQ = Path("usr/share/doc/debian/FAQ/debian-faq.en.txt.gz")
CHUNK_CHARS = 1000
CATEGORY_PY, CATEGORY_DEB = 101, 102
CATEGORY_NAMES = {CATEGORY_PY: "python-faq", CATEGORY_DEB: "debian-faq"}

_UNDERLINE = re.compile(r"^([=\-~^*#\"+'`])\1{3,}\s*$")
_ROLE = re.compile(r":[\w:.+-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`_{1,2}")
_LITERAL = re.compile(r"``([^`]+)``")
_DEB_HEADING = re.compile(r"^(\d+)\.(\d+)\.\s+(.*)$")


def clean_rst(text: str) -> str:
    """Inline reStructuredText markup reduced to its text."""
    text = _LINK.sub(r"\1", text)
    text = _ROLE.sub(lambda m: m.group(1).lstrip("~!."), text)
    text = _LITERAL.sub(r"\1", text)
    text = re.sub(r"`([^`]+)`_?", r"\1", text)
    return re.sub(r"\s+::\s*$", ":", text, flags=re.MULTILINE)


def paragraphs(lines: Sequence[str]) -> list[str]:
    """The paragraphs of a block of lines (directives dropped, whitespace folded), at least
    20 characters each."""
    out: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        stripped = line.strip()
        if stripped and not stripped.startswith(".. "):
            current.append(stripped)
            continue
        if current:
            out.append(" ".join(current))
            current = []
    folded = (" ".join(clean_rst(p).split()) for p in out)
    return [p for p in folded if len(p) >= 20]


def chunks(parts: Sequence[str], size: int = CHUNK_CHARS) -> list[str]:
    """Paragraphs packed into chunks of at most ``size`` characters (a longer paragraph is a
    chunk of its own, cut at ``2 * size``)."""
    out: list[str] = []
    current = ""
    for part in parts:
        part = part[: 2 * size]
        if current and len(current) + 1 + len(part) > size:
            out.append(current)
            current = ""
        current = f"{current} {part}".strip()
    if current:
        out.append(current)
    return out


def _is_heading(lines: Sequence[str], i: int) -> bool:
    title, rule = lines[i - 1], lines[i]
    return (
        bool(_UNDERLINE.match(rule))
        and bool(title.strip())
        and not _UNDERLINE.match(title)
        and len(rule.rstrip()) >= len(title.rstrip())
    )


def rst_sections(text: str) -> Iterator[tuple[str, list[str]]]:
    """``(heading, body lines)`` of every section of a reStructuredText file."""
    lines = text.splitlines()
    heads = [i - 1 for i in range(1, len(lines)) if _is_heading(lines, i)]
    for n, start in enumerate(heads):
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        if n + 1 < len(heads) and _UNDERLINE.match(lines[end - 1]):
            end -= 1  # the next heading's overline
        yield lines[start].strip(), lines[start + 2 : end]


def python_faq(root: Path) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The Python FAQ's ``(question, answer chunks)`` and the distractor chunks."""
    docs = root / PY_DOCS
    qa = []
    for path in sorted((docs / "faq").glob("*.rst.txt")):
        for heading, body in rst_sections(path.read_text(encoding="utf-8")):
            answer = chunks(paragraphs(body))
            if heading.endswith("?") and answer:
                qa.append((clean_rst(heading), answer))
    extra = [
        chunk
        for folder in ("tutorial", "howto")
        for path in sorted((docs / folder).glob("*.rst.txt"))
        for _, body in rst_sections(path.read_text(encoding="utf-8"))
        for chunk in chunks(paragraphs(body))
    ]
    return qa, extra


def _debian_sections(lines: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """``(heading, body)`` of the Debian FAQ text: numbered headings, possibly wrapped."""
    heading: list[str] | None = None
    body: list[str] = []
    wrapped = False
    for line in lines:
        found = _DEB_HEADING.match(line)
        if found or line.startswith("Chapter "):
            if heading is not None:
                yield " ".join(heading), body
            heading, body = ([found.group(3).strip()] if found else None), []
            wrapped = bool(found) and not line.rstrip().endswith(("?", "."))
        elif heading is not None and wrapped and line.strip() and not line.startswith("    "):
            heading.append(line.strip())
            wrapped = not line.rstrip().endswith("?")
        else:
            wrapped = False
            body.append(line)
    if heading is not None:
        yield " ".join(heading), body


def debian_faq(root: Path) -> list[tuple[str, list[str]]]:
    """The Debian FAQ's ``(question, answer chunks)``."""
    lines = gzip.decompress((root / DEB_FAQ).read_bytes()).decode("utf-8").splitlines()
    qa = []
    for title, body in _debian_sections(lines):
        answer = chunks(paragraphs(body))
        if title.endswith("?") and answer:
            qa.append((title, answer))
    return qa


def conversation(
    agent: str, category: int, qa: Sequence[tuple[str, list[str]]], extra: Sequence[str] = ()
) -> Conversation:
    """One agent: answer chunks and distractors as memories, the questions as queries."""
    turns: list[Turn] = []
    ids: dict[str, str] = {}

    def add(text: str) -> str:
        if text not in ids:
            n = len(turns)
            ids[text] = f"M{n}"
            stamp = f"2025-01-{1 + n // 1440 % 28:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00+00:00"
            turns.append(Turn(ids[text], text, stamp))
        return ids[text]

    questions = [
        Question(agent, number, category, question, tuple(dict.fromkeys(add(c) for c in answer)))
        for number, (question, answer) in enumerate(qa)
    ]
    for text in extra:
        add(text)
    return Conversation(agent, tuple(turns), tuple(questions))


def build(root: Path) -> list[Conversation]:
    """The two agents of the benchmark from the unpacked packages under ``root``."""
    qa, extra = python_faq(root)
    return [
        conversation("python-faq", CATEGORY_PY, qa, extra),
        conversation("debian-faq", CATEGORY_DEB, debian_faq(root)),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: the LoCoMo benchmark's machinery on the held-out conversations."""
    parser = argparse.ArgumentParser(prog="python -m bench.quality.heldout", description=__doc__)
    locomo.add_options(parser)
    parser.add_argument("--docs-root", type=Path, required=True, help="the unpacked packages")
    parser.set_defaults(out=Path("bench/results/heldout.json"))
    args = parser.parse_args(argv)
    args.conversations_given = build(args.docs_root)
    args.data_name = "held-out FAQ (python3.11-doc, debian-faq)"
    locomo.finish(args)


if __name__ == "__main__":
    main()
