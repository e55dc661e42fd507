"""``manage.py vector_indexes``: the HNSW index of each vector size the pgvector store
holds, and with ``--create`` the missing ones built concurrently, with their progress."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections

from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.schema import default_connection

if TYPE_CHECKING:
    from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
    from cogitator_memory.embeddings.stores.pgvector_indexes import IndexState

# Seconds between two progress lines of a build (only printed when the progress moved).
PROGRESS_INTERVAL = 5.0


class Command(BaseCommand):
    help = (
        "List the vector sizes the pgvector store holds (and the configured one) with the "
        "state of each size's HNSW index. A size without its index is still searched, by "
        "reading every row of that size. --create builds the missing indexes with CREATE "
        "INDEX CONCURRENTLY, outside a transaction, so writers go on meanwhile."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--create", action="store_true", help="Build the indexes that are missing."
        )
        parser.add_argument(
            "--dimensions",
            type=int,
            action="append",
            metavar="N",
            help="Only this size, stored or not (repeatable): e.g. to build its index "
            "before loading vectors of a new size.",
        )
        parser.add_argument(
            "--check",
            action="store_true",
            help="Exit with status 1 when an index is missing (with --create: still "
            "missing after it).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        store = get_embedding_store()
        # Only the pgvector store keeps indexes of its own to build; the others are not
        # imported from here, so that a project without pgvector-python can run this.
        if not hasattr(store, "index_states"):
            self.stdout.write(no_index_message(type(store).__name__))
            return
        self.handle_pgvector(store, options)  # type: ignore[arg-type]

    def handle_pgvector(self, store: PgVectorEmbeddingStore, options: dict[str, Any]) -> None:
        from cogitator_memory.embeddings.stores.pgvector_native import MAX_VECTOR_DIMENSIONS
        from cogitator_memory.exceptions import VectorSearchUnavailable

        sizes: list[int] | None = options["dimensions"]
        for size in sizes or ():
            if not 1 <= size <= MAX_VECTOR_DIMENSIONS:
                raise CommandError(f"--dimensions must lie within 1..{MAX_VECTOR_DIMENSIONS}.")
        try:
            states = store.index_states(sizes)
        except VectorSearchUnavailable as error:
            raise CommandError(error.message) from error
        self.write_table(states)
        if options["create"]:
            for state in states:
                if state.needs_build or state.status == "building":
                    self.build(store, state)
            states = store.index_states(sizes)
        missing = [state for state in states if state.needs_build]
        if not missing:
            if states:
                self.stdout.write(self.style.SUCCESS("Every size has its index."))
            return
        command = "manage.py vector_indexes --create" + "".join(
            f" --dimensions {state.dimensions}" for state in missing if sizes
        )
        self.stdout.write(
            self.style.WARNING(
                f"Missing: {', '.join(str(state.name) for state in missing)}. Searches of "
                f"{'that size' if len(missing) == 1 else 'those sizes'} read every row. "
                f"Build {'it' if len(missing) == 1 else 'them'} with: {command}"
            )
        )
        if options["check"]:
            raise CommandError("Vector indexes are missing.", returncode=1)

    def write_table(self, states: list[IndexState]) -> None:
        if not states:
            self.stdout.write(
                "No vectors are stored and no size is configured: no index to build. "
                "--dimensions N names a size before its vectors are loaded."
            )
            return
        self.stdout.write(f"{'dimensions':>10}  {'rows':>12}  {'index':<18}  status")
        for state in states:
            self.stdout.write(
                f"{state.dimensions:>10}  {state.rows:>12,}  {state.name or '-':<18}  "
                f"{state.status}"
            )

    def build(self, store: PgVectorEmbeddingStore, state: IndexState) -> None:
        if state.status == "building":
            self.stdout.write(f"{state.name} is being built by another process; waiting for it.")
        else:
            rows = f"{state.rows:,} row{'' if state.rows == 1 else 's'}"
            self.stdout.write(
                f"Building {state.name} ({state.dimensions} dimensions, {rows}) concurrently..."
            )
        started = time.monotonic()
        printer = ProgressPrinter(self.stdout.write, str(state.name), default_connection().alias)
        printer.start()
        try:
            store.ensure_index(state.dimensions)
        except KeyboardInterrupt as error:
            raise CommandError(
                f"Interrupted: {state.name} is left invalid (no search uses it); "
                "--create drops and builds it again."
            ) from error
        except DatabaseError as error:
            raise CommandError(
                f"Building {state.name} failed: {error}".rstrip()
                + "\nA half-built index is left invalid (no search uses it); --create drops "
                "and builds it again."
            ) from error
        finally:
            printer.stop()
        self.stdout.write(f"  {state.name} ready after {time.monotonic() - started:.1f} s.")


class ProgressPrinter(threading.Thread):
    """Prints how far the build of one index has come, from a connection of its own
    (the command's connection is busy building)."""

    def __init__(self, write: Callable[[str], Any], index: str, alias: str) -> None:
        super().__init__(daemon=True)
        self.write = write
        self.index = index
        self.alias = alias
        self.stopped = threading.Event()

    def run(self) -> None:
        from cogitator_memory.embeddings.stores.pgvector_indexes import build_progress

        # Django gives this thread a connection of its own.
        connection = connections[self.alias]
        last = ""
        try:
            while not self.stopped.wait(PROGRESS_INTERVAL):
                for progress in build_progress(connection):
                    line = str(progress)
                    if progress.index in (None, self.index) and line != last:
                        self.write(f"  {line}")
                        last = line
        except DatabaseError:
            # Progress lines are a courtesy; the build reports its own errors.
            pass
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def no_index_message(store_name: str) -> str:
    if store_name == "ExactEmbeddingStore":
        return (
            "The exact store compares every vector in process and needs no index: "
            "nothing to list or build."
        )
    return f"{store_name} keeps its own indexes: nothing to list or build here."
