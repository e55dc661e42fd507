"""Benchmark of memory files on SQLite and PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/files.py [--quick] [--db sqlite|postgres|both]

Each database is measured in a subprocess of its own (see bench/benchdb.py). Two agents
share the tables: ``bench-small`` with 100 files, ``bench-large`` with 10,000 files, each
file with 10 versions (1,000 and 100,000 versions), each agent's files in one scope (the
agent and one user), ten files a directory (``/memories/d0000/f0.md`` ...). Measured in
each scope, through ``MemoryFiles.run`` as the memory tool calls it, p50/p95 in ms:

- ``view_file``: ``view`` of one file (its head, then its content);
- ``view_directory``: ``view`` of one directory of ten files;
- ``create``: a new file in a new directory (its rows are deleted afterwards, untimed, so
  the scope keeps its size);
- ``str_replace``: an edit of one line of a file (a new version each time).

Target: the 10k-file scope within 2x of the 100-file one (p50), since reads touch heads
only. The versions and heads are written in bulk as the service writes them (sequence 1
to 10, each version naming the one before, the head at the tenth), and a sample is read
back through the service before timing. The statements each call sends are counted with
``CaptureQueriesContext`` in both scopes. Prints a table, then one JSON object as the
last line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from benchdb import BENCH_DIR, database_opener, measure_databases, percentiles, setup_django

SIZES = {"small": 100, "large": 10_000}
VERSIONS_PER_FILE = 10
FILES_PER_DIRECTORY = 10
USER = "bench-user"
GROWTH_TARGET = 2.0
MEASURES = ("view_file", "view_directory", "create", "str_replace")
FILLER = "".join(
    f"- a note of line {n} about the trip, the hotel and the dinner\n" for n in range(6)
)


def agent_of(size: str) -> str:
    return f"bench-{size}"


def file_path(number: int) -> str:
    return f"/memories/d{number // FILES_PER_DIRECTORY:04d}/f{number % FILES_PER_DIRECTORY}.md"


def file_text(path: str, counter: int) -> str:
    return f"# Notes of {path}\n\ncounter: {counter}\n{FILLER}"


VERSION_COLUMNS = (
    "id", "agent_id", "user_id", "scope_key", "path", "sequence", "content", "sha256",
    "previous_id", "author", "created_at",
)  # fmt: skip
HEAD_COLUMNS = (
    "agent_id", "user_id", "scope_key", "path", "version_id", "sequence", "deleted", "size",
    "updated_at",
)  # fmt: skip


def fill(size: str, files: int) -> None:
    """``files`` files of ``VERSIONS_PER_FILE`` versions each in the scope of ``size``,
    written in bulk with the columns ``store.write_versions`` writes (the others keep
    their defaults: no project, thread, place, rename or redaction): ``COPY`` on
    PostgreSQL, ``executemany`` on SQLite, in one transaction."""
    from django.db import connection, transaction
    from django.utils import timezone

    from cogitator_memory.files.models import (
        MemoryFileHead,
        MemoryFileVersion,
        new_file_version_id,
        scope_key,
    )
    from cogitator_memory.files.store import byte_size, sha256_of

    agent = agent_of(size)
    key = scope_key(agent, USER, None, None)
    now = timezone.now()
    versions: list[tuple[Any, ...]] = []
    heads: list[tuple[Any, ...]] = []
    for number in range(files):
        path = file_path(number)
        previous = None
        for sequence in range(1, VERSIONS_PER_FILE + 1):
            text = file_text(path, sequence)
            version_id = new_file_version_id()
            versions.append(
                (version_id, agent, USER, key, path, sequence, text, sha256_of(text),
                 previous, "model", now)
            )  # fmt: skip
            previous = version_id
        heads.append(
            (agent, USER, key, path, previous, VERSIONS_PER_FILE, False, byte_size(text), now)
        )
    tables = (
        (MemoryFileVersion._meta.db_table, VERSION_COLUMNS, versions),
        (MemoryFileHead._meta.db_table, HEAD_COLUMNS, heads),
    )
    with transaction.atomic(), connection.cursor() as cursor:
        for table, columns, rows in tables:
            names = ", ".join(columns)
            if connection.vendor == "postgresql":
                with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                at = columns.index("created_at" if "created_at" in columns else "updated_at")
                stamp = connection.ops.adapt_datetimefield_value(now)
                marks = ", ".join(["%s"] * len(columns))
                cursor.executemany(
                    f"INSERT INTO {table} ({names}) VALUES ({marks})",
                    [(*row[:at], stamp, *row[at + 1 :]) for row in rows],
                )


def check_sample(size: str, files: int) -> None:
    """Read a few files back through the service: content, version and history as the
    service would have written them."""
    from cogitator_memory.files.access import FileAccess
    from cogitator_memory.files.services import MemoryFiles
    from cogitator_memory.grants import MemoryScope

    service = MemoryFiles()
    access = FileAccess(scope=MemoryScope(agent_of(size), user_id=USER))
    for number in (0, files // 2, files - 1):
        path = file_path(number)
        found = service.read(access, path)
        assert found is not None and found.content == file_text(path, VERSIONS_PER_FILE), path
        assert found.version == VERSIONS_PER_FILE
        history = service.history(access, path)
        assert [v.sequence for v in history] == list(range(1, VERSIONS_PER_FILE + 1)), path
    listed = service.run(access, {"command": "view", "path": file_path(0).rsplit("/", 1)[0]})
    assert listed.count(".md") == FILES_PER_DIRECTORY, listed


class Grants:
    """One measured scope: its access and the next file each measure uses."""

    def __init__(self, size: str, files: int) -> None:
        from cogitator_memory.files.access import FileAccess
        from cogitator_memory.grants import MemoryScope

        self.size = size
        self.files = files
        self.access = FileAccess(scope=MemoryScope(agent_of(size), user_id=USER))
        self.turn = 0
        self.counters: dict[str, int] = {}

    def next_file(self, offset: int) -> str:
        # Files spread over the whole scope, a different one each call.
        self.turn += 1
        return file_path((self.turn * 7919 + offset) % self.files)

    def command(self, measure: str) -> dict[str, Any]:
        """The memory tool's input for the next call of ``measure``."""
        if measure == "view_file":
            return {"command": "view", "path": self.next_file(0)}
        if measure == "view_directory":
            return {"command": "view", "path": self.next_file(1).rsplit("/", 1)[0]}
        if measure == "create":
            return {
                "command": "create",
                "path": f"/memories/new-{self.turn}/note.md",
                "file_text": file_text("new", 0),
            }
        path = self.next_file(2)
        counter = self.counters.get(path, VERSIONS_PER_FILE)
        self.counters[path] = counter + 1
        return {
            "command": "str_replace",
            "path": path,
            "old_str": f"counter: {counter}\n",
            "new_str": f"counter: {counter + 1}\n",
        }


