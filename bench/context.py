"""Benchmark of ContextBuilder.build() on long threads, on SQLite and PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/context.py [--quick] [--db sqlite|postgres|both]

One thread of the agent's user ``u7`` grows to 10k and then 100k entries (2k and 10k with
``--quick``): LoCoMo's turns (``../shared/data/locomo/locomo-dev.json``) over and over,
dated a few minutes apart, bulk-inserted and put in the keyword index of entries as the
service does for each entry. The agent holds 10k memory items (2k with ``--quick``) of 100
users, 400 of them ``u7``'s (``bench/items.py`` fills them). No embedding service: hybrid
recalls without vectors, as it does on a deployment without one. Background work a build
asks for (counting the facts it sent) goes to a Redis broker (database 14 of
127.0.0.1:6379, emptied afterwards) as in production, not run inside the build as eager
Celery would.

Measured at each size, as ``build()`` p50 / p95 over the questions of LoCoMo:

- ``recent``: a budget of 8,000 tokens, no input (the newest messages that fit);
- ``hybrid``: the same budget with facts, the question as the input (history, facts, and
  recall of older turns and items).

The keyword index's postings cache (``KEYWORDS["CACHE_POSTINGS"]``) keeps its shipped
size (4,000,000 postings, room for the 100k-entry thread's); the builds that warm up
load it.

Targets on PostgreSQL: hybrid p95 <= 100 ms at 100k entries, recent <= 20 ms, both within
2x from the smallest size to the largest. Prints a table, then one JSON object as the last
line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchdb import database_opener, measure_databases, p50_p95, setup_django

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
AGENT = "bench-agent"
USER = "u7"
BUDGET = 8000
SIZES = (10_000, 100_000)
QUICK_SIZES = (2_000, 10_000)
ITEMS = 10_000
QUICK_ITEMS = 2_000
QUESTIONS = 60
QUICK_QUESTIONS = 20
WARM_UP = 3
BATCH = 2_000
BROKER = "redis://127.0.0.1:6379/14"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
HYBRID_P95_TARGET = 100.0
RECENT_P95_TARGET = 20.0
GROWTH_TARGET = 2.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def locomo() -> tuple[list[tuple[str, str]], list[str]]:
    """Every turn of the data file as (speaker, text), and every question with evidence."""
    data = json.loads(LOCOMO.read_text())
    turns: list[tuple[str, str]] = []
    questions: list[str] = []
    for sample in data:
        conversation = sample["conversation"]
        sessions = sorted(
            (key for key in conversation if key.startswith("session_") and key[8:].isdigit()),
            key=lambda key: int(key[8:]),
        )
        for key in sessions:
            turns += [(turn["speaker"], turn["text"]) for turn in conversation[key]]
        questions += [qa["question"] for qa in sample["qa"] if qa.get("evidence")]
    return turns, questions


def grow_thread(thread_id: str, size: int, turns: list[tuple[str, str]]) -> None:
    """Add entries to the thread (one chain, the newest active) until it holds ``size``."""
    from django.db import transaction

    from cogitator_memory.keywords.entries import index_entries
    from cogitator_memory.threads.models import Entry, Thread, new_entry_id
    from cogitator_memory.tokens import count_tokens

    thread = Thread.objects.get(pk=thread_id)
    have = thread.next_seq
    parent = thread.active_leaf_id
    while have < size:
        batch = []
        for seq in range(have + 1, min(size, have + BATCH) + 1):
            speaker, text = turns[seq % len(turns)]
            entry_id = new_entry_id()
            batch.append(
                Entry(
                    id=entry_id,
                    thread_id=thread_id,
                    parent_id=parent,
                    seq=seq,
                    type="message",
                    role="user" if seq % 2 else "assistant",
                    name=speaker,
                    content=text,
                    token_count=count_tokens(text) + 4,
                    created_at=T0 + timedelta(minutes=5 * seq),
                )
            )
            parent = entry_id
        with transaction.atomic():
            Entry.objects.bulk_create(batch)
            index_entries(batch)
            have = batch[-1].seq
            Thread.objects.filter(pk=thread_id).update(next_seq=have, active_leaf_id=parent)
        log(f"  thread at {have:,} entries")


def timed_builds(build: Any, inputs: list[str | None]) -> tuple[list[float], int]:
    """Milliseconds per build over ``inputs`` (after a few builds to warm up), and how
    many builds reported errors."""
    for text in inputs[:WARM_UP]:
        build(text)
    samples = []
    failed = 0
    for text in inputs:
        began = time.perf_counter()
        built = build(text)
        samples.append((time.perf_counter() - began) * 1000)
        failed += bool(built.errors)
    return samples, failed


def measure(database: str, quick: bool) -> dict[str, Any]:
    opener = database_opener(database, prefix="bench-context", pg_name="bench_context")
    sizes = QUICK_SIZES if quick else SIZES
    report: dict[str, Any] = {"database": database, "sizes": {}}
    os.environ["CELERY_BROKER_URL"] = BROKER
    with opener() as url:
        setup_django(url)
        from django.db import connection
        from items import fill  # bench/items.py

        from cogitator_memory.context.builder import ContextBuilder
        from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
        from cogitator_memory.keywords.cache import cache_capacity
        from cogitator_memory.threads.services import create_thread
        from project.celery import app

        turns, questions = locomo()
        questions = questions[: QUICK_QUESTIONS if quick else QUESTIONS]
        fill(QUICK_ITEMS if quick else ITEMS)
        thread = create_thread(AGENT, {"userId": USER})
        deps = ContextBuilderDeps(message_index=False)
        recent = ContextBuilder(ContextBuilderConfig(max_tokens=BUDGET, strategy="recent"), deps)
        hybrid = ContextBuilder(
            ContextBuilderConfig(max_tokens=BUDGET, strategy="hybrid", include_facts=True), deps
        )
        for size in sizes:
            grow_thread(thread.pk, size, turns)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            figures: dict[str, Any] = {}
            for name, builder, inputs in (
                ("recent", recent, [None] * len(questions)),
                ("hybrid", hybrid, list(questions)),
            ):

                def build(text: str | None, builder: Any = builder) -> Any:
                    return builder.build(
                        thread_id=thread.pk, agent_id=AGENT, user_id=USER, current_input=text
                    )

                samples, failed = timed_builds(build, inputs)
                p50, p95 = p50_p95(samples)
                figures[name] = {"p50": round(p50, 2), "p95": round(p95, 2), "errors": failed}
                log(f"{database} {size:,}: {name} p50 {p50:.1f} ms, p95 {p95:.1f} ms")
            sample = hybrid.build(
                thread_id=thread.pk, agent_id=AGENT, user_id=USER, current_input=questions[0]
            )
            figures["hybrid_recalled"] = {
                "entries": len(sample.recalled.entries) if sample.recalled else 0,
                "items": len(sample.recalled.items) if sample.recalled else 0,
                "facts": len(sample.facts),
                "tokens": sample.token_count,
            }
            report["sizes"][size] = figures
        report["load_average_1min"] = os.getloadavg()[0]
        report["cache_postings"] = cache_capacity()
        report["background_tasks_queued"] = app.control.purge()
    return report


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def main() -> None:
    measured = measure_databases(__file__, __doc__.splitlines()[0], measure)
    if measured is None:
        return
    args, results = measured
    for database, report in results.items():
        figures = {int(size): value for size, value in report["sizes"].items()}
        sizes = sorted(figures)
        print(f"\n== {database}: build() ms p50 / p95, budget {BUDGET:,} tokens ==")
        print(f"  {'strategy':<8} " + "".join(f"{size:>22,}" for size in sizes) + "   growth p95")
        for name, target in (("recent", RECENT_P95_TARGET), ("hybrid", HYBRID_P95_TARGET)):
            cells = "".join(
                f"{figures[size][name]['p50']:>12.1f} / {figures[size][name]['p95']:>7.1f}"
                for size in sizes
            )
            growth = figures[sizes[-1]][name]["p95"] / max(figures[sizes[0]][name]["p95"], 1e-9)
            line = f"  {name:<8} {cells}   {growth:5.2f}x {verdict(growth <= GROWTH_TARGET)}"
            if database == "postgres" and not args.quick:
                met = verdict(figures[sizes[-1]][name]["p95"] <= target)
                line += f"; p95 <= {target:.0f} ms: {met}"
            print(line)
        errors = {size: figures[size]["hybrid"]["errors"] for size in sizes}
        print(f"  builds reporting errors (hybrid): {errors}")
        print(f"  one hybrid build: {figures[sizes[-1]]['hybrid_recalled']}")
        print(f"  load average (1 min) at the end: {report['load_average_1min']:.2f}")
    print(json.dumps({"benchmark": "context", "quick": args.quick, "results": results}))


if __name__ == "__main__":
    main()
