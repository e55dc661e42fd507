"""Compaction atoms: what one chapter of a conversation established, checked quote by quote.

An atom is a JSON-serializable dict::

    {"key": "task:fix the login bug", "kind": "task", "status": "open",
     "text": "Fix the login bug", "verified": True, "origin": "model",
     "evidence": [{"entry": "ent_…", "quote": "…", "verified": True}]}

``kind`` is one of ``KINDS``; tasks, decisions, constraints, errors and threads (open
questions) are *items* that are open or closed; facts and files are kept as they are.
``key`` names the item an atom speaks of (its kind and its text, case and spacing aside, or
the open item the model named), so a later atom can close it or open it again.

- ``chapter_atoms`` asks the model about one window: a numbered transcript, the prompt
  (``ATOMS_PROMPT``, the open items it may close, then ``summary_prompt``) asking for a
  JSON array of atoms. An answer with no array is asked for again, up to ``ATOM_TRIES`` (3)
  times, then ``CompactionAnswerError``; an answer cut at its length limit keeps the atoms
  it finished and is continued, up to ``ATOM_CONTINUATIONS`` (4) times. The array is read by
  the extraction's reader (``items/extraction_prompt.py``); an element that is not an atom is left
  out. Every quote is checked against the entry it names (``lineage.verify_evidence``): an
  atom whose quotes do not all hold (or that has none) is not verified.
- ``entry_atoms`` takes from the entries, with no model: the files tool calls worked on,
  the failed tool calls (open errors) and the task lines (``TODO:``, ``- [ ]`` open,
  ``- [x]`` closed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from cogitator_memory.exceptions import CompactionAnswerError
from cogitator_memory.items.extraction_prompt import (
    EXTRACTION_CONTINUATION_PROMPT,
    first_object_array,
)
from cogitator_memory.lineage import VERIFIED, Quote, verify_evidence
from cogitator_memory.llm.protocol import Completion, Message, Summarize
from cogitator_memory.threads.models import Entry, Role
from cogitator_memory.threads.text import entry_text

__all__ = [
    "ATOMS_PROMPT",
    "ATOM_CONTINUATIONS",
    "ATOM_TRIES",
    "ITEM_KINDS",
    "KINDS",
    "Atom",
    "AtomConfig",
    "atom_key",
    "chapter_atoms",
    "entry_atoms",
    "parse_atoms",
    "transcript",
]

Atom = dict[str, Any]

KINDS = ("fact", "task", "decision", "constraint", "error", "file", "thread")
# Kinds that are open until an atom whose evidence holds closes them.
ITEM_KINDS = frozenset({"task", "decision", "constraint", "error", "thread"})
STATUSES = ("open", "closed")
ATOM_TRIES = 3
ATOM_CONTINUATIONS = 4
DEFAULT_MAX_TOKENS = 8000
MAX_TEXT = 2000

ATOMS_PROMPT = """You read a part of a conversation between a user, an assistant and its \
tools, and write down what it established, so that the work can go on without it.

The conversation is shown as numbered messages: [n] who said it, then the text.

Answer with a JSON array only. Each element is one atom:
{
  "kind": one of "fact", "task", "decision", "constraint", "error", "file", "thread" \
(an open question),
  "status": "open" (still to do, still in force, unresolved, unanswered) or "closed" \
(done, dropped, resolved, answered),
  "text": the atom as one short sentence,
  "item": the label of the open item below that this atom closes or speaks of, or null,
  "evidence": [{"message": the message number, "quote": the words of that message that \
say it, copied exactly}]
}

