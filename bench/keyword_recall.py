"""Keyword recall on LoCoMo turns: ``keyword_search`` within a thread against plain bm25s.

Run by hand from the repository root::

    .venv/bin/python bench/keyword_recall.py [--data PATH] [--db sqlite|postgres]

Each conversation of the data file becomes one thread, one entry per turn (its speaker as
the entry's name, its text as content), and each turn is stored as that thread's message
embedding (a one-number vector: only keyword search is measured). For every question with
evidence, ``keyword_search`` limited to the thread ranks the turns; a hit is a turn whose
dia_id the evidence names. Beside it, bm25s (Lucene BM25) with PyStemmer's English stemmer
and its English stopwords indexes the same turn texts of the conversation. Figures: turn
recall@10 and @50 overall and per category 1-4. The last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchdb import database_opener, setup_django

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
CUTS = (10, 50)
CATEGORIES = (1, 2, 3, 4)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def turns_of(conversation: dict[str, Any]) -> list[dict[str, str]]:
    sessions = sorted(
        (key for key in conversation if key.startswith("session_") and key[8:].isdigit()),
        key=lambda key: int(key[8:]),
    )
    return [turn for key in sessions for turn in conversation[key]]


def recall(ranked: list[str], wanted: set[str], cut: int) -> float:
    return len(wanted.intersection(ranked[:cut])) / len(wanted)


def measure(data: Path) -> dict[str, Any]:
    import bm25s
    import Stemmer

    from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
    from cogitator_memory.embeddings.types import EmbeddingFilter, NewEmbedding
    from cogitator_memory.search.bm25 import keyword_search
    from cogitator_memory.threads.services import add_entry, create_thread

    samples = json.loads(data.read_text())
    store = ExactEmbeddingStore()
    stemmer = Stemmer.Stemmer("english")
    found: dict[str, dict[Any, list[float]]] = {
        f"{side}@{cut}": defaultdict(list) for side in ("app", "bm25s") for cut in CUTS
    }
    for number, sample in enumerate(samples):
        turns = turns_of(sample["conversation"])
        thread = create_thread("bench-agent", thread_id=f"locomo-{number}")
        entry_of: dict[str, str] = {}
        new = []
        for turn in turns:
            entry = add_entry(thread.id, role="user", name=turn["speaker"], content=turn["text"])
            entry_of[entry.pk] = turn["dia_id"]
            new.append(
                NewEmbedding(
                    source_type="message",
                    source_id=entry.pk,
                    content=turn["text"],
                    vector=[1.0],
                    metadata={"agentId": "bench-agent", "threadId": thread.id},
                )
            )
        store.add(new)
        texts = [turn["text"] for turn in turns]
        retriever = bm25s.BM25(method="lucene")
        retriever.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        where = EmbeddingFilter(thread_id=thread.id)
        asked = 0
        for qa in sample["qa"]:
            wanted = set(qa.get("evidence") or [])
            category = qa.get("category")
            if not wanted or category not in CATEGORIES:
                continue
            asked += 1
            hits = keyword_search(qa["question"], limit=max(CUTS), filter=where)
            app = [entry_of[hit.embedding.source_id] for hit in hits]
            query = bm25s.tokenize(
                [qa["question"]], stopwords="en", stemmer=stemmer, show_progress=False
            )
            top = min(max(CUTS), len(texts))
            ids, scores = retriever.retrieve(query, k=top, show_progress=False)
            reference = [
                turns[int(n)]["dia_id"] for n, s in zip(ids[0], scores[0], strict=True) if s > 0
            ]
            for side, ranked in (("app", app), ("bm25s", reference)):
                for cut in CUTS:
                    value = recall(ranked, wanted, cut)
                    found[f"{side}@{cut}"]["all"].append(value)
                    found[f"{side}@{cut}"][category].append(value)
        log(f"conversation {number}: {len(turns)} turns, {asked} questions")

    def mean(values: list[float]) -> float:
        return round(100 * sum(values) / max(len(values), 1), 1)

    result: dict[str, Any] = {
        "questions": len(found[f"app@{CUTS[0]}"]["all"]),
        "per_category_questions": {str(c): len(found[f"app@{CUTS[0]}"][c]) for c in CATEGORIES},
    }
    for key, by_category in found.items():
        result[key] = {"all": mean(by_category["all"])} | {
            str(c): mean(by_category[c]) for c in CATEGORIES
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args()
    opener = database_opener(args.db, prefix="recall", pg_name="bench_recall")
    with opener() as url:
        setup_django(url)
        result = measure(args.data)
    result["db"] = args.db
    for key in (k for k in result if "@" in k):
        log(f"{key:10} {result[key]}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
