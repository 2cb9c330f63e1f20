"""The shape of ``service/``: no module past 400 lines, no code written twice.

A long module is several features in one file; a run of lines that stands word for word in
two places is one piece of logic that will drift apart when only one copy is fixed. Both
are checked on the source as text, so they hold for the SQL files as for the Python ones.
Migrations are left out: each is frozen once it lands, boilerplate included.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

SERVICE = Path(__file__).resolve().parent.parent / "service"
MAX_LINES = 400
RUN = 6
"""Lines that make a duplicate: as many as the ``duplicates`` command counts by default."""


def modules(root: Path) -> list[Path]:
    """The Python and SQL files below ``root``, migrations excepted."""
    return [
        path
        for path in sorted(root.rglob("*"))
        if path.suffix in (".py", ".sql") and "migrations" not in path.relative_to(root).parts
    ]


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text with white space folded) of the lines that carry code: no blank
    line, comment, import or line of lone punctuation (which every module shares)."""
    kept = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = " ".join(line.split())
        skipped = text.startswith(("#", "--", "import ", "from ")) or not re.search(r"\w", text)
        if not skipped:
            kept.append((number, text))
    return kept


def long_modules(root: Path) -> list[str]:
    """The modules below ``root`` of more than ``MAX_LINES`` lines, with their length."""
    found = []
    for path in modules(root):
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_LINES:
            found.append(f"{path.relative_to(root)}: {count} lines")
    return found


def exact_duplicates(root: Path) -> list[str]:
    """Every run of ``RUN`` code lines that stands word for word in more than one place."""
    places: defaultdict[tuple[str, ...], list[str]] = defaultdict(list)
    for path in modules(root):
        lines = _code_lines(path)
        for start in range(len(lines) - RUN + 1):
            run = tuple(text for _, text in lines[start : start + RUN])
            places[run].append(f"{path.relative_to(root)}:{lines[start][0]}")
    return [" ~ ".join(where) for where in places.values() if len(where) > 1]


def test_no_module_is_over_400_lines() -> None:
    assert long_modules(SERVICE) == []


def test_no_code_stands_twice() -> None:
    assert exact_duplicates(SERVICE) == []


def test_the_checks_see_what_they_must(tmp_path: Path) -> None:
    body = "\n".join(f"value_{n} = compute({n})" for n in range(RUN))
    (tmp_path / "one.py").write_text(body + "\n", encoding="utf-8")
    (tmp_path / "two.sql").write_text("-- other --\n" + body + "\n", encoding="utf-8")
    (tmp_path / "long.py").write_text("\n" * MAX_LINES + "x = 1\n", encoding="utf-8")
    assert exact_duplicates(tmp_path) == ["one.py:1 ~ two.sql:2"]
    assert long_modules(tmp_path) == [f"long.py: {MAX_LINES + 1} lines"]
    assert modules(SERVICE)  # the scan reads the service
