"""What the extraction model is asked and how its answer is read.

The model is shown a window of a conversation as numbered messages, each with its date
and who said it, and asked for a JSON array of what the conversation established, each
element grounded in quotes of the numbered messages. ``parse_extraction`` reads that
array wherever it stands in the answer (past text, code fences, or brackets such as a
message number ``[3]``), keeps the elements that fit the shape, reads a null or blank
field as absent, and drops an element that is not JSON or does not fit instead of the
whole answer. Whatever the answer claims beyond the shape (a trust, a status, an id) is
never read: who said a thing is decided from the quoted entries, by code. An element may
name relations between what the conversation names (``relations``, each with its quote);
an answer without them reads as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cogitator_memory.items.models import ItemKind

__all__ = [
    "EXTRACTION_CONTINUATION_PROMPT",
    "EXTRACTION_PROMPT",
    "ExtractedItem",
    "ExtractedQuote",
    "ExtractedRelation",
    "Parsed",
    "parse_extraction",
]

EXTRACTION_PROMPT = """You read a conversation and write down what it established about \
the people, places and things in it, so that an assistant can remember it later.

The conversation is shown as numbered messages: [n] date, who said it, then the text.

Answer with a JSON array only. Each element is one thing the conversation established:
{
  "kind": one of "fact", "event", "preference", "instruction", "opinion", "lesson",
  "subject": who or what it is about, by name (use "user" for the person the assistant \
talks with when no name is known),
  "attribute": what about the subject, a short lower-case label ("home city", "diet", \
"job"), the same label each time the same thing is meant,
  "value": the value of the attribute, short,
  "statement": the whole thing as one sentence,
  "confidence": how sure the conversation makes it, from 0 to 1,
  "when": the time words of the conversation that say when it holds or happened, \
exactly as written ("last May", "since 2019", "yesterday"), or null,
  "quotes": [{"message": the message number, "text": the words of that message that \
say it, copied exactly}],
  "relations": how the subject relates to other people, places and things the \
conversation names, or []: [{"source": who or what relates, by name (the subject when \
left out), "relation": how, a short lower-case label ("works at", "sister of", \
"lives in"), "target": to whom or what, by name, "message": the message number, \
"quote": the words of that message that say it, copied exactly}]
}

