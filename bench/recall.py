"""Turn recall of ``MemoryRetriever`` on LoCoMo, beside BM25-only and dense-only rankings.

Run by hand from the repository root::

    .venv/bin/python bench/recall.py --locomo PATH [--embeddings local|none]
        [--limit-conversations N] [--db sqlite|postgres] [--folds [--grid NAME=v1,v2 ...]]

Each conversation becomes one thread: one entry per turn, dated by its session's
``date_time`` (a turn a minute after the one before), its speaker as the entry's name, its
text as content (an image turn's caption after it, "[shares a photo of ...]"). Every
question of categories 1-4 with evidence is asked through the retriever as a turn read just
after the conversation's last session (``anchor``), with the conversation as ``history``
and no memory items; a hit is a turn whose ``dia_id`` the evidence names. Beside it, in the
same run: BM25 alone (the retriever's keyword channel: Lucene BM25 over the project's
tokens) and, with ``--embeddings local``, the local model's cosines alone (no threshold),
and the two fused by plain reciprocal rank. Figures: turn recall@5/10/20/50 (%) per
category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) and overall. The last line
of stdout is one JSON object.

With ``--folds`` the retriever alone is measured, per conversation, for every setting of
``--grid`` (``NAME=v1,v2``, repeatable; a channel's name sets its weight for every kind of
question, ``module.CONSTANT`` a constant of a ``cogitator_memory.recall`` module); then, in
as many rotations as there are conversations, two consecutive conversations are held out,
the setting with the best sum of recall@10, recall@50 and multi-hop recall@50 over the
others (the tuned side) is chosen, and both sides' figures of that setting are printed. The
held-out means are judged against the targets of recall on conversations not seen (recall@10
>= 75 %, recall@50 >= 90 %, multi-hop recall@50 >= 75 %, retrieve p50 <= 50 ms). The
model's vectors of turns and questions are kept in ``bench/.data/recall-vectors-MODEL.npz``
and computed before the searches are timed: the p50 is the search's, without the model.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import re
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchdb import DATA_DIR, database_opener, setup_django

CUTS = (5, 10, 20, 50)
CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SESSION_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m) on (\d{1,2}) (\w+),? (\d{4})", re.I)
MONTHS = {
    name: number
    for number, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
DIA_ID = re.compile(r"D(\d+):(\d+)")
# What ``--folds`` judges the held-out side by: recall on conversations never tuned on.
TARGETS = {"recall_at_10": 75.0, "recall_at_50": 90.0, "multi_hop_at_50": 75.0}
TARGET_P50_MS = 50.0
HELD_OUT = 2


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def session_time(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" as an aware datetime (UTC)."""
    match = SESSION_DATE.search(text)
    if match is None:
        raise ValueError(f"unreadable session date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), MONTHS[month.lower()], int(day), hour_24, int(minute), tzinfo=UTC)


def sessions_of(conversation: dict[str, Any]) -> list[tuple[datetime, list[dict[str, Any]]]]:
    numbers = sorted(
        int(key[8:])
        for key in conversation
        if key.startswith("session_") and key[8:].isdigit() and conversation[key]
    )
    return [
        (session_time(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"])
        for n in numbers
    ]


def evidence_ids(raw: list[str], known: set[str]) -> set[str]:
    """The evidence's dia_ids, split and mended ("D8:6; D9:17", "D:11:26", "D30:05"),
    without those the conversation lacks."""
    found = set()
    for text in raw:
        for session, turn in DIA_ID.findall(text.replace("D:", "D")):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id in known:
                found.add(dia_id)
    return found


def turn_content(turn: dict[str, Any]) -> str:
    caption = turn.get("blip_caption")
    return f"{turn['text']} [shares {caption}]" if caption else turn["text"]


def recall_at(ranked: list[str], wanted: set[str], cut: int) -> float:
    return len(wanted.intersection(ranked[:cut])) / len(wanted)


def load_conversation(
    number: int, sample: dict[str, Any]
) -> tuple[list[Any], dict[str, str], datetime]:
    """The conversation as a thread: its entries oldest first, the dia_id of each entry's id,
    and the anchor its questions are read at (the day after its last session)."""
    from cogitator_memory.threads.services import add_entry, create_thread

    sessions = sessions_of(sample["conversation"])
    thread = create_thread("bench-agent", thread_id=f"locomo-{number}")
    entries = []
    dia_of: dict[str, str] = {}
    for started, turns in sessions:
        for n, turn in enumerate(turns):
            entry = add_entry(
                thread.id,
                role="user",
                name=turn["speaker"],
                content=turn_content(turn),
                created_at=started + timedelta(minutes=n),
            )
            entries.append(entry)
            dia_of[entry.pk] = turn["dia_id"]
    return entries, dia_of, sessions[-1][0] + timedelta(days=1)


def measure(data: Path, *, embeddings: str, limit_conversations: int | None) -> dict[str, Any]:
    import numpy as np

    from cogitator_memory.keywords.tokenizer import query_terms
    from cogitator_memory.recall.keyword_scores import InMemoryBM25
    from cogitator_memory.recall.retriever import MemoryRetriever
    from cogitator_memory.recall.vector_scores import cosines
    from cogitator_memory.search.fusion import reciprocal_rank_fusion

    service = None
    if embeddings == "local":
        from cogitator_memory.embeddings.providers.local import LocalEmbeddings

        service = LocalEmbeddings()
    samples = json.loads(data.read_text())[:limit_conversations]
    sides = ["retriever", "bm25"] + (["dense", "bm25+dense"] if service is not None else [])
    found: dict[str, dict[str, dict[Any, list[float]]]] = {
        side: {str(cut): defaultdict(list) for cut in CUTS} for side in sides
    }
    seconds: list[float] = []
    depth = max(CUTS)
    for number, sample in enumerate(samples):
        entries, dia_of, anchor = load_conversation(number, sample)
        known = set(dia_of.values())
        retriever = MemoryRetriever(embedding_service=service)
        index = InMemoryBM25([(entry.pk, retriever._turn_tokens(entry)) for entry in entries])
        vectors = retriever._turn_vectors(entries, service) if service is not None else {}
        asked = 0
        for qa in sample["qa"]:
            category = qa.get("category")
            wanted = evidence_ids([str(e) for e in qa.get("evidence") or []], known)
            if category not in CATEGORIES or not wanted:
                continue
            asked += 1
            question = str(qa["question"])
            started_at = time.perf_counter()
            retrieval = retriever.retrieve(
                input=question, anchor=anchor, history=entries, limit=depth
            )
            seconds.append(time.perf_counter() - started_at)
            ranked = {
                "retriever": [dia_of[hit.id] for hit in retrieval.hits if hit.kind == "entry"],
                "bm25": [
                    dia_of[entry_id]
                    for entry_id, _ in index.ranked(query_terms(question), limit=depth)
                ],
            }
            if service is not None:
                query = np.asarray(service.embed([question])[0], dtype=np.float32)
                scores = cosines(query, vectors)
                dense = sorted(scores, key=lambda key: -scores[key])[:depth]
                ranked["dense"] = [dia_of[entry_id] for entry_id in dense]
                bm25_ids = [e for e, _ in index.ranked(query_terms(question), limit=depth)]
                fused = reciprocal_rank_fusion({"bm25": bm25_ids, "dense": dense})
                ranked["bm25+dense"] = [dia_of[hit.id] for hit in fused[:depth]]
            for side, order in ranked.items():
                for cut in CUTS:
                    value = recall_at(order, wanted, cut)
                    found[side][str(cut)]["all"].append(value)
                    found[side][str(cut)][category].append(value)
        log(f"conversation {number}: {len(entries)} turns, {asked} questions")

    def mean(values: list[float]) -> float:
        return round(100 * sum(values) / max(len(values), 1), 1)

    result: dict[str, Any] = {
        "benchmark": "recall",
        "embeddings": embeddings,
        "conversations": len(samples),
        "questions": len(found["retriever"][str(CUTS[0])]["all"]),
        "per_category_questions": {
            str(c): len(found["retriever"][str(CUTS[0])][c]) for c in CATEGORIES
        },
        "retrieve_ms_p50": round(1000 * sorted(seconds)[len(seconds) // 2], 1) if seconds else None,
    }
    for side in sides:
        result[side] = {
            f"@{cut}": {"all": mean(by_category["all"])}
            | {str(c): mean(by_category[c]) for c in CATEGORIES}
            for cut, by_category in ((int(k), v) for k, v in found[side].items())
        }
    return result


def grid_settings(grid: list[str]) -> list[dict[str, float]]:
    """Every combination of the ``--grid`` values, as name -> value."""
    axes = []
    for spec in grid:
        name, _, values = spec.partition("=")
        if not name or not values:
            raise SystemExit(f"--grid wants NAME=v1,v2, not {spec!r}")
        axes.append([(name, float(value)) for value in values.split(",")])
    return [dict(combination) for combination in itertools.product(*axes)]


def apply_setting(setting: dict[str, float], defaults: dict[str, float]) -> None:
    """Set the weights and constants of ``setting`` (a channel's name: its weight for every
    kind of question; ``module.CONSTANT``: that constant of ``cogitator_memory.recall.module``),
    the others back to ``defaults``, the values found before the first setting."""
    from cogitator_memory.recall import channels

    for name in defaults.keys() | setting.keys():
        if "." in name:
            module_name, constant = name.rsplit(".", 1)
            module = importlib.import_module(f"cogitator_memory.recall.{module_name}")
            defaults.setdefault(name, getattr(module, constant))
            setattr(module, constant, setting.get(name, defaults[name]))
        else:
            if name not in channels.CHANNELS:
                raise SystemExit(f"--grid: no channel {name!r}")
            for weights in channels.CHANNEL_WEIGHTS.values():
                defaults.setdefault(name, weights[name])
                weights[name] = setting.get(name, defaults[name])  # type: ignore[index]


class CachedEmbeddings:
    """The local model's vectors kept on disk by text (``bench/.data``): a second run of
    ``--folds`` embeds nothing it embedded before."""

    def __init__(self, service: Any, path: Path) -> None:
        import numpy as np

        self.service = service
        self.path = path
        self.vectors: dict[str, list[float]] = {}
        if path.exists():
            with np.load(path) as stored:
                self.vectors = dict(
                    zip(stored["texts"].tolist(), stored["vectors"].tolist(), strict=True)
                )
        self.added = 0

    def embed(self, texts: Any) -> list[list[float]]:
        missing = [text for text in dict.fromkeys(texts) if text not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.service.embed(missing), strict=True))
            self.added += len(missing)
        return [self.vectors[text] for text in texts]

    def save(self) -> None:
        import numpy as np

        if self.added:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            texts = list(self.vectors)
            np.savez(
                self.path,
                texts=np.array(texts, dtype=str),
                vectors=np.array([self.vectors[text] for text in texts], dtype=np.float32),
            )


def measure_folds(
    data: Path, *, embeddings: str, limit_conversations: int | None, grid: list[str]
) -> dict[str, Any]:
    """Per setting and conversation, the recall of every question; then the folds."""
    from cogitator_memory.recall import retriever as retriever_module
    from cogitator_memory.recall.retriever import MemoryRetriever

    # Every question of a conversation is asked once per setting: keep their vectors.
    retriever_module.MAX_CACHED_QUERIES = 10_000
    service = None
    if embeddings == "local":
        from cogitator_memory.embeddings.providers.local import LocalEmbeddings

        model = LocalEmbeddings()
        # One file per model: a vector is only ever reused for the model that made it.
        name = re.sub(r"[^\w.-]+", "-", model.model)
        service = CachedEmbeddings(model, DATA_DIR / f"recall-vectors-{name}.npz")
    samples = json.loads(data.read_text())[:limit_conversations]
    if len(samples) < HELD_OUT + 1:
        raise SystemExit(f"--folds needs at least {HELD_OUT + 1} conversations")
    settings = grid_settings(grid)
    defaults: dict[str, float] = {}
    depth = max(CUTS)
    # scores[setting][conversation] = [(category, recall@10, recall@50), ...]
    scores: list[list[list[tuple[int, float, float]]]] = [[] for _ in settings]
    seconds: list[list[float]] = [[] for _ in settings]
    for number, sample in enumerate(samples):
        entries, dia_of, anchor = load_conversation(number, sample)
        known = set(dia_of.values())
        retriever = MemoryRetriever(embedding_service=service)
        questions = [
            (qa["category"], str(qa["question"]), wanted)
            for qa in sample["qa"]
            if qa.get("category") in CATEGORIES
            and (wanted := evidence_ids([str(e) for e in qa.get("evidence") or []], known))
        ]
        if service is not None:
            # Timed below: the search, not the model (its vectors are cached on disk).
            retriever._turn_vectors(entries, service)
            for _, question, _ in questions:
                retriever._query_vector(question, service)
        for index, setting in enumerate(settings):
            apply_setting(setting, defaults)
            found = []
            for category, question, wanted in questions:
                started_at = time.perf_counter()
                retrieval = retriever.retrieve(
                    input=question, anchor=anchor, history=entries, limit=depth
                )
                seconds[index].append(time.perf_counter() - started_at)
                ranked = [dia_of[hit.id] for hit in retrieval.hits if hit.kind == "entry"]
                found.append(
                    (category, recall_at(ranked, wanted, 10), recall_at(ranked, wanted, 50))
                )
            scores[index].append(found)
        log(f"conversation {number}: {len(entries)} turns, {len(questions)} questions")
    apply_setting({}, defaults)
    if service is not None:
        service.save()

    def figures(index: int, conversations: list[int]) -> dict[str, float]:
        asked = [row for number in conversations for row in scores[index][number]]
        multi_hop = [row[2] for row in asked if row[0] == 1]
        return {
            "recall_at_10": round(100 * sum(row[1] for row in asked) / len(asked), 1),
            "recall_at_50": round(100 * sum(row[2] for row in asked) / len(asked), 1),
            "multi_hop_at_50": round(100 * sum(multi_hop) / max(len(multi_hop), 1), 1),
        }

    count = len(samples)
    rotations = []
    for first in range(count):
        held_out = sorted({(first + n) % count for n in range(HELD_OUT)})
        tuned = [number for number in range(count) if number not in held_out]
        chosen = max(
            range(len(settings)), key=lambda index: (sum(figures(index, tuned).values()), -index)
        )
        rotations.append(
            {
                "held_out": [samples[n].get("sample_id", str(n)) for n in held_out],
                "setting": settings[chosen],
                "tuned": figures(chosen, tuned),
                "held_out_figures": figures(chosen, held_out),
                "retrieve_ms_p50": percentile_ms(seconds[chosen]),
            }
        )

    def mean_of(side: str) -> dict[str, float]:
        return {
            name: round(sum(rotation[side][name] for rotation in rotations) / len(rotations), 1)
            for name in TARGETS
        }

    held_out_mean = mean_of("held_out_figures")
    p50 = max(rotation["retrieve_ms_p50"] for rotation in rotations)
    return {
        "benchmark": "recall-folds",
        "embeddings": embeddings,
        "conversations": count,
        "held_out_per_fold": HELD_OUT,
        "settings": settings,
        "per_setting_all": [figures(index, list(range(count))) for index in range(len(settings))],
        "folds": rotations,
        "tuned_mean": mean_of("tuned"),
        "held_out_mean": held_out_mean,
        "retrieve_ms_p50": p50,
        "recall_at_10_met": held_out_mean["recall_at_10"] >= TARGETS["recall_at_10"],
        "recall_at_50_met": held_out_mean["recall_at_50"] >= TARGETS["recall_at_50"],
        "multi_hop_met": held_out_mean["multi_hop_at_50"] >= TARGETS["multi_hop_at_50"],
        "retrieve_p50_met": p50 <= TARGET_P50_MS,
    }


def percentile_ms(seconds: list[float]) -> float:
    return round(1000 * sorted(seconds)[len(seconds) // 2], 1) if seconds else 0.0


def fold_table(result: dict[str, Any]) -> str:
    names = list(TARGETS)
    lines = [
        "| fold | held out | setting | "
        + " | ".join(f"tuned {name}" for name in names)
        + " | "
        + " | ".join(f"held-out {name}" for name in names)
        + " |",
        "|---" * (3 + 2 * len(names)) + "|",
    ]
    for number, rotation in enumerate(result["folds"], start=1):
        setting = ", ".join(f"{k}={v}" for k, v in rotation["setting"].items()) or "as shipped"
        cells = [str(rotation["tuned"][name]) for name in names] + [
            str(rotation["held_out_figures"][name]) for name in names
        ]
        lines.append(
            f"| {number} | {' '.join(rotation['held_out'])} | {setting} | "
            + " | ".join(cells)
            + " |"
        )
    cells = [str(result["tuned_mean"][name]) for name in names] + [
        str(result["held_out_mean"][name]) for name in names
    ]
    lines.append("| mean | | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table(result: dict[str, Any]) -> str:
    header = "| ranking | " + " | ".join(
        f"@{cut} {label}" for cut in CUTS for label in ("all", *(f"c{c}" for c in CATEGORIES))
    )
    lines = [header + " |", "|---" * (1 + len(CUTS) * 5) + "|"]
    for side in ("retriever", "bm25", "dense", "bm25+dense"):
        if side not in result:
            continue
        cells = [
            f"{result[side][f'@{cut}'][key]}"
            for cut in CUTS
            for key in ("all", *(str(c) for c in CATEGORIES))
        ]
        lines.append(f"| {side} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--locomo", type=Path, required=True, help="a LoCoMo JSON file")
    parser.add_argument("--embeddings", choices=("local", "none"), default="none")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--folds",
        action="store_true",
        help="the retriever on held-out conversations, two per rotation (the docstring)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=v1,v2",
        help="with --folds: values to choose from on the tuned side (repeatable)",
    )
    args = parser.parse_args()
    if args.grid and not args.folds:
        parser.error("--grid needs --folds")
    opener = database_opener(args.db, prefix="recall", pg_name="bench_recall")
    with opener() as url:
        setup_django(url)
        if args.folds:
            result = measure_folds(
                args.locomo,
                embeddings=args.embeddings,
                limit_conversations=args.limit_conversations,
                grid=args.grid,
            )
        else:
            result = measure(
                args.locomo,
                embeddings=args.embeddings,
                limit_conversations=args.limit_conversations,
            )
    result["db"] = args.db
    log(fold_table(result) if args.folds else table(result))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
