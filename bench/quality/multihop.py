"""Multi-hop: ``reconstruct`` with the agent's declared entities and relations, and without.

``python -m bench.quality.multihop [--conversations 2] [--systems cpersona,service]
[--service-reconstruct]``

LoCoMo's multi-hop questions (category 1) of the first ``--conversations``. Each
conversation is stored twice in the same instance: as agent ``<sample>`` (bare turns) and
as agent ``<sample>-declared`` (the same turns, each ``store`` carrying an
``associations`` rider with what a careful agent declares about the turn:
:mod:`bench.quality.mentions`: the speaker and the names in the turn, and
``speaker —mentions→ name``; never the question or the answer). Every question is one
default ``reconstruct`` on each agent. Scored: the share of gold turns quoted whole
(:mod:`bench.quality.whole`), NDCG@10 over items (an item is relevant when it cites a
gold turn's ref: head, claims or excerpts) and the tokens. Results and method:
docs/benchmarks/reconstruct.md.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.corpora import locomo
from bench.corpora.locomo import Conversation, Turn
from bench.harness.cli import write_results
from bench.harness.machine import machine_facts, record_end
from bench.harness.markdown import machine_line, table
from bench.quality import mentions, side_by_side as sbs, whole
from bench.quality.evidence import SYSTEM_NAMES, score_reply

DEFAULT_OUT = Path("bench/results/reconstruct_multihop.json")
MULTI_HOP = 1
DECLARED = "-declared"


def multi_hop_only(convs: Sequence[Conversation], per_conv: int | None) -> list[Conversation]:
    """The conversations with only their multi-hop questions (at most ``per_conv`` each)."""
    out = []
    for c in convs:
        questions = tuple(q for q in c.questions if q.category == MULTI_HOP)[:per_conv]
        out.append(Conversation(c.sample_id, c.turns, questions))
    return out


def rider_for(convs: Sequence[Conversation]) -> sbs.Rider:
    """The rider of a turn of a declared agent: :func:`bench.quality.mentions.declaration`
    with the conversation's lower-case words as the common ones."""
    common = {
        c.sample_id + DECLARED: mentions.lower_words(t.content.partition(": ")[2] for t in c.turns)
        for c in convs
    }

    def rider(agent: str, turn: Turn) -> dict[str, Any] | None:
        speaker, _, text = turn.content.partition(": ")
        return mentions.declaration(speaker, text, common[agent])

    return rider


def declaration_stats(convs: Sequence[Conversation], rider: sbs.Rider) -> dict[str, Any]:
    """How much the declared agents declare: entities and relations per turn, distinct names."""
    entities = relations = 0
    names: set[str] = set()
    turns = 0
    for c in convs:
        for t in c.turns:
            declared = rider(c.sample_id + DECLARED, t) or {}
            entities += len(declared.get("entities", []))
            relations += len(declared.get("relations", []))
            names.update(e["name"].lower() for e in declared.get("entities", []))
            turns += 1
    return {
        "turns": turns,
        "entities_per_turn": round(entities / turns, 2) if turns else None,
        "relations_per_turn": round(relations / turns, 2) if turns else None,
        "distinct_entities": len(names),
    }


def run_system(
    system: str, args: argparse.Namespace, convs: Sequence[Conversation]
) -> dict[str, Any]:
    """Both agents of every conversation in one fresh instance of ``system``; ask; score."""
    rider = rider_for(convs)
    jobs = sbs.jobs_of(convs, lambda c: c.sample_id, None)
    jobs += sbs.jobs_of(convs, lambda c: c.sample_id + DECLARED, rider)
    service = (
        sbs.cpersona_service(args.venv, args.keep_data)
        if system == "cpersona"
        else sbs.our_service(args.code, "multihop", args.keep_data)
    )
    out: dict[str, Any] = {"system": SYSTEM_NAMES[system]}
    with service as running:
        sbs.progress(f"{system}: storing {len(jobs)} turns (half with declarations) ...")
        stored = sbs.Stored()
        out["store"] = asyncio.run(sbs.store_all(running, jobs, args.clients, stored))
        asks = [(c.sample_id + s, q) for c in convs for q in c.questions for s in ("", DECLARED)]
        sbs.progress(f"  stored in {out['store']['store_seconds']} s; {len(asks)} reconstructs ...")
        replies = asyncio.run(sbs.ask_all(running, asks, [sbs.RECONSTRUCT], args.clients))
    out["variants"] = score(replies, convs, stored.turns_of, args.venv)
    return out


