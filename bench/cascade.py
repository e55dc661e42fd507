"""Benchmark of forgetting a user (``MemoryCascade.delete_user``) on SQLite and PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/cascade.py [--quick] [--db sqlite|postgres|both]

The user forgotten ("ana") holds, in one agent: 10k entries in 10 threads (with their
keyword postings), 1k memory items with evidence, 5k message vectors and 200 memory file
versions (a tenth of each with ``--quick``). Ana is forgotten twice, each time after the
same data of hers was written again:

- in a database that also holds one other user with as much data (1x), then
- in one that holds ten such users (10x), then
- there again, as trusted code forgetting the user of every agent (``agent_ids=None``:
  the agents found by index probes, the user's vectors by user alone), reported beside.

Measured each time: the wall time and the SQL statements the cascade issued (on
PostgreSQL with the ``VACUUM`` it sends to the background, which runs in the process here,
Celery being eager; its share of the time is shown apart). Targets:
statements at 10x within 1.1x of those at 1x (the cascade's work follows the user's data,
not the database's: ``scales_with_user_met``), and the 10x forget under 60 s
(``time_met``). After each forget, the bench checks that nothing of ana is left and that
the other users' data is whole. Each database is measured in a subprocess of its own
(bench/benchdb.py). Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from benchdb import database_opener, measure_databases, setup_django

AGENT = "bench-cascade"
FORGOTTEN = "ana"
THREADS = 10
FULL = {"entries": 10_000, "items": 1_000, "vectors": 5_000, "file_versions": 200}
QUICK = {"entries": 1_000, "items": 100, "vectors": 500, "file_versions": 20}
VERSIONS_PER_FILE = 10
DIMENSIONS = 16
STATEMENTS_TARGET = 1.1
TIME_TARGET = 60.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
MESSAGE = "Parcel {n} for {user} left the depot at {hour} o'clock; call before noon."


def log(database: str, message: str) -> None:
    print(f"{database}: {message}", file=sys.stderr, flush=True)


def write_user(user: str, sizes: dict[str, int]) -> None:
    """Everything memory keeps of one user, written in bulk as the services would."""
    from django.db import transaction

    from cogitator_memory import dependents
    from cogitator_memory.embeddings.message_index import MESSAGE_SOURCE_TYPE, MESSAGES_INDEX
    from cogitator_memory.embeddings.registry import get_embedding_store
    from cogitator_memory.embeddings.types import NewEmbedding
    from cogitator_memory.files.access import FileAccess
    from cogitator_memory.files.services import MemoryFiles
    from cogitator_memory.grants import MemoryScope
    from cogitator_memory.items.models import Entity, Evidence, ItemStatus, MemoryItem
    from cogitator_memory.items.statements import entity_key
    from cogitator_memory.threads.models import Entry, Thread
    from cogitator_memory.tokens import count_tokens

    rng = random.Random(user)
    per_thread = sizes["entries"] // THREADS
    entries: list[Entry] = []
    for number in range(THREADS):
        thread = Thread.objects.create(
            id=f"t-{user}-{number}-{uuid.uuid4().hex[:6]}",
            agent_id=AGENT,
            user_id=user,
            metadata={"userId": user},
        )
        rows, parent = [], None
        for seq in range(per_thread):
            role = "user" if seq % 2 == 0 else "assistant"
            text = MESSAGE.format(n=seq, user=user, hour=seq % 24)
            entry_id = f"entry_{uuid.uuid4().hex}"
            rows.append(
                Entry(
                    id=entry_id,
                    thread=thread,
                    parent_id=parent,
                    seq=seq + 1,
                    type="message",
                    role=role,
                    content=text,
                    token_count=count_tokens(text),
                )
            )
            parent = entry_id
        with transaction.atomic():
            Entry.objects.bulk_create(rows, batch_size=2000)
            Thread.objects.filter(pk=thread.pk).update(active_leaf_id=parent, next_seq=per_thread)
            dependents.entries_added(rows)
        entries += rows

    subjects = Entity.objects.bulk_create(
        [
            Entity(agent_id=AGENT, user_id=user, name=f"Parcel {n}", key=entity_key(f"Parcel {n}"))
            for n in range(max(1, sizes["items"] // 10))
        ]
    )
    items = [
        MemoryItem(
            agent_id=AGENT,
            user_id=user,
            kind="fact",
            subject=subjects[n % len(subjects)],
            attribute=f"detail {n // len(subjects)}",
            value=f"value {n} of {user}",
            trust="user",
            verified=True,
            confidence=0.9,
            status=ItemStatus.ACTIVE,
            valid_from=T0 + timedelta(minutes=n),
            recorded_at=T0 + timedelta(minutes=n),
        )
        for n in range(sizes["items"])
    ]
    MemoryItem.objects.bulk_create(items, batch_size=2000)
    users_entries = [entry for entry in entries if entry.role == "user"]
    Evidence.objects.bulk_create(
        [
            Evidence(
                item=item,
                entry=(quoted := users_entries[n % len(users_entries)]),
                quote=str(quoted.content)[:20],
                verified=True,
            )
            for n, item in enumerate(items)
        ],
        batch_size=2000,
    )

    store = get_embedding_store()
    vectors = [
        NewEmbedding(
            source_type=MESSAGE_SOURCE_TYPE,
            source_id=entry.pk,
            vector=[rng.random() for _ in range(DIMENSIONS)],
            content=str(entry.content),
            metadata={
                "agentId": AGENT,
                "userId": user,
                "threadId": entry.thread_id,
                "index": MESSAGES_INDEX,
            },
        )
        for entry in entries[: sizes["vectors"]]
    ]
    for start in range(0, len(vectors), 1000):
        store.add(vectors[start : start + 1000])

    files = MemoryFiles()
    access = FileAccess(scope=MemoryScope(AGENT, user_id=user))
    for number in range(sizes["file_versions"]):
        path = f"/memories/{user}-{number // VERSIONS_PER_FILE}.md"
        files.put(access, path, f"note {number} of {user}: parcel {number}")


def others_intact(users: list[str]) -> bool:
    from cogitator_memory.items.models import MemoryItem
    from cogitator_memory.threads.models import Entry

    return all(
        Entry.objects.filter(thread__user_id=user).exists()
        and MemoryItem.objects.filter(user_id=user).exists()
        for user in users
    )


def ana_left() -> int:
    """Rows that still name the forgotten user (entries, items, vectors, file versions)."""
    from cogitator_memory.embeddings.models import Embedding
    from cogitator_memory.files.models import MemoryFileVersion
    from cogitator_memory.items.models import MemoryItem
    from cogitator_memory.threads.models import Entry, Thread

    return sum(
        query.count()
        for query in (
            Thread.objects.filter(user_id=FORGOTTEN),
            Entry.objects.filter(thread__user_id=FORGOTTEN),
            MemoryItem.objects.filter(user_id=FORGOTTEN),
            Embedding.objects.filter(user_id=FORGOTTEN),
            MemoryFileVersion.objects.filter(user_id=FORGOTTEN, content__isnull=False),
        )
    )


def forget(*, every_agent: bool = False) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from cogitator_memory.cascade.services import MemoryCascade

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        report = MemoryCascade().delete_user(FORGOTTEN, agent_ids=None if every_agent else [AGENT])
        seconds = time.perf_counter() - started
    # On PostgreSQL the VACUUM sent to the background after the forget runs here, Celery
    # being eager: counted in the time, and shown apart (it reads whole tables).
    vacuum = sum(
        float(query["time"])
        for query in queries.captured_queries
        if query["sql"].startswith("VACUUM")
    )
    return {
        "seconds": round(seconds, 2),
        "vacuum_seconds": round(vacuum, 2),
        "statements": len(queries.captured_queries),
        "report": report.as_dict(ids=False),
        "left": ana_left(),
    }


def measure(database: str, quick: bool) -> dict[str, Any]:
    sizes = QUICK if quick else FULL
    opener = database_opener(database, prefix="cascade", pg_name="bench_cascade")
    with opener() as url:
        setup_django(url)
        runs: dict[str, Any] = {}
        others: list[str] = []
        for scale in (1, 10):
            while len(others) < scale:
                other = f"other{len(others)}"
                log(database, f"writing {other}")
                write_user(other, sizes)
                others.append(other)
            log(database, f"writing {FORGOTTEN} beside {scale}x")
            write_user(FORGOTTEN, sizes)
            log(database, f"forgetting {FORGOTTEN} beside {scale}x")
            runs[f"{scale}x"] = {**forget(), "others_intact": others_intact(others)}
        # Trusted code forgetting the user of every agent: the agents are found by index
        # probes, the user's vectors by user alone.
        log(database, f"writing {FORGOTTEN} beside 10x again")
        write_user(FORGOTTEN, sizes)
        log(database, f"forgetting {FORGOTTEN} of every agent beside 10x")
        runs["10x every agent"] = {
            **forget(every_agent=True),
            "others_intact": others_intact(others),
        }
    one, ten = runs["1x"], runs["10x"]
    ratio = ten["statements"] / max(1, one["statements"])
    return {
        "database": database,
        "sizes": sizes,
        "runs": runs,
        "statements_ratio": round(ratio, 3),
        "scales_with_user_met": ratio <= STATEMENTS_TARGET,
        "time_met": ten["seconds"] <= TIME_TARGET,
        "clean_met": all(run["left"] == 0 for run in runs.values()),
        "others_intact_met": all(run["others_intact"] for run in runs.values()),
    }


def main() -> None:
    measured = measure_databases(__file__, __doc__.split("\n\n")[0], measure)
    if measured is None:
        return
    args, results = measured
    for database, result in results.items():
        print(f"\n== {database} ({'quick' if args.quick else 'full'}: {result['sizes']}) ==")
        print(
            f"{'scale':>16} {'seconds':>8} {'vacuum':>7} {'statements':>11} {'left':>5}"
            "  others intact"
        )
        for scale, run in result["runs"].items():
            print(
                f"{scale:>16} {run['seconds']:>8} {run['vacuum_seconds']:>7}"
                f" {run['statements']:>11} {run['left']:>5}  {run['others_intact']}"
            )
        print(
            f"statements 10x/1x {result['statements_ratio']} "
            f"(target <= {STATEMENTS_TARGET}: {result['scales_with_user_met']}); "
            f"10x under {TIME_TARGET:.0f} s: {result['time_met']}"
        )
    met = {
        key: all(result[key] for result in results.values())
        for key in ("scales_with_user_met", "time_met", "clean_met", "others_intact_met")
    }
    print(json.dumps({"benchmark": "cascade", "quick": args.quick, "results": results, **met}))


if __name__ == "__main__":
    main()
