"""Load benchmark: the memory API under clients at once, served by gunicorn with a real
Celery worker, on PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/load.py [--clients 8] [--requests 500] [--web-workers 3]
                                   [--worker-processes 2] [--db postgres|sqlite] [--seed 0]

A fresh database on the embedded PostgreSQL 18 (``bench/.data/pg``; ``--db sqlite``: a
SQLite file) is migrated; gunicorn serves ``project.wsgi`` with 3 sync workers and a Celery
worker runs 2 prefork processes, both with DEBUG off, on a queue of the run's own on Redis
database 13 of 127.0.0.1:6379 (its keys deleted afterwards), with the message index on: a
deterministic embedding by hash (``tests/embeddings/fakes.py``: no model, so the figures
are the app's) in the pgvector store. The throttle rate is raised out of the way.

Then the load driver of the load test (``tests/load/driver.py``) runs: 8 clients, each a
thread with a connection of its own and two principals (a user's token and a service's API
key, with grants of their own agents and of one shared agent whose threads every client
writes at once), make 500 requests each: entry writes, context builds, recalls, searches,
reads of entries and of the active branch, thread lists, thread creation, and probes of
other principals' threads that must be refused. After the last answer it waits for the
worker to embed every entry, then checks the database (``tests/load/integrity.py``):
every acknowledged thread and entry stored exactly once, seqs gap-free, each thread one
chain ending at its active leaf, nothing refused stored, one vector per entry of its
thread's scope; and that no answer held another principal's text.

Prints requests a second and a table by route (requests, p50, p95, errors), then one JSON
object as the last line: ``requests_per_s``, ``p95_ms`` by route, ``errors``,
``lost_or_doubled``, ``errors_met`` (no error) and ``integrity_met`` (nothing lost,
doubled, out of order, leaked or left without its vector). Progress goes to stderr; the
servers' logs to ``bench/.data/load-gunicorn.log`` and ``load-worker.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any

from benchdb import ROOT, database_opener, setup_django
from load_servers import Server, celery_worker, gunicorn, remove_run_keys

BROKER_URL = "redis://127.0.0.1:6379/13"
EMBEDDINGS = {
    "COGITATOR_MEMORY_EMBEDDINGS_PROVIDER": "tests.embeddings.fakes.HashEmbeddings",
    "COGITATOR_MEMORY_EMBEDDINGS_MODEL": "hash-1",
    "COGITATOR_MEMORY_EMBEDDINGS_DIMENSIONS": "16",
    "COGITATOR_MEMORY_EMBEDDINGS_STORE": "auto",
}
VECTOR_WAIT_SECONDS = 300
SHOWN = 10


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=500, help="requests per client")
    parser.add_argument("--web-workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--worker-processes", type=int, default=2, help="Celery processes")
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def commit() -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or None


def server_settings(queue: str) -> dict[str, str]:
    """The environment of gunicorn and the worker (and of this process, which migrates
    with it, so the pgvector index of the embedding's size is built)."""
    return {
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "benchmark-only-not-a-secret",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CELERY_BROKER_URL": BROKER_URL,
        "BENCH_LOAD_QUEUE": queue,
        "MEMORY_API_RATE": "1000000/minute",
        # Served over plain HTTP on loopback, as behind a proxy that ends TLS: no redirect.
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "COGITATOR_MEMORY_LOG_LEVEL": "WARNING",
        **EMBEDDINGS,
    }


def cpu_seconds(web: Server, worker: Server) -> dict[str, float | None]:
    """CPU time spent so far by gunicorn's processes, the Celery worker's and this one
    (the clients)."""
    mine = os.times()
    return {
        "web": web.cpu_seconds(),
        "worker": worker.cpu_seconds(),
        "clients": mine.user + mine.system,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    queue = f"bench-load-{uuid.uuid4().hex[:12]}"
    settings = server_settings(queue)
    os.environ.update(settings)
    opener = database_opener(args.db, prefix="bench-load", pg_name="bench_load")
    load_before = os.getloadavg()[0]
    try:
        with opener() as url:
            settings["DATABASE_URL"] = url
            log(f"{args.db}: migrating")
            setup_django(url)
            from tests.load.driver import run_load
            from tests.load.integrity import check_integrity, wait_for_vectors
            from tests.load.report import route_figures
            from tests.load.tenancy import make_tenancy

            tenancy = make_tenancy(args.clients, run="bench")
            with (
                celery_worker(settings, args.worker_processes, queue) as worker,
                gunicorn(settings, args.web_workers) as web,
            ):
                log(f"{args.clients} clients x {args.requests} requests against {web.base_url}")
                before = cpu_seconds(web, worker)
                run = run_load(
                    f"{web.base_url}/api/memory/", tenancy, args.requests, seed=args.seed
                )
                log(f"{run.requests} requests in {run.seconds:.1f} s; waiting for the vectors")
                waited = wait_for_vectors(run, VECTOR_WAIT_SECONDS)
                cpu = {
                    name: None if spent is None or before[name] is None else spent - before[name]
                    for name, spent in cpu_seconds(web, worker).items()
                }
                integrity = check_integrity(run, vectors=True)
    finally:
        removed = remove_run_keys(BROKER_URL, queue)
        log(f"removed {removed} Redis keys of the run")
    figures = route_figures(run)
    problems = [
        *integrity.problems(),
        *(f"leak: {leak}" for leak in run.log.leaks),
        *(f"stale read: {stale}" for stale in run.log.stale_reads),
    ]
    if waited is None:
        problems.append(f"entries still without a vector {VECTOR_WAIT_SECONDS} s after the load")
    return {
        "benchmark": "load",
        "database": args.db,
        "commit": commit(),
        "clients": args.clients,
        "requests_per_client": args.requests,
        "web_workers": args.web_workers,
        "worker_processes": args.worker_processes,
        "requests": run.requests,
        "seconds": round(run.seconds, 2),
        "requests_per_s": round(run.requests_per_second, 1),
        "p50_ms": {row.route: row.p50_ms for row in figures},
        "p95_ms": {row.route: row.p95_ms for row in figures},
        "requests_by_route": {row.route: row.requests for row in figures},
        "errors_by_route": {row.route: row.errors for row in figures},
        "errors": len(run.log.failures),
        "errors_shown": [str(failure) for failure in run.log.failures[:SHOWN]],
        "threads": integrity.threads,
        "entries": integrity.entries,
        "vectors": integrity.vectors,
        "vectors_complete_seconds_after_load": None if waited is None else round(waited, 2),
        "cpu_seconds": {
            name: None if spent is None else round(spent, 1) for name, spent in cpu.items()
        },
        "web_cpu_ms_per_request": (
            None if cpu["web"] is None else round(cpu["web"] * 1000 / run.requests, 1)
        ),
        "lost_or_doubled": integrity.lost_or_doubled,
        "leaks": len(run.log.leaks),
        "stale_reads": len(run.log.stale_reads),
        "problems": len(problems),
        "problems_shown": problems[:SHOWN],
        "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
        "errors_met": not run.log.failures,
        "integrity_met": not problems,
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"\n== load on {result['database']}: {result['clients']} clients x "
        f"{result['requests_per_client']} requests, gunicorn {result['web_workers']} workers, "
        f"Celery {result['worker_processes']} processes =="
    )
    print(f"{'route':<16} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6}")
    for route, requests in result["requests_by_route"].items():
        print(
            f"{route:<16} {requests:>8} {result['p50_ms'][route]:>8.1f} "
            f"{result['p95_ms'][route]:>8.1f} {result['errors_by_route'][route]:>6}"
        )
    print(
        f"{result['requests']} requests in {result['seconds']} s: "
        f"{result['requests_per_s']} requests/s"
    )
    print(
        f"threads {result['threads']}, entries {result['entries']}, vectors {result['vectors']} "
        f"(all stored {result['vectors_complete_seconds_after_load']} s after the last answer)"
    )
    print(
        f"errors {result['errors']} (met: {result['errors_met']}); lost or doubled "
        f"{result['lost_or_doubled']}, problems {result['problems']} "
        f"(integrity met: {result['integrity_met']})"
    )
    for shown in [*result["errors_shown"], *result["problems_shown"]]:
        print(f"  {shown}")
    cpu = result["cpu_seconds"]
    print(
        f"CPU seconds during the load: gunicorn {cpu['web']}, Celery worker {cpu['worker']}, "
        f"clients {cpu['clients']}; gunicorn {result['web_cpu_ms_per_request']} ms a request"
    )
    load = result["load_average_1min"]
    print(f"load average (1 min): {load['before']:.2f} before, {load['after']:.2f} after")


def main() -> None:
    args = arguments()
    started = time.perf_counter()
    result = measure(args)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    print_table(result)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
