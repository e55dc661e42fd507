"""Benchmark of thread writes and reads on SQLite and PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/threads.py [--quick] [--db sqlite|postgres|both] [--profile]

Each database is measured in a subprocess of its own (Django configures one database per
process): SQLite in a temporary file under ``bench/.data/``, PostgreSQL in a fresh
database of the embedded server kept in ``bench/.data/pg``. The parent collects the
figures, prints a table, and prints one JSON object of every figure as the last line of
stdout. Progress goes to stderr.

Measured:

- ``add_entry`` one after another on one thread, against a bare ``INSERT`` of the same
  row through the same connection (autocommit), in alternating blocks so that noise of a
  shared machine hits both alike. Target: add_entry at most 3x the bare INSERT (medians).
  A third measure sends the statements add_entry sends as plain SQL in one transaction,
  which splits add_entry's time into the database's share and the Python around it.
- ``get_path(limit=50)`` from the active leaf and from a leaf in the middle of the
  thread, and ``get_entries(limit=50)``, on threads of 1k, 10k and 100k entries (1k and
  10k with ``--quick``). Target: the median at the largest size within 2x of the median
  at 1k.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchdb import database_opener, run_child, setup_django
from tqdm import tqdm

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / ".data"
PG_DATABASE = "bench_threads"

DATABASES = ("sqlite", "postgres")
PATH_LIMIT = 50
READ_TARGET = 2.0
WRITE_TARGET = 3.0
SIDE_BRANCH_LENGTH = 10
# Above this 1-minute load average per CPU before the run (other work), the table warns
# that the figures are unreliable.
BUSY_LOAD_PER_CPU = 0.5

# A typical chat turn: a few sentences, as an agent stores after each model call.
MESSAGE_TEXT = (
    "Could you look up the opening hours of the library on Main Street and tell me "
    "whether it is open on Sunday afternoons? I would like to return two books and "
    "borrow the next volume of the series before the holidays start."
)


class Plan:
    """How much work a run does."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
        self.read_repetitions = 100 if quick else 300
        self.write_rounds = 5 if quick else 10
        self.write_block = 60 if quick else 200
        self.warmup = 10 if quick else 30


# --- figures ---------------------------------------------------------------------------


def summarize(samples_ns: list[int]) -> dict[str, float]:
    samples_ms = [sample / 1e6 for sample in samples_ns]
    p95 = statistics.quantiles(samples_ms, n=100, method="inclusive")[94]
    mean = statistics.fmean(samples_ms)
    return {
        "count": len(samples_ms),
        "p50_ms": round(statistics.median(samples_ms), 4),
        "p95_ms": round(p95, 4),
        "mean_ms": round(mean, 4),
        "per_second": round(1000 / mean, 1),
    }


def timed(call: Callable[[], Any]) -> tuple[int, Any]:
    started = time.perf_counter_ns()
    result = call()
    return time.perf_counter_ns() - started, result


def log(database: str, message: str) -> None:
    print(f"[{database}] {message}", file=sys.stderr, flush=True)


# --- database set-up (worker) ----------------------------------------------------------


def server_description() -> dict[str, str]:
    """The server's version and the settings that decide what a commit costs."""
    from django.db import connection

    if connection.vendor == "postgresql":
        names = ["server_version", "fsync", "synchronous_commit", "shared_buffers"]
    else:
        names = ["journal_mode", "synchronous"]
    settings: dict[str, str] = {}
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(f"{'SHOW' if connection.vendor == 'postgresql' else 'PRAGMA'} {name}")
            settings[name] = str(cursor.fetchone()[0])
    if connection.vendor == "postgresql":
        version = f"PostgreSQL {settings.pop('server_version')}"
    else:
        version = f"SQLite {sqlite3.sqlite_version}"
        # PRAGMA synchronous answers a number: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA.
        levels = {"0": "off", "1": "normal", "2": "full", "3": "extra"}
        settings["synchronous"] = levels.get(settings["synchronous"], settings["synchronous"])
    return {"version": version, **settings}


# --- writes ----------------------------------------------------------------------------


