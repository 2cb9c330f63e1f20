"""Evidence per token: gold turns that an answer quotes whole, and what the answer costs.

``python -m bench.quality.evidence [--sets locomo,longmemeval] [--conversations 2]
[--lme-per-type 1] [--systems cpersona,service] [--service-reconstruct]``

For each data set (LoCoMo: one agent per conversation, every question with evidence;
LongMemEval development set: one agent per question, its whole haystack) and each system
(CPersona 2.6.14, then the service, in the same run: :mod:`bench.quality.side_by_side`),
every turn is stored, then every question is asked as ``reconstruct`` (default and
``mode:"lite"``; the service's only with ``--service-reconstruct``, until its
``reconstruct`` lands) and as ``recall`` at ``limit`` 10. Per configuration: the share of
gold turns quoted whole (:mod:`bench.quality.whole`), the mean ``cl100k_base`` tokens of
the answer text as the client receives it, and gold turns quoted whole per 1,000 tokens.
The method and the results are in docs/benchmarks/reconstruct.md.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.corpora import locomo, longmemeval
from bench.corpora.locomo import Conversation
from bench.harness import cpersona
from bench.harness.cli import write_results
from bench.harness.machine import machine_facts, record_end
from bench.harness.markdown import machine_line, table
from bench.quality import side_by_side as sbs, whole
from bench.quality.scoring import CATEGORY_NAMES

DEFAULT_OUT = Path("bench/results/reconstruct_evidence.json")
SYSTEM_NAMES = {"cpersona": f"CPersona {cpersona.VERSION}", "service": "service"}
SET_NAMES = {"locomo": "LoCoMo", "longmemeval": "LongMemEval dev"}
CATEGORIES = {**CATEGORY_NAMES, **longmemeval.TYPE_OF_CATEGORY}
TOKEN_SHARE_TARGET = 0.70


def configs_for(system: str, service_reconstruct: bool) -> list[sbs.Config]:
    """What each system is asked: CPersona all three; the service recall (and reconstruct)."""
    if system == "cpersona" or service_reconstruct:
        return [sbs.RECONSTRUCT, sbs.RECONSTRUCT_LITE, sbs.RECALL10]
    return [sbs.RECALL10]


def load_sets(args: argparse.Namespace) -> dict[str, list[Conversation]]:
    """The conversations of each selected data set (one agent each)."""
    sets: dict[str, list[Conversation]] = {}
    if "locomo" in args.sets:
        sets["locomo"] = locomo.load(args.data, args.conversations, args.questions)
    if "longmemeval" in args.sets:
        sets["longmemeval"] = longmemeval.load(args.lme_data, args.lme_per_type)
    return sets


def score_reply(
    reply: sbs.Reply,
    contents: Mapping[str, str],
    turns_of: Mapping[str, Collection[str]],
    tokens: int,
) -> whole.Answer:
    """One answer's gold turns, those it quotes whole, its tokens and its NDCG@10 (items, or
    recall's rows, that cite a gold turn through ``turns_of``: ref → turn ids)."""
    gold = whole.countable({t: contents[t] for t in reply.question.relevant})
    if reply.config.startswith("reconstruct"):
        pieces = whole.reconstruct_pieces(reply.body)
    else:
        pieces = whole.recall_pieces(reply.body)
    shown = whole.quoted_whole(gold, pieces) if not reply.failed else set()
    items = whole.answer_items(reply.body)
    ndcg = whole.items_ndcg(items, turns_of, reply.question.relevant)
    return whole.Answer(len(gold), len(shown), tokens, reply.failed, ndcg)


def summarise(
    replies: Sequence[sbs.Reply], answers: Sequence[whole.Answer]
) -> dict[str, dict[str, Any]]:
    """Per configuration: the overall summary, one per question category, the p50 latency
    and each question's ``[agent, number, gold, quoted whole, tokens, NDCG@10, failed]``."""
    out: dict[str, dict[str, Any]] = {}
    for config in dict.fromkeys(r.config for r in replies):
        pairs = [(r, a) for r, a in zip(replies, answers, strict=True) if r.config == config]
        by_category: dict[str, list[whole.Answer]] = {}
        for r, a in pairs:
            name = CATEGORIES.get(r.question.category, str(r.question.category))
            by_category.setdefault(name, []).append(a)
        out[config] = {
            "overall": whole.summary([a for _, a in pairs]),
            "categories": {k: whole.summary(v) for k, v in sorted(by_category.items())},
            "latency_p50_ms": _p50([r.seconds for r, _ in pairs]),
            "per_question": [
                [r.agent, r.question.number, a.gold, a.whole, a.tokens, a.ndcg, a.failed]
                for r, a in pairs
            ],
        }
    return out


