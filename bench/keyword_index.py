"""The keyword index: keyword search and a thread's entry search against bm25s.

Run by hand from the repository root::

    .venv/bin/python bench/keyword_index.py --db sqlite|postgres [--sizes 1000,10000,100000]
        [--queries 200] [--data PATH] [--writes 1000]

Documents are LoCoMo turns (``--data``), all conversations in order, repeated until a
thread has ``size`` of them; past the first pass, each word of a repeated turn is
replaced, with probability 0.3, by a word drawn from the turns' own word frequencies
(Zipfian, as the text is), so no two documents are copies. Each size is one thread
holding that many message embeddings (written through the exact store, in batches of
1,000, as the message index writes them) and as many entries (inserted in bulk and
indexed as ``fork_thread`` indexes its copies). Queries are LoCoMo questions.

Per size, on the chosen database:

- ``keyword_search`` limited to the thread (a trusted call, filter by thread): p50/p95,
  and recall@10 against exhaustive BM25 (bm25s over every document of the thread, same
  tokenizer; a hit counts when its exhaustive score reaches the 10th best, so ties
  between equal scores do not count as misses);
- ``search_thread_entries`` over the thread's entries: the same figures;
- bm25s's own query time (``retrieve``, k=10) over the same documents.

Each search is measured twice: from the process's postings cache (``keywords/cache.py``,
as shipped: ``cached``; the first search of each corpus, which loads it, is reported as
``cache_load_s``) and with the cache off (``CACHE_POSTINGS`` 0: the tables, per budget).
Then ``after_add``: ``add_entry`` followed by ``search_thread_entries`` on the grown
thread, 20 times, the search's p50 (the cache reads only the entry added).

Then the write cost: ``add_entry`` one after another on a fresh thread, with the index
as shipped and with entry indexing switched off, entries per second.

On PostgreSQL, the tables are vacuumed and analyzed after loading, as autovacuum would
leave them (index-only scans need the visibility map). The last line of stdout is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from benchdb import database_opener, setup_django

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
WARMUP = 5
REPLACE = 0.3
BATCH = 1000
# add_entry blocks per side in the write measure, after one warm-up block each.
WRITE_BLOCKS = 4


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_turns(data: Path) -> tuple[list[str], list[str]]:
    samples = json.loads(data.read_text())
    texts: list[str] = []
    questions: list[str] = []
    for sample in samples:
        conversation = sample["conversation"]
        sessions = sorted(
            (key for key in conversation if key.startswith("session_") and key[8:].isdigit()),
            key=lambda key: int(key[8:]),
        )
        texts.extend(turn["text"] for key in sessions for turn in conversation[key])
        questions.extend(
            str(qa["question"]) for qa in sample["qa"] if qa.get("question") and qa.get("evidence")
        )
    return texts, questions


def documents(turns: list[str], size: int, seed: int) -> list[str]:
    """``size`` documents: the turns, then varied repeats (see the module docstring)."""
    rng = random.Random(seed)
    words = Counter(word for text in turns for word in text.split())
    vocabulary = list(words)
    weights = [words[word] for word in vocabulary]
    out: list[str] = []
    while len(out) < size:
        first_pass = len(out) < len(turns)
        text = turns[len(out) % len(turns)]
        if not first_pass:
            pieces = text.split()
            draws = rng.choices(vocabulary, weights=weights, k=len(pieces))
            text = " ".join(
                draw if rng.random() < REPLACE else piece
                for piece, draw in zip(pieces, draws, strict=True)
            )
        out.append(text)
    return out


def percentiles(samples: list[float]) -> dict[str, float]:
    array = np.array(samples) * 1000
    return {
        "p50_ms": round(float(np.percentile(array, 50)), 2),
        "p95_ms": round(float(np.percentile(array, 95)), 2),
    }


def recall_at_10(found: list[int], scores: np.ndarray) -> float | None:
    """Share of the exhaustive top 10 found; None when nothing scores."""
    positive = int((scores > 0).sum())
    if not positive:
        return None
    wanted = min(10, positive)
    kth = float(np.sort(scores)[::-1][wanted - 1])
    good = sum(1 for n in found[:wanted] if scores[n] >= kth * (1 - 1e-6))
    return good / wanted


def vacuum(database: str) -> None:
    from django.db import connection

    if database != "postgres":
        return
    with connection.cursor() as cursor:
        for table in ("keywordposting", "keywordterm", "keywordcorpus", "embedding", "entry"):
            cursor.execute(f"VACUUM ANALYZE cogitator_memory_{table}")


def measure_size(
    database: str, size: int, turns: list[str], questions: list[str], budgets: list[int]
) -> dict[str, Any]:
    import bm25s
    from django.db import transaction
    from django.test.utils import override_settings

    from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
    from cogitator_memory.embeddings.types import EmbeddingFilter, NewEmbedding
    from cogitator_memory.keywords import cache
    from cogitator_memory.keywords.entries import index_entries
    from cogitator_memory.keywords.tokenizer import query_terms, tokenize
    from cogitator_memory.search import entry_keywords
    from cogitator_memory.search.bm25 import keyword_search
    from cogitator_memory.search.entry_keywords import search_thread_entries
    from cogitator_memory.threads import services
    from cogitator_memory.threads.models import Entry, Thread
    from cogitator_memory.threads.services import create_thread

    texts = documents(turns, size, seed=size)
    thread = create_thread("bench-agent", thread_id=f"keyword-{size}")
    store = ExactEmbeddingStore()
    started = time.perf_counter()
    for start in range(0, size, BATCH):
        store.add(
            [
                NewEmbedding(
                    # Not "message": the message index's rows are checked against their
                    # entries, which these are not.
                    source_type="turn",
                    source_id=f"{thread.pk}-{n}",
                    content=texts[n],
                    vector=[1.0],
                    metadata={"agentId": "bench-agent", "threadId": thread.pk},
                )
                for n in range(start, min(size, start + BATCH))
            ]
        )
    embeddings_s = time.perf_counter() - started
    started = time.perf_counter()
    entry_index: dict[str, int] = {}
    for start in range(0, size, BATCH):
        with transaction.atomic():
            entries = [
                Entry(
                    id=f"entry_{size}_{n}",
                    thread_id=thread.pk,
                    seq=n + 1,
                    type="message",
                    role="user",
                    content=texts[n],
                    token_count=1,
                )
                for n in range(start, min(size, start + BATCH))
            ]
            Entry.objects.bulk_create(entries)
            index_entries(entries)
        entry_index.update((entry.pk, n) for n, entry in enumerate(entries, start=start))
    Thread.objects.filter(pk=thread.pk).update(next_seq=size)
    entries_s = time.perf_counter() - started
    log(
        f"{database} {size}: loaded in {embeddings_s:.1f} s (embeddings), "
        f"{entries_s:.1f} s (entries)"
    )
    vacuum(database)

    corpus = [tokenize(text) for text in texts]
    retriever = bm25s.BM25(method="lucene")
    retriever.index(corpus, show_progress=False)
    asked = [q for q in questions if query_terms(q)]
    result: dict[str, Any] = {"size": size, "queries": len(asked) - WARMUP}
    bm25s_times = []
    exhaustive = []
    for question in asked:
        terms = query_terms(question)
        started = time.perf_counter()
        retriever.retrieve([terms], k=min(10, size), show_progress=False)
        bm25s_times.append(time.perf_counter() - started)
        exhaustive.append(retriever.get_scores(terms))
    result["bm25s"] = percentiles(bm25s_times[WARMUP:])
    where = EmbeddingFilter(thread_id=thread.pk)
    prefix = len(thread.pk) + 1
    shipped = entry_keywords.MAX_ENTRY_CANDIDATES
    cache.clear_cache()
    started = time.perf_counter()
    keyword_search(asked[0], limit=10, filter=where)
    search_thread_entries(thread.pk, asked[0], limit=10)
    result["cache_load_s"] = round(time.perf_counter() - started, 3)
    for budget in ["cached", *budgets]:
        if budget == "cached":
            switch: Any = nullcontext()
        else:
            switch = override_settings(COGITATOR_MEMORY={"KEYWORDS": {"CACHE_POSTINGS": 0}})
            entry_keywords.MAX_ENTRY_CANDIDATES = int(budget)
        timings: dict[str, list[float]] = {"keyword_search": [], "search_thread_entries": []}
        recalls: dict[str, list[float]] = {"keyword_search": [], "search_thread_entries": []}
        switch.__enter__()
        for number, question in enumerate(asked):
            started = time.perf_counter()
            hits = keyword_search(
                question,
                limit=10,
                filter=where,
                candidates=int(budget) if budget != "cached" else 5000,
            )
            keyword_time = time.perf_counter() - started
            started = time.perf_counter()
            entry_hits = search_thread_entries(thread.pk, question, limit=10)
            entry_time = time.perf_counter() - started
            if number < WARMUP:
                continue
            timings["keyword_search"].append(keyword_time)
            timings["search_thread_entries"].append(entry_time)
            for name, found in (
                ("keyword_search", [int(hit.embedding.source_id[prefix:]) for hit in hits]),
                ("search_thread_entries", [entry_index[entry_id] for entry_id, _ in entry_hits]),
            ):
                value = recall_at_10(found, exhaustive[number])
                if value is not None:
                    recalls[name].append(value)
        switch.__exit__(None, None, None)
        entry_keywords.MAX_ENTRY_CANDIDATES = shipped
        for name, samples in timings.items():
            figures: dict[str, Any] = percentiles(samples)
            figures["recall@10"] = round(float(np.mean(recalls[name])), 4)
            figures["queries_below_1"] = sum(1 for value in recalls[name] if value < 1)
            result[f"{name}@{budget}"] = figures
        for name, label in (("keyword_search", "keyword"), ("search_thread_entries", "entries")):
            result[f"ratio_p50_{label}_to_bm25s@{budget}"] = round(
                result[f"{name}@{budget}"]["p50_ms"] / max(result["bm25s"]["p50_ms"], 1e-3), 1
            )
    after_add = []
    for number in range(20):
        services.add_entry(thread.pk, role="user", content=texts[number])
        started = time.perf_counter()
        search_thread_entries(thread.pk, asked[number % len(asked)], limit=10)
        after_add.append(time.perf_counter() - started)
    result["after_add"] = percentiles(after_add)
    log(f"{database} {size}: {json.dumps(result)}")
    return result


def measure_writes(database: str, count: int) -> dict[str, Any]:
    """add_entry one after another, with entry indexing and without, in alternating
    blocks (a slow spell of a shared machine lands on both alike)."""
    from cogitator_memory.threads import services

    text = "Biscuit chewed my hiking boots again, so we went to the lake store for new ones."
    shipped = services.index_entries
    indexers = {"with_index": shipped, "without_index": lambda entries: None}
    seconds = dict.fromkeys(indexers, 0.0)
    threads = {
        label: services.create_thread("bench-agent", thread_id=f"writes-{label}").pk
        for label in indexers
    }
    block = max(count // WRITE_BLOCKS, 1)
    try:
        for round_number in range(WRITE_BLOCKS + 1):
            for label, indexer in indexers.items():
                services.index_entries = indexer  # type: ignore[assignment]
                started = time.perf_counter()
                for _ in range(block):
                    services.add_entry(threads[label], role="user", content=text)
                if round_number:  # the first round warms up
                    seconds[label] += time.perf_counter() - started
    finally:
        services.index_entries = shipped
    rates: dict[str, float] = {
        label: round(block * WRITE_BLOCKS / spent, 1) for label, spent in seconds.items()
    }
    rates["share_kept"] = round(rates["with_index"] / rates["without_index"], 3)
    log(f"{database} writes: {json.dumps(rates)}")
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument(
        "--budgets",
        default="5000",
        help="candidate budgets to measure with the cache off (comma-separated)",
    )
    parser.add_argument(
        "--cache-postings",
        type=int,
        default=None,
        help="KEYWORDS['CACHE_POSTINGS'] for the run (default: the shipped setting)",
    )
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    turns, questions = load_turns(args.data)
    questions = questions[: args.queries + WARMUP]
    opener = database_opener(args.db, prefix="keyword", pg_name="bench_keyword")
    with opener() as url:
        setup_django(url)
        if args.cache_postings is not None:
            from django.test.utils import override_settings

            override_settings(
                COGITATOR_MEMORY={"KEYWORDS": {"CACHE_POSTINGS": args.cache_postings}}
            ).enable()
        result: dict[str, Any] = {"db": args.db, "sizes": [], "load_before": os.getloadavg()[0]}
        if args.writes:
            result["writes"] = measure_writes(args.db, args.writes)
        for size in (int(value) for value in args.sizes.split(",") if value):
            budgets = [value for value in args.budgets.split(",") if value]
            result["sizes"].append(measure_size(args.db, size, turns, questions, budgets))
        result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
