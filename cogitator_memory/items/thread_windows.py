"""Extracting the memory items of a thread, window by window, each window once.

``extract_thread(thread_id)`` reads the thread's active branch from the first entry no
earlier run has read, in windows, and writes each window's items in one transaction with
an ``ExtractionWindow`` row keyed by (thread, first entry, last entry, extractor
version): a repeated or redelivered run, or two runs racing, write a window once (the
second one's insert fails and its items roll back). The items go into the thread's scope
(its agent and user); time words are read in the thread's ``metadata.timeZone``, else
``EXTRACTION["TIME_ZONE"]``.

The window's transaction locks the thread's row first, the lock every cascade takes before
it deletes or redacts the thread's entries, and then reads which of the window's entries
still stand: what went while the model answered is not written (``MemoryExtractor.
write_window``), the window's row names its first and last entries that stand (none
standing, no row), and a thread that went altogether ends the run with ``ThreadNotFound``.

A fork's copies are read once per memory scope (``items/fork_windows.py``): while a
fork's agent and user are its origin's, the copies its origins read count as read, and
the copies a fork reads are recorded as read in its origins, in the window's transaction.
A window an origin's run read while the model answered this one is skipped, as one read
by another run of the same thread is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from cogitator_memory.conf import memory_settings
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.fork_windows import read_by_origins, record_in_origins
from cogitator_memory.items.models import ExtractionWindow
from cogitator_memory.items.window_extractor import (
    EXTRACTOR_VERSION,
    BeforeWrite,
    ExtractionResult,
    MemoryExtractor,
    WriteRelations,
    standing_entries,
)
from cogitator_memory.llm.protocol import Summarize
from cogitator_memory.llm.registry import require_summarizer
from cogitator_memory.threads import selectors
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import Entry, Thread
from cogitator_memory.threads.selectors import visible_thread

logger = logging.getLogger(__name__)

__all__ = ["ThreadExtraction", "extract_thread", "thread_time_zone"]

TIME_ZONE_KEY = "timeZone"


@dataclass(frozen=True)
class ThreadExtraction:
    """What one run did: windows read now, windows an earlier run had read, model calls,
    items written (new states and merges)."""

    windows: int
    skipped: int
    calls: int
    items: int


class ReadElsewhere(Exception):
    """A window was read by another run (of the thread's origin) while the model
    answered."""


def thread_time_zone(thread: Thread) -> str:
    zone = (thread.metadata or {}).get(TIME_ZONE_KEY)
    return zone if isinstance(zone, str) and zone else str(memory_settings.EXTRACTION["TIME_ZONE"])


def _unread(path: list[Entry], thread: Thread) -> tuple[list[Entry], int]:
    """The entries after the last one an earlier run read on this branch, and how many
    windows of this branch were read before. A fork's copies that its origins read in
    its scope count as read, as one window (``fork_windows.read_by_origins``)."""
    position = {entry.pk: index for index, entry in enumerate(path)}
    read = ExtractionWindow.objects.filter(thread_id=thread.pk, version=EXTRACTOR_VERSION)
    ends = [
        position[last] for last in read.values_list("last_entry_id", flat=True) if last in position
    ]
    own = max(ends, default=-1)
    inherited = read_by_origins(thread, path)
    if inherited > own:
        return path[inherited + 1 :], len(ends) + 1
    return path[own + 1 :], len(ends)


def extract_thread(
    thread_id: str,
    *,
    summarize: Summarize | None = None,
    mode: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    before_write: BeforeWrite | None = None,
    write_relations: WriteRelations | None = None,
) -> ThreadExtraction:
    """Extract the items of the thread's active branch that no run has read yet.

    ``summarize``: the configured model when None (``LLMUnavailable`` without one).
    ``progress(done, total)`` is called once the windows are known and after each one.
    ``before_write(items)`` sees each window's items in its transaction, under the
    thread's lock, once what went while the model answered was left out, and returns
    those to write. ``write_relations(scope, relations)`` writes the relations the model
    names, in each window's transaction (none are read without it). Raises
    ``ThreadNotFound`` (also when the thread went while the model answered), ``LLMError``
    and ``ExtractionAnswerError``; the windows before a failure are kept.
    """
    thread = visible_thread(thread_id, None)
    config = memory_settings.EXTRACTION
    extractor = MemoryExtractor(
        summarize=summarize or require_summarizer("Extraction of memory items"),
        window_tokens=int(config["WINDOW_TOKENS"]),
        max_tokens=int(config["MAX_TOKENS"]),
        mode=mode or str(config["MODE"]),
        write_relations=write_relations,
    )
    path = selectors.get_path(thread.pk)
    entries, skipped = _unread(path, thread)
    position = {entry.pk: index for index, entry in enumerate(path)}
    scope = MemoryScope(thread.agent_id, user_id=thread.user_id)
    time_zone = thread_time_zone(thread)
    windows = extractor.windows(entries)
    calls = written = 0
    if progress is not None:
        progress(0, len(windows))
    for done, window in enumerate(windows, start=1):
        result = ExtractionResult()
        elements = extractor.read_window(window, time_zone, result)
        try:
            with transaction.atomic():
                # Raises ThreadNotFound when the thread went while the model answered.
                lock_thread(thread.pk)
                standing = standing_entries(window)
                kept = [entry for entry in window if entry.pk in standing]
                record = None
                if kept and read_by_origins(thread, path) >= position[kept[-1].pk]:
                    # An origin of this fork read these copies in its scope while the
                    # model answered: that run's items stand, this one writes none.
                    raise ReadElsewhere()
                if kept:
                    # The stretch read, between entries that stand: a window row never
                    # names an entry that went (its dependent deletes such rows).
                    record = ExtractionWindow.objects.create(
                        thread=thread,
                        first_entry_id=kept[0].pk,
                        last_entry_id=kept[-1].pk,
                        version=EXTRACTOR_VERSION,
                        entries=len(kept),
                        calls=result.calls,
                    )
                    # A fork's copies read here are read for its origins in its scope
                    # (IntegrityError: an origin's run read the same stretch meanwhile).
                    record_in_origins(thread, path, position[kept[0].pk], position[kept[-1].pk])
                writes = extractor.write_window(
                    window,
                    elements,
                    scope=scope,
                    time_zone=time_zone,
                    result=result,
                    before_write=before_write,
                    standing=standing,
                )
                if record is not None:
                    record.items_written = len(writes)
                    record.save(update_fields=["items_written"])
        except (IntegrityError, ReadElsewhere):
            logger.info(
                "Window %s..%s of %s was read by another run.",
                window[0].pk,
                window[-1].pk,
                thread.pk,
            )
            skipped += 1
            if progress is not None:
                progress(done, len(windows))
            continue
        calls += result.calls
        written += len(writes)
        if progress is not None:
            progress(done, len(windows))
    return ThreadExtraction(windows=len(windows), skipped=skipped, calls=calls, items=written)
