"""Benchmark of the admin's list pages at scale, on SQLite and PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/admin.py [--quick] [--db sqlite|postgres|both]

Fills threads, entries, grants and outbox messages with bulk inserts (COPY on
PostgreSQL), as many rows of each as a large installation may hold: 200,000 on SQLite and
1,000,000 on PostgreSQL (``--quick``: 20,000 on both). Then renders each list page through
Django's test client, logged in as a superuser and as a staff user with one grant, and
times the whole request: every query, the template, the response. p50 and p95 per page;
the target is a p95 of at most 300 ms at the full sizes. Each database runs in a
subprocess of its own; the table comes first, the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from benchdb import DATA_DIR, database_opener, setup_django

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
PG_DATABASE = "bench_admin"
# A server of its own, so this benchmark can run beside the others.
PG_DIR = DATA_DIR / "pg-admin"
SEED = 11

ROWS = {"sqlite": 200_000, "postgres": 1_000_000}
QUICK_ROWS = 20_000
TARGET_P95_MS = 300.0
# Agents the threads belong to, equally many threads each; the staff user is granted one.
AGENTS = [f"agent-{n:02d}" for n in range(20)]
STAFF_AGENT = "agent-03"
# One thread in ten of each agent holds entries, ten each: as many entries as threads.
ENTRIES_PER_THREAD = 10
# Grants: this many users, each granted as many agents as it takes to reach the row count.
GRANT_USERS = 1_000
OUTBOX_TOPICS = ["embeddings.delete_sources", "embeddings.set_owner"]
# One message in this many has a topic of its own, and one entry in this many a type of
# its own: values a filter must find among many rows of other values.
RARE_TOPIC = "bench.rare"
RARE_ENTRY_TYPE = "interrupt"
RARE_EVERY = 1_000
# Subjects the memory items are about.
ITEM_SUBJECTS = 2_000
# Pages of a filter no row matches: they list nothing.
EMPTY_PAGES = {"entries_by_absent_role", "entries_today"}
# The day of the month the date drill-down is measured on.
DRILL_DAY = 15


def log(database: str, message: str) -> None:
    print(f"{database}: {message}", file=sys.stderr, flush=True)


def summarize(seconds: Sequence[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 1),
    }


# --- filling the tables ----------------------------------------------------------------


def insert_rows(model: Any, fields: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Insert ``rows`` (values of ``fields``, JSON as text, datetimes as the database
    wants them) into the table of ``model``: COPY on PostgreSQL, executemany on SQLite."""
    from django.db import connection

    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(model._meta.get_field(f).column) for f in fields)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        placeholders = ", ".join(["%s"] * len(fields))
        statement = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"
        batch: list[Sequence[Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == 10_000:
                cursor.executemany(statement, batch)
                batch = []
        if batch:
            cursor.executemany(statement, batch)


def last_month(now: datetime) -> tuple[datetime, datetime]:
    """The start and end of the calendar month before ``now``."""
    end = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (end - timedelta(days=1)).replace(day=1), end


def fill(database: str, rows: int, now: datetime) -> dict[str, Any]:
    """Threads, entries, grants and outbox messages, ``rows`` of each; returns what the
    measures need (the users, the day drilled down to).

    Threads were updated during last month, as on a new installation or after a load
    test: the list then opens its date drill-down on that month's days, the level whose
    links cost the most lookups (and Django's, a DISTINCT over every row)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.db import connection, transaction

    from cogitator_memory.access.models import Grant
    from cogitator_memory.outbox.models import OutboxMessage
    from cogitator_memory.threads.models import Entry, Thread

    rng = random.Random(SEED)
    moment = connection.ops.adapt_datetimefield_value
    month_start, month_end = last_month(now)
    thread_rows: list[list[Any]] = []
    entry_rows: list[list[Any]] = []
    for n in range(rows):
        thread_id = f"thr_{rng.getrandbits(128):032x}"
        updated_at = month_start + (month_end - month_start) * rng.random()
        created_at = updated_at - timedelta(days=30) * rng.random()
        user_id = f"user-{rng.randrange(1_000):03d}"
        leaf_id, next_seq = None, 0
        if (n // len(AGENTS)) % ENTRIES_PER_THREAD == 0:
            parent_id = None
            for seq in range(1, ENTRIES_PER_THREAD + 1):
                entry_id = f"ent_{rng.getrandbits(128):032x}"
                kind, role = "message", "user" if seq % 2 else "assistant"
                if len(entry_rows) % RARE_EVERY == RARE_EVERY // 2:
                    kind, role = RARE_ENTRY_TYPE, None
                elif (n + seq) % 25 == 0:
                    kind, role = "label", None
                entry_rows.append(
                    [
                        entry_id,
                        thread_id,
                        parent_id,
                        seq,
                        kind,
                        role,
                        json.dumps(f"Message {seq} of thread {n}: what was said, briefly."),
                        12,
                        moment(created_at + timedelta(seconds=seq)),
                    ]
                )
                parent_id = entry_id
            leaf_id, next_seq = parent_id, ENTRIES_PER_THREAD
        thread_rows.append(
            [
                thread_id,
                AGENTS[n % len(AGENTS)],
                json.dumps({"userId": user_id, "topic": f"topic {n % 97}"}),
                user_id,
                leaf_id,
                next_seq,
                moment(created_at),
                moment(updated_at),
            ]
        )
    log(database, f"writing {rows:,} threads and {len(entry_rows):,} entries")
    with transaction.atomic():
        insert_rows(
            Thread,
            [
                "id",
                "agent_id",
                "metadata",
                "user_id",
                "active_leaf",
                "next_seq",
                "created_at",
                "updated_at",
            ],
            thread_rows,
        )
        insert_rows(
            Entry,
            [
                *("id", "thread", "parent", "seq", "type", "role", "content"),
                *("token_count", "created_at"),
            ],
            entry_rows,
        )
    del thread_rows, entry_rows

    user_model = get_user_model()
    superuser = user_model.objects.create_superuser("bench-admin", password="unused-password")
    staff = user_model.objects.create_user("bench-staff", password="unused-password", is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_thread", "view_entry"])
    )
    Grant.objects.create(user=staff, agent_id=STAFF_AGENT)
    grant_users = user_model.objects.bulk_create(
        [user_model(username=f"bench-user-{n:04d}", password="!") for n in range(GRANT_USERS)]
    )
    log(database, f"writing {rows:,} grants and {rows:,} outbox messages")
    with transaction.atomic():
        insert_rows(
            Grant,
            ["user", "agent_id", "created_at"],
            (
                [
                    grant_users[n % GRANT_USERS].pk,
                    f"grant-agent-{n // GRANT_USERS:04d}",
                    moment(now - timedelta(minutes=n)),
                ]
                for n in range(rows)
            ),
        )
        insert_rows(
            OutboxMessage,
            ["topic", "payload", "created_at", "attempts", "next_attempt_at", "last_error"],
            (
                [
                    RARE_TOPIC if n % RARE_EVERY == 0 else OUTBOX_TOPICS[n % 2],
                    json.dumps({"source_ids": [f"ent_{n:032x}"]}),
                    moment(now - timedelta(seconds=n)),
                    3,
                    moment(now + timedelta(days=1)),
                    "Store unavailable: connection refused",
                ]
                for n in range(rows)
            ),
        )
    has_items = fill_items(database, rows, month_start, month_end, staff)
    if connection.vendor == "postgresql":
        # As autovacuum would after a load this size: statistics for the planner, the
        # visibility map for index-only scans.
        log(database, "VACUUM ANALYZE")
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    return {
        "now": now,
        "items": has_items,
        "superuser": superuser,
        "staff": staff,
        "day": (month_start.year, month_start.month, DRILL_DAY),
        "grant_agent": f"grant-agent-{(rows // GRANT_USERS) // 2:04d}",
    }


def fill_items(database: str, rows: int, start: datetime, end: datetime, staff: Any) -> bool:
    """``rows`` memory items of 2,000 subjects, recorded during last month, one in ten
    suggested (the review queue the list opens on), the others active; False, and
    nothing written, when the app has no memory item list."""
    from django.contrib import admin
    from django.contrib.auth.models import Permission
    from django.db import transaction

    try:
        from cogitator_memory.items.models import Entity, MemoryItem
    except ImportError:
        return False
    if not admin.site.is_registered(MemoryItem):
        return False
    rng = random.Random(SEED + 1)
    subjects = [
        Entity(id=f"ent_{n:032x}", agent_id=AGENTS[n % len(AGENTS)], name=f"Subject {n}")
        for n in range(ITEM_SUBJECTS)
    ]
    for subject in subjects:
        subject.key = subject.name.lower()
    log(database, f"writing {rows:,} memory items")
    with transaction.atomic():
        Entity.objects.bulk_create(subjects)
        for first in range(0, rows, 10_000):
            batch = []
            for n in range(first, min(rows, first + 10_000)):
                recorded_at = start + (end - start) * rng.random()
                batch.append(
                    MemoryItem(
                        id=f"item_{rng.getrandbits(128):032x}",
                        kind="fact",
                        subject_id=subjects[n % ITEM_SUBJECTS].id,
                        agent_id=AGENTS[n % len(AGENTS)],
                        user_id=f"user-{rng.randrange(1_000):03d}",
                        attribute=f"attribute {n % 50}",
                        value=f"value {n}",
                        content=f"Subject {n % ITEM_SUBJECTS} has value {n}.",
                        trust="model",
                        confidence=0.7,
                        status="suggested" if rng.random() < 0.1 else "active",
                        valid_from=recorded_at,
                        recorded_at=recorded_at,
                    )
                )
            MemoryItem.objects.bulk_create(batch)
    staff.user_permissions.add(Permission.objects.get(codename="view_memoryitem"))
    return True


# --- the pages -------------------------------------------------------------------------


def pages(filled: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(name, who, URL) of every page measured."""
    midnight = filled["now"].replace(hour=0, minute=0, second=0)

    def created(since: str) -> str:
        # The parameters of the date filter's "Today" and "This year".
        if since == "today":
            start, end = midnight, midnight + timedelta(days=1)
        else:
            start = midnight.replace(month=1, day=1)
            end = start.replace(year=start.year + 1)
        return urlencode({"created_at__gte": str(start), "created_at__lt": str(end)})

    year, month, day = filled["day"]
    drill = f"updated_at__year={year}&updated_at__month={month}&updated_at__day={day}"
    threads = "/admin/cogitator_memory/thread/"
    entries = "/admin/cogitator_memory/entry/"
    grants = "/admin/cogitator_memory/grant/"
    outbox = "/admin/cogitator_memory/outboxmessage/"
    items = "/admin/cogitator_memory/memoryitem/"
    # The memory item list, when the app has one.
    superuser_items = [
        ("items", "superuser", items),
        ("items_every_status", "superuser", f"{items}?status=all"),
        ("items_by_agent", "superuser", f"{items}?agent_id=agent-07"),
    ]
    staff_items = [("items", "staff", items)]
    return [
        ("threads", "superuser", threads),
        ("threads_by_agent", "superuser", f"{threads}?agent_id=agent-07"),
        ("threads_by_day", "superuser", f"{threads}?{drill}"),
        ("threads_page_5", "superuser", f"{threads}?p=5"),
        ("entries", "superuser", entries),
        ("entries_by_type", "superuser", f"{entries}?type__exact=label"),
        ("entries_by_rare_type", "superuser", f"{entries}?type__exact={RARE_ENTRY_TYPE}"),
        ("entries_by_absent_role", "superuser", f"{entries}?role__exact=system"),
        ("entries_today", "superuser", f"{entries}?{created('today')}"),
        ("entries_this_year", "superuser", f"{entries}?{created('year')}"),
        # The entry list has no action column: created_at is its seventh column.
        ("entries_newest_first", "superuser", f"{entries}?o=-6"),
        ("grants", "superuser", grants),
        ("grants_by_agent", "superuser", f"{grants}?agent_id={filled['grant_agent']}"),
        ("outbox", "superuser", outbox),
        ("outbox_by_rare_topic", "superuser", f"{outbox}?topic={RARE_TOPIC}"),
        *(superuser_items if filled["items"] else []),
        ("threads", "staff", threads),
        ("threads_by_agent", "staff", f"{threads}?agent_id={STAFF_AGENT}"),
        ("threads_by_day", "staff", f"{threads}?{drill}"),
        ("entries", "staff", entries),
        *(staff_items if filled["items"] else []),
    ]


def check_page(name: str, url: str, response: Any) -> int:
    """The page answered 200 and lists rows (none for a filter no row matches); returns
    how many."""
    if response.status_code != 200:
        raise RuntimeError(f"{name}: {url} answered {response.status_code}")
    html = response.content.decode()
    start = html.find("<tbody>")
    listed = html.count("<tr", start, html.find("</tbody>", start)) if start >= 0 else 0
    if bool(listed) == (name in EMPTY_PAGES):
        raise RuntimeError(f"{name}: {url} lists {listed} rows")
    return listed


class QueryTimer:
    """Times each statement a connection sends (``connection.execute_wrapper``), to the
    microsecond: Django's own query log keeps milliseconds."""

    def __init__(self) -> None:
        self.queries: list[tuple[float, str]] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries.append((time.perf_counter() - start, sql))


def measure_pages(database: str, filled: dict[str, Any], repeats: int, budget: float) -> dict:
    from django.db import connection
    from django.test import Client

    clients = {}
    for who in ("superuser", "staff"):
        clients[who] = Client()
        clients[who].force_login(filled[who])
    results: dict[str, Any] = {}
    for name, who, url in pages(filled):
        client = clients[who]
        timer = QueryTimer()
        with connection.execute_wrapper(timer):
            listed = check_page(name, url, client.get(url))
        slowest_seconds, slowest_sql = max(timer.queries)
        seconds: list[float] = []
        started = time.perf_counter()
        while len(seconds) < repeats:
            start = time.perf_counter()
            response = client.get(url)
            seconds.append(time.perf_counter() - start)
            if response.status_code != 200:
                raise RuntimeError(f"{name}: {url} answered {response.status_code}")
            # A page that takes seconds is measured fewer times, at least three.
            if len(seconds) >= 3 and time.perf_counter() - started > budget:
                break
        figures = summarize(seconds)
        log(database, f"{who:<9} {name:<22} p50 {figures['p50_ms']:>8.1f} ms")
        results[f"{who}:{name}"] = {
            "who": who,
            "page": name,
            "url": url,
            **figures,
            "samples": len(seconds),
            "rows_listed": listed,
            "queries": len(timer.queries),
            "slowest_query_ms": round(slowest_seconds * 1000, 2),
            "slowest_query": slowest_sql[:300],
        }
    return results


def run_worker(database: str, quick: bool) -> dict[str, Any]:
    warnings.filterwarnings("ignore", message="No directory at")
    opener = database_opener(database, prefix="admin", pg_name=PG_DATABASE, pg_dir=PG_DIR)
    rows = QUICK_ROWS if quick else ROWS[database]
    with opener() as url:
        setup_django(url)
        from django.test.utils import override_settings

        # The test client's host, and static files without a collectstatic manifest.
        with override_settings(
            ALLOWED_HOSTS=["testserver"],
            STORAGES={
                "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
            },
        ):
            now = datetime.now(UTC).replace(microsecond=0)
            started = time.perf_counter()
            filled = fill(database, rows, now)
            fill_seconds = time.perf_counter() - started
            pages_measured = measure_pages(
                database, filled, repeats=10 if quick else 40, budget=10.0 if quick else 30.0
            )
    return {"rows": rows, "fill_seconds": round(fill_seconds, 1), "pages": pages_measured}


# --- the report ------------------------------------------------------------------------


def code_version() -> dict[str, Any]:
    def git(*arguments: str) -> str:
        done = subprocess.run(
            ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    return {
        "commit": git("rev-parse", "--short", "HEAD") or None,
        "app_changed_since_commit": bool(git("status", "--porcelain", "--", "cogitator_memory")),
    }


def format_table(results: dict[str, Any], quick: bool) -> str:
    lines = []
    for database, report in results.items():
        lines.append(
            f"{database}: {report['rows']:,} rows of each table (filled in "
            f"{report['fill_seconds']} s)"
        )
        lines.append(
            f"  {'who':<9} {'page':<22} {'p50':>9} {'p95':>9} {'queries':>7} {'slowest query':>13}"
        )
        for row in report["pages"].values():
            lines.append(
                f"  {row['who']:<9} {row['page']:<22} {row['p50_ms']:>7.1f}ms "
                f"{row['p95_ms']:>7.1f}ms {row['queries']:>7} {row['slowest_query_ms']:>11.2f}ms"
            )
        worst = max(report["pages"].values(), key=lambda row: row["p95_ms"])
        verdict = "met" if report["target_met"] else "missed"
        judged = " (judged on the full run only)" if quick else ""
        lines.append(
            f"  target p95 <= {TARGET_P95_MS:.0f} ms{judged}: {verdict}; "
            f"slowest p95 {worst['p95_ms']:.1f} ms ({worst['who']} {worst['page']})"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows of each table")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--worker", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args.worker, args.quick), default=str))
        return
    load_before = os.getloadavg()[0]
    results = {}
    for database in ("sqlite", "postgres") if args.db == "both" else (args.db,):
        command = [sys.executable, __file__, "--worker", database]
        if args.quick:
            command.append("--quick")
        done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        report["target_met"] = all(
            row["p95_ms"] <= TARGET_P95_MS for row in report["pages"].values()
        )
        results[database] = report
    print(format_table(results, args.quick))
    print(
        json.dumps(
            {
                "quick": args.quick,
                "target_p95_ms": TARGET_P95_MS,
                "code": code_version(),
                "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