def _p50(seconds: Sequence[float]) -> float | None:
    ordered = sorted(seconds)
    return round(1000 * ordered[len(ordered) // 2], 1) if ordered else None


def run_system(
    system: str, args: argparse.Namespace, sets: Mapping[str, Sequence[Conversation]]
) -> dict[str, Any]:
    """Store every set in one fresh instance of ``system``, ask, score; its results."""
    convs = [c for cs in sets.values() for c in cs]
    jobs = sbs.jobs_of(convs, lambda c: c.sample_id, None)
    configs = configs_for(system, args.service_reconstruct)
    service = (
        sbs.cpersona_service(args.venv, args.keep_data)
        if system == "cpersona"
        else sbs.our_service(args.code, "evidence", args.keep_data)
    )
    out: dict[str, Any] = {"system": SYSTEM_NAMES[system], "configs": [c.name for c in configs]}
    with service as running:
        sbs.progress(f"{system}: storing {len(jobs)} turns ...")
        stored = sbs.Stored()
        out["store"] = asyncio.run(sbs.store_all(running, jobs, args.clients, stored))
        sbs.progress(f"  stored in {out['store']['store_seconds']} s; asking ...")
        out["sets"] = {}
        for name, set_convs in sets.items():
            asks = [(c.sample_id, q) for c in set_convs for q in c.questions]
            replies = asyncio.run(sbs.ask_all(running, asks, configs, args.clients))
            out["sets"][name] = score_set(replies, set_convs, stored.turns_of, args.venv)
    return out


def score_set(
    replies: Sequence[sbs.Reply],
    convs: Sequence[Conversation],
    turns_of: Mapping[str, Mapping[str, Collection[str]]],
    venv: Path,
) -> dict[str, dict[str, Any]]:
    """Token counts and scores of one data set's replies, summarised per configuration."""
    contents = {c.sample_id: {t.dia_id: t.content for t in c.turns} for c in convs}
    tokens = sbs.count_tokens([r.text for r in replies], venv)
    answers = [
        score_reply(reply, contents[reply.agent], turns_of.get(reply.agent, {}), count)
        for reply, count in zip(replies, tokens, strict=True)
    ]
    return summarise(replies, answers)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every system on every selected data set; the JSON-ready results."""
    started = time.perf_counter()
    sets = load_sets(args)
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "code": args.code_id,
        "options": {
            "sets": {
                name: {
                    "agents": len(convs),
                    "agent_ids": [c.sample_id for c in convs],
                    "turns": sum(len(c.turns) for c in convs),
                    "questions": sum(len(c.questions) for c in convs),
                }
                for name, convs in sets.items()
            },
            "clients": args.clients,
            "service_reconstruct": args.service_reconstruct,
            "token_counter": "cl100k_base (cpersona.tokens.count) of the result text received",
        },
        "systems": [run_system(s, args, sets) for s in args.systems],
    }
    record_end(results, started)
    return results


# --------------------------------------------------------------------------- report


def _fmt(value: float | None, pattern: str) -> str:
    return "n/a" if value is None else pattern.format(value)


def rows(results: Mapping[str, Any], set_name: str) -> list[list[object]]:
    """One table row per system and configuration of one data set."""
    out: list[list[object]] = []
    for system in results["systems"]:
        for config, data in system["sets"].get(set_name, {}).items():
            s = data["overall"]
            out.append(
                [
                    system["system"],
                    config,
                    s["questions"],
                    f"{s['quoted_whole']}/{s['gold_turns']}",
                    _fmt(s["evidence_share"], "{:.1%}"),
                    _fmt(s["mean_tokens"], "{:.0f}"),
                    _fmt(s["evidence_per_1k_tokens"], "{:.2f}"),
                    _fmt(s["ndcg10"], "{:.3f}"),
                    _fmt(data["latency_p50_ms"], "{:.0f}"),
                    s["failures"],
                ]
            )
    return out


def verdicts(results: Mapping[str, Any], set_name: str) -> list[str]:
    """The issue's targets for one data set, each met or not (when both sides ran)."""
    found = {
        (sys_["system"], cfg): data["overall"]
        for sys_ in results["systems"]
        for cfg, data in sys_["sets"].get(set_name, {}).items()
    }
    theirs, ours = SYSTEM_NAMES["cpersona"], SYSTEM_NAMES["service"]
    lines = []
    for config in ("reconstruct", "reconstruct lite"):
        mine, ref = found.get((ours, config)), found.get((theirs, config))
        if mine is None or ref is None or None in (mine["evidence_share"], ref["mean_tokens"]):
            lines.append(f"- {config}: not measured for the service in this run.")
            continue
        share_ok = mine["evidence_share"] >= ref["evidence_share"]
        ratio = mine["mean_tokens"] / ref["mean_tokens"]
        met = "met" if share_ok and ratio <= TOKEN_SHARE_TARGET else "NOT met"
        lines.append(
            f"- {config}: share {mine['evidence_share']:.1%} vs {ref['evidence_share']:.1%},"
            f" tokens {ratio:.1%} of CPersona's (target ≥ share at ≤ 70%): {met}."
        )
        recall = found.get((ours, sbs.RECALL10.name))
        if recall is not None and recall["evidence_per_1k_tokens"] is not None:
            better = (mine["evidence_per_1k_tokens"] or 0) > recall["evidence_per_1k_tokens"]
            lines.append(
                f"  - evidence per 1k tokens {_fmt(mine['evidence_per_1k_tokens'], '{:.2f}')}"
                f" vs our recall@10 {recall['evidence_per_1k_tokens']:.2f}:"
                f" {'met' if better else 'NOT met'}."
            )
    return lines


COLUMNS = (
    "System",
    "Configuration",
    "Questions",
    "Quoted whole / gold",
    "Evidence share",
    "Mean tokens",
    "Evidence per 1k tokens",
    "NDCG@10",
    "p50 ms",
    "Failures",
)


def markdown(results: Mapping[str, Any]) -> str:
    """The tables of docs/benchmarks/reconstruct.md, one per data set, with the targets."""
    lines = [f"{machine_line(results['machine'])}.", ""]
    for name, facts in results["options"]["sets"].items():
        lines += [
            f"**{SET_NAMES[name]}** ({facts['agents']} agents, {facts['turns']} turns,"
            f" {facts['questions']} questions):",
            "",
            *table(COLUMNS, "llrrrrrrrr", rows(results, name)),
            "",
            *verdicts(results, name),
            "",
        ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options of ``python -m bench.quality.evidence``."""
    parser = argparse.ArgumentParser(prog="python -m bench.quality.evidence", description=__doc__)
    add = parser.add_argument
    add("--sets", default="locomo,longmemeval", help="data sets (default: %(default)s)")
    add("--data", type=Path, default=locomo.DEFAULT_DATA, help="locomo10.json")
    add("--conversations", type=int, default=2, help="LoCoMo: the first N (default: %(default)s)")
    add("--questions", type=int, help="LoCoMo: at most N questions per conversation")
    add("--lme-data", type=Path, default=longmemeval.DEFAULT_DATA, help="LongMemEval dev folder")
    add("--lme-per-type", type=int, default=1, help="LongMemEval: questions per type (default: 1)")
    add("--service-reconstruct", action="store_true", help="also ask the service's reconstruct")
    sbs.add_run_options(parser, DEFAULT_OUT)
    args = parser.parse_args(argv)
    sbs.check_run_options(parser, args)
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not args.sets or set(args.sets) - set(SET_NAMES):
        parser.error(f"--sets takes {', '.join(SET_NAMES)}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write the JSON and Markdown."""
    args = parse_args(argv)
    results = sbs.run_snapshotted(args, run)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