def undo_create(command: dict[str, Any]) -> None:
    from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion

    MemoryFileHead.objects.filter(path=command["path"]).delete()
    MemoryFileVersion.objects.filter(path=command["path"]).delete()


def measure(database: str, quick: bool) -> dict[str, Any]:
    opener = database_opener(
        database,
        prefix="bench-files",
        pg_name="bench_files",
        pg_dir=BENCH_DIR / ".data" / "pg-files",
    )
    rounds = 60 if quick else 300
    with opener() as url:
        setup_django(url)
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
        from cogitator_memory.files.services import MemoryFiles

        report: dict[str, Any] = {"database": database, "load_before": os.getloadavg()[0]}
        began = time.perf_counter()
        for size, files in SIZES.items():
            fill(size, files)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        report["fill_seconds"] = round(time.perf_counter() - began, 1)
        print(f"{database}: filled in {report['fill_seconds']} s", file=sys.stderr)
        for size, files in SIZES.items():
            check_sample(size, files)
        report["rows"] = {
            size: {
                "files": MemoryFileHead.objects.filter(agent_id=agent_of(size)).count(),
                "versions": MemoryFileVersion.objects.filter(agent_id=agent_of(size)).count(),
            }
            for size in SIZES
        }

        service = MemoryFiles()
        scopes = [Grants(size, files) for size, files in SIZES.items()]

        def run(grants: Grants, measure_name: str) -> float:
            command = grants.command(measure_name)
            start = time.perf_counter()
            service.run(grants.access, command)
            elapsed = (time.perf_counter() - start) * 1000
            if measure_name == "create":
                undo_create(command)
            return elapsed

        # Statements per call, and a warm-up of every call.
        statements: dict[str, dict[str, int]] = {scope.size: {} for scope in scopes}
        for scope in scopes:
            for name in MEASURES:
                for _ in range(5):
                    run(scope, name)
                with CaptureQueriesContext(connection) as captured:
                    run(scope, name)
                # The undo of a create is captured too: count the command's own.
                statements[scope.size][name] = sum(
                    1 for query in captured.captured_queries if "DELETE" not in query["sql"]
                )
        report["statements"] = statements
        samples: dict[str, dict[str, list[float]]] = {
            scope.size: {name: [] for name in MEASURES} for scope in scopes
        }
        for turn in range(rounds):
            # Sizes and measures take turns, so a slow spell lands on every figure alike.
            order = scopes if turn % 2 == 0 else scopes[::-1]
            for name in MEASURES:
                for scope in order:
                    samples[scope.size][name].append(run(scope, name))
        report["ms"] = {
            size: {name: percentiles(values) for name, values in by_name.items()}
            for size, by_name in samples.items()
        }
        report["load_after"] = os.getloadavg()[0]
        report["rounds"] = rounds
    return report


