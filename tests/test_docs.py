"""The user and operator documents name no path of the machine they were written on.

Benchmarks and reviews ran in worktrees and scratch folders of one machine; a path such
as a worktree under ``/work`` or a scratch folder under ``/tmp`` means nothing to a
reader and goes stale with the machine. A document says where a thing is relative to
the checkout (``bench/results/``, ``../shared/data/...``) or in words. Absolute paths a
deployment really uses (``/etc/...``, ``/var/lib/...``, ``/usr/...``, ``/app`` in the
container, ``/dev/...``) are not the machine's and stay allowed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(
    r"(?<![\w./~-])/(?:work|home|root|Users|mnt|scratch)/[\w.-]+"
    r"|(?<![\w./~-])/tmp/(?!pytest-of-<user>)[\w.-]+"
)
"""A home, a worktree or a scratch folder: ``/work/...``, ``/home/...``, ``/root/...``,
``/Users/...``, ``/mnt/...``, or a named file or folder under ``/tmp`` (the bare
``/tmp``, a socket directory, stays allowed). A URL path or a path inside a checkout
(``docs/...``) is not matched: the slash must start the path."""


def _documents() -> list[Path]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    code = sorted(p for p in (ROOT / "service").rglob("*") if p.suffix in {".py", ".sql"})
    return [*docs, *code]


def _machine_paths(path: Path) -> list[str]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        found += [
            f"{path.relative_to(ROOT)}:{number}: {m.group(0)}" for m in MACHINE_PATH.finditer(line)
        ]
    return found


def test_the_rule_finds_machine_paths_and_leaves_deployment_paths() -> None:
    text = (
        "see /work/wt/store-fast/bench and /tmp/heldout-src/x, /root/.cache, /home/ann/x\n"
        "keep /etc/haproxy/haproxy.cfg, /var/lib/postgresql, host=/tmp, https://x.example/work/a,"
        " docs/work/x, ~/work/y, /tmp/pytest-of-<user>/pytest-N"
    )
    assert [m.group(0) for m in MACHINE_PATH.finditer(text)] == [
        "/work/wt",
        "/tmp/heldout-src",
        "/root/.cache",
        "/home/ann",
    ]


@pytest.mark.parametrize("path", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_machine_path_in_the_readme_the_docs_or_the_service(path: Path) -> None:
    assert _machine_paths(path) == []