Write down only what the messages say; every element and every relation needs a quote \
copied word for word. Leave out greetings and small talk. When nothing is worth remembering, \
answer []."""

EXTRACTION_CONTINUATION_PROMPT = """Your answer was cut off at the length limit. Go on \
with the JSON array after the last complete element: answer with a JSON array of the \
elements that follow, and nothing else. Answer [] when there are none."""

MAX_FIELD = 10_000
MAX_LABEL = 255
# A relation's label, as long as a graph edge's relation may be.
MAX_RELATION = 128


@dataclass(frozen=True)
class ExtractedQuote:
    message: int
    text: str


@dataclass(frozen=True)
class ExtractedRelation:
    """A relation an element names: ``source`` ``relation`` ``target``, said by the
    words ``quote`` of message ``message``."""

    source: str
    relation: str
    target: str
    quote: ExtractedQuote


@dataclass(frozen=True)
class ExtractedItem:
    """One element of the model's answer, as the shape allows it (nothing else)."""

    kind: str
    subject: str
    attribute: str
    value: str
    statement: str = ""
    confidence: float = 0.5
    when: str | None = None
    quotes: tuple[ExtractedQuote, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()


@dataclass(frozen=True)
class Parsed:
    """The elements read; ``found_array`` is False when the answer held no array at all;
    ``complete`` is False when the array was cut before its end (the elements before the
    cut are kept)."""

    items: list[ExtractedItem]
    found_array: bool
    complete: bool


def _text(value: Any, limit: int) -> str | None:
    """A non-blank text field, or None (absent) for null, blank and anything else."""
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        return None
    return value.strip()


def _element(value: Any) -> ExtractedItem | None:
    """The element if it fits the shape; None to drop it."""
    if not isinstance(value, dict):
        return None
    kind = _text(value.get("kind"), 32)
    subject = _text(value.get("subject"), MAX_LABEL)
    attribute = _text(value.get("attribute"), MAX_LABEL)
    item_value = _text(value.get("value"), MAX_FIELD)
    if kind not in ItemKind.values or not subject or not attribute or not item_value:
        return None
    confidence = value.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        confidence = 0.5
    quotes = []
    for quote in value.get("quotes") or ():
        if not isinstance(quote, dict):
            continue
        number, words = quote.get("message"), _text(quote.get("text"), MAX_FIELD)
        if isinstance(number, int) and not isinstance(number, bool) and words:
            quotes.append(ExtractedQuote(number, words))
    return ExtractedItem(
        relations=_relations(value.get("relations"), subject),
        kind=kind,
        subject=subject,
        attribute=attribute.lower(),
        value=item_value,
        statement=_text(value.get("statement"), MAX_FIELD) or "",
        confidence=min(1.0, max(0.0, float(confidence))),
        when=_text(value.get("when"), 200),
        quotes=tuple(quotes),
    )


def _relations(value: Any, subject: str) -> tuple[ExtractedRelation, ...]:
    """The relations of an element that fit the shape (the others are dropped); the
    source is the element's subject when left out."""
    if not isinstance(value, list):
        return ()
    relations = []
    for relation in value:
        if not isinstance(relation, dict):
            continue
        source = _text(relation.get("source"), MAX_LABEL) or subject
        kind = _text(relation.get("relation"), MAX_RELATION)
        target = _text(relation.get("target"), MAX_LABEL)
        number, words = relation.get("message"), _text(relation.get("quote"), MAX_FIELD)
        if (
            kind
            and target
            and words
            and isinstance(number, int)
            and not isinstance(number, bool)
            and source.casefold() != target.casefold()
        ):
            relations.append(ExtractedRelation(source, kind, target, ExtractedQuote(number, words)))
    return tuple(relations)


def _elements_of(text: str, start: int) -> tuple[list[Any], bool]:
    """The JSON values of the array opening at ``start``, one at a time, and whether the
    array closed; an element that is not JSON is skipped to the next comma at its depth."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = start + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text):
            return values, False
        if text[position] == "]":
            return values, True
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            skipped = _skip_element(text, position)
            if skipped is None:
                return values, False
            position = skipped
            continue
        values.append(value)


def _skip_element(text: str, position: int) -> int | None:
    """The position after an unreadable element: the next comma or closing bracket of the
    array, outside strings and nested brackets; None when the text ends first."""
    depth = 0
    in_string = False
    escaped = False
    for index in range(position, len(text)):
        character = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
        elif character in "]}":
            if depth == 0:
                return index
            depth -= 1
        elif character == "," and depth == 0:
            return index + 1
    return None


def _looks_like_items(start: int, text: str) -> bool:
    """Whether the bracket at ``start`` opens an array of objects (or an empty one), not a
    message number such as [3] or a word in brackets."""
    rest = text[start + 1 :].lstrip()
    return rest.startswith("{") or rest.startswith("]")


def first_object_array(answer: object) -> tuple[list[Any], bool, bool]:
    """The JSON values of the first array of objects (or empty array) in a model's answer,
    past any text and brackets before it; whether there was one; whether it closed (an
    answer cut at its length limit leaves it open). Extraction and compaction read their
    answers with it."""
    if not isinstance(answer, str):
        return [], False, False
    for start, character in enumerate(answer):
        if character == "[" and _looks_like_items(start, answer):
            values, closed = _elements_of(answer, start)
            return values, True, closed
    return [], False, False


def parse_extraction(answer: str) -> Parsed:
    """Read the model's answer: the first array of objects in it (or an empty array)."""
    values, found, closed = first_object_array(answer)
    items = [item for item in (_element(value) for value in values) if item is not None]
    return Parsed(items, found, closed)
