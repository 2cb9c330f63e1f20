"""Pure parts of the reconstruct benchmarks: quoted-whole scoring, item rankings, the
mention extraction a careful agent does, the LongMemEval loader and the report's targets."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bench.corpora import locomo, longmemeval
from bench.harness import serving as harness
from bench.quality import evidence, mentions, multihop, side_by_side as sbs, whole

# --------------------------------------------------------------------------- quoted whole


def test_normalise_collapses_whitespace_and_composes_unicode() -> None:
    assert whole.normalise("  Ann:\n went\t to  Caf\u0065\u0301 ") == "Ann: went to Caf\u00e9"


def test_a_turn_counts_when_one_piece_holds_all_of_it_whatever_the_spacing() -> None:
    gold = {"D1:1": "Ann: I went to a support group\nyesterday.", "D1:2": "Bob: Good for you, Ann!"}
    pieces = ["Ann:  I went to a support group yesterday. Bob: later", "Bob: Good for"]
    assert whole.quoted_whole(gold, pieces) == {"D1:1"}


def test_a_turn_split_across_two_pieces_or_cut_is_not_quoted_whole() -> None:
    gold = {"D1:1": "Ann: I went to a support group yesterday."}
    assert whole.quoted_whole(gold, ["Ann: I went to a", "support group yesterday."]) == set()
    assert whole.quoted_whole(gold, ["Ann: I went to a support group yester"]) == set()


def test_short_gold_turns_do_not_count() -> None:
    gold = {"D1:1": "Bob: Yes!", "D1:2": "Ann: I painted a lake."}
    assert whole.countable(gold) == {"D1:2": "Ann: I painted a lake."}


def test_reconstruct_pieces_are_item_contents_and_excerpts() -> None:
    body = {
        "items": [
            {
                "content": "head one",
                "head_ref": "mem:1",
                "excerpts": [{"ref": "mem:2", "content": "ex"}],
            },
            {"content": "head two", "head_ref": "mem:3"},
            "junk",
        ],
        "effective_count": 10,
    }
    assert whole.reconstruct_pieces(body) == ["head one", "ex", "head two"]
    assert whole.reconstruct_pieces({"error": "boom"}) == []


def test_recall_pieces_are_contents_previews_and_excerpts() -> None:
    body = {
        "messages": [{"content": "preview", "excerpt": "deep part"}, {"ref": "mem:4", "seen": True}]
    }
    assert whole.recall_pieces(body) == ["preview", "deep part"]


# --------------------------------------------------------------------------- items


ITEMS: list[dict[str, Any]] = [
    {"head_ref": "mem:1", "claims": [{"ref": "mem:1"}, {"ref": "mem:9"}]},
    {"head_ref": "mem:2"},
    {"head_ref": "mem:3", "excerpts": [{"ref": "mem:1", "content": "x"}]},
]
TURNS_OF = {"mem:1": {"D1:1"}, "mem:2": {"D1:2"}, "mem:3": {"D1:3"}, "mem:9": {"D4:4"}}


def test_item_refs_are_head_claims_then_excerpts_without_repeats() -> None:
    assert whole.item_refs(ITEMS[0]) == ["mem:1", "mem:9"]
    assert whole.item_refs(ITEMS[2]) == ["mem:3", "mem:1"]


def test_an_item_stands_for_the_first_uncredited_gold_turn_it_cites() -> None:
    ranking = whole.item_ranking(ITEMS, TURNS_OF, {"D4:4", "D1:3"})
    assert ranking == ["D4:4", "item:1", "D1:3"]
    # the third item cites D1:1 again: credited already, so it earns nothing
    assert whole.item_ranking(ITEMS, TURNS_OF, {"D1:1"}) == ["D1:1", "item:1", "item:2"]


def test_items_ndcg_credits_a_claim_that_is_not_the_head() -> None:
    perfect = whole.items_ndcg(ITEMS, TURNS_OF, {"D4:4"})
    assert perfect == 1.0
    second = whole.items_ndcg(ITEMS, TURNS_OF, {"D1:2"})
    assert math.isclose(second, 1 / math.log2(3))


def test_recall_rows_become_items_best_first() -> None:
    body = {"messages": [{"ref": "mem:3"}, {"ref": "mem:2"}]}
    assert [i["head_ref"] for i in whole.answer_items(body)] == ["mem:2", "mem:3"]
    assert whole.answer_items({"items": ITEMS}) == ITEMS


def test_summary_is_micro_over_gold_turns_and_per_1k_tokens() -> None:
    answers = [whole.Answer(2, 1, 500, ndcg=0.5), whole.Answer(1, 1, 500, ndcg=1.0)]
    answers.append(whole.Answer(1, 0, 1000, failed=True, ndcg=0.0))
    s = whole.summary(answers)
    assert s["evidence_share"] == 0.5
    assert s["question_share"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert s["mean_tokens"] == pytest.approx(2000 / 3)
    assert s["evidence_per_1k_tokens"] == 1.0
    assert s["ndcg10"] == 0.5
    assert s["failures"] == 1


# --------------------------------------------------------------------------- mentions

COMMON = mentions.lower_words(["the group was great and thanks a lot, yeah we went to paris"])


def test_names_are_capitalised_runs_without_sentence_starters() -> None:
    text = "Hey Caroline! Yeah, I went to the Pride Parade with Mel's kids in Paris."
    assert mentions.names(text, COMMON) == ["Caroline", "Pride Parade", "Mel", "Paris"]


def test_a_sentence_initial_word_the_conversation_writes_in_lower_case_is_no_name() -> None:
    assert mentions.names("Thanks a lot. The group was great.", COMMON) == []
    # never written in lower case: a name even at the start
    assert mentions.names("Sweden was lovely.", COMMON) == ["Sweden"]


def test_pronoun_contractions_and_i_are_never_names() -> None:
    assert mentions.names("You'd love it, I'm sure. We're going, I think.", COMMON) == []


def test_names_are_unique_case_insensitively_in_order() -> None:
    assert mentions.names("met Oscar and OSCAR and Oscar again", COMMON) == ["Oscar"]


def test_declaration_names_the_speaker_and_what_the_speaker_mentions() -> None:
    declared = mentions.declaration("Melanie", "Thanks, Caroline! Melanie went to Paris.", COMMON)
    assert declared == {
        "entities": [{"name": "Melanie"}, {"name": "Caroline"}, {"name": "Paris"}],
        "relations": [
            {"subject": "Melanie", "predicate": "mentions", "object": "Caroline"},
            {"subject": "Melanie", "predicate": "mentions", "object": "Paris"},
        ],
    }


def test_declaration_respects_the_64_item_bound() -> None:
    text = " and ".join(f"Zed{chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(80))
    declared = mentions.declaration("Ann", f"met {text}", COMMON)
    assert len(declared["entities"]) == 64
    assert len(declared["relations"]) == 64


def test_the_multihop_rider_reads_the_speaker_from_the_stored_turn() -> None:
    conv = locomo.Conversation(
        "conv-x", (locomo.Turn("D1:1", "Ann: Hey, Bob took me to Rome.", "t"),), ()
    )
    rider = multihop.rider_for([conv])
    declared = rider("conv-x-declared", conv.turns[0])
    assert declared is not None
    assert [e["name"] for e in declared["entities"]] == ["Ann", "Bob", "Rome"]


def test_multihop_keeps_only_category_one_questions() -> None:
    questions = tuple(
        locomo.Question("c", n, cat, "q?", ("D1:1",)) for n, cat in enumerate([1, 2, 1, 4, 1])
    )
    (conv,) = multihop.multi_hop_only([locomo.Conversation("c", (), questions)], 2)
    assert [q.number for q in conv.questions] == [0, 2]


def test_store_arguments_carry_the_rider_only_when_there_is_one() -> None:
    turn = locomo.Turn("D1:1", "Ann: hi there Bob", "2023-05-08T13:56:00+00:00")
    bare = sbs.store_args("a", turn, None)
    assert "associations" not in bare
    assert bare["message"]["id"] == "D1:1"
    ridden = sbs.store_args("a", turn, lambda agent, t: {"entities": [{"name": "Ann"}]})
    assert ridden["associations"] == {"entities": [{"name": "Ann"}]}


def test_stored_maps_a_duplicate_to_the_record_it_was_folded_into() -> None:
    stored = sbs.Stored()
    first, second = (locomo.Turn(i, "Ann: same", "t") for i in ("D1:1", "D2:1"))
    stored.record("a", first, {"result": "stored", "id": 7}, False)
    stored.record("a", second, {"result": "skipped", "id": 7}, False)
    stored.record("a", first, {"error": "x"}, True)
    assert stored.turns_of == {"a": {"mem:7": {"D1:1", "D2:1"}}}
    assert dict(stored.outcomes) == {"stored": 1, "skipped": 1, "error": 1}


# --------------------------------------------------------------------------- LongMemEval


def _record(question_type: str, qid: str) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": question_type,
        "question": "What did I buy?",
        "haystack_dates": ["2023/05/20 (Sat) 01:18", "2023/05/21 (Sun) 09:05"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I bought a kayak."},
                {"role": "assistant", "content": "Nice"},
            ],
            [{"role": "user", "content": "x" * 20_000, "has_answer": True}],
        ],
    }


def test_a_haystack_becomes_one_agent_with_turn_level_gold() -> None:
    conv = longmemeval.haystack_of(_record("multi-session", "q1"), "lme-q1")
    assert [t.dia_id for t in conv.turns] == ["S0:0", "S0:1", "S1:0"]
    assert conv.turns[0].content == "user: I bought a kayak."
    assert conv.turns[2].timestamp == "2023-05-21T09:05:00+00:00"
    assert len(conv.turns[2].content) == longmemeval.MAX_CONTENT
    (question,) = conv.questions
    assert question.relevant == ("S1:0",)
    assert question.category == 204


def test_select_takes_the_first_files_of_each_type(tmp_path: Path) -> None:
    kinds = ["multi-session", "knowledge-update", "multi-session", "multi-session"]
    for n, kind in enumerate(kinds):
        (tmp_path / f"4{n}_q{n}.json").write_text(json.dumps(_record(kind, f"q{n}")))
    (tmp_path / "manifest.json").write_text("{}")
    picked = [c.sample_id for c in longmemeval.load(tmp_path, 2)]
    assert picked == ["lme-q0", "lme-q1", "lme-q2"]
    assert len(longmemeval.load(tmp_path, None)) == 4


# --------------------------------------------------------------------------- report


def _overall(share: float, tokens: float, per_1k: float) -> dict[str, Any]:
    return {
        "overall": {
            "evidence_share": share,
            "mean_tokens": tokens,
            "evidence_per_1k_tokens": per_1k,
        }
    }


def test_the_targets_compare_like_modes_and_our_recall() -> None:
    results = {
        "systems": [
            {
                "system": "CPersona 2.6.14",
                "sets": {
                    "locomo": {
                        "reconstruct": _overall(0.5, 1000, 1.0),
                        "reconstruct lite": _overall(0.5, 800, 1.0),
                    }
                },
            },
            {
                "system": "service",
                "sets": {
                    "locomo": {
                        "reconstruct": _overall(0.55, 650, 2.0),
                        "reconstruct lite": _overall(0.45, 400, 2.5),
                        "recall@10": _overall(0.5, 900, 1.5),
                    }
                },
            },
        ]
    }
    lines = evidence.verdicts(results, "locomo")
    assert lines[0].endswith(": met.")
    assert "65.0%" in lines[0]
    assert lines[1].endswith(": met.")
    assert lines[2].endswith("NOT met.")  # lite: a lower share than CPersona's


def test_the_service_is_asked_reconstruct_only_when_it_has_landed() -> None:
    assert [c.name for c in evidence.configs_for("service", False)] == ["recall@10"]
    assert len(evidence.configs_for("service", True)) == 3
    assert len(evidence.configs_for("cpersona", False)) == 3


# --------------------------------------------------------------------------- snapshots


def test_a_commit_snapshot_holds_that_commits_service_and_migrations(tmp_path: Path) -> None:
    code, commit = sbs.snapshot_ref(tmp_path, "HEAD")
    assert (code / "service" / "__main__.py").is_file()
    assert (code / "alembic" / "versions").is_dir()
    assert len(commit) == 40


def test_an_unknown_ref_is_a_bench_error(tmp_path: Path) -> None:
    with pytest.raises(harness.BenchError, match="no-such-branch"):
        sbs.snapshot_ref(tmp_path, "no-such-branch")


def test_a_token_ratio_just_over_the_target_reads_as_over_it() -> None:
    results = {
        "systems": [
            {"system": "CPersona 2.6.14", "sets": {"s": {"reconstruct": _overall(0.5, 973, 1.0)}}},
            {"system": "service", "sets": {"s": {"reconstruct": _overall(0.6, 685, 2.0)}}},
        ]
    }
    line = evidence.verdicts(results, "s")[0]
    assert "70.4%" in line
    assert line.endswith("NOT met.")
