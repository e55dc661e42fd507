"""Benchmark of keyword search: how close its ranking comes to BM25 over every row, and
what it costs, on SQLite and PostgreSQL.

Run by hand from the repository root::

    .venv/bin/python bench/search.py [--quick] [--db sqlite|postgres|both] [--index]

``--index`` measures instead how fast the message index embeds entries with the local
model, next to the model's own batch encoding of the same texts (``message_index.py``
says what is timed); 128 texts with ``--quick``, 2,048 otherwise.

Keyword search (``cogitator_memory/search/bm25.py``) ranks only candidate rows (the
rows of the scope holding a query word), with bm25s's BM25 fed the statistics of the
whole scope. Against the reference, bm25s indexing every row of the scope, it measures:

- ``keyword_search``: the app's search (candidates, statistics of the scope);
- ``candidate_stats``: the same candidates ranked by bm25s with the statistics of the
  candidates alone (what indexing only the candidates gives);
- ``every_row``: reading and indexing every row of the scope per query, as the reference
  does, for its latency.

Figures: recall@10 against the reference (the share of its top 10 found), the share of
queries whose top 10 comes in exactly the reference's order, and p50/p95 latency. The
corpus is synthetic and seeded: words drawn from a Zipf-like vocabulary, rows of 15 to 80
words, four agents of equal size, queries of 2 to 4 words taken from random rows. Each
database runs in a subprocess of its own; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchdb import database_opener, setup_django
from message_index import configure as configure_index
from message_index import format_index_table, measure_index

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / ".data"
PG_DATABASE = "bench_search"
AGENTS = 4
TOP = 10
VOCABULARY = 20_000
SEED = 7
# Texts the message index embeds with --index (see message_index.py).
INDEX_TEXTS_QUICK = 128
INDEX_TEXTS = 2048


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def pseudo_words(rng: Any) -> list[str]:
    """VOCABULARY distinct words of 2 to 4 syllables, in random order of frequency."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < VOCABULARY:
        count = int(rng.integers(2, 5))
        words.add("".join(syllables[int(n)] for n in rng.integers(0, len(syllables), count)))
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered


def make_corpus(rows: int, queries: int) -> tuple[list[str], list[str]]:
    import numpy as np

    rng = np.random.default_rng(SEED)
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.07
    weights /= weights.sum()
    words = pseudo_words(rng)
    texts = []
    for _ in range(rows):
        picked = rng.choice(VOCABULARY, size=int(rng.integers(15, 81)), p=weights)
        texts.append(" ".join(words[n] for n in picked) + ".")
    asked = []
    for _ in range(queries):
        source = texts[int(rng.integers(0, rows))].rstrip(".").split()
        asked.append(" ".join(rng.choice(source, size=int(rng.integers(2, 5)), replace=False)))
    return texts, asked


def summarize(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 2),
    }


def top_ids(ids: list[str], scores: Any) -> list[str]:
    ranked = sorted(
        (n for n in range(len(ids)) if scores[n] > 0), key=lambda n: (-float(scores[n]), ids[n])
    )
    return [ids[n] for n in ranked[:TOP]]


def run_worker(database: str, quick: bool, index: bool = False) -> dict[str, Any]:
    opener = database_opener(database, prefix="search", pg_name=PG_DATABASE)
    with opener() as url:
        if index:
            configure_index()
        setup_django(url)
        if index:
            texts, _ = make_corpus(INDEX_TEXTS_QUICK if quick else INDEX_TEXTS, 0)
            return measure_index(database, texts)
        return measure(database, quick)


