"""End to end: a real Celery worker extracts a thread while this process forgets what the
model is reading; afterwards no item, quote or window stands on an entry that went.

The worker's model (``tests.tasks.paused_model.PausedModel``) says when it is asked and
answers only when this process lets it go, through files in a folder both see. Between
the two, this process runs a cascade (``MemoryCascade`` deleting or redacting the
message the answer quotes, or forgetting the user):

- committed before the model answers;
- still open when the model answers, and committed once the worker's write waits for it
  (on PostgreSQL when a lock wait is seen, on SQLite after a pause: the worker's IMMEDIATE
  transaction waits for this one's).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, transaction

from cogitator_memory.tasks.extraction import extract_thread_task
from tests.items.forgetting_races import (
    ANSWER,
    FORGETTINGS,
    assert_nothing_stands_on_what_went,
    conversation,
    values,
)
from tests.tasks.paused_model import FOLDER_VARIABLE
from tests.tasks.workers import Worker, running_worker, sending_to, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# Seconds this process waits for the worker's write to block on its lock, at most.
BLOCK_SECONDS = 10.0


@pytest.fixture(scope="module")
def paused_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("paused-model")
    (folder / "answer.txt").write_text(ANSWER)
    return folder


@pytest.fixture(scope="module")
def racing_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory, paused_folder: Path
) -> Iterator[Worker]:
    settings = {
        "COGITATOR_MEMORY_LLM_PROVIDER": "tests.tasks.paused_model.PausedModel",
        FOLDER_VARIABLE: str(paused_folder),
    }
    with running_worker(tmp_path_factory.mktemp("racing-worker"), "racing", settings) as running:
        yield running


@pytest.fixture
def sent_to_worker(racing_worker: Worker, paused_folder: Path) -> Iterator[Worker]:
    for name in ("asked", "go"):
        (paused_folder / name).unlink(missing_ok=True)
    with sending_to(racing_worker):
        yield racing_worker


def the_worker_waits_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return bool(cursor.fetchone()[0])


@pytest.mark.parametrize("when", ["before the answer", "while the write waits"])
@pytest.mark.parametrize("how", list(FORGETTINGS))
def test_a_forgetting_racing_the_workers_extraction_leaves_nothing_on_what_went(
    sent_to_worker: Worker, paused_folder: Path, how: str, when: str
) -> None:
    # given a conversation, and its extraction on the worker, the model asked
    said = conversation()
    forget, left = FORGETTINGS[how]
    task = extract_thread_task.delay("ana-chat")
    wait_until(sent_to_worker, (paused_folder / "asked").exists, "the worker's model was asked")
    # when this process forgets while the model answers
    if when == "before the answer":
        forget(said)
        (paused_folder / "go").touch()
    else:
        with transaction.atomic():
            forget(said)
            (paused_folder / "go").touch()
            wait_until(
                sent_to_worker,
                lambda: not (paused_folder / "go").exists(),
                "the worker's model answered",
            )
            if connection.vendor == "postgresql":
                deadline = time.monotonic() + BLOCK_SECONDS
                while time.monotonic() < deadline and not the_worker_waits_on_a_lock():
                    time.sleep(0.02)
                assert the_worker_waits_on_a_lock(), sent_to_worker.log()
            else:
                time.sleep(1.0)
    # then the task ended, and what it wrote stands on nothing that went
    wait_until(
        sent_to_worker,
        lambda: f"[{task.id}] succeeded" in sent_to_worker.log(),
        "the extraction ended",
    )
    assert values() == left
    assert_nothing_stands_on_what_went()
