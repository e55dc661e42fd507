"""Benchmark of memory-tool commands on large files: the cost of a command by file size.

Run by hand from the repository root::

    .venv/bin/python bench/files_commands.py [--quick] [--db sqlite|postgres|both]
    .venv/bin/python bench/files_commands.py --compute-only --source DIR --sizes 100,600

Files of 100 KB, 600 KB and 2 MB of short lines (``- note 123 about the trip, the hotel
and the dinner``), p50 / p95 in ms of:

- ``view``: the whole file with line numbers;
- ``str_replace unique``: an edit of one line near the end (its old_str stands once);
- ``str_replace 'a'``: a one-character old_str that stands on every line, refused with
  the lines of its occurrences (the case that took about 44 s at 600 KB, in the write
  transaction, before the commands were made linear).

Two ways: ``compute``, the command alone (``commands.outcome_of`` on a file held in
memory, no database: the work a command does), and ``run``, through ``MemoryFiles.run`` on
the database as the memory tool calls it (reading the file, computing, writing a version).
A file over 1 MiB cannot be written (``files/limits.py``): at 2 MB, ``run`` measures how
fast a create of it is refused. ``--compute-only --source DIR`` measures the commands of
another checkout (``git archive <commit> cogitator_memory | tar -x -C DIR``), to compare
with the code before a change; ``--sizes`` (in KB) and ``--repeat`` keep such a run short.

Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchdb import ROOT, database_opener, percentiles, run_child

SIZES_KB = (100, 600, 2048)
SCOPE_AGENT = "bench-commands"
PATH = "/memories/big.md"
MEASURES = ("view", "str_replace unique", "str_replace 'a'")


def file_text(size_kb: int) -> str:
    """Short lines up to ``size_kb`` KB; the last line is ``the last line``."""
    lines: list[str] = []
    total = 0
    number = 0
    while total < size_kb * 1024 - 64:
        line = f"- note {number} about the trip, the hotel and the dinner\n"
        lines.append(line)
        total += len(line)
        number += 1
    return "".join(lines) + "the last line\n"


def commands_of(size_kb: int) -> dict[str, Callable[[int], dict[str, Any]]]:
    """Each measure's command; the unique edit alternates between two texts so that each
    run through the service writes a version."""
    return {
        "view": lambda n: {"command": "view", "path": PATH},
        "str_replace unique": lambda n: {
            "command": "str_replace",
            "path": PATH,
            "old_str": ("the last line", "the final line")[n % 2],
            "new_str": ("the final line", "the last line")[n % 2],
        },
        "str_replace 'a'": lambda n: {
            "command": "str_replace",
            "path": PATH,
            "old_str": "a",
            "new_str": "b",
        },
    }


def setup(source: Path, database_url: str) -> None:
    """Django with the project's settings on ``database_url``, ``cogitator_memory`` read
    from ``source``."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(source))
    # Celery's Django fixup puts the working directory first on sys.path.
    os.chdir(source)
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only-not-a-secret")
    os.environ.setdefault("COGITATOR_MEMORY_LOG_LEVEL", "WARNING")
    import django

    django.setup()


def timed(call: Callable[[], Any]) -> float:
    """Milliseconds ``call`` took, to its answer or to its refusal (what some measures
    time)."""
    from cogitator_memory.exceptions import MemoryFileError

    start = time.perf_counter()
    with contextlib.suppress(MemoryFileError):
        call()
    return (time.perf_counter() - start) * 1000


class HeldFile:
    """A reader that sees one file, held in memory: the commands without a database."""

    def __init__(self, text: str) -> None:
        from cogitator_memory.files.store import FileState
        from cogitator_memory.grants import MemoryScope

        self.text = text
        self.file = FileState(
            PATH, MemoryScope(SCOPE_AGENT), "fv_bench", 1, "0" * 64, len(text), False
        )

    def state(self, path: str) -> Any:
        return self.file if path == PATH else None

    def states(self, *, at: Any = (), under: Any = ()) -> dict[str, Any]:
        return {path: self.file for path in at if path == PATH}

    def content(self, _state: Any) -> str:
        return self.text

    def contents(self, _states: Any) -> dict[str, str]:
        return {PATH: self.text}


