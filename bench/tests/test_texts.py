"""The benchmark's text sources: synthetic sentences and real dialogue turns."""

from __future__ import annotations

import json
from pathlib import Path

from bench.corpora.texts import TextSource


def _dialogue(path: Path, turns: int) -> Path:
    """A LoCoMo-format file with one conversation of ``turns`` distinct turns."""
    session = [
        {"speaker": "Ana", "dia_id": f"D1:{n}", "text": f"I planted {n} tomatoes today."}
        for n in range(turns)
    ]
    sample = {"sample_id": "conv-t", "qa": [], "conversation": {"session_1": session}}
    path.write_text(json.dumps([sample]))
    return path


def test_dialogue_texts_are_the_data_sets_turns_each_once_in_a_seeded_order(
    tmp_path: Path,
) -> None:
    data = _dialogue(tmp_path / "locomo.json", 20)
    first = TextSource(7, data).batch("dialogue", 20)
    assert sorted(first) == sorted(f"Ana: I planted {n} tomatoes today." for n in range(20))
    assert TextSource(7, data).batch("dialogue", 20) == first  # reproducible
    assert TextSource(8, data).batch("dialogue", 20) != first  # the seed orders them


def test_dialogue_texts_stay_unique_after_every_turn_is_used(tmp_path: Path) -> None:
    data = _dialogue(tmp_path / "locomo.json", 3)
    texts = TextSource(7, data).batch("dialogue", 10)
    assert len(set(texts)) == 10
    assert texts == TextSource(7, data).batch("dialogue", 10)  # reused turns in a fixed order


def test_drawing_dialogue_turns_leaves_the_synthetic_sequence_unchanged(tmp_path: Path) -> None:
    data = _dialogue(tmp_path / "locomo.json", 5)
    plain = TextSource(7, data).batch("short", 6)
    mixed_source = TextSource(7, data)
    mixed = mixed_source.batch("short", 3)
    mixed_source.batch("dialogue", 5)
    assert mixed + mixed_source.batch("short", 3) == plain