def quoted_column(field: Any) -> str:
    from django.db import connection

    # A concrete field always has a column; its type allows None for virtual fields.
    assert field.column is not None
    return str(connection.ops.quote_name(field.column))


class EntryRows:
    """INSERTs entry rows with a plain cursor, skipping the ORM.

    The row's values are adapted for the driver once; only id, parent, seq and
    created_at change from row to row, so the time is the database's and the driver's.
    """

    def __init__(self, thread_id: str, token_count: int) -> None:
        from django.db import connection
        from django.utils import timezone

        from cogitator_memory.threads.models import Entry

        self.connection = connection
        fields = Entry._meta.concrete_fields
        quote = connection.ops.quote_name
        columns = ", ".join(quoted_column(field) for field in fields)
        placeholders = ", ".join(["%s"] * len(fields))
        self.sql = f"INSERT INTO {quote(Entry._meta.db_table)} ({columns}) VALUES ({placeholders})"
        template = Entry(
            thread_id=thread_id,
            type="message",
            role="user",
            content=MESSAGE_TEXT,
            token_count=token_count,
            created_at=timezone.now(),
        )
        self.params = [
            field.get_db_prep_save(getattr(template, field.attname), connection) for field in fields
        ]
        names = [field.attname for field in fields]
        self.id_at = names.index("id")
        self.parent_at = names.index("parent_id")
        self.seq_at = names.index("seq")
        self.created_at_at = names.index("created_at")

    def insert(self, cursor: Any, *, parent_id: str | None, seq: int) -> str:
        from django.utils import timezone

        from cogitator_memory.threads.models import new_entry_id

        entry_id = new_entry_id()
        params = list(self.params)
        params[self.id_at] = entry_id
        params[self.parent_at] = parent_id
        params[self.seq_at] = seq
        params[self.created_at_at] = self.connection.ops.adapt_datetimefield_value(timezone.now())
        cursor.execute(self.sql, params)
        return entry_id


class BareInsert:
    """One INSERT per entry in autocommit; seq and parent are kept here, not read."""

    def __init__(self, thread_id: str, token_count: int) -> None:
        self.thread_id = thread_id
        self.rows = EntryRows(thread_id, token_count)
        self.parent_id: str | None = None
        self.seq = 0

    def add(self, cursor: Any) -> None:
        self.seq += 1
        self.parent_id = self.rows.insert(cursor, parent_id=self.parent_id, seq=self.seq)

    def finish(self) -> None:
        from cogitator_memory.threads.models import Thread

        # Leave the thread as add_entry would have, so the table stays consistent.
        Thread.objects.filter(pk=self.thread_id).update(
            next_seq=self.seq, active_leaf_id=self.parent_id
        )


class PlainTransaction:
    """The statements add_entry sends (lock and read the thread, insert, move the
    leaf), as plain SQL in one transaction: the database's share of add_entry."""

    def __init__(self, thread_id: str, token_count: int) -> None:
        from django.db import connection

        from cogitator_memory.threads.models import Thread

        self.thread_id = thread_id
        self.rows = EntryRows(thread_id, token_count)
        quote = connection.ops.quote_name
        table = quote(Thread._meta.db_table)
        leaf = quoted_column(Thread._meta.get_field("active_leaf"))
        next_seq = quoted_column(Thread._meta.get_field("next_seq"))
        pk = quoted_column(Thread._meta.pk)
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        self.select = f"SELECT {leaf}, {next_seq} FROM {table} WHERE {pk} = %s{lock}"
        self.update = f"UPDATE {table} SET {next_seq} = %s, {leaf} = %s WHERE {pk} = %s"

    def add(self, cursor: Any) -> None:
        from django.db import transaction

        with transaction.atomic():
            cursor.execute(self.select, [self.thread_id])
            parent_id, last_seq = cursor.fetchone()
            entry_id = self.rows.insert(cursor, parent_id=parent_id, seq=last_seq + 1)
            cursor.execute(self.update, [last_seq + 1, entry_id, self.thread_id])


