"""An extraction racing a forgetting leaves nothing on the entries that went.

The model answers while a cascade deletes or redacts the entries it read (or forgets the
whole user). What the answer says of those entries is not written: an item standing only
on them is dropped, one standing on more is written with the quotes of what stands, a
redacted entry's words are never stored, and no window names an entry that went.

Two kinds of interleaving, on SQLite and PostgreSQL:

- the cascade commits while the model answers (the scripted model runs it before it
  answers), through ``extract_thread`` and through ``MemoryExtractor.extract``;
- the cascade is still open when the model has answered, and commits only once the
  extraction waits for it (on PostgreSQL when the extraction is seen waiting on a lock;
  on SQLite after a pause), so a check made before the write's locks would pass and the
  write would find its entries gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction

from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.exceptions import ThreadNotFound
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.items.window_extractor import MemoryExtractor
from cogitator_memory.llm.scripted import ScriptedAnswer, ScriptedCall, ScriptedModel
from tests.items.forgetting_races import (
    ANA,
    ANSWER,
    FORGETTINGS,
    assert_nothing_stands_on_what_went,
    conversation,
    values,
)

pytestmark = pytest.mark.django_db(transaction=True)

# Seconds the cascade waits for the extraction to block on its locks, at most.
BLOCK_SECONDS = 5.0


def answering_after(run: Callable[[], object]) -> ScriptedModel:
    """A scripted model that runs ``run`` (once) before it gives ``ANSWER``."""
    done = []

    def meanwhile(call: ScriptedCall) -> bool:
        if not done:
            done.append(run())
        return True

    return ScriptedModel([ScriptedAnswer(ANSWER, match=meanwhile)])


# --- the cascade commits while the model answers ------------------------------------------


@pytest.mark.parametrize("how", list(FORGETTINGS))
def test_a_thread_extraction_writes_nothing_of_what_went_while_the_model_answered(
    how: str,
) -> None:
    said = conversation()
    forget, left = FORGETTINGS[how]
    model = answering_after(lambda: forget(said))
    try:
        done = extract_thread("ana-chat", summarize=model)
    except ThreadNotFound:
        # the whole thread went with its user: nothing of it is written
        assert how == "delete user"
    else:
        assert done.items == len(left)
    assert values() == left
    assert_nothing_stands_on_what_went()


@pytest.mark.parametrize("how", list(FORGETTINGS))
def test_an_extractor_writes_nothing_of_what_went_while_the_model_answered(how: str) -> None:
    said = conversation()
    forget, left = FORGETTINGS[how]
    model = answering_after(lambda: forget(said))
    result = MemoryExtractor(summarize=model).extract(said, scope=ANA)
    assert len(result.written) == len(left)
    assert values() == left
    assert_nothing_stands_on_what_went()


def test_before_write_sees_what_stands_in_the_write_transaction() -> None:
    # given a hook that keeps only the seat, and a deletion while the model answers
    said = conversation()
    seen: list[list[str]] = []

    def before_write(items: list[NewItem]) -> list[NewItem]:
        assert connection.in_atomic_block
        seen.append([item.value for item in items])
        return [item for item in items if item.value == "aisle"]

    model = answering_after(lambda: MemoryCascade().delete_entries([said[0].pk], keep_replies=True))
    # when
    done = extract_thread("ana-chat", summarize=model, before_write=before_write)
    # then the hook got the items without what went, and what it kept was written
    assert seen == [["Porto", "aisle"]]
    assert done.items == 1
    assert values() == {"aisle": ["aisle seat, always"]}
    assert_nothing_stands_on_what_went()


def test_a_quote_of_a_redacted_entry_is_never_stored() -> None:
    # given an entry redacted before an item quoting it is written (by any caller)
    said = conversation()
    MemoryCascade().redact_entries([said[0].pk], keep_replies=True)
    # when
    written = MemoryItems().write(
        ANA,
        NewItem(
            kind="fact",
            subject="Ana",
            attribute="home city",
            value="Lisbon",
            trust="user",
            confidence=0.9,
            evidence=[NewEvidence(quote="I moved to Lisbon", entry_id=said[0].pk)],
        ),
    )
    # then the item keeps the link to the entry, and not its words
    [evidence] = written.item.evidence.all()
    assert (evidence.entry_id, evidence.quote, evidence.verified) == (
        said[0].pk,
        "[redacted]",
        False,
    )
    assert written.item.verified is False
    assert written.item.status == "suggested"


# --- the cascade commits once the extraction waits for it ---------------------------------


def extraction_waits_on_a_lock(watcher: Any) -> bool:
    """Whether another session waits for a lock (PostgreSQL)."""
    with watcher.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return bool(cursor.fetchone()[0])


def cascade_in_the_background(forget: Callable[[], object]) -> tuple[threading.Event, Any]:
    """Start ``forget`` in a Python thread of its own (its own connection), in a
    transaction held open until the extraction waits for it; returns an event set once
    the forgetting is done (not committed) and a function joining the thread."""
    forgotten = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with transaction.atomic():
                forget()
                forgotten.set()
                deadline = time.monotonic() + BLOCK_SECONDS
                if connection.vendor == "postgresql":
                    while time.monotonic() < deadline and not extraction_waits_on_a_lock(
                        connection
                    ):
                        time.sleep(0.02)
                else:
                    # SQLite shows no waiters: the extraction's write waits for this
                    # transaction's lock (IMMEDIATE) for its busy timeout.
                    time.sleep(0.5)
        except BaseException as error:  # pragma: no cover - shown by join()
            errors.append(error)
            forgotten.set()
        finally:
            connection.close()

    worker = threading.Thread(target=run)
    worker.start()

    def join() -> None:
        worker.join(timeout=60)
        assert not worker.is_alive()
        if errors:
            raise errors[0]

    return forgotten, join


@pytest.mark.parametrize("how", list(FORGETTINGS))
@pytest.mark.parametrize("path", ["thread", "extractor"])
def test_a_cascade_committing_while_the_write_waits_leaves_nothing_on_what_went(
    how: str, path: str
) -> None:
    said = conversation()
    forget, left = FORGETTINGS[how]
    joins: list[Callable[[], None]] = []

    def start_cascade() -> None:
        forgotten, join = cascade_in_the_background(lambda: forget(said))
        joins.append(join)
        assert forgotten.wait(timeout=30)

    model = answering_after(start_cascade)
    try:
        if path == "thread":
            try:
                extract_thread("ana-chat", summarize=model)
            except ThreadNotFound:
                assert how == "delete user"
        else:
            MemoryExtractor(summarize=model).extract(said, scope=ANA)
    finally:
        for join in joins:
            join()
    assert values() == left
    assert_nothing_stands_on_what_went()
