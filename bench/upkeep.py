"""Benchmark of between-runs upkeep: one sleep-time pass over many scopes, and what a
pre-turn brief adds to a context build.

Run by hand from the repository root::

    .venv/bin/python bench/upkeep.py [--quick] [--db sqlite|postgres|both]

A fresh database is seeded through the services with 100 users of one agent (``--quick``:
20), each with 50 items: facts about five entities, one statement said twice (by a user
and by a tool), and one system lesson. One sleep-time pass runs as beat runs it, with
Celery eager (the runs it queues are done in this process), the model being the
rule-based stand-in (``project/demo/rule_model.py``: it answers at once, so the figures
are the app's own): every scope gets its observations, its dedupe and a playbook draft.
Then 900 more users (``--quick``: 180) are seeded the same way, so the database holds
1,000 scopes, and the next pass does the new ones.

Measured per pass: model calls, wall time, and the database queries per scope, which must
not grow with the number of scopes (``queries_flat_met``: the figure of the pass in the
database of 1,000 scopes within 1.1x of the one in the database of 100); and the pre-turn
brief's model calls and own time per build
(``bench/brief_overhead.py``, ``brief_overhead_met``: at most one call and a p50 of 20 ms).
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from benchdb import database_opener, measure_databases, setup_django

AGENT = "bench-upkeep"
ITEMS_PER_SCOPE = 50
SIZES = (100, 1000)
QUICK_SIZES = (20, 200)
FLAT_FACTOR = 1.1
ENTITIES = ("Ana", "Rome trip", "the flat", "the car", "work")
T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)


def seed(first: int, scopes: int) -> None:
    """``scopes`` users from number ``first``, each with ITEMS_PER_SCOPE items (see the
    module)."""
    from cogitator_memory.grants import MemoryScope
    from cogitator_memory.items.services import MemoryItems
    from cogitator_memory.items.statements import NewItem

    items = MemoryItems()
    for number in range(first, first + scopes):
        scope = MemoryScope(AGENT, user_id=f"user-{number:05d}")
        written = 0
        for entity_number, entity in enumerate(ENTITIES):
            for fact in range(9):
                items.write(
                    scope,
                    NewItem(
                        kind="fact",
                        subject=entity,
                        attribute=f"detail {fact}",
                        value=f"value {fact} of {entity_number}",
                        content=f"{entity} has detail {fact}: value {fact}.",
                        trust="system",
                        valid_from=T0 + timedelta(days=fact),
                    ),
                )
                written += 1
        # Said twice: a user's statement and a tool's echo of it, both active.
        said = "Ana books an aisle seat on every flight."
        twice = [
            items.write(
                scope,
                NewItem(
                    kind="preference",
                    subject="Ana",
                    attribute=attribute,
                    value="aisle",
                    content=said,
                    trust=trust,
                    valid_from=T0,
                ),
            ).item.pk
            for attribute, trust in (("seat", "user"), ("seating", "tool"))
        ]
        items.activate(twice)
        items.write(
            scope,
            NewItem(
                kind="lesson",
                subject="flights",
                attribute="lesson",
                value="check the departure time",
                content="Check the departure time before offering a flight.",
                trust="system",
            ),
        )
        written += 3
        for extra in range(ITEMS_PER_SCOPE - written):
            items.write(
                scope,
                NewItem(
                    kind="event",
                    subject="work",
                    attribute=f"meeting {extra}",
                    value=f"room {extra}",
                    content=f"A meeting in room {extra}.",
                    trust="system",
                    valid_from=T0 + timedelta(hours=extra),
                ),
            )
        if (number - first) % 100 == 99:
            print(f"seeded {number - first + 1} of {scopes} scopes", file=sys.stderr)


def one_pass(first: int, scopes: int) -> dict[str, Any]:
    """Seed ``scopes`` new scopes and run one sleep-time pass, which does them."""
    from django.db import connection

    from cogitator_memory.files.models import MemoryFileHead
    from cogitator_memory.llm.registry import get_summarizer
    from cogitator_memory.upkeep.passes import sleep_time_pass
    from cogitator_memory.upkeep.playbook import PLAYBOOK_DRAFT_PATH
    from cogitator_memory.upkeep.records import UpkeepRun

    seed(first, scopes)
    model: Any = get_summarizer()
    runs_before = UpkeepRun.objects.filter(status="done").count()
    drafts_before = MemoryFileHead.objects.filter(path=PLAYBOOK_DRAFT_PATH, deleted=False).count()
    calls_before = model.calls
    queries = 0

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    started = time.perf_counter()
    with connection.execute_wrapper(count):
        report = sleep_time_pass(max_scopes=scopes)
    seconds = time.perf_counter() - started
    runs = UpkeepRun.objects.filter(status="done").count() - runs_before
    drafts = (
        MemoryFileHead.objects.filter(path=PLAYBOOK_DRAFT_PATH, deleted=False).count()
        - drafts_before
    )
    return {
        "scopes_in_database": first + scopes,
        "scopes": scopes,
        "queued": report.created,
        "runs_done": runs,
        "drafts": drafts,
        "model_calls": model.calls - calls_before,
        "seconds": round(seconds, 2),
        "ms_per_scope": round(seconds * 1000 / scopes, 2),
        "queries": queries,
        "queries_per_scope": round(queries / scopes, 2),
        "model_calls_per_scope": round((model.calls - calls_before) / scopes, 2),
    }


def measure(database: str, quick: bool) -> dict[str, Any]:
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["COGITATOR_MEMORY_LLM_PROVIDER"] = "project.demo.rule_model.RuleModel"
    os.environ["COGITATOR_MEMORY_UPKEEP_ENABLED"] = "true"
    os.environ["COGITATOR_MEMORY_UPKEEP_PLAYBOOK_MODE"] = "shadow"
    results: dict[str, Any] = {"database": database, "passes": []}
    small, large = QUICK_SIZES if quick else SIZES
    opener = database_opener(database, prefix="upkeep", pg_name="bench_upkeep")
    with opener() as url:
        setup_django(url)
        for first, count in ((0, small), (small, large - small)):
            results["passes"].append(one_pass(first, count))
            print(f"{database}: a pass in {first + count} scopes done", file=sys.stderr)
        from brief_overhead import measure_brief_overhead

        results["brief"] = measure_brief_overhead(50 if quick else 200)
    small, large = results["passes"]
    results["queries_growth"] = round(
        large["queries_per_scope"] / max(small["queries_per_scope"], 1e-9), 3
    )
    results["queries_flat_met"] = results["queries_growth"] <= FLAT_FACTOR
    results["brief_overhead_met"] = results["brief"]["brief_overhead_met"]
    return results


def main() -> None:
    measured = measure_databases(__file__, __doc__.split("\n\n")[0], measure)
    if measured is None:
        return
    _args, results = measured
    print(
        f"{'database':<9} {'in db':>6} {'scopes':>6} {'calls':>7} {'calls/scope':>11} "
        f"{'seconds':>8} {'ms/scope':>9} {'queries/scope':>13} {'drafts':>6}"
    )
    for database, report in results.items():
        for row in report["passes"]:
            print(
                f"{database:<9} {row['scopes_in_database']:>6} {row['scopes']:>6} "
                f"{row['model_calls']:>7} "
                f"{row['model_calls_per_scope']:>11} {row['seconds']:>8} "
                f"{row['ms_per_scope']:>9} {row['queries_per_scope']:>13} {row['drafts']:>6}"
            )
    print()
    print(f"{'database':<9} {'brief calls/build':>17} {'brief own p50 ms':>16} {'p95 ms':>8}")
    for database, report in results.items():
        brief = report["brief"]
        print(
            f"{database:<9} {brief['brief_model_calls_per_build']:>17} "
            f"{brief['brief_own_ms_p50']:>16} {brief['brief_own_ms_p95']:>8}"
        )
    summary = {
        "queries_growth": max(r["queries_growth"] for r in results.values()),
        "queries_flat_met": all(r["queries_flat_met"] for r in results.values()),
        "brief_overhead_met": all(r["brief_overhead_met"] for r in results.values()),
        "databases": results,
    }
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