def queries_of_one_add_entry(thread_id: str) -> list[str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from cogitator_memory.threads.services import add_entry

    with CaptureQueriesContext(connection) as captured:
        add_entry(thread_id, role="user", content=MESSAGE_TEXT)
    return [query["sql"][:90] for query in captured.captured_queries]


def measure_writes(database: str, plan: Plan) -> dict[str, Any]:
    from django.db import connection

    from cogitator_memory.threads.services import add_entry, create_thread
    from cogitator_memory.tokens import count_entry_fields_tokens

    token_count = count_entry_fields_tokens(content=MESSAGE_TEXT)
    orm_thread = create_thread("bench-agent", {"bench": "add_entry"})
    bare = BareInsert(create_thread("bench-agent", {"bench": "bare_insert"}).pk, token_count)
    plain = PlainTransaction(create_thread("bench-agent", {"bench": "plain"}).pk, token_count)

    def one_add_entry() -> None:
        add_entry(orm_thread.pk, role="user", content=MESSAGE_TEXT)

    samples: dict[str, list[int]] = {"add_entry": [], "bare_insert": [], "plain_transaction": []}
    total = plan.write_rounds * plan.write_block
    with (
        connection.cursor() as cursor,
        tqdm(
            total=3 * (plan.warmup + total), desc=f"{database} writes", unit="row", file=sys.stderr
        ) as progress,
    ):
        calls: dict[str, Callable[[], Any]] = {
            "add_entry": one_add_entry,
            "bare_insert": lambda: bare.add(cursor),
            "plain_transaction": lambda: plain.add(cursor),
        }
        for call in calls.values():
            for _ in range(plan.warmup):
                call()
        progress.update(3 * plan.warmup)
        # Alternating blocks: a slow spell of a shared machine lands on every measure.
        for _ in range(plan.write_rounds):
            for name, call in calls.items():
                samples[name].extend(timed(call)[0] for _ in range(plan.write_block))
                progress.update(plan.write_block)
    bare.finish()

    queries = queries_of_one_add_entry(orm_thread.pk)
    figures = {name: summarize(values) for name, values in samples.items()}
    bare_p50 = figures["bare_insert"]["p50_ms"]
    ratio = figures["add_entry"]["p50_ms"] / bare_p50
    return {
        **figures,
        "add_entry_over_bare_insert_p50": round(ratio, 2),
        "add_entry_over_bare_insert_mean": round(
            figures["add_entry"]["mean_ms"] / figures["bare_insert"]["mean_ms"], 2
        ),
        "plain_transaction_over_bare_insert_p50": round(
            figures["plain_transaction"]["p50_ms"] / bare_p50, 2
        ),
        "target": WRITE_TARGET,
        "met": ratio <= WRITE_TARGET,
        "queries_per_add_entry": len(queries),
        "add_entry_queries": queries,
    }


def profile_add_entry(count: int) -> str:
    from cogitator_memory.threads.services import add_entry, create_thread

    thread = create_thread("bench-agent", {"bench": "profile"})
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(count):
        add_entry(thread.pk, role="user", content=MESSAGE_TEXT)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(35)
    stats.sort_stats("tottime").print_stats(20)
    return out.getvalue()


# --- reads -----------------------------------------------------------------------------


def entry_fields(seq: int) -> dict[str, Any]:
    """The fields of the seq-th entry of a built thread: a conversation with a tool call
    every ten entries and a label event every twenty-five."""
    if seq % 25 == 13:
        return {"type": "label", "event": {"label": f"checkpoint {seq}"}, "token_count": 9}
    if seq % 10 == 9:
        return {
            "type": "message",
            "role": "assistant",
            "content": "Let me look that up.",
            "tool_calls": [
                {"id": f"call_{seq}", "name": "search", "arguments": {"query": "library hours"}}
            ],
            "token_count": 20,
        }
    if seq % 10 == 0:
        return {
            "type": "tool_result",
            "role": "tool",
            "tool_call_id": f"call_{seq - 1}",
            "content": "Open Monday to Saturday 9-18, Sunday 12-17.",
            "tool_results": [{"callId": f"call_{seq - 1}", "result": {"open": True}}],
            "token_count": 16,
        }
    role = "user" if seq % 2 else "assistant"
    return {"type": "message", "role": role, "content": MESSAGE_TEXT, "token_count": 52}


def build_thread(database: str, size: int) -> dict[str, str]:
    """A thread of ``size`` entries written with bulk_create.

    The main branch runs from seq 1 to ``size``; at its middle a side branch of
    ``SIDE_BRANCH_LENGTH`` messages forks off (seqs right after the fork point, as if the
    agent had rewound and then checked the main branch out again), ending at a leaf in
    the middle of the thread. Returns the thread id, the active leaf and the side leaf.
    """
    from django.db import transaction

    from cogitator_memory.threads.models import Entry, Thread, new_entry_id
    from cogitator_memory.threads.services import create_thread

    thread = create_thread("bench-agent", {"bench": "reads", "size": size})
    fork_seq = size // 2
    side_seqs = range(fork_seq + 1, fork_seq + 1 + SIDE_BRANCH_LENGTH)
    started = datetime.now(UTC) - timedelta(days=1)
    batch_size = 1_000

    main_parent: str | None = None
    fork_point: str | None = None
    side_parent: str | None = None
    batch: list[Entry] = []
    with (
        transaction.atomic(),
        tqdm(
            total=size, desc=f"{database} build {size:,}", unit="entry", file=sys.stderr
        ) as progress,
    ):
        for seq in range(1, size + 1):
            entry_id = new_entry_id()
            if seq in side_seqs:
                fields = {
                    "type": "message",
                    "role": "user",
                    "content": MESSAGE_TEXT,
                    "token_count": 52,
                }
                parent = side_parent if side_parent is not None else fork_point
                side_parent = entry_id
            else:
                fields = entry_fields(seq)
                parent = main_parent
                main_parent = entry_id
                if seq == fork_seq:
                    fork_point = entry_id
            batch.append(
                Entry(
                    id=entry_id,
                    thread_id=thread.pk,
                    parent_id=parent,
                    seq=seq,
                    created_at=started + timedelta(milliseconds=seq),
                    **fields,
                )
            )
            if len(batch) == batch_size:
                Entry.objects.bulk_create(batch)
                progress.update(len(batch))
                batch = []
        if batch:
            Entry.objects.bulk_create(batch)
            progress.update(len(batch))
        Thread.objects.filter(pk=thread.pk).update(next_seq=size, active_leaf_id=main_parent)
    assert main_parent is not None and side_parent is not None
    return {"thread_id": thread.pk, "active_leaf": main_parent, "middle_leaf": side_parent}


def read_operations(built: dict[str, str]) -> dict[str, Callable[[], list[Any]]]:
    from cogitator_memory.threads.selectors import get_entries, get_path

    thread_id = built["thread_id"]
    return {
        "get_path_active_leaf": lambda: get_path(thread_id, limit=PATH_LIMIT),
        "get_path_middle_leaf": lambda: get_path(
            thread_id, leaf_id=built["middle_leaf"], limit=PATH_LIMIT
        ),
        "get_entries": lambda: get_entries(thread_id, limit=PATH_LIMIT),
    }


def check_read(name: str, built: dict[str, str], rows: list[Any]) -> None:
    """A read that returns the wrong rows would be timed for nothing."""
    if len(rows) != PATH_LIMIT:
        raise RuntimeError(f"{name} returned {len(rows)} entries, not {PATH_LIMIT}")
    expected_last = {
        "get_path_active_leaf": built["active_leaf"],
        "get_path_middle_leaf": built["middle_leaf"],
    }.get(name)
    if expected_last is not None and rows[-1].pk != expected_last:
        raise RuntimeError(f"{name} did not end at {expected_last}")


def measure_reads(database: str, plan: Plan) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    threads = {size: build_thread(database, size) for size in plan.sizes}
    if connection.vendor == "postgresql":
        # Autovacuum would analyze the new rows at some point during the run; doing it
        # now keeps the query plans the same from the first repetition to the last.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")

    operations = {size: read_operations(built) for size, built in threads.items()}
    names = list(operations[plan.sizes[0]])
    queries: dict[str, dict[str, int]] = {name: {} for name in names}
    for size, ops in operations.items():
        for name, call in ops.items():
            with CaptureQueriesContext(connection) as captured:
                rows = call()
            check_read(name, threads[size], rows)
            queries[name][str(size)] = len(captured.captured_queries)
            for _ in range(plan.warmup):
                call()

    samples: dict[str, dict[int, list[int]]] = {name: {s: [] for s in plan.sizes} for name in names}
    # Sizes and operations take turns, so a slow spell touches every figure alike.
    for _ in tqdm(
        range(plan.read_repetitions), desc=f"{database} reads", unit="round", file=sys.stderr
    ):
        for size in plan.sizes:
            for name in names:
                samples[name][size].append(timed(operations[size][name])[0])

    largest = plan.sizes[-1]
    smallest = plan.sizes[0]
    figures: dict[str, Any] = {}
    for name in names:
        by_size = {str(size): summarize(samples[name][size]) for size in plan.sizes}
        ratio = by_size[str(largest)]["p50_ms"] / by_size[str(smallest)]["p50_ms"]
        figures[name] = {
            "sizes": by_size,
            "largest_over_smallest_p50": round(ratio, 2),
            "queries": queries[name],
            "target": READ_TARGET,
            "met": ratio <= READ_TARGET,
        }
    return figures


def run_worker(database: str, plan: Plan, profile: bool) -> None:
    opener = database_opener(database, prefix="threads", pg_name=PG_DATABASE)
    # Other work on a shared machine slows every figure; the load says how much there was.
    load_at_start = os.getloadavg()[0]
    with opener() as url:
        started = time.monotonic()
        log(database, "migrating")
        setup_django(url)
        figures: dict[str, Any] = {"database": database, "server": server_description()}
        log(database, f"{figures['server']['version']}: measuring writes")
        figures["writes"] = measure_writes(database, plan)
        log(database, "building threads and measuring reads")
        figures["reads"] = measure_reads(database, plan)
        if profile:
            log(database, "profiling add_entry")
            print(profile_add_entry(500), file=sys.stderr)
        figures["seconds"] = round(time.monotonic() - started, 1)
    figures["load_average_1min"] = {"start": load_at_start, "end": os.getloadavg()[0]}
    print(json.dumps(figures))


# --- parent: run the workers, print the table ------------------------------------------


def run_database(database: str, args: argparse.Namespace) -> dict[str, Any]:
    flags = [flag for flag, on in (("--quick", args.quick), ("--profile", args.profile)) if on]
    return run_child(__file__, database, *flags)


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def format_table(report: dict[str, Any]) -> str:
    lines = [
        f"Thread benchmark, {report['mode']} run, {report['date']}, commit "
        f"{report['code']['commit']}"
        + (
            " with uncommitted changes to the app"
            if report["code"]["app_changed_since_commit"]
            else ""
        ),
        f"{report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
        f"Django {report['machine']['django']}; 1-minute load average "
        f"{report['load_average_1min']['before']:.2f} before the run, "
        f"{report['load_average_1min']['after']:.2f} after",
    ]
    for figures in report["databases"].values():
        writes = figures["writes"]
        lines += [
            "",
            f"== {figures['server']['version']} ({figures['seconds']} s, load average "
            f"{figures['load_average_1min']['start']:.2f} at start, "
            f"{figures['load_average_1min']['end']:.2f} at end) ==",
            "  " + ", ".join(f"{k} {v}" for k, v in figures["server"].items() if k != "version"),
            f"writes, sequential on one thread ({writes['add_entry']['count']} of each)",
            f"  {'':<24}{'per s':>10}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}",
        ]
        for label, key in (
            ("add_entry", "add_entry"),
            ("same SQL, no ORM", "plain_transaction"),
            ("bare INSERT", "bare_insert"),
        ):
            row = writes[key]
            lines.append(
                f"  {label:<24}{row['per_second']:>10.0f}{row['p50_ms']:>10.3f}"
                f"{row['p95_ms']:>10.3f}{row['mean_ms']:>10.3f}"
            )
        lines.append(
            f"  add_entry / bare INSERT: {writes['add_entry_over_bare_insert_p50']:.2f}x (p50), "
            f"{writes['add_entry_over_bare_insert_mean']:.2f}x (mean); "
            f"target <= {writes['target']:.0f}x: {verdict(writes['met'])}; "
            f"{writes['queries_per_add_entry']} queries per add_entry"
        )
        lines.append(
            "  the same statements as plain SQL / bare INSERT: "
            f"{writes['plain_transaction_over_bare_insert_p50']:.2f}x (p50)"
        )
        sizes = report["sizes"]
        header = "".join(f"{f'{size // 1000}k p50/p95':>18}" for size in sizes)
        reps = next(iter(figures["reads"].values()))["sizes"][str(sizes[0])]["count"]
        lines += [
            f"reads, limit={PATH_LIMIT}, ms ({reps} repetitions)",
            f"  {'':<24}{header}{f'{sizes[-1] // 1000}k/1k':>8}  target",
        ]
        for name, read in figures["reads"].items():
            cells = "".join(
                f"{read['sizes'][str(s)]['p50_ms']:>10.3f} /{read['sizes'][str(s)]['p95_ms']:>6.2f}"
                for s in sizes
            )
            lines.append(
                f"  {name:<24}{cells}{read['largest_over_smallest_p50']:>7.2f}x  "
                f"<= {read['target']:.0f}x {verdict(read['met'])}, "
                f"{read['queries'][str(sizes[-1])]} queries"
            )
    cpus = report["machine"]["cpus"] or 1
    load = report["load_average_1min"]
    # The benchmark itself keeps up to two processes busy (Python and the PostgreSQL
    # backend), which the load at the end includes.
    if load["before"] > BUSY_LOAD_PER_CPU * cpus or load["after"] > BUSY_LOAD_PER_CPU * cpus + 2:
        lines += [
            "",
            f"warning: load average {load['before']:.2f} before and {load['after']:.2f} after the "
            f"run on {cpus} CPUs: other processes competed for the CPUs (a median can then jump "
            "between a fast and a slow mode, and on PostgreSQL each wait for the server can take "
            "a scheduler tick). Rerun on a quiet machine before trusting these figures.",
        ]
    lines += ["", f"all targets met: {report['all_targets_met']}"]
    return "\n".join(lines)


def code_version() -> dict[str, Any]:
    """The commit measured, and whether the app had changes not yet committed."""

    def git(*arguments: str) -> str:
        done = subprocess.run(
            ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    return {
        "commit": git("rev-parse", "--short", "HEAD") or None,
        "app_changed_since_commit": bool(git("status", "--porcelain", "--", "cogitator_memory")),
    }


def run_parent(args: argparse.Namespace) -> None:
    import django

    plan = Plan(args.quick)
    chosen = DATABASES if args.db == "both" else (args.db,)
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    results = {database: run_database(database, args) for database in chosen}
    met = [
        flag
        for figures in results.values()
        for flag in [
            figures["writes"]["met"],
            *(read["met"] for read in figures["reads"].values()),
        ]
    ]
    report = {
        "benchmark": "threads",
        "mode": "quick" if args.quick else "full",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([".venv/bin/python", "bench/threads.py", *sys.argv[1:]]),
        "code": code_version(),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "django": django.get_version(),
        },
        "sizes": plan.sizes,
        "path_limit": PATH_LIMIT,
        "targets": {
            "add_entry_over_bare_insert_p50_at_most": WRITE_TARGET,
            "reads_largest_over_1k_p50_at_most": READ_TARGET,
        },
        "databases": results,
        "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
        "all_targets_met": all(met),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(format_table(report))
    print(json.dumps(report))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="threads of 1k and 10k, fewer repetitions"
    )
    parser.add_argument("--db", choices=[*DATABASES, "both"], default="both")
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of 500 add_entry to stderr"
    )
    # Internal: the parent runs one worker process per database.
    parser.add_argument("--worker", choices=DATABASES, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.worker:
        run_worker(args.worker, Plan(args.quick), args.profile)
    else:
        run_parent(args)


if __name__ == "__main__":
    main()
