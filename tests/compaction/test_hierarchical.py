"""Hierarchical compaction with a scripted summarizer: chapters, atoms checked quote by
quote, retries and continuations, atoms taken from the entries, folding, open items kept,
the handoff and the kept tail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import pytest

from cogitator_memory.compaction import hierarchical
from cogitator_memory.compaction.atoms import (
    ATOMS_PROMPT,
    atom_key,
    chapter_atoms,
    entry_atoms,
    transcript,
)
from cogitator_memory.compaction.hierarchical import (
    SAGA_KEEP,
    SECTIONS,
    chapter_windows,
    check_keeps_open,
    compact_levels,
    current_items,
    fold,
    handoff_text,
    keep_recent_turns,
    open_items,
)
from cogitator_memory.exceptions import CompactionAnswerError, CompactionDropsOpenItems
from cogitator_memory.llm.scripted import ScriptedAnswer, ScriptedModel
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry
from cogitator_memory.tokens import count_entry_tokens

pytestmark = pytest.mark.django_db


@dataclass
class Config:
    chapter_tokens: int = 4000
    chapter_concurrency: int = 1
    chapters_per_arc: int = 4
    arcs_per_saga: int = 4
    summary_model: str | None = None
    summary_prompt: str | None = None


def atom(
    kind: str, status: str, text: str, *quotes: tuple[int, str], item: str | None = None
) -> dict[str, Any]:
    return {
        "kind": kind,
        "status": status,
        "text": text,
        "item": item,
        "evidence": [{"message": n, "quote": q} for n, q in quotes],
    }


def answer(*atoms: Any) -> str:
    return json.dumps(list(atoms))


@pytest.fixture
def thread_id() -> str:
    return threads.create_thread("coder", {"userId": "ana"}).pk


def say(thread_id: str, *lines: tuple[str, str]) -> list[Entry]:
    return [threads.add_entry(thread_id, role=role, content=text) for role, text in lines]


# --- one chapter -----------------------------------------------------------------------------


def test_chapter_atoms_prompt_transcript_and_checked_quotes(thread_id: str) -> None:
    window = say(
        thread_id,
        ("user", "Please use Postgres 16 for the database."),
        ("assistant", "Noted, I will use Postgres 16."),
    )
    model = ScriptedModel(
        [
            answer(
                atom("constraint", "open", "Use Postgres 16", (1, "use  Postgres 16")),
                atom("fact", "closed", "Ana likes MySQL", (1, "I like MySQL")),
                atom("decision", "open", "Mixed", (2, "use Postgres 16"), (1, "Oracle")),
                {"kind": "mood", "status": "open", "text": "happy"},
                "not an atom",
            )
        ]
    )
    config = Config(summary_model="small", summary_prompt="Keep names.")
    opened = [{"key": "task:ship", "kind": "task", "status": "open", "text": "Ship it"}]
    atoms = chapter_atoms(window, config, open=opened, summarize=model)

    call = model.calls[0]
    assert call.model == "small"
    assert call.prompt is not None and call.prompt.startswith(ATOMS_PROMPT)
    assert "[O1] task: Ship it" in call.prompt and call.prompt.endswith("Keep names.")
    assert call.messages[0]["content"] == transcript(window)
    assert call.messages[0]["content"].startswith("[1] user:\nPlease use Postgres 16")
    assert "[2] assistant:" in call.messages[0]["content"]
    by_text = {a["text"]: a for a in atoms}
    assert set(by_text) == {"Use Postgres 16", "Ana likes MySQL", "Mixed"}
    assert by_text["Use Postgres 16"]["verified"] is True
    assert by_text["Use Postgres 16"]["evidence"][0]["entry"] == window[0].pk
    assert by_text["Ana likes MySQL"]["verified"] is False
    # Not every quote holds: not verified.
    assert by_text["Mixed"]["verified"] is False
    assert [q["verified"] for q in by_text["Mixed"]["evidence"]] == [True, False]


def test_three_tries_for_an_answer_with_an_array(thread_id: str) -> None:
    window = say(thread_id, ("user", "TODO: write the docs"))
    model = ScriptedModel(["I cannot.", "Still no array [3].", answer()])
    atoms = chapter_atoms(window, Config(), summarize=model)
    assert len(model.calls) == 3
    assert [a["text"] for a in atoms] == ["write the docs"]

    model = ScriptedModel(["no", "no", "no", answer()])
    with pytest.raises(CompactionAnswerError):
        chapter_atoms(window, Config(), summarize=model)
    assert len(model.calls) == 3


def test_cut_answer_keeps_finished_atoms_and_is_continued_four_times(thread_id: str) -> None:
    window = say(thread_id, ("user", "alpha beta gamma delta epsilon zeta"))
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    cut = [
        ScriptedAnswer(
            json.dumps([atom("fact", "closed", w, (1, w))])[:-1] + ', {"kind": "fa',
            truncated=True,
        )
        for w in words
    ]
    model = ScriptedModel(cut)
    atoms = chapter_atoms(window, Config(), summarize=model)
    assert len(model.calls) == 5  # the answer and four continuations
    assert [a["text"] for a in atoms] == words[:5]
    assert all(a["verified"] for a in atoms)
    last = model.calls[-1].messages
    assert last[-2]["role"] == "assistant" and "continue" not in last[-1]["content"].lower()
    assert "cut off" in last[-1]["content"]


def test_atoms_taken_from_the_entries_without_a_model(thread_id: str) -> None:
    entries = [
        threads.add_entry(
            thread_id,
            role="user",
            content="Plan:\n- [ ] add tests\n- [x] set up CI\nTODO: fix the login bug",
        ),
        threads.add_entry(
            thread_id,
            role="assistant",
            content="",
            tool_calls=[
                {"id": "c1", "name": "edit_file", "arguments": {"path": "app/views.py"}},
                {"id": "c2", "name": "run", "arguments": {"file_path": "x.sh"}},
            ],
        ),
        threads.add_entry(
            thread_id,
            type="tool_result",
            tool_results=[{"toolCallId": "c2", "error": "exit 1: syntax error"}],
        ),
        threads.add_entry(
            thread_id, type="tool_result", tool_results=[{"toolCallId": "c1", "result": "ok"}]
        ),
    ]
    atoms = entry_atoms(entries)
    found = {(a["kind"], a["status"], a["text"]) for a in atoms}
    assert found == {
        ("task", "open", "add tests"),
        ("task", "closed", "set up CI"),
        ("task", "open", "fix the login bug"),
        ("file", "closed", "app/views.py"),
        ("file", "closed", "x.sh"),
        ("error", "open", "run failed: exit 1: syntax error"),
    }
    assert all(a["verified"] and a["origin"] == "entries" for a in atoms)


# --- chapters and the kept tail -----------------------------------------------------------------


def test_chapters_of_about_chapter_tokens_each_opening_with_the_one_before(
    thread_id: str,
) -> None:
    entries = say(thread_id, *[("user", f"message {n:02d} " + "word " * 30) for n in range(12)])
    tokens = count_entry_tokens(entries[0])
    windows = chapter_windows(entries, tokens * 3)
    assert [len(own) for _w, own in windows] == [3, 3, 3, 3]
    assert [e for _w, own in windows for e in own] == entries
    for (_prev_window, prev_own), (window, own) in pairwise(windows):
        assert window[0] == prev_own[-1] and window[1:] == own


def test_keep_recent_turns_keeps_whole_turns_opening_with_a_user(thread_id: str) -> None:
    entries = [
        *say(thread_id, ("assistant", "Hello."), ("user", "first question " * 5)),
        threads.add_entry(
            thread_id,
            role="assistant",
            content="looking",
            tool_calls=[{"id": "t", "name": "search", "arguments": {"q": "x"}}],
        ),
        threads.add_entry(thread_id, type="tool_result", tool_results=[{"result": "found"}]),
        *say(thread_id, ("user", "second question"), ("assistant", "answer")),
    ]
    last_turn = entries[4:]
    budget = sum(count_entry_tokens(e) for e in last_turn)
    assert keep_recent_turns(entries, budget) == last_turn
    assert keep_recent_turns(entries, budget - 1) == []
    both = sum(count_entry_tokens(e) for e in entries[1:])
    # The tool call keeps its result; the greeting before any user message is not a turn.
    assert keep_recent_turns(entries, both) == entries[1:]
    assert keep_recent_turns(entries, 10**6) == entries[1:]


# --- items: closed and reopened only by evidence that holds ---------------------------------


def test_an_open_item_is_closed_or_reopened_only_by_holding_evidence(thread_id: str) -> None:
    first = say(thread_id, ("user", "TODO: migrate the billing tables"))
    model = ScriptedModel([answer()])
    one = compact_levels(first, None, Config(), model)
    assert [a["text"] for a in open_items(one.levels)] == ["migrate the billing tables"]

    # A close whose quote does not hold changes nothing.
    second = say(thread_id, ("assistant", "The weather is nice."))
    model = ScriptedModel(
        [answer(atom("task", "closed", "done", (1, "billing tables migrated"), item="O1"))]
    )
    two = compact_levels(second, one.levels, Config(), model)
    assert "[O1] task: migrate the billing tables" in (model.calls[0].prompt or "")
    assert [a["text"] for a in open_items(two.levels)] == ["migrate the billing tables"]

    # A close whose quote holds closes it.
    third = say(thread_id, ("assistant", "I migrated the billing tables just now."))
    model = ScriptedModel(
        [answer(atom("task", "closed", "migrated", (1, "migrated the billing tables"), item="O1"))]
    )
    three = compact_levels(third, two.levels, Config(), model)
    assert open_items(three.levels) == []
    assert "- migrated" in three.handoff.split("## Done")[1]

    # Reopened: an unverified atom cannot, a verified one can.
    fourth = say(thread_id, ("user", "The billing migration broke, redo it."))
    model = ScriptedModel(
        [
            answer(
                atom("task", "open", "Migrate the billing tables", (1, "it is broken")),
            )
        ]
    )
    four = compact_levels(fourth, three.levels, Config(), model)
    assert open_items(four.levels) == []
    model = ScriptedModel(
        [answer(atom("task", "open", "Migrate the billing tables", (1, "migration broke")))]
    )
    five = compact_levels(fourth, three.levels, Config(), model)
    assert [a["key"] for a in open_items(five.levels)] == [
        atom_key("task", "migrate the billing tables")
    ]


def test_chapter_concurrency_reads_chapters_together(thread_id: str) -> None:
    entries = say(thread_id, *[("user", f"TODO: task number {n} " + "x " * 40) for n in range(6)])
    tokens = count_entry_tokens(entries[0])
    model = ScriptedModel([ScriptedAnswer("[]", repeat=True)])
    result = compact_levels(
        entries,
        None,
        Config(chapter_tokens=tokens, chapter_concurrency=3, chapters_per_arc=10),
        model,
    )
    assert result.chapters == 6 and result.calls == 6 and len(model.calls) == 6
    assert [c["from"] for c in result.levels["chapters"]] == [e.pk for e in entries]
    assert len(open_items(result.levels)) == 6


# --- folding, the saga and many compactions -------------------------------------------------


def test_three_level_fold_on_a_long_thread(thread_id: str) -> None:
    lines = [("user", "TODO: keep the audit log")] + [
        ("user" if n % 2 else "assistant", f"step {n}: " + "detail " * 20) for n in range(80)
    ]
    entries = say(thread_id, *lines)
    tokens = count_entry_tokens(entries[1])
    model = ScriptedModel([ScriptedAnswer("[]", repeat=True)])
    config = Config(chapter_tokens=tokens * 2, chapters_per_arc=2, arcs_per_saga=2)
    result = compact_levels(entries, None, config, model)
    levels = result.levels
    assert result.chapters >= 20 and result.calls == result.chapters
    assert levels["saga"] is not None
    assert 1 <= len(levels["arcs"]) <= 2 and 1 <= len(levels["chapters"]) <= 2
    # The nodes cover the thread in order, without a model call for the folds.
    spans = [levels["saga"], *levels["arcs"], *levels["chapters"]]
    assert spans[0]["from"] == entries[0].pk and spans[-1]["to"] == entries[-1].pk
    ids = [e.pk for e in entries]
    starts = [ids.index(node["from"]) for node in spans]
    assert starts == sorted(starts)
    assert [a["text"] for a in open_items(levels)] == ["keep the audit log"]
    assert any(a["text"] == "keep the audit log" for a in levels["saga"]["atoms"])
    json.dumps(levels)


def test_an_open_task_survives_twenty_compactions(thread_id: str) -> None:
    levels = None
    say(thread_id, ("user", "x"))
    first = say(thread_id, ("user", "TODO: renew the TLS certificate"))
    model = ScriptedModel([ScriptedAnswer("[]", repeat=True)])
    config = Config(chapter_tokens=200, chapters_per_arc=2, arcs_per_saga=2)
    batch = first
    sizes = []
    for round_ in range(20):
        result = compact_levels(batch, levels, config, model)
        levels = json.loads(json.dumps(result.levels))
        assert [a["text"] for a in open_items(levels)] == ["renew the TLS certificate"]
        assert "- renew the TLS certificate" in result.handoff.split("## Constraints")[0]
        sizes.append(len(result.handoff))
        batch = say(thread_id, *[("assistant", f"round {round_} note {n} " * 10) for n in range(6)])
    assert levels is not None and levels["saga"] is not None
    assert sizes[-1] == sizes[0]


def test_the_saga_keeps_open_items_and_the_newest_facts_and_files() -> None:
    facts = [
        {
            "key": f"fact:f{n}",
            "kind": "fact",
            "status": "closed",
            "text": f"f{n}",
            "verified": True,
            "evidence": [],
        }
        for n in range(SAGA_KEEP + 50)
    ]
    task = {
        "key": "task:t",
        "kind": "task",
        "status": "open",
        "text": "t",
        "verified": True,
        "evidence": [],
    }
    chapters = [{"from": "a", "to": "b", "atoms": [task]}] + [
        {"from": "a", "to": "b", "atoms": facts[n : n + 50]} for n in range(0, SAGA_KEEP + 50, 50)
    ]
    empty = [{"from": "c", "to": "d", "atoms": []}] * 2
    folded = fold({"chapters": chapters + empty}, 1, 1)
    assert len(folded["arcs"]) == 1 and len(folded["chapters"]) == 1
    items = current_items(folded)
    assert "task:t" in items
    saga = folded["saga"]["atoms"]
    assert any(a["key"] == "task:t" for a in saga)
    kept = [a["text"] for a in saga if a["kind"] == "fact"]
    assert kept == [f"f{n}" for n in range(50, SAGA_KEEP + 50)]


# --- the summary must hold every open item -----------------------------------------------------


def test_levels_that_drop_an_open_item_are_refused(
    thread_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = say(thread_id, ("user", "TODO: rotate the keys"))
    first = compact_levels(entries, None, Config(), ScriptedModel([answer()]))
    with pytest.raises(CompactionDropsOpenItems) as raised:
        check_keeps_open(first.levels, {"saga": None, "arcs": [], "chapters": []})
    assert raised.value.dropped == ["task: rotate the keys"]

    def losing_fold(levels: dict[str, Any], *_args: Any) -> dict[str, Any]:
        return {"version": 1, "saga": None, "arcs": [], "chapters": levels["chapters"][-1:]}

    monkeypatch.setattr(hierarchical, "fold", losing_fold)
    more = say(thread_id, ("assistant", "ok"))
    with pytest.raises(CompactionDropsOpenItems):
        compact_levels(more, first.levels, Config(), ScriptedModel([answer()]))


# --- the handoff --------------------------------------------------------------------------------


def test_handoff_sections_in_fixed_order() -> None:
    def a(kind: str, status: str, text: str, verified: bool = True) -> dict[str, Any]:
        key = atom_key(kind, text)
        return {"key": key, "kind": kind, "status": status, "text": text, "verified": verified}

    atoms = [
        a("fact", "closed", "Ana is the owner"),
        a("task", "closed", "set up CI"),
        a("file", "closed", "app/views.py"),
        a("thread", "open", "which region?"),
        a("error", "open", "run failed", verified=False),
        a("decision", "open", "use Postgres"),
        a("constraint", "open", "no downtime"),
        a("task", "open", "add tests"),
    ]
    text = handoff_text({"chapters": [{"from": "a", "to": "b", "atoms": atoms}]})
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert (
        headings
        == list(SECTIONS)
        == [
            "Open tasks",
            "Constraints",
            "Decisions",
            "Unresolved errors",
            "Open questions",
            "Files",
            "Facts",
            "Done",
        ]
    )
    sections = dict(block.split("\n", 1) for block in text.split("\n\n"))
    assert sections["## Open tasks"] == "- add tests"
    assert sections["## Unresolved errors"] == "- run failed (unverified)"
    assert sections["## Done"] == "- set up CI"
    empty = handoff_text({"saga": None, "arcs": [], "chapters": []})
    assert [line for line in empty.splitlines() if line.startswith("## ")] == [
        f"## {name}" for name in SECTIONS
    ]
