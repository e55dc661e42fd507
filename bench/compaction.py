"""Benchmark of compaction on SQLite and PostgreSQL, with a deterministic stand-in model.

Run by hand from the repository root::

    .venv/bin/python bench/compaction.py [--quick] [--db sqlite|postgres|both]

Measured, each database in a subprocess of its own (bench/benchdb.py):

- hierarchical compaction of one long thread (200k tokens; 40k with ``--quick``): model
  calls and wall time;
- the handoff's size (characters and tokens) after 1, 5 and 20 compactions of a thread that
  keeps growing: it must stop growing once the saga's caps are reached;
- ``read_compacted_history`` p50 / p95 on threads of 1k and 100k entries (10k with
  ``--quick``) compacted near their end: target, the largest within 2x of 1k.

The model is a plain function (no network): for each chapter it answers one fact atom per
user message, quoting the message word for word, so every atom is checked and verified as
a real answer would be; a summary request gets a one-line summary. Prints a table, then one
JSON object as the last line.
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from typing import Any

from benchdb import database_opener, measure_databases, percentiles, setup_django

AGENT = "bench-compaction"
GROWTH_TARGET = 2.0
READS = 50
MESSAGE = (
    "Parcel {n} left the depot at {hour} o'clock and goes to the north warehouse next; "
    "the driver asked to keep the receipt and to call the customer before noon. "
)
USER_LINE = re.compile(r"^\[(\d+)\] user:\n(.+?)(?=\n\n\[\d+\] |\Z)", re.M | re.S)


class StandInModel:
    """A deterministic model: atoms quoting every user message of a chapter, or a one-line
    summary. Counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self, messages: Any, model: Any = None, prompt: Any = None, max_tokens: Any = None
    ) -> Any:
        from cogitator_memory.llm.protocol import Completion

        self.calls += 1
        text = "\n".join(str(message["content"]) for message in messages)
        if prompt and "JSON array" in prompt:
            atoms = []
            for number, body in USER_LINE.findall(text):
                quote = " ".join(body.split()[:6])
                atoms.append(
                    {
                        "kind": "fact",
                        "status": "closed",
                        "text": quote,
                        "evidence": [{"message": int(number), "quote": quote}],
                    }
                )
            return Completion(text=json.dumps(atoms), truncated=False, model="stand-in")
        return Completion(
            text="The parcels moved between depots.", truncated=False, model="stand-in"
        )


def add_turns(thread_id: str, count: int, start: int) -> None:
    """``count`` user messages, each with the assistant's reply, at the end of the branch."""
    from cogitator_memory.threads import services

    for n in range(start, start + count):
        services.add_entry(thread_id, role="user", content=MESSAGE.format(n=n, hour=n % 24) * 2)
        services.add_entry(thread_id, role="assistant", content=f"Noted for parcel {n}.")


def bulk_thread(size: int) -> str:
    """A thread of ``size`` entries on one branch, written in bulk (as add_entry would)."""
    from django.db import transaction

    from cogitator_memory.threads.models import Entry, Thread
    from cogitator_memory.tokens import count_tokens

    thread = Thread.objects.create(id=f"bulk-{size}-{uuid.uuid4().hex[:8]}", agent_id=AGENT)
    rows = []
    parent = None
    for seq in range(size):
        role = "user" if seq % 2 == 0 else "assistant"
        text = MESSAGE.format(n=seq, hour=seq % 24) if role == "user" else f"Noted {seq}."
        entry_id = f"entry_{uuid.uuid4().hex}"
        rows.append(
            Entry(
                id=entry_id,
                thread=thread,
                parent_id=parent,
                seq=seq + 1,
                type="message",
                role=role,
                content=text,
                token_count=count_tokens(text),
            )
        )
        parent = entry_id
    with transaction.atomic():
        Entry.objects.bulk_create(rows, batch_size=2000)
        Thread.objects.filter(pk=thread.pk).update(active_leaf_id=parent, next_seq=size)
    return str(thread.pk)


