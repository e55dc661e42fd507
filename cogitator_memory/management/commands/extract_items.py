"""``manage.py extract_items``: extract the memory items of a thread, of an agent's
threads or of every thread, with a progress bar; each window is read once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from cogitator_memory.exceptions import CogitatorMemoryError
from cogitator_memory.graph.extraction import write_extracted_relations
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.management.commands.reindex_messages import _BarStream
from cogitator_memory.threads.models import Thread


class Command(BaseCommand):
    help = (
        "Extract memory items from the active branch of one thread (--thread), of an "
        "agent's threads (--agent) or of every thread (--all), with the model of "
        "COGITATOR_MEMORY['LLM']. Windows read before are skipped, so a run stopped part way "
        "goes on where it stopped when started again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--thread", metavar="ID", help="The id of one thread.")
        which.add_argument("--agent", metavar="ID", help="An agent: all its threads.")
        which.add_argument("--all", action="store_true", help="Every thread.")
        parser.add_argument(
            "--mode",
            choices=["shadow", "auto"],
            default=None,
            help="shadow: every new item suggested; auto: the rules decide "
            "(default: EXTRACTION['MODE']).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        threads = Thread.objects.order_by("id")
        if options["thread"] is not None:
            threads = threads.filter(pk=options["thread"])
            if not threads.exists():
                raise CommandError(f"Thread not found: {options['thread']!r}")
        elif options["agent"] is not None:
            threads = threads.filter(agent_id=options["agent"])
        ids = list(threads.values_list("pk", flat=True))
        show_bar = options["verbosity"] > 0
        bar: Any = (
            tqdm(total=len(ids), unit="thread", file=_BarStream(self.stdout), ascii=True)
            if show_bar
            else None
        )
        windows = items = calls = 0
        try:
            for thread_id in ids:
                done = extract_thread(
                    thread_id, mode=options["mode"], write_relations=write_extracted_relations
                )
                windows, items, calls = (
                    windows + done.windows,
                    items + done.items,
                    calls + done.calls,
                )
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(windows=windows, items=items)
        except CogitatorMemoryError as error:
            raise CommandError(f"Stopped: {error}. Run again to go on.") from error
        finally:
            if bar is not None:
                bar.close()
        self.stdout.write(
            self.style.SUCCESS(
                f"Extracted {len(ids)} threads: {windows} windows read, {calls} model calls, "
                f"{items} items written."
            )
        )
