"""Benchmark of vector search: pgvector's HNSW index against an exact scan, and the
exact in-process store on SQLite.

Run by hand from the repository root::

    .venv/bin/python bench/vectors.py [--quick] [--db sqlite|postgres|both]

Each database is measured in a subprocess of its own (Django configures one database per
process): PostgreSQL in a fresh database of an embedded server kept in
``bench/.data/pg-vectors``, SQLite in a temporary file under ``bench/.data/``. The parent
prints a table, and one JSON object of every figure as the last line of stdout. Progress
goes to stderr.

Measured, on clustered unit vectors of 384 dimensions (the size of all-MiniLM-L6-v2):

- PostgreSQL, 100k vectors (``--quick``: 20k), through ``PgVectorEmbeddingStore``:
  ``search(limit=10)`` through the HNSW index, and the same call with ``SET LOCAL
  enable_indexscan = off`` in its transaction, which runs the same SQL as an exact scan.
  p50/p95 of both, and recall@10 of HNSW against the exact results. Targets: recall@10
  at least 0.95; HNSW p95 at most a tenth of the exact scan's p50. The same searches
  with ``min_ef_search=100`` show what more candidates buy.
- SQLite, 10k and 100k vectors, through ``ExactEmbeddingStore``: p50/p95 of
  ``search(limit=10)``, and its agreement with a brute-force numpy ranking.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import struct
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from benchdb import database_opener, run_child, setup_django

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / ".data"
PG_DIR = DATA_DIR / "pg-vectors"
PG_DATABASE = "bench_vectors"

DATABASES = ("postgres", "sqlite")
DIMENSIONS = 384
K = 10
CLUSTERS = 1000
# Noise of a vector around its cluster's centre, as the norm of the noise vector: 1.0
# puts members at cosine ~0.7 from the centre and ~0.5 from each other, unrelated
# vectors near 0, roughly like sentence embeddings of related and unrelated texts.
CLUSTER_NOISE = 1.0
SEED = 20261129
RECALL_TARGET = 0.95
SPEEDUP_TARGET = 10.0
# A second floor of hnsw.ef_search measured beside the store's default of 40.
WIDER_EF_SEARCH = 100
BUSY_LOAD_PER_CPU = 0.5


class Plan:
    """How much work a run does."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        # Building the HNSW index of 100k vectors alone takes most of a minute on 2 cores.
        self.pg_rows = 20_000 if quick else 100_000
        self.pg_queries = 30 if quick else 200
        self.sqlite_sizes = [10_000, 100_000]
        self.sqlite_queries = {10_000: 10, 100_000: 3} if quick else {10_000: 100, 100_000: 20}
        self.warmup = 3 if quick else 10


# --- figures ---------------------------------------------------------------------------


def summarize(samples_ns: list[int]) -> dict[str, float]:
    samples_ms = [sample / 1e6 for sample in samples_ns]
    p95 = statistics.quantiles(samples_ms, n=100, method="inclusive")[94]
    return {
        "count": len(samples_ms),
        "p50_ms": round(statistics.median(samples_ms), 3),
        "p95_ms": round(p95, 3),
        "mean_ms": round(statistics.fmean(samples_ms), 3),
    }


def timed(call: Callable[[], Any]) -> tuple[int, Any]:
    started = time.perf_counter_ns()
    result = call()
    return time.perf_counter_ns() - started, result


def log(database: str, message: str) -> None:
    print(f"[{database}] {message}", file=sys.stderr, flush=True)


# --- data ------------------------------------------------------------------------------


