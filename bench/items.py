"""Benchmark of memory items on SQLite and PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/items.py [--quick] [--db sqlite|postgres|both]

Each database is measured in a subprocess of its own (see bench/benchdb.py). Measured:

- item writes per second through ``MemoryItems.write`` (a new state of a slot each time,
  with the slot's timeline laid out again), target at least 500/s on PostgreSQL;
- ``query`` p50/p95 for one slot and for a user's whole scope, as of now and as of a
  moment in the past, with 10k and 100k items in the agent (2k and 20k with ``--quick``):
  target, the largest size within 2x of the smallest;
- extraction: model calls per 100 turns (a scripted model answering with no items);
- beside the writes, what the disk sets: a one-row insert and commit (p50/p95), whose WAL
  flush every durable write waits for, and which other processes' I/O slows down.

The agent's items are filled in bulk (100 users, 5 subjects each, slots of several states
laid out as the service lays them out), not through the service. Prints a table, then one
JSON object as the last line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from benchdb import database_opener, measure_databases, p50_p95, percentiles, setup_django

AGENT = "bench-agent"
USERS = 100
SUBJECTS_PER_USER = 5
STATES_PER_SLOT = 4
MEASURED = "u7"
MEASURED_ITEMS = 400
WRITES = 300
WARM_UP = 20
QUERIES = 100
T0 = datetime(2025, 1, 1, tzinfo=UTC)
WRITE_TARGET = 500.0
GROWTH_TARGET = 2.0


def _slot_rows(subject: Any, attribute: str, offset: int) -> list[Any]:
    """The states of one slot, laid out as the service lays them out."""
    from cogitator_memory.items.models import ItemStatus, MemoryItem

    rows = []
    for state in range(STATES_PER_SLOT):
        start = T0 + timedelta(days=30 * state + offset % 30)
        last = state == STATES_PER_SLOT - 1
        rows.append(
            MemoryItem(
                agent_id=AGENT,
                user_id=subject.user_id,
                kind="fact",
                subject=subject,
                attribute=attribute,
                value=f"value {attribute}-{state}",
                trust="system",
                verified=True,
                confidence=1.0,
                status=ItemStatus.ACTIVE if last else ItemStatus.SUPERSEDED,
                valid_from=start,
                valid_to=None if last else start + timedelta(days=30),
                recorded_at=start,
            )
        )
    return rows


def fill(total: int) -> None:
    """Bulk-insert items until the agent holds ``total``: the measured user ``MEASURED``
    always ``MEASURED_ITEMS`` of them, the other users the rest, so a larger agent means
    more rows around the same answer."""
    from django.db import connection

    from cogitator_memory.items.models import Entity, MemoryItem
    from cogitator_memory.items.statements import entity_key

    if not Entity.objects.filter(agent_id=AGENT).exists():
        Entity.objects.bulk_create(
            [
                Entity(
                    agent_id=AGENT,
                    user_id=f"u{user}",
                    name=f"Subject {n}",
                    key=entity_key(f"Subject {n}"),
                )
                for user in range(USERS)
                for n in range(SUBJECTS_PER_USER)
            ],
            batch_size=1000,
        )
    entities = list(Entity.objects.filter(agent_id=AGENT).order_by("pk"))
    measured = [entity for entity in entities if entity.user_id == MEASURED]
    others = [entity for entity in entities if entity.user_id != MEASURED]
    rows: list[Any] = []
    if not MemoryItem.objects.filter(agent_id=AGENT, user_id=MEASURED).exists():
        for slot in range(MEASURED_ITEMS // STATES_PER_SLOT):
            rows += _slot_rows(
                measured[slot % len(measured)], f"attr-{slot // len(measured)}", slot
            )
    have = MemoryItem.objects.filter(agent_id=AGENT).count() + len(rows)
    slot = have // STATES_PER_SLOT
    while have < total:
        rows += _slot_rows(others[slot % len(others)], f"attr-{slot // len(others)}", slot)
        have += STATES_PER_SLOT
        slot += 1
    MemoryItem.objects.bulk_create(rows, batch_size=2000)
    if connection.vendor == "postgresql":
        # Fresh statistics, as autovacuum keeps them on a live table.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def measure_queries(items: Any) -> dict[str, Any]:
    from cogitator_memory.grants import MemoryScope
    from cogitator_memory.items.models import Entity, MemoryItem
    from cogitator_memory.items.statements import Slot

    scope = MemoryScope(AGENT, user_id=MEASURED)
    subject = Entity.objects.filter(agent_id=AGENT, user_id=MEASURED).order_by("pk").first()
    assert subject is not None
    slot = Slot(subject.pk, "attr-0")
    past = T0 + timedelta(days=45)
    return {
        "items": MemoryItem.objects.filter(agent_id=AGENT).count(),
        "slot_now": timed(lambda: items.query(scope, slot=slot), QUERIES),
        "slot_past": timed(lambda: items.query(scope, slot=slot, as_of=past), QUERIES),
        "user_now": timed(lambda: items.query(scope), QUERIES),
        "user_past": timed(lambda: items.query(scope, as_of=past), QUERIES),
    }


def durable_commits(connection: Any, count: int = WRITES) -> list[float]:
    """Milliseconds of ``count`` transactions that each insert one row into a scratch
    table and commit: the floor a durable write stands on, set by the disk."""
    from django.db import transaction

    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE bench_commit_probe (id INTEGER PRIMARY KEY, note TEXT)")
    samples = []
    for number in range(count):
        began = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("INSERT INTO bench_commit_probe VALUES (%s, %s)", [number, "x"])
        samples.append((time.perf_counter() - began) * 1000)
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_commit_probe")
    return samples


def timed(call: Any, count: int) -> tuple[float, float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return p50_p95(samples)


def measure(database: str, quick: bool) -> dict[str, Any]:
    opener = database_opener(database, prefix="bench-items", pg_name="bench_items")
    sizes = (2_000, 20_000) if quick else (10_000, 100_000)
    with opener() as url:
        setup_django(url)
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from cogitator_memory.grants import MemoryScope
        from cogitator_memory.items.services import MemoryItems
        from cogitator_memory.items.statements import NewItem
        from cogitator_memory.items.window_extractor import MemoryExtractor
        from cogitator_memory.llm.scripted import ScriptedAnswer, ScriptedModel
        from cogitator_memory.threads import services

        items = MemoryItems()
        report: dict[str, Any] = {"database": database, "sizes": {}}
        for size in sizes:
            fill(size)
            report["sizes"][size] = measure_queries(items)
            print(f"{database}: measured {size} items", file=sys.stderr)

        # Writes: new states of the slots of one user, the timeline laid out each time, one
        # write per transaction as a caller makes them. A few first writes warm the
        # connection up and are not counted; one more is captured to list its statements.
        scope = MemoryScope(AGENT, user_id="u3")

        def write(number: int) -> None:
            items.write(
                scope,
                NewItem(
                    kind="fact",
                    subject=f"Subject {number % SUBJECTS_PER_USER}",
                    attribute=f"attr-{number % 7}",
                    value=f"written {number}",
                    trust="system",
                ),
            )

        for number in range(WARM_UP):
            write(number)
        with CaptureQueriesContext(connection) as captured:
            write(WARM_UP)
        report["write_statements"] = [query["sql"][:80] for query in captured.captured_queries]
        samples = []
        start = time.perf_counter()
        for number in range(WARM_UP + 1, WARM_UP + 1 + WRITES):
            began = time.perf_counter()
            write(number)
            samples.append((time.perf_counter() - began) * 1000)
        elapsed = time.perf_counter() - start
        report["writes_per_second"] = round(WRITES / elapsed, 1)
        report["write_ms"] = percentiles(samples)
        report["load_average_1min"] = os.getloadavg()[0]
        report["commit_ms"] = percentiles(durable_commits(connection))

        # Extraction: model calls per 100 turns of about 40 tokens each.
        thread = services.create_thread(AGENT, {"userId": "u1"})
        entries = [
            services.add_entry(
                thread.pk,
                role="user" if n % 2 == 0 else "assistant",
                content=f"Turn {n}: " + "we talked about the trip and the hotel again " * 3,
            )
            for n in range(100)
        ]
        model = ScriptedModel([ScriptedAnswer("[]", repeat=True)])
        result = MemoryExtractor(summarize=model).extract(entries, scope=MemoryScope(AGENT, "u1"))
        report["extraction_calls_per_100_turns"] = result.calls
    return report


def row(name: str, figures: dict[int, Any], key: str) -> str:
    sizes = sorted(figures)
    cells = [f"{figures[s][key][0]:7.2f} / {figures[s][key][1]:7.2f}" for s in sizes]
    growth = figures[sizes[-1]][key][0] / figures[sizes[0]][key][0]
    met = "met" if growth <= GROWTH_TARGET else "MISSED"
    return f"  {name:<22} " + "   ".join(cells) + f"   {growth:5.2f}x  {met}"


def main() -> None:
    measured = measure_databases(__file__, __doc__.splitlines()[0], measure)
    if measured is None:
        return
    args, results = measured
    for database, report in results.items():
        figures = {int(size): value for size, value in report["sizes"].items()}
        sizes = " vs ".join(f"{size:,}" for size in sorted(figures))
        print(f"\n== {database}: query(...) ms p50 / p95 at {sizes} items ==")
        for key in ("slot_now", "slot_past", "user_now", "user_past"):
            print(row(key, figures, key))
        met = "met" if report["writes_per_second"] >= WRITE_TARGET else "MISSED"
        target = f"  target >= 500/s: {met}" if database == "postgres" else ""
        print(f"  writes per second      {report['writes_per_second']}{target}")
        p50, p95 = report["write_ms"]
        statements = len(report["write_statements"])
        print(f"  one write, ms p50 / p95 {p50:7.2f} / {p95:7.2f}   {statements} statements")
        commit_p50, commit_p95 = report["commit_ms"]
        print(f"  a one-row insert and commit, ms p50 / p95 {commit_p50:7.2f} / {commit_p95:7.2f}")
        print(f"  load average (1 min) after the writes: {report['load_average_1min']:.2f}")
        print(f"  extraction calls per 100 turns: {report['extraction_calls_per_100_turns']}")
    print(json.dumps({"benchmark": "items", "quick": args.quick, "results": results}, default=str))


if __name__ == "__main__":
    main()
