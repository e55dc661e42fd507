"""``manage.py export_user USER_ID [--agent ID ...] [--output FILE]``: everything memory
keeps of a user, as the JSON document of the API's export, with a progress bar on stderr.

The command is trusted code: it reads every agent's memory of the user (or the agents
given), with no grants. This is the way for automation to answer access requests; the API
serves people holding the permission ``cogitator_memory.export_user_memory``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from cogitator_memory.exceptions import CogitatorMemoryError
from cogitator_memory.export.services import ExportProgress, export_user
from cogitator_memory.management.commands.reindex_messages import _BarStream


class Command(BaseCommand):
    help = (
        "Export everything memory keeps of a user (threads and entries, memory items with "
        "their evidence, entities, memory file versions, channel sessions, extraction and "
        "compaction runs) as one JSON document, to standard output or --output FILE. A "
        "progress bar is shown on standard error."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user_id", help="The user whose memory to export.")
        parser.add_argument(
            "--agent",
            action="append",
            dest="agents",
            metavar="ID",
            help="Only this agent's memory of the user; repeat for several (default: every "
            "agent holding anything of the user).",
        )
        parser.add_argument(
            "--output",
            "-o",
            type=Path,
            default=None,
            metavar="FILE",
            help="Write the document to FILE (default: standard output). It is written "
            "beside FILE and moved there when complete, so a failed export leaves no "
            "partial file.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user_id: str = options["user_id"]
        output: Path | None = options["output"]
        if output is not None and not output.parent.is_dir():
            raise CommandError(f"Cannot write {output}: {output.parent} is not a directory.")
        if output is not None and output.is_dir():
            raise CommandError(f"Cannot write {output}: it is a directory.")
        show_bar = options["verbosity"] > 0
        bar: Any = None
        last = ExportProgress("", 0, None)

        def report(progress: ExportProgress) -> None:
            nonlocal bar, last
            last = progress
            if bar is None and show_bar:
                bar = tqdm(
                    total=progress.total, unit="record", file=_BarStream(self.stderr), ascii=True
                )
            if bar is not None:
                bar.update(progress.written - bar.n)

        try:
            document = export_user(user_id, agent_ids=options["agents"], progress=report)
            if output is None:
                for piece in document:
                    self.stdout.write(piece, ending="")
            else:
                write_atomically(output, document)
        except CogitatorMemoryError as error:
            raise CommandError(f"Cannot export user {user_id!r}: {error}") from error
        except OSError as error:
            raise CommandError(f"Cannot write {output}: {error.strerror or error}") from error
        finally:
            if bar is not None:
                bar.close()
        where = f" to {output}" if output is not None else ""
        if last.written == 0:
            self.stderr.write(
                self.style.WARNING(
                    f"Nothing is kept of user {user_id!r}"
                    + (f" in {', '.join(options['agents'])}" if options["agents"] else "")
                    + f": the document{where} is empty. Check the user id."
                )
            )
        else:
            self.stderr.write(
                self.style.SUCCESS(f"Exported {last.written} records of user {user_id!r}{where}.")
            )


def write_atomically(path: Path, pieces: Iterator[str]) -> None:
    """Write ``pieces`` to a file beside ``path`` and move it there once complete; the
    partial file is removed when writing fails or is interrupted."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as file:
            for piece in pieces:
                file.write(piece)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