def measure(database: str, quick: bool) -> dict[str, Any]:
    opener = database_opener(database, prefix="compaction", pg_name="bench_compaction")
    report: dict[str, Any] = {"database": database}
    with opener() as url:
        setup_django(url)
        from cogitator_memory.compaction.config import CompactionConfig
        from cogitator_memory.compaction.history import read_compacted_history
        from cogitator_memory.compaction.services import CompactionService
        from cogitator_memory.threads import services
        from cogitator_memory.threads.models import Entry
        from cogitator_memory.tokens import count_tokens

        model = StandInModel()
        compaction = CompactionService(summarize=model)
        hierarchical = CompactionConfig(
            strategy="hierarchical", threshold=1_000, keep_recent_tokens=2_000
        )

        # One long thread compacted once.
        target_tokens = 40_000 if quick else 200_000
        long = services.create_thread(AGENT, thread_id=f"long-{uuid.uuid4().hex[:8]}")
        turn_tokens = count_tokens(MESSAGE.format(n=1, hour=1) * 2) + 6
        add_turns(long.pk, target_tokens // turn_tokens, 0)
        tokens = sum(Entry.objects.filter(thread_id=long.pk).values_list("token_count", flat=True))
        began = time.perf_counter()
        compaction.compact(long.pk, hierarchical, force=True)
        report["long_thread"] = {
            "tokens": tokens,
            "model_calls": model.calls,
            "seconds": round(time.perf_counter() - began, 2),
        }
        print(f"{database}: compacted {tokens} tokens", file=sys.stderr)

        # The handoff after 1, 5 and 20 compactions of a growing thread.
        growing = services.create_thread(AGENT, thread_id=f"grow-{uuid.uuid4().hex[:8]}")
        sizes = {}
        for number in range(1, 21):
            add_turns(growing.pk, 60, number * 1000)
            written = compaction.compact(growing.pk, hierarchical, force=True)
            if number in (1, 5, 10, 20) and written is not None:
                summary = str((written.event or {}).get("summary", ""))
                sizes[number] = {"chars": len(summary), "tokens": count_tokens(summary)}
        report["handoff"] = sizes
        print(f"{database}: 20 compactions", file=sys.stderr)

        # read_compacted_history on threads of 1k and 100k entries, compacted near the end.
        summary = CompactionConfig(strategy="summary", threshold=1_000, keep_recent=20)
        reads = {}
        for size in (1_000, 10_000 if quick else 100_000):
            thread_id = bulk_thread(size)
            compaction.compact(thread_id, summary, force=True)
            add_turns(thread_id, 10, size)
            read_compacted_history(thread_id)
            samples = []
            for _ in range(READS):
                start = time.perf_counter()
                history = read_compacted_history(thread_id)
                samples.append((time.perf_counter() - start) * 1000)
            reads[size] = {"entries": len(history), "ms": percentiles(samples)}
            print(f"{database}: read {size}", file=sys.stderr)
        report["reads"] = reads
    return report


def main() -> None:
    measured = measure_databases(__file__, __doc__.split("\n\n")[0], measure)
    if measured is None:
        return
    args, results = measured
    for database, report in results.items():
        long = report["long_thread"]
        print(f"\n== {database} ==")
        print(
            f"  hierarchical compaction of {long['tokens']:,} tokens: "
            f"{long['model_calls']} model calls, {long['seconds']} s"
        )
        handoff = "  ".join(
            f"after {n}: {size['tokens']} tokens" for n, size in report["handoff"].items()
        )
        print(f"  handoff  {handoff}")
        reads = report["reads"]
        small, large = sorted(reads, key=int)
        growth = reads[large]["ms"][0] / reads[small]["ms"][0]
        met = "met" if growth <= GROWTH_TARGET else "MISSED"
        report["read_growth"] = round(growth, 2)
        print(
            f"  read_compacted_history p50 / p95 ms: {small} entries {reads[small]['ms']}, "
            f"{large} entries {reads[large]['ms']}  {growth:.2f}x  {met}"
        )
    print(json.dumps({"benchmark": "compaction", "quick": args.quick, "results": results}))


if __name__ == "__main__":
    main()