def clustered_vectors(count: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    """Unit vectors around random cluster centres, float32."""
    chosen = centres[rng.integers(0, len(centres), size=count)]
    noise = rng.normal(scale=CLUSTER_NOISE / np.sqrt(DIMENSIONS), size=(count, DIMENSIONS))
    vectors = chosen + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def data_set(rows: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(CLUSTERS, DIMENSIONS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    # The queries are new points of the same clusters, not rows of the table.
    return clustered_vectors(rows, rng, centres), clustered_vectors(queries, rng, centres)


def true_neighbours(vectors: np.ndarray, query: np.ndarray) -> list[int]:
    scores = vectors @ query
    best = np.argpartition(-scores, K)[:K]
    return [int(i) for i in best[np.argsort(-scores[best])]]


def row_number(source_id: str) -> int:
    return int(source_id[1:])


# --- database set-up (worker) ----------------------------------------------------------


def server_description() -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT current_setting('server_version'), "
                "(SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
                "current_setting('shared_buffers'), current_setting('work_mem'), "
                "current_setting('max_parallel_workers_per_gather')"
            )
            version, pgvector, shared_buffers, work_mem, workers = cursor.fetchone()
            return {
                "version": f"PostgreSQL {version}, pgvector {pgvector}",
                "shared_buffers": shared_buffers,
                "work_mem": work_mem,
                "max_parallel_workers_per_gather": workers,
            }
        import sqlite3

        return {"version": f"SQLite {sqlite3.sqlite_version}"}


# --- PostgreSQL --------------------------------------------------------------------------


def pgvector_binary(vector: np.ndarray) -> bytes:
    """pgvector's binary form (what vector_recv reads): dimensions and a zero as
    big-endian uint16, then the values as big-endian float32."""
    return struct.pack(">HH", vector.size, 0) + vector.astype(">f4").tobytes()


def load_postgres(vectors: np.ndarray) -> float:
    """COPY the rows in, with their native vectors, as the store would have written them;
    returns the seconds taken. Binary COPY: the vectors' text form would take longer to
    print in Python than the server takes to store them."""
    from django.db import connection
    from django.utils import timezone
    from psycopg.types.json import Jsonb

    from cogitator_memory.embeddings.models import Embedding
    from cogitator_memory.embeddings.stores.base import vector_bytes

    table = connection.ops.quote_name(Embedding._meta.db_table)
    now = timezone.now()
    started = time.monotonic()
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            f"COPY {table} (id, source_type, source_id, index_name, content, dimensions, "
            "vector, metadata, created_at, embedding) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            # The native vector goes as raw bytes; the server reads them with the
            # column's own binary input.
            copy.set_types(
                [
                    "text",
                    "text",
                    "text",
                    "text",
                    "text",
                    "int4",
                    "bytea",
                    "jsonb",
                    "timestamptz",
                    "bytea",
                ]
            )
            for number, vector in enumerate(vectors):
                copy.write_row(
                    (
                        f"emb_{number:06d}",
                        "bench",
                        f"s{number}",
                        "",
                        "",
                        DIMENSIONS,
                        vector_bytes(vector),
                        Jsonb({}),
                        now,
                        pgvector_binary(vector),
                    )
                )
        cursor.execute(f"ANALYZE {table}")
    return time.monotonic() - started


def table_sizes() -> dict[str, str]:
    from django.db import connection

    from cogitator_memory.embeddings.models import Embedding
    from cogitator_memory.embeddings.stores.pgvector_indexes import hnsw_index_name

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_total_relation_size(%s)), "
            "pg_size_pretty(pg_relation_size(%s))",
            [Embedding._meta.db_table, hnsw_index_name(DIMENSIONS)],
        )
        total, index = cursor.fetchone()
    return {"table_with_indexes": total, "hnsw_index": index}