def measure_compute(sizes: list[int], repeat: int) -> dict[str, Any]:
    """The commands alone, on a file held in memory."""
    from cogitator_memory.files.commands import outcome_of

    results: dict[str, Any] = {}
    for size_kb in sizes:
        reader = HeldFile(file_text(size_kb))
        for measure, command in commands_of(size_kb).items():
            tool_input = command(0)
            samples = [
                timed(lambda: outcome_of(reader, tool_input))  # type: ignore[arg-type]  # noqa: B023
                for _ in range(repeat)
            ]
            results[f"{measure} @ {size_kb}"] = percentiles(samples)
            print(f"compute {measure} @ {size_kb} KB", file=sys.stderr)
    return results


def measure_run(database: str, quick: bool) -> dict[str, Any]:
    """Through ``MemoryFiles.run`` on ``database``, and the commands alone."""
    repeat = 5 if quick else 30
    opener = database_opener(database, prefix="files-commands", pg_name="bench_files_commands")
    with opener() as url:
        setup(ROOT, url)
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        from cogitator_memory.files.access import FileAccess
        from cogitator_memory.files.services import MemoryFiles
        from cogitator_memory.grants import MemoryScope

        files = MemoryFiles()
        results: dict[str, Any] = {"compute": measure_compute(list(SIZES_KB), repeat), "run": {}}
        for size_kb in SIZES_KB:
            access = FileAccess(scope=MemoryScope(SCOPE_AGENT, user_id=f"u{size_kb}"))
            text = file_text(size_kb)
            create = {"command": "create", "path": PATH, "file_text": text}
            created = timed(lambda: files.run(access, create))  # noqa: B023
            if files.read(access, PATH) is None:
                results["run"][f"create (refused) @ {size_kb}"] = [round(created, 3)] * 2
                continue
            for measure, command in commands_of(size_kb).items():
                samples = [
                    timed(lambda n=n: files.run(access, command(n)))  # noqa: B023
                    for n in range(repeat)
                ]
                results["run"][f"{measure} @ {size_kb}"] = percentiles(samples)
                print(f"{database} {measure} @ {size_kb} KB", file=sys.stderr)
        return results


def table(by_database: dict[str, dict[str, Any]]) -> str:
    databases = list(by_database)
    compute = next(iter(by_database.values()))["compute"]
    header = ["call", "size", "compute p50 / p95", *(f"{db} run p50 / p95" for db in databases)]
    rows = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for size_kb in SIZES_KB:
        for measure in MEASURES:
            key = f"{measure} @ {size_kb}"
            cells = [f"`{measure}`", f"{size_kb} KB", "{:.2f} / {:.2f}".format(*compute[key])]
            for db in databases:
                run = by_database[db]["run"]
                refused = run.get(f"create (refused) @ {size_kb}")
                if key in run:
                    cells.append("{:.2f} / {:.2f}".format(*run[key]))
                elif refused:
                    cells.append(f"file refused (over 1 MiB) in {refused[0]:.2f}")
                else:
                    cells.append("-")
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--worker", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    parser.add_argument("--compute-only", action="store_true")
    parser.add_argument("--source", type=Path, default=ROOT)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES_KB)))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.compute_only:
        setup(args.source.resolve(), "sqlite:///:memory:")
        sizes = [int(size) for size in args.sizes.split(",")]
        results = measure_compute(sizes, args.repeat)
        for key, (p50, p95) in results.items():
            print(f"| {key} KB | {p50:.2f} / {p95:.2f} |")
        print(json.dumps({"source": str(args.source), "compute": results}))
        return
    if args.worker:
        print(json.dumps(measure_run(args.worker, args.quick)))
        return
    databases = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    quick = ["--quick"] if args.quick else []
    by_database = {db: run_child(__file__, db, *quick) for db in databases}
    print(table(by_database))
    print(json.dumps(by_database))


if __name__ == "__main__":
    main()