def score(
    replies: Sequence[sbs.Reply],
    convs: Sequence[Conversation],
    turns_of: Mapping[str, Mapping[str, set[str]]],
    venv: Path,
) -> dict[str, Any]:
    """The summary of the replies without and with declarations."""
    contents = {c.sample_id: {t.dia_id: t.content for t in c.turns} for c in convs}
    tokens = sbs.count_tokens([r.text for r in replies], venv)
    groups: dict[str, list[whole.Answer]] = {"without": [], "with": []}
    per_question: list[list[object]] = []
    for reply, count in zip(replies, tokens, strict=True):
        sample = reply.agent.removesuffix(DECLARED)
        label = "with" if reply.agent.endswith(DECLARED) else "without"
        answer = score_reply(reply, contents[sample], turns_of.get(reply.agent, {}), count)
        groups[label].append(answer)
        per_question.append([label, sample, reply.question.number, answer.gold, answer.whole])
        per_question[-1] += [answer.tokens, answer.ndcg, answer.failed]
    return {
        **{label: whole.summary(answers) for label, answers in groups.items()},
        "per_question": per_question,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every system on the multi-hop questions; the JSON-ready results."""
    started = time.perf_counter()
    convs = multi_hop_only(locomo.load(args.data, args.conversations, None), args.questions)
    systems = [s for s in args.systems if s == "cpersona" or args.service_reconstruct]
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "code": args.code_id,
        "options": {
            "agents": [c.sample_id for c in convs],
            "turns": sum(len(c.turns) for c in convs),
            "questions": sum(len(c.questions) for c in convs),
            "clients": args.clients,
            "service_reconstruct": args.service_reconstruct,
            "declarations": declaration_stats(convs, rider_for(convs)),
            "token_counter": "cl100k_base (cpersona.tokens.count) of the result text received",
        },
        "systems": [run_system(s, args, convs) for s in systems],
    }
    record_end(results, started)
    return results


def _fmt(value: float | None, pattern: str) -> str:
    return "n/a" if value is None else pattern.format(value)


def markdown(results: Mapping[str, Any]) -> str:
    """The multi-hop table of docs/benchmarks/reconstruct.md."""
    o = results["options"]
    d = o["declarations"]
    rows = []
    for system in results["systems"]:
        for label in ("without", "with"):
            s = system["variants"][label]
            rows.append(
                [
                    system["system"],
                    label,
                    s["questions"],
                    f"{s['quoted_whole']}/{s['gold_turns']}",
                    _fmt(s["evidence_share"], "{:.1%}"),
                    _fmt(s["ndcg10"], "{:.3f}"),
                    _fmt(s["mean_tokens"], "{:.0f}"),
                    s["failures"],
                ]
            )
    columns = (
        "System",
        "Declarations",
        "Questions",
        "Quoted whole / gold",
        "Evidence share",
        "NDCG@10 (items)",
        "Mean tokens",
        "Failures",
    )
    return "\n".join(
        [
            f"{machine_line(results['machine'])}.",
            "",
            f"LoCoMo multi-hop: {', '.join(o['agents'])}; {o['turns']} turns, {o['questions']}"
            f" questions. Declared per turn: {d['entities_per_turn']} entities,"
            f" {d['relations_per_turn']} relations ({d['distinct_entities']} distinct names).",
            "",
            *table(columns, "llrrrrrr", rows),
            "",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options of ``python -m bench.quality.multihop``."""
    parser = argparse.ArgumentParser(prog="python -m bench.quality.multihop", description=__doc__)
    add = parser.add_argument
    add("--data", type=Path, default=locomo.DEFAULT_DATA, help="locomo10.json")
    add("--conversations", type=int, default=2, help="the first N (default: %(default)s)")
    add("--questions", type=int, help="at most N multi-hop questions per conversation")
    add("--service-reconstruct", action="store_true", help="run the service (needs reconstruct)")
    sbs.add_run_options(parser, DEFAULT_OUT)
    args = parser.parse_args(argv)
    sbs.check_run_options(parser, args)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write the JSON and Markdown."""
    args = parse_args(argv)
    results = sbs.run_snapshotted(args, run)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
