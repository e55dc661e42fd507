"""Points where a real worker kills itself (SIGKILL), for the fault tests.

Imported into the worker (``celery worker --include tests.faults.failpoints``), it reads
``COGITATOR_TEST_FAILPOINT`` (which point) and ``COGITATOR_TEST_FAILPOINT_DIR`` (a folder
of the test). The worker kills itself at the point while the file ``armed`` is in that
folder; with ``once`` in the folder too, it removes ``armed`` first, so the worker started
after it runs the job through. Each kill is recorded in ``kills`` (one line each).

The points of an extraction job:

- ``claimed``: the run is claimed (running, under a lease), the thread not yet read;
- ``asking``: the model is asked and has not answered;
- ``writing``: the model answered, and the window's items are being written (the
  transaction is open);
- ``written``: the window and its items are committed, the run not yet closed;
- ``closed``: the run is closed, the task's message not yet acknowledged.

And of embedding: ``embedding``, a batch sent to the provider, not yet answered.
``CountingEmbeddings`` is the worker's embedding provider: the test process's
``HashEmbeddings`` (the same vectors), which writes how many texts each call embedded to
``embedded`` (one line a call).

``FailpointModel`` is the worker's model: it answers ``answer.txt`` of the folder. The
test process never imports this module (it changes what it imports).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from celery.signals import task_postrun

from cogitator_memory.items import runs as extraction_runs
from cogitator_memory.items import window_extractor
from cogitator_memory.llm.protocol import Completion, Message
from cogitator_memory.tasks import extraction
from tests.embeddings.fakes import HashEmbeddings
from tests.faults.points import FOLDER_VARIABLE, POINT_VARIABLE


def _folder() -> Path:
    return Path(os.environ[FOLDER_VARIABLE])


def reach(point: str) -> None:
    """Kill this worker if ``point`` is the armed one."""
    if os.environ.get(POINT_VARIABLE) != point:
        return
    folder = _folder()
    armed = folder / "armed"
    if not armed.exists():
        return
    if (folder / "once").exists():
        armed.unlink(missing_ok=True)
    with (folder / "kills").open("a") as kills:
        kills.write(f"{point}\n")
    os.kill(os.getpid(), signal.SIGKILL)


class FailpointModel:
    provider = "failpoint"

    def __init__(self, **ignored: Any) -> None:
        self.model = "failpoint"

    def __call__(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        prompt: str | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        reach("asking")
        text = (_folder() / "answer.txt").read_text()
        return Completion(text=text, truncated=False, model=self.model)


class CountingEmbeddings(HashEmbeddings):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        reach("embedding")
        with (_folder() / "embedded").open("a") as embedded:
            embedded.write(f"{len(texts)}\n")
        return super().embed(texts)


_extract_thread = extraction.extract_thread


def _claimed_then_extract(*args: Any, **kwargs: Any) -> Any:
    reach("claimed")
    return _extract_thread(*args, **kwargs)


extraction.extract_thread = _claimed_then_extract  # type: ignore[assignment]

_write_window = window_extractor.MemoryExtractor.write_window


def _writing(self: Any, *args: Any, **kwargs: Any) -> Any:
    written = _write_window(self, *args, **kwargs)
    reach("writing")
    return written


window_extractor.MemoryExtractor.write_window = _writing  # type: ignore[method-assign]

_done = extraction_runs.RunRecorder.done


def _written_then_done(self: Any, result: Any) -> None:
    reach("written")
    _done(self, result)


extraction_runs.RunRecorder.done = _written_then_done  # type: ignore[method-assign]


@task_postrun.connect
def _closed(sender: Any = None, **kwargs: Any) -> None:
    if sender is not None and sender.name == extraction.extract_thread_task.name:
        reach("closed")