def measure(database: str, quick: bool) -> dict[str, Any]:
    import bm25s
    from django.db.models import Q

    from cogitator_memory.embeddings.models import Embedding
    from cogitator_memory.embeddings.stores.base import filtered
    from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
    from cogitator_memory.embeddings.types import EmbeddingFilter
    from cogitator_memory.keywords.tokenizer import query_terms, tokenize
    from cogitator_memory.search.bm25 import keyword_search

    rows = 8_000 if quick else 80_000
    texts, queries = make_corpus(rows, 40 if quick else 100)
    log(f"{database}: writing {rows} rows")
    Embedding.objects.bulk_create(
        [
            Embedding(
                id=f"emb_{n:08d}",
                source_type="document",
                source_id=f"doc-{n}",
                content=text,
                dimensions=1,
                vector=b"\x00\x00\x80\x3f",
                metadata={"agentId": f"agent-{n % AGENTS}"},
                agent_id=f"agent-{n % AGENTS}",
            )
            for n, text in enumerate(texts)
        ],
        batch_size=2000,
    )
    scope = EmbeddingFilter(agent_id="agent-0")
    store = ExactEmbeddingStore()
    scoped = filtered(Embedding.objects.all(), scope)

    def every_row(query: str) -> list[str]:
        ids, tokens = [], []
        for row_id, content in scoped.values_list("id", "content").iterator(chunk_size=2000):
            ids.append(row_id)
            tokens.append(tokenize(content))
        retriever = bm25s.BM25(method="lucene")
        retriever.index(tokens, show_progress=False)
        terms = [t for t in query_terms(query) if t in retriever.vocab_dict]
        if not terms:
            return []
        return top_ids(ids, retriever.get_scores(terms))

    def candidate_stats(query: str) -> list[str]:
        terms = query_terms(query)
        wanted = set(terms)
        holding = Q()
        for term in terms:
            holding |= Q(content__icontains=term)
        ids, tokens = [], []
        for row_id, content in scoped.filter(holding).values_list("id", "content").iterator():
            words = tokenize(content)
            if not wanted.isdisjoint(words):
                ids.append(row_id)
                tokens.append(words)
        if not ids:
            return []
        retriever = bm25s.BM25(method="lucene")
        retriever.index(tokens, show_progress=False)
        return top_ids(ids, retriever.get_scores([t for t in terms if t in retriever.vocab_dict]))

    def app_search(query: str) -> list[str]:
        hits = keyword_search(query, limit=TOP, filter=scope, store=store)
        return [hit.embedding.id for hit in hits]

    methods: dict[str, Callable[[str], list[str]]] = {
        "keyword_search": app_search,
        "candidate_stats": candidate_stats,
        "every_row": every_row,
    }
    answers: dict[str, list[list[str]]] = {name: [] for name in methods}
    seconds: dict[str, list[float]] = {name: [] for name in methods}
    for number, query in enumerate(queries):
        if number % 10 == 0:
            log(f"{database}: query {number + 1} of {len(queries)}")
        # Alternate the order, so that caches warmed by one method favour none.
        order = list(methods) if number % 2 == 0 else list(reversed(methods))
        for name in order:
            start = time.perf_counter()
            answers[name].append(methods[name](query))
            seconds[name].append(time.perf_counter() - start)
    reference = answers["every_row"]
    report: dict[str, Any] = {"rows": rows, "rows_in_scope": scoped.count()}
    for name in methods:
        recall = [
            len(set(found) & set(expected)) / len(expected) if expected else 1.0
            for found, expected in zip(answers[name], reference, strict=True)
        ]
        same_order = [
            found == expected for found, expected in zip(answers[name], reference, strict=True)
        ]
        report[name] = {
            "recall_at_10": round(statistics.mean(recall), 4),
            "same_order": round(sum(same_order) / len(same_order), 4),
            **summarize(seconds[name]),
        }
    return report


def format_table(results: dict[str, Any]) -> str:
    lines = []
    for database, report in results.items():
        lines.append(
            f"{database}: {report['rows']} rows, {report['rows_in_scope']} in the searched scope"
        )
        lines.append(f"  {'method':<16} {'recall@10':>9} {'same order':>10} {'p50':>9} {'p95':>9}")
        for name in ("keyword_search", "candidate_stats", "every_row"):
            row = report[name]
            lines.append(
                f"  {name:<16} {row['recall_at_10']:>9.3f} {row['same_order']:>10.3f} "
                f"{row['p50_ms']:>7.1f}ms {row['p95_ms']:>7.1f}ms"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8k rows instead of 80k")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument(
        "--index",
        action="store_true",
        help="the message index's embedding rate against the local model's batch encoding",
    )
    parser.add_argument("--worker", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args.worker, args.quick, args.index)))
        return
    results = {}
    for database in ("sqlite", "postgres") if args.db == "both" else (args.db,):
        command = [sys.executable, __file__, "--worker", database]
        if args.quick:
            command.append("--quick")
        if args.index:
            command.append("--index")
        done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
        results[database] = json.loads(done.stdout.strip().splitlines()[-1])
    if args.index:
        print(format_index_table(results))
        print(json.dumps({"benchmark": "message_index", "quick": args.quick, "results": results}))
        return
    print(format_table(results))
    print(json.dumps({"quick": args.quick, "results": results}))


if __name__ == "__main__":
    main()
