"""Citations in the code lead somewhere: to a section of a document in this repository.

Code and tests cite documents in one form, ``docs/<file>.md, "<section>"`` (or
``README.md, "<section>"``), usually in parentheses: ``(docs/tools.md, "Quality gate")``.
The section is a heading of that file, by name (Markdown backticks ignored, any case; a
heading answers to its first words, so ``Response economy (recall and recall_with_context)``
answers to ``Response economy``, and a dated one to the words after its date).
The numbered sections of an outside specification (a section sign and a number) are
refused: that document is not in the repository, so the number leads nowhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("service", "tests", "bench")
SUFFIXES = (".py", ".sql")
CITATION = re.compile(r'((?:docs/[\w./-]+|README)\.md), "([^"\n]+)"')
SECTION_NUMBER = re.compile("\N{SECTION SIGN}" + r"\s?\d+(?:\.\d+)*")
"""A numbered section of a document outside the repository (``spec`` and a section sign)."""


def _sources() -> Iterator[Path]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and path != Path(__file__).resolve():
                yield path


def _headings(markdown: str) -> set[str]:
    """The headings of a Markdown text, outside code fences, without ``#`` and backticks."""
    found: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            found.add(match.group(1).replace("`", "").strip())
    return found


@cache
def _headings_of(document: str) -> frozenset[str] | None:
    path = ROOT / document
    if not path.is_file():
        return None
    return frozenset(_headings(path.read_text(encoding="utf-8")))


_SECTION_ENDS = (":", ",", ";", " (", " \N{EM DASH}")
"""What may follow a cited name inside a longer heading: the name is the heading's head."""


def _answers_to(heading: str, section: str) -> bool:
    """Whether a heading is the cited section: the heading, or its text after a ``: ``
    (a dated heading), equals the name or begins with it up to a colon, comma or parenthesis
    (``The vector channel at scale: `hnsw.ef_search` (...)``), in any case."""
    wanted = section.casefold()
    for name in [heading, *heading.split(": ")[1:]]:
        name = name.casefold()
        if name == wanted:
            return True
        if name.startswith(wanted) and name[len(wanted) :].startswith(_SECTION_ENDS):
            return True
    return False


def broken_citations(text: str) -> list[str]:
    """Every citation in ``text`` whose document or section does not exist, and every
    numbered section of an outside document, as readable complaints."""
    problems = [f"outside section number: {m.group(0)!r}" for m in SECTION_NUMBER.finditer(text)]
    for document, section in CITATION.findall(text):
        headings = _headings_of(document)
        if headings is None:
            problems.append(f"no document {document}")
        elif not any(_answers_to(heading, section) for heading in headings):
            problems.append(f'{document} has no section "{section}"')
    return problems


def test_every_citation_names_an_existing_section() -> None:
    problems = [
        f"{path.relative_to(ROOT)}: {problem}"
        for path in _sources()
        for problem in broken_citations(path.read_text(encoding="utf-8"))
    ]
    assert problems == []


def test_the_check_finds_what_it_must() -> None:
    spec = "spec " + "\N{SECTION SIGN}" + "3.2"
    assert broken_citations(f'(docs/tools.md, "Quality gate"), ({spec})') == [
        f"outside section number: {spec[5:]!r}"
    ]
    assert broken_citations('(docs/tools.md, "No such section")') == [
        'docs/tools.md has no section "No such section"'
    ]
    assert broken_citations('(docs/nowhere.md, "Recall")') == ["no document docs/nowhere.md"]
    assert broken_citations('(docs/tools.md, "Response economy"; README.md, "Configuration")') == []
    assert broken_citations('(docs/tools.md, "store")') == []
    assert broken_citations('(docs/tools.md, "Response")') == [
        'docs/tools.md has no section "Response"'
    ]


def test_citations_are_found_in_the_code() -> None:
    """The scan reads the modules that cite (so an empty scan cannot pass unnoticed)."""
    cited = [path for path in _sources() if CITATION.search(path.read_text(encoding="utf-8"))]
    assert len(cited) > 50