def search_plan(store: Any, query: list[float], *, exact: bool) -> str:
    """EXPLAIN of the statement the store sends, as it runs in the benchmark."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    with transaction.atomic():
        with connection.cursor() as cursor:
            if exact:
                cursor.execute("SET LOCAL enable_indexscan = off")
        with CaptureQueriesContext(connection) as captured:
            store.search(query, limit=K)
        statement = next(q["sql"] for q in captured.captured_queries if " <=> " in q["sql"])
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN {statement}")
            lines = [row[0] for row in cursor.fetchall()]
    # The vector literal makes the plan unreadable; the node names are what counts.
    return "\n".join(line.split(" <=> ")[0] for line in lines)


def measure_postgres(plan: Plan) -> dict[str, Any]:
    from django.db import connection, transaction

    from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore

    vectors, queries = data_set(plan.pg_rows, plan.pg_queries + plan.warmup)
    log("postgres", f"loading {plan.pg_rows:,} vectors of {DIMENSIONS} dimensions")
    load_seconds = load_postgres(vectors)
    # Configured as in production, so each HNSW search also checks that the stored sizes
    # match. The exact measure uses a store without a configured size: with index scans
    # off, that check would read the whole table and count against the exact scan.
    store = PgVectorEmbeddingStore(dimensions=DIMENSIONS)
    exact_store = PgVectorEmbeddingStore()
    # Built as manage.py vector_indexes --create builds it: CREATE INDEX CONCURRENTLY,
    # outside a transaction, through the store's ensure_index().
    log("postgres", "building the HNSW index")
    with connection.cursor() as cursor:
        # Enough memory for the graph of 100k vectors; with less the build spills and
        # takes minutes.
        cursor.execute("SET maintenance_work_mem = '1GB'")
    build_seconds, built = timed(lambda: store.ensure_index(DIMENSIONS, concurrently=True))
    assert built and store.vector_status().missing_indexes == (), store.vector_status()
    with connection.cursor() as cursor:
        cursor.execute("RESET maintenance_work_mem")

    # The same searches keeping at least WIDER_EF_SEARCH candidates instead of 40.
    wider_store = PgVectorEmbeddingStore(dimensions=DIMENSIONS, min_ef_search=WIDER_EF_SEARCH)

    def hnsw(query: list[float], chosen: Any = store) -> list[str]:
        return [hit.embedding.source_id for hit in chosen.search(query, limit=K)]

    def exact(query: list[float]) -> list[str]:
        # The same SQL; without index scans the planner reads every row of the size.
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_indexscan = off")
            return [hit.embedding.source_id for hit in exact_store.search(query, limit=K)]

    plans = {
        "hnsw": search_plan(store, queries[0].tolist(), exact=False),
        "exact": search_plan(exact_store, queries[0].tolist(), exact=True),
    }
    assert "Index Scan using cm_emb_hnsw_384" in plans["hnsw"], plans["hnsw"]
    assert "hnsw" not in plans["exact"], plans["exact"]

    for query in queries[: plan.warmup]:
        hnsw(query.tolist())
        hnsw(query.tolist(), wider_store)
        exact(query.tolist())
    samples: dict[str, list[int]] = {"hnsw": [], "hnsw_wider": [], "exact": []}
    recalls: dict[str, list[float]] = {"hnsw": [], "hnsw_wider": []}
    exact_agrees_with_numpy: list[float] = []
    log("postgres", f"searching {plan.pg_queries} queries, HNSW and exact in turn")
    for number, query in enumerate(queries[plan.warmup :]):
        # The second search of a query finds the pages the first one read in the cache:
        # the two floors take turns going first.
        order = [("hnsw", store), ("hnsw_wider", wider_store)]
        found: dict[str, list[str]] = {}
        for name, chosen in order if number % 2 == 0 else reversed(order):
            spent, found[name] = timed(partial(hnsw, query.tolist(), chosen))
            samples[name].append(spent)
        spent, truth = timed(partial(exact, query.tolist()))
        samples["exact"].append(spent)
        for name in recalls:
            recalls[name].append(len(set(found[name]) & set(truth)) / K)
        expected = {f"s{i}" for i in true_neighbours(vectors, query)}
        exact_agrees_with_numpy.append(len(set(truth) & expected) / K)

    figures = {name: summarize(values) for name, values in samples.items()}
    for name, values in recalls.items():
        figures[name]["recall_at_10"] = round(statistics.fmean(values), 4)
        figures[name]["recall_at_10_min"] = round(min(values), 2)
        # A query that found none of its neighbours went to the wrong part of the graph.
        figures[name]["queries_with_recall_below_half"] = sum(value < 0.5 for value in values)
    recall = figures["hnsw"]["recall_at_10"]
    ratio = figures["exact"]["p50_ms"] / figures["hnsw"]["p95_ms"]
    return {
        "rows": plan.pg_rows,
        "dimensions": DIMENSIONS,
        "k": K,
        "load_seconds": round(load_seconds, 1),
        "index_build_seconds": round(build_seconds / 1e9, 1),
        "sizes": table_sizes(),
        "min_ef_search": {"hnsw": store.min_ef_search, "hnsw_wider": WIDER_EF_SEARCH},
        **figures,
        "exact_sql_agrees_with_numpy": round(statistics.fmean(exact_agrees_with_numpy), 4),
        "exact_p50_over_hnsw_p95": round(ratio, 1),
        "plans": plans,
        "targets": {"recall_at_10_at_least": RECALL_TARGET, "speedup_at_least": SPEEDUP_TARGET},
        "recall_met": recall >= RECALL_TARGET,
        "speed_met": ratio >= SPEEDUP_TARGET,
    }


# --- SQLite ------------------------------------------------------------------------------


def load_sqlite(vectors: np.ndarray, start: int) -> float:
    from django.utils import timezone

    from cogitator_memory.embeddings.models import Embedding
    from cogitator_memory.embeddings.stores.base import vector_bytes

    now = timezone.now()
    started = time.monotonic()
    Embedding.objects.bulk_create(
        (
            Embedding(
                id=f"emb_{number:06d}",
                source_type="bench",
                source_id=f"s{number}",
                dimensions=DIMENSIONS,
                vector=vector_bytes(vectors[number]),
                metadata={},
                created_at=now,
            )
            for number in range(start, len(vectors))
        ),
        batch_size=2000,
    )
    return time.monotonic() - started


def measure_sqlite(plan: Plan) -> dict[str, Any]:
    from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore

    largest = plan.sqlite_sizes[-1]
    most_queries = max(plan.sqlite_queries.values())
    vectors, queries = data_set(largest, most_queries + plan.warmup)
    store = ExactEmbeddingStore(dimensions=DIMENSIONS)
    figures: dict[str, Any] = {}
    loaded = 0
    for size in plan.sqlite_sizes:
        log("sqlite", f"loading up to {size:,} vectors")
        load_seconds = load_sqlite(vectors[:size], loaded)
        loaded = size
        for query in queries[: plan.warmup]:
            store.search(query.tolist(), limit=K)
        samples: list[int] = []
        agreement: list[float] = []
        count = plan.sqlite_queries[size]
        log("sqlite", f"searching {count} queries at {size:,}")
        for query in queries[plan.warmup : plan.warmup + count]:
            spent, hits = timed(partial(store.search, query.tolist(), limit=K))
            samples.append(spent)
            expected = {f"s{i}" for i in true_neighbours(vectors[:size], query)}
            agreement.append(len({hit.embedding.source_id for hit in hits} & expected) / K)
        figures[str(size)] = {
            "load_seconds": round(load_seconds, 1),
            "search": summarize(samples),
            "agrees_with_numpy": round(statistics.fmean(agreement), 4),
        }
    return {"dimensions": DIMENSIONS, "k": K, "sizes": figures}


# --- worker and parent -----------------------------------------------------------------


def run_worker(database: str, plan: Plan) -> None:
    opener = database_opener(database, prefix="vectors", pg_name=PG_DATABASE, pg_dir=PG_DIR)
    load_at_start = os.getloadavg()[0]
    with opener() as url:
        started = time.monotonic()
        log(database, "migrating")
        setup_django(url)
        figures: dict[str, Any] = {"database": database, "server": server_description()}
        if database == "postgres":
            figures["search"] = measure_postgres(plan)
        else:
            figures["search"] = measure_sqlite(plan)
        figures["seconds"] = round(time.monotonic() - started, 1)
    figures["load_average_1min"] = {"start": load_at_start, "end": os.getloadavg()[0]}
    print(json.dumps(figures))


def run_database(database: str, args: argparse.Namespace) -> dict[str, Any]:
    return run_child(__file__, database, *(["--quick"] if args.quick else []))


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def format_table(report: dict[str, Any]) -> str:
    lines = [
        f"Vector benchmark, {report['mode']} run, {report['date']}",
        f"{report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
        f"{DIMENSIONS} dimensions, k={K}",
    ]
    databases = report["databases"]

    def judged(met: bool) -> str:
        # The targets are set for 100k rows; a quick run's 20k only shows the trend.
        if report["all_targets_met"] is None:
            return f"{'met' if met else 'not reached'} at 20k (judged on the full run's 100k)"
        return verdict(met)

    if "postgres" in databases:
        figures = databases["postgres"]
        search = figures["search"]
        lines += [
            "",
            f"== {figures['server']['version']} ({figures['seconds']} s, load average "
            f"{figures['load_average_1min']['start']:.2f} at start, "
            f"{figures['load_average_1min']['end']:.2f} at end) ==",
            "  " + ", ".join(f"{k} {v}" for k, v in figures["server"].items() if k != "version"),
            f"  {search['rows']:,} rows: COPY {search['load_seconds']} s, HNSW build "
            f"{search['index_build_seconds']} s; {search['sizes']['table_with_indexes']} with "
            f"indexes, of which HNSW {search['sizes']['hnsw_index']}",
            f"  {'PgVectorEmbeddingStore.search':<34}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}"
            f"{'recall@10':>11}{'min':>6}{'< 0.5':>7}",
        ]
        for label, key in (
            (f"HNSW, ef_search >= {search['min_ef_search']['hnsw']}", "hnsw"),
            (f"HNSW, ef_search >= {search['min_ef_search']['hnsw_wider']}", "hnsw_wider"),
            ("exact (enable_indexscan=off)", "exact"),
        ):
            row = search[key]
            recall = (
                f"{row['recall_at_10']:>11.4f}{row['recall_at_10_min']:>6.1f}"
                f"{row['queries_with_recall_below_half']:>7}"
                if "recall_at_10" in row
                else ""
            )
            lines.append(
                f"  {label:<34}{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}{row['mean_ms']:>10.2f}"
                f"{recall}"
            )
        lines += [
            f"  recall@10 of HNSW (ef_search >= 40) against the exact scan: "
            f"{search['hnsw']['recall_at_10']:.4f}; target >= {RECALL_TARGET}: "
            f"{judged(search['recall_met'])}",
            f"  exact p50 / HNSW p95: {search['exact_p50_over_hnsw_p95']:.1f}x; target >= "
            f"{SPEEDUP_TARGET:.0f}x: {judged(search['speed_met'])}",
            "  exact SQL results against a numpy ranking: "
            f"{search['exact_sql_agrees_with_numpy']:.4f}",
        ]
    if "sqlite" in databases:
        figures = databases["sqlite"]
        lines += [
            "",
            f"== {figures['server']['version']} ({figures['seconds']} s, load average "
            f"{figures['load_average_1min']['start']:.2f} at start, "
            f"{figures['load_average_1min']['end']:.2f} at end) ==",
            f"  {'ExactEmbeddingStore.search':<34}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}"
            f"{'vs numpy':>10}",
        ]
        for size, row in figures["search"]["sizes"].items():
            search = row["search"]
            label = f"{int(size):,} rows ({search['count']} queries)"
            lines.append(
                f"  {label:<34}{search['p50_ms']:>10.2f}{search['p95_ms']:>10.2f}"
                f"{search['mean_ms']:>10.2f}{row['agrees_with_numpy']:>10.4f}"
            )
    busiest = max(
        load for figures in databases.values() for load in figures["load_average_1min"].values()
    )
    if busiest > BUSY_LOAD_PER_CPU * (report["machine"]["cpus"] or 1):
        lines += [
            "",
            f"warning: load average up to {busiest:.2f} on {report['machine']['cpus']} CPUs: "
            "other processes competed for the CPUs; rerun on a quiet machine before trusting "
            "the times.",
        ]
    if report["all_targets_met"] is None:
        lines += ["", "targets not judged: they are set for 100k rows (the full run)"]
    else:
        lines += ["", f"all targets met: {report['all_targets_met']}"]
    return "\n".join(lines)


def run_parent(args: argparse.Namespace) -> None:
    plan = Plan(args.quick)
    chosen = DATABASES if args.db == "both" else (args.db,)
    started = time.monotonic()
    results = {database: run_database(database, args) for database in chosen}
    met = []
    if "postgres" in results:
        search = results["postgres"]["search"]
        met += [search["recall_met"], search["speed_met"]]
    report = {
        "benchmark": "vectors",
        "mode": "quick" if args.quick else "full",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([".venv/bin/python", "bench/vectors.py", *sys.argv[1:]]),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "plan": {
            "postgres_rows": plan.pg_rows,
            "postgres_queries": plan.pg_queries,
            "sqlite_sizes": plan.sqlite_sizes,
            "sqlite_queries": {str(k): v for k, v in plan.sqlite_queries.items()},
            "clusters": CLUSTERS,
            "cluster_noise": CLUSTER_NOISE,
            "seed": SEED,
        },
        "databases": results,
        # The targets are set for 100k rows; a quick run's 20k report them, not judge them.
        "all_targets_met": all(met) if not args.quick else None,
        "seconds": round(time.monotonic() - started, 1),
    }
    print(format_table(report))
    print(json.dumps(report))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries, under a minute")
    parser.add_argument("--db", choices=[*DATABASES, "both"], default="both")
    # Internal: the parent runs one worker process per database.
    parser.add_argument("--worker", choices=DATABASES, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.worker:
        run_worker(args.worker, Plan(args.quick))
    else:
        run_parent(args)


if __name__ == "__main__":
    main()
