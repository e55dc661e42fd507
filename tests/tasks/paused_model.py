"""A model for a real worker that answers only when the test says so.

Named as the worker's provider (``COGITATOR_MEMORY_LLM_PROVIDER=tests.tasks.paused_model.
PausedModel``), it reads its folder from ``COGITATOR_TEST_PAUSED_MODEL_DIR``. A call writes
``asked`` there, waits for ``go`` (and removes it), and answers with the text of
``answer.txt``: the test process does what it wants done while the model answers between
the two. A call not let go within ``WAIT_SECONDS`` fails (not retried: the test failed).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cogitator_memory.llm.protocol import Completion, Message

FOLDER_VARIABLE = "COGITATOR_TEST_PAUSED_MODEL_DIR"
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.02


class PausedModel:
    provider = "paused"

    def __init__(self, **ignored: Any) -> None:
        self.folder = Path(os.environ[FOLDER_VARIABLE])
        self.model = "paused"

    def __call__(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        prompt: str | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        go = self.folder / "go"
        (self.folder / "asked").write_text(messages[-1]["content"])
        deadline = time.monotonic() + WAIT_SECONDS
        while not go.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"The paused model was not let go within {WAIT_SECONDS} s.")
            time.sleep(POLL_SECONDS)
        go.unlink()
        text = (self.folder / "answer.txt").read_text()
        return Completion(text=text, truncated=False, model=self.model)
