"""Benchmark of what a pre-turn brief adds to a context build, with a model that answers
at once.

Run by hand from the repository root::

    .venv/bin/python bench/brief_overhead.py [--quick] [--db sqlite|postgres|both]

A thread of 150 turns about parcels, trips and meals and 100 memory items of its user are
written through the services (so the keyword indexes hold them as in production). The same
hybrid builds (a budget of 2,000 tokens, so older turns and items are recalled) run with
and without a ``MemoryBriefer``, turn by turn. The briefer's model is a plain function: it
reads the sources it is shown and answers two cards quoting them, so every card is checked
as a real answer would be.

Measured: model calls per build, and the brief's own time in a build (its sources, the
prompt, the call, reading and checking the answer, the block), p50 / p95; with the builds'
p50 with and without a briefer. Targets: at most one model call per build and a p50 of
the brief's own time of 20 ms or less (``brief_overhead_met``). ``measure_brief_overhead``
is the measurement alone, for a benchmark that has Django set up already. Prints a table,
then one JSON object as the last line.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from benchdb import database_opener, measure_databases, p50_p95, setup_django

AGENT = "bench-brief"
USER = "u1"
THREAD = "bench-brief-thread"
TURNS = 150
ITEMS = 100
BUDGET = 2000
CALLS_TARGET = 1.0
OWN_MS_TARGET = 20.0
T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
TOPICS = (
    ("parcel", "The parcel {n} waits at the depot of Porto until Friday morning."),
    ("train", "We still have to book the train {n} to Lisbon for the conference."),
    ("dinner", "Ana cannot eat peanuts, so dinner {n} needs another sauce."),
    ("hotel", "The hotel {n} near the river asked for a deposit before arrival."),
    ("invoice", "The invoice {n} from the printer is due at the end of the month."),
)
QUESTIONS = (
    "Where is the parcel waiting?",
    "Did we book the train to Lisbon?",
    "What can Ana eat for dinner?",
    "Which hotel asked for a deposit?",
    "When is the printer invoice due?",
)


class InstantModel:
    """A model that answers at once: a knowledge card and a constraint card quoting the
    first words of the first two sources it is shown. Counts its calls."""

    provider = "stand-in"
    model = "stand-in"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self, messages: Any, model: Any = None, prompt: Any = None, max_tokens: Any = None
    ) -> Any:
        from cogitator_memory.llm.protocol import Completion

        self.calls += 1
        data = json.loads(messages[-1]["content"])
        cards = [
            {
                "kind": kind,
                "text": "Keep this in mind.",
                "quote": " ".join(source["text"].split()[:4]),
                "source": source["ref"],
            }
            for kind, source in zip(("knowledge", "constraint"), data["sources"], strict=False)
        ]
        return Completion(text=json.dumps(cards), truncated=False, model=self.model)


def seed() -> None:
    """The thread and the items the builds read."""
    from cogitator_memory.grants import MemoryScope
    from cogitator_memory.items.services import MemoryItems
    from cogitator_memory.items.statements import NewItem
    from cogitator_memory.threads import services

    services.create_thread(AGENT, {"userId": USER}, thread_id=THREAD)
    for turn in range(TURNS):
        _topic, line = TOPICS[turn % len(TOPICS)]
        at = T0 + timedelta(hours=turn)
        services.add_entry(THREAD, role="user", content=line.format(n=turn), created_at=at)
        services.add_entry(
            THREAD,
            role="assistant",
            content=f"Noted, I will keep turn {turn} in mind.",
            created_at=at + timedelta(minutes=1),
        )
    items = MemoryItems()
    scope = MemoryScope(AGENT, user_id=USER)
    for number in range(ITEMS):
        topic, line = TOPICS[number % len(TOPICS)]
        items.write(
            scope,
            NewItem(
                kind="fact",
                subject="Ana",
                attribute=f"{topic} {number}",
                value=str(number),
                content=line.format(n=f"#{number}"),
                trust="system",
                valid_from=T0,
            ),
        )


def measure_brief_overhead(builds: int = 200) -> dict[str, Any]:
    """Build ``builds`` hybrid contexts with and without a briefer on the seeded store
    (seeded here when it is not), and return the model calls per build, the brief's own
    time p50 / p95 in ms, the builds' p50 with and without it, and whether the targets are
    met. Needs Django set up on a migrated database."""
    from cogitator_memory.context import build_run
    from cogitator_memory.context.builder import ContextBuilder
    from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
    from cogitator_memory.threads.models import Thread
    from cogitator_memory.upkeep.brief import MemoryBriefer

    if not Thread.objects.filter(pk=THREAD).exists():
        seed()
    model = InstantModel()
    config = ContextBuilderConfig(max_tokens=BUDGET, reserve_tokens=0, strategy="hybrid")
    plain = ContextBuilder(config, ContextBuilderDeps(message_index=False))
    briefed = ContextBuilder(
        config, ContextBuilderDeps(message_index=False, briefer=MemoryBriefer(model))
    )
    own: list[float] = []
    timed_step = build_run.brief_for_build

    def timed(run: Any, recall: Any) -> Any:
        if run.builder is not briefed:
            return timed_step(run, recall)
        started = time.perf_counter()
        try:
            return timed_step(run, recall)
        finally:
            own.append((time.perf_counter() - started) * 1000)

    with_brief: list[float] = []
    without: list[float] = []
    cards = 0
    build_run.brief_for_build = timed  # type: ignore[assignment]
    try:
        for number in range(builds):
            question = QUESTIONS[number % len(QUESTIONS)]
            started = time.perf_counter()
            plain.build(THREAD, AGENT, user_id=USER, current_input=question)
            without.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            built = briefed.build(THREAD, AGENT, user_id=USER, current_input=question)
            with_brief.append((time.perf_counter() - started) * 1000)
            cards += len(built.brief_cards)
    finally:
        build_run.brief_for_build = timed_step  # type: ignore[assignment]
    calls_per_build = model.calls / builds
    own_p50, own_p95 = p50_p95(own)
    return {
        "builds": builds,
        "brief_model_calls_per_build": round(calls_per_build, 3),
        "brief_cards_per_build": round(cards / builds, 3),
        "brief_own_ms_p50": round(own_p50, 3),
        "brief_own_ms_p95": round(own_p95, 3),
        "build_ms_p50_without_brief": round(p50_p95(without)[0], 3),
        "build_ms_p50_with_brief": round(p50_p95(with_brief)[0], 3),
        "brief_overhead_met": calls_per_build <= CALLS_TARGET and own_p50 <= OWN_MS_TARGET,
    }


def measure(database: str, quick: bool) -> dict[str, Any]:
    opener = database_opener(database, prefix="brief", pg_name="bench_brief")
    with opener() as url:
        setup_django(url)
        return {"database": database, **measure_brief_overhead(50 if quick else 200)}


def main() -> None:
    measured = measure_databases(__file__, __doc__.split("\n\n")[0], measure)
    if measured is None:
        return
    _args, results = measured
    print(
        f"{'database':<10} {'calls/build':>11} {'cards/build':>11} {'own p50':>9} "
        f"{'own p95':>9} {'build p50 without':>18} {'with':>9}"
    )
    for database, report in results.items():
        print(
            f"{database:<10} {report['brief_model_calls_per_build']:>11} "
            f"{report['brief_cards_per_build']:>11} {report['brief_own_ms_p50']:>9} "
            f"{report['brief_own_ms_p95']:>9} {report['build_ms_p50_without_brief']:>18} "
            f"{report['build_ms_p50_with_brief']:>9}"
        )
    summary = {
        "brief_model_calls_per_build": max(
            r["brief_model_calls_per_build"] for r in results.values()
        ),
        "brief_own_ms_p50": max(r["brief_own_ms_p50"] for r in results.values()),
        "brief_own_ms_p95": max(r["brief_own_ms_p95"] for r in results.values()),
        "brief_overhead_met": all(r["brief_overhead_met"] for r in results.values()),
        "databases": results,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