Every atom needs at least one quote copied word for word. To close an open item, write an \
atom with its label in "item", status "closed" and the quote that shows it done. When \
nothing is worth keeping, answer []."""


class AtomConfig(Protocol):
    """What ``chapter_atoms`` reads of a compaction config (read-only)."""

    @property
    def summary_model(self) -> str | None: ...
    @property
    def summary_prompt(self) -> str | None: ...


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!;: ")


def atom_key(kind: str, text: str) -> str:
    """The item an atom of this kind and text speaks of: case, spacing and a final stop
    aside."""
    return f"{kind}:{_norm(text)}"


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:MAX_TEXT]


def transcript(window: Sequence[Entry]) -> str:
    """The window as numbered messages: ``[n] who:`` then the text, and the tools called."""
    lines = []
    for number, entry in enumerate(window, start=1):
        who = entry.role or "tool"
        if entry.name:
            who = f"{who} {entry.name}"
        body = entry_text(entry)
        for call in entry.tool_calls or ():
            name, arguments = _call_name_and_arguments(call)
            body += f"\n(calls {name} {json.dumps(arguments, sort_keys=True, default=str)})"
        lines.append(f"[{number}] {who}:\n{body.strip()}")
    return "\n\n".join(lines)


def _open_list(open_items: Sequence[Atom]) -> str:
    if not open_items:
        return "Items still open: none."
    lines = [f"[O{n}] {atom['kind']}: {atom['text']}" for n, atom in enumerate(open_items, 1)]
    return "Items still open (you may close them):\n" + "\n".join(lines)


def _prompt(config: AtomConfig, open_items: Sequence[Atom]) -> str:
    parts = [ATOMS_PROMPT, _open_list(open_items)]
    extra = getattr(config, "summary_prompt", None)
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def parse_atoms(answer: str) -> tuple[list[dict[str, Any]], bool, bool]:
    """The raw elements of the first array of objects in ``answer``, whether there was an
    array, and whether it closed (the extraction's reader)."""
    values, found, closed = first_object_array(answer)
    return [v for v in values if isinstance(v, dict)], found, closed


def _checked_atom(
    value: dict[str, Any], window: Sequence[Entry], open_items: Sequence[Atom]
) -> Atom | None:
    """The element as a checked atom, or None when it is not an atom."""
    kind, text, status = value.get("kind"), _text(value.get("text")), value.get("status")
    item = value.get("item")
    named: Atom | None = None
    if isinstance(item, str) and re.fullmatch(r"O\d+", item.strip()):
        number = int(item.strip()[1:])
        if 1 <= number <= len(open_items):
            named = open_items[number - 1]
    if kind not in KINDS and named is not None:
        kind = named["kind"]
    if kind not in KINDS or status not in STATUSES or text is None:
        return None
    evidence = []
    for quote in value.get("evidence") or ():
        if not isinstance(quote, dict):
            continue
        message, words = quote.get("message"), _text(quote.get("quote", quote.get("text")))
        if isinstance(message, bool) or not isinstance(message, int) or words is None:
            continue
        number = message
        entry = window[number - 1] if 1 <= number <= len(window) else None
        verdict = (
            verify_evidence(Quote(words, entry.pk), entry) == VERIFIED
            if entry is not None and not entry.is_redacted
            else False
        )
        evidence.append({"entry": entry.pk if entry else None, "quote": words, "verified": verdict})
    key = named["key"] if named is not None and named["kind"] == kind else atom_key(kind, text)
    return {
        "key": key,
        "kind": kind,
        "status": status,
        "text": text,
        "verified": bool(evidence) and all(q["verified"] for q in evidence),
        "origin": "model",
        "evidence": evidence,
    }


def _ask(
    summarize: Summarize, messages: list[Message], config: AtomConfig, prompt: str
) -> Completion:
    return summarize(
        messages,
        model=getattr(config, "summary_model", None),
        prompt=prompt,
        max_tokens=getattr(config, "max_tokens", None) or DEFAULT_MAX_TOKENS,
    )


def chapter_atoms(
    window: Sequence[Entry],
    config: AtomConfig,
    own: Sequence[Entry] | None = None,
    open: Sequence[Atom] = (),
    *,
    summarize: Summarize,
) -> list[Atom]:
    """The checked atoms of one window: the model's, then those taken from ``own`` (the
    entries the chapter owns; the whole window by default) with no model. ``open`` are the
    items still open, which the model is told and may close.

    Raises ``CompactionAnswerError`` after ``ATOM_TRIES`` answers without an array, and
    ``LLMError`` when the model fails."""
    window = list(window)
    own = window if own is None else list(own)
    open_items = list(open)
    prompt = _prompt(config, open_items)
    asked: list[Message] = [{"role": "user", "content": transcript(window)}]
    for _try in range(ATOM_TRIES):
        answer = _ask(summarize, asked, config, prompt)
        values, found, complete = parse_atoms(answer.text)
        if found:
            break
    else:
        raise CompactionAnswerError(ATOM_TRIES)
    elements = list(values)
    conversation = list(asked)
    continued = 0
    while (answer.truncated or not complete) and continued < ATOM_CONTINUATIONS:
        continued += 1
        conversation += [
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": EXTRACTION_CONTINUATION_PROMPT},
        ]
        answer = _ask(summarize, conversation, config, prompt)
        values, found, complete = parse_atoms(answer.text)
        if not found:
            break
        elements += values
    atoms = [
        atom
        for atom in (_checked_atom(value, window, open_items) for value in elements)
        if atom is not None
    ]
    return atoms + entry_atoms(own)


# --- atoms taken from the entries, with no model ---------------------------------------------

PATH_ARGUMENTS = ("path", "file_path", "filepath", "filename", "file", "old_path", "new_path")
OPEN_TASK = re.compile(r"^\s*(?:[-*]\s*\[ \]\s+|(?:[-*]\s*)?TODO:\s*)(?P<text>\S.*)$", re.M)
DONE_TASK = re.compile(r"^\s*[-*]\s*\[[xX]\]\s+(?P<text>\S.*)$", re.M)


def _call_name_and_arguments(call: Any) -> tuple[str, Any]:
    if not isinstance(call, dict):
        return "tool", {}
    inner = call.get("function")
    function: dict[str, Any] = inner if isinstance(inner, dict) else call
    name = function.get("name") or call.get("name") or "tool"
    arguments = function.get("arguments", function.get("input", call.get("args", {})))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = {"raw": arguments}
    return str(name), arguments


def _code_atom(kind: str, status: str, text: str, entry: Entry, quote: str) -> Atom:
    text = text.strip()[:MAX_TEXT]
    return {
        "key": atom_key(kind, text),
        "kind": kind,
        "status": status,
        "text": text,
        "verified": True,
        "origin": "entries",
        "evidence": [{"entry": entry.pk, "quote": quote.strip()[:MAX_TEXT], "verified": True}],
    }


def _failed(result: Any) -> str | None:
    """The error of a failed tool result, or None."""
    if not isinstance(result, dict):
        return None
    error = result.get("error")
    if error not in (None, "", False):
        return error if isinstance(error, str) else json.dumps(error, default=str)
    if result.get("isError") or result.get("is_error"):
        content = result.get("result", result.get("content", "failed"))
        return content if isinstance(content, str) else json.dumps(content, default=str)
    return None


def entry_atoms(entries: Sequence[Entry]) -> list[Atom]:
    """Files tool calls worked on, failed tool calls and task lines, from the entries."""
    atoms: list[Atom] = []
    names: dict[str, str] = {}
    for entry in entries:
        if entry.is_redacted:
            continue
        for call in entry.tool_calls or ():
            name, arguments = _call_name_and_arguments(call)
            if isinstance(call, dict) and call.get("id"):
                names[str(call["id"])] = name
            if not isinstance(arguments, dict):
                continue
            for argument in PATH_ARGUMENTS:
                path = arguments.get(argument)
                if isinstance(path, str) and path.strip():
                    atoms.append(_code_atom("file", "closed", path, entry, path))
        for result in entry.tool_results or ():
            error = _failed(result)
            if error is None:
                continue
            call_id = str(result.get("toolCallId") or result.get("tool_call_id") or "")
            name = entry.name or names.get(call_id) or "a tool"
            first = error.strip().splitlines()[0] if error.strip() else "failed"
            atoms.append(_code_atom("error", "open", f"{name} failed: {first}", entry, first))
        if entry.role == Role.TOOL or entry.type == "tool_result":
            continue
        text = entry_text(entry)
        for match in OPEN_TASK.finditer(text):
            atoms.append(_code_atom("task", "open", match["text"], entry, match[0]))
        for match in DONE_TASK.finditer(text):
            atoms.append(_code_atom("task", "closed", match["text"], entry, match[0]))
    return atoms
