"""``manage.py reindex_messages``: embed the messages of a thread, an agent or every
thread again, with a progress bar; resumable with ``--checkpoint``. ``--prune`` deletes
the vectors whose source is gone (entries deleted or redacted, memory items purged: every
source of ``embeddings/sources.py``), with or without an embedding provider."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from tqdm import tqdm

from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.pruning import PruneProgress, prune_vectors
from cogitator_memory.exceptions import CogitatorMemoryError, EmbeddingServiceError

CHECKPOINT_VERSION = 1


class _BarStream:
    """Writes tqdm's output through the command's stream as it comes: the stream
    otherwise ends every write with a new line, which breaks a bar redrawn with \\r."""

    def __init__(self, stream: OutputWrapper) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        self.stream.write(text, ending="")

    def flush(self) -> None:
        self.stream.flush()


class Command(BaseCommand):
    help = (
        "Embed again the messages and tool results of one thread (--thread), of one agent's "
        "threads (--agent) or of every thread (--all) into the message index, replacing "
        "their vectors. With --checkpoint FILE the last entry done is recorded after each "
        "batch, and a run stopped part way continues after it when started again with the "
        "same scope and file. --missing embeds only the entries without a vector. "
        "--prune first deletes the vectors whose source is gone "
        "(entries deleted or redacted, memory items purged; it needs no embedding provider, "
        "and may be given alone)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--thread", metavar="ID", help="The id of one thread.")
        scope.add_argument("--agent", metavar="ID", help="The id of an agent: all its threads.")
        scope.add_argument("--all", action="store_true", help="Every thread.")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="Delete the vectors whose source is gone: entries deleted or redacted, memory "
            "items purged (every thread).",
        )
        parser.add_argument(
            "--missing",
            action="store_true",
            help="Embed only the entries that have no vector in the message index (written "
            "while it was off, or whose pending vector is dead); the others keep theirs.",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=None,
            help="Entries per provider request (default: EMBEDDINGS BATCH_SIZE).",
        )
        parser.add_argument(
            "--checkpoint",
            type=Path,
            default=None,
            metavar="FILE",
            help="Record progress in FILE and resume from it; deleted when the run ends.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        scope = {
            "thread_id": options["thread"],
            "agent_id": options["agent"],
            "all_threads": bool(options["all"]),
        }
        batch_size: int | None = options["batch_size"]
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be 1 or more.")
        if options["prune"]:
            self._prune(show_bar=options["verbosity"] > 0)
            if not any(value for value in scope.values()):
                return
        elif not any(value for value in scope.values()):
            raise CommandError("Give one of --thread ID, --agent ID or --all (or --prune).")
        checkpoint: Path | None = options["checkpoint"]
        resume_from = read_checkpoint(checkpoint, scope) if checkpoint else None
        if resume_from is not None:
            self.stdout.write(f"Resuming after entry {resume_from} (from {checkpoint}).")

        bar: Any = None
        show_bar = options["verbosity"] > 0

        def report(progress: message_index.ReindexProgress) -> None:
            nonlocal bar
            if bar is None and show_bar:
                bar = tqdm(
                    total=progress.total, unit="entry", file=_BarStream(self.stdout), ascii=True
                )
            if bar is not None:
                bar.update(progress.done - bar.n)
            if checkpoint is not None and progress.last_entry_id is not None:
                write_checkpoint(checkpoint, scope, progress.last_entry_id)

        try:
            result = message_index.reindex(
                **scope,
                batch_size=batch_size,
                resume_from=resume_from,
                progress=report,
                only_missing=bool(options["missing"]),
            )
        except (EmbeddingServiceError, KeyboardInterrupt) as error:
            raise CommandError(self._stopped_message(error, checkpoint)) from error
        except CogitatorMemoryError as error:
            raise CommandError(str(error)) from error
        finally:
            if bar is not None:
                bar.close()
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
        self.stdout.write(
            self.style.SUCCESS(
                f"Re-indexed {describe_scope(scope)}: {result.embedded} of {result.done} "
                "entries embedded (the others are redacted or have no text)."
            )
        )

    def _prune(self, *, show_bar: bool) -> None:
        bar: Any = (
            tqdm(unit="source", file=_BarStream(self.stdout), ascii=True) if show_bar else None
        )

        def report(progress: PruneProgress) -> None:
            if bar is not None:
                bar.update(progress.checked - bar.n)
                bar.set_postfix(deleted=progress.deleted)

        try:
            result = prune_vectors(progress=report)
        except CogitatorMemoryError as error:
            raise CommandError(str(error)) from error
        finally:
            if bar is not None:
                bar.close()
        by_type = ", ".join(
            f"{source_type}: {count}"
            for source_type, count in sorted(result.deleted_by_type.items())
            if count
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Pruned the vectors: {result.deleted} vectors deleted of "
                f"{result.checked} sources checked" + (f" ({by_type})." if by_type else ".")
            )
        )

    def _stopped_message(self, error: BaseException, checkpoint: Path | None) -> str:
        reason = "Interrupted" if isinstance(error, KeyboardInterrupt) else f"Stopped: {error}"
        if checkpoint is None:
            return f"{reason}. Use --checkpoint FILE to be able to resume a run."
        return f"{reason}. Run the same command again to continue from {checkpoint}."


def describe_scope(scope: dict[str, Any]) -> str:
    if scope["thread_id"] is not None:
        return f"thread {scope['thread_id']}"
    if scope["agent_id"] is not None:
        return f"the threads of agent {scope['agent_id']}"
    return "every thread"


def read_checkpoint(path: Path, scope: dict[str, Any]) -> str | None:
    """The last entry a run of this scope finished with, or None when there is no file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise CommandError(f"Cannot read the checkpoint {path}: {error}") from error
    if (
        not isinstance(data, dict)
        or data.get("version") != CHECKPOINT_VERSION
        or not isinstance(data.get("scope"), dict)
        or set(data["scope"]) != set(scope)
    ):
        raise CommandError(f"{path} is not a checkpoint of reindex_messages.")
    if data["scope"] != scope:
        raise CommandError(
            f"The checkpoint {path} belongs to a run over {describe_scope(data['scope'])}; "
            "use another file, or delete it to start over."
        )
    last = data.get("last_entry_id")
    return last if isinstance(last, str) else None


def write_checkpoint(path: Path, scope: dict[str, Any], last_entry_id: str) -> None:
    # Written beside and renamed over, so an interruption mid-write leaves the old
    # checkpoint whole.
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(
        json.dumps({"version": CHECKPOINT_VERSION, "scope": scope, "last_entry_id": last_entry_id})
    )
    os.replace(partial, path)