def main() -> None:
    load_before = os.getloadavg()[0]
    measured = measure_databases(__file__, __doc__.splitlines()[0], measure)
    if measured is None:
        return
    args, results = measured
    met_everywhere = True
    for database, report in results.items():
        small, large = (SIZES[size] for size in ("small", "large"))
        rows = report["rows"]
        print(
            f"\n== {database}: MemoryFiles.run ms p50 / p95, {small} files "
            f"({rows['small']['versions']} versions) vs {large:,} files "
            f"({rows['large']['versions']:,} versions), {report['rounds']} calls each =="
        )
        print(f"  {'call':<16} {'100 files':>17}   {'10k files':>17}   growth  statements")
        report["growth"] = {}
        for name in MEASURES:
            a, b = report["ms"]["small"][name], report["ms"]["large"][name]
            growth = b[0] / a[0]
            met = growth <= GROWTH_TARGET
            met_everywhere &= met
            report["growth"][name] = {"p50_ratio": round(growth, 2), "met": met}
            counts = "{} / {}".format(*(report["statements"][s][name] for s in ("small", "large")))
            print(
                f"  {name:<16} {a[0]:7.2f} / {a[1]:7.2f}   {b[0]:7.2f} / {b[1]:7.2f}   "
                f"{growth:5.2f}x  {counts:>9}  {'met' if met else 'MISSED'}"
            )
        print(
            f"  fill {report['fill_seconds']} s; load average (1 min) "
            f"{report['load_before']:.2f} before, {report['load_after']:.2f} after"
        )
    cpus = os.cpu_count() or 1
    load_after = os.getloadavg()[0]
    print(
        f"\nload average (1 min): {load_before:.2f} before the run, "
        f"{load_after:.2f} after, {cpus} CPUs"
    )
    if load_before > 0.5 * cpus:
        print("warning: the machine was busy before the run; figures are noisy")
    print(
        json.dumps(
            {
                "benchmark": "files",
                "quick": args.quick,
                "target": (
                    f"p50 with {SIZES['large']} files within {GROWTH_TARGET}x of {SIZES['small']}"
                ),
                "met": met_everywhere,
                "load_average": [load_before, load_after],
                "results": results,
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
