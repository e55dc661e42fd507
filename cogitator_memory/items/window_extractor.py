"""``MemoryExtractor``: a model reads a conversation a window at a time and says what it
established; code checks every quote and decides who said it.

- Entries are read in windows of ``window_tokens`` (4,000 by default), one model call
  each, every message shown with its number, its date in the speaker's zone and who said
  it (``EXTRACTION_PROMPT``).
- The answer is read by ``parse_extraction``. An answer cut at the token limit
  (``max_tokens``, 8,000) keeps the elements it finished, and the model is asked to go on
  after the last one, up to ``continuations`` (4) times. An answer that holds no array is
  asked for again; after ``tries`` (3) the window fails with ``ExtractionAnswerError``.
- Every quote is checked against the entry it names (whitespace aside). An item's trust
  is that of the least trusted entry a holding quote is in (``trust_of_entry``): the
  user's own message is ``user``, another user's message, the assistant's and anything
  without a holding quote ``model``, a tool's result ``tool``. What the answer claims
  about trust or status is never read, so a model that obeys an attacker plants nothing.
- Time words an item carries are resolved from the message that said them
  (``resolve_time``): an event takes the interval, anything else starts at its start.
- In ``shadow`` mode (the default) every new item is written as suggested, for review; in
  ``auto`` mode the rules of ``MemoryItems`` decide.
- What went while the model answered is not written. A window's items are written in one
  transaction that first locks the window's thread (the row lock every cascade takes
  before it deletes or redacts entries), then reads which of the window's entries stand
  (exist, unredacted): a quote of any other entry is left out, and an item left without
  a quote is dropped. A cascade either committed before that read (what it took is seen
  gone) or waits for the write and then finds the items' evidence and takes it. Then
  ``before_write(items)``, the caller's hook, sees the items in the same transaction under
  the same lock and returns those to write.
- Relations an element names (``source``, ``relation``, ``target``, with a quote) are
  handed to ``write_relations(scope, relations)``, the seam the knowledge graph fills
  from above (``graph/extraction.py``), in the same transaction, after the items: a
  relation whose quote is not of a standing entry of the window is dropped, one whose
  words do not hold in it is kept, its quote unverified (the rule of items' quotes). A
  model's relation is never active on its own: it waits for a reviewer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from zoneinfo import ZoneInfo

from django.db import transaction

from cogitator_memory.exceptions import ExtractionAnswerError, InvalidInput
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.extraction_prompt import (
    EXTRACTION_CONTINUATION_PROMPT,
    EXTRACTION_PROMPT,
    ExtractedItem,
    ExtractedQuote,
    parse_extraction,
)
from cogitator_memory.items.models import TRUST_RANK, ItemKind, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem, Written
from cogitator_memory.items.timing import resolve_time
from cogitator_memory.lineage import quote_holds
from cogitator_memory.llm.protocol import Completion, Message, Summarize
from cogitator_memory.threads.locking import lock_threads
from cogitator_memory.threads.models import Entry, Role
from cogitator_memory.threads.text import entry_text
from cogitator_memory.tokens import count_tokens

__all__ = [
    "EXTRACTOR_VERSION",
    "BeforeWrite",
    "ExtractionResult",
    "MemoryExtractor",
    "NewRelation",
    "WriteRelations",
    "standing_entries",
    "trust_of_entry",
]

# Part of every window's natural key: a new version reads windows again.
EXTRACTOR_VERSION = "1"
DEFAULT_WINDOW_TOKENS = 4000
DEFAULT_MAX_TOKENS = 8000
EXTRACTION_CONTINUATIONS = 4
EXTRACTION_TRIES = 3
SHADOW = "shadow"
AUTO = "auto"
# Entry ids per query: well under SQLite's parameter limit.
IDS_PER_QUERY = 500

BeforeWrite = Callable[[list[NewItem]], list[NewItem]]
"""``before_write(items)``: called with a window's items in the write's transaction,
under the lock of the window's thread, after what went was left out; returns the items
to write."""


@dataclass(frozen=True)
class NewRelation:
    """A relation extraction found: ``source`` ``relation`` ``target`` (names, as the
    model wrote them) and the quote it stands on."""

    source: str
    relation: str
    target: str
    evidence: tuple[NewEvidence, ...]


class WriteRelations(Protocol):
    """``write_relations(scope, relations)``: write a window's relations into ``scope`` in
    the open transaction; returns how many were written."""

    def __call__(self, scope: MemoryScope, relations: Sequence[NewRelation]) -> int: ...


def standing_entries(window: Sequence[Entry]) -> set[str]:
    """The ids of the window's entries that stand: they exist and are not redacted. Read
    it under the lock of their threads (``lock_threads``), so it holds until commit."""
    ids = [entry.pk for entry in window]
    standing: set[str] = set()
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        standing.update(
            Entry.objects.filter(pk__in=chunk, redaction__isnull=True).values_list("pk", flat=True)
        )
    return standing


def trust_of_entry(entry: Entry, user_id: str | None) -> str:
    """Who said what an entry holds, for the memory of ``user_id``: the user's own message
    is ``user``, a system message ``system``, a tool result ``tool`` (``web`` when the entry
    says it came from the web), and everything else (the assistant, another user) ``model``."""
    metadata = entry.metadata or {}
    if entry.role == Role.SYSTEM:
        return Trust.SYSTEM
    if entry.role == Role.TOOL or entry.type == "tool_result":
        return Trust.WEB if metadata.get("source") == "web" else Trust.TOOL
    if entry.role == Role.USER:
        author = metadata.get("userId")
        if author is None:
            author = entry.thread.user_id
        return Trust.USER if user_id is not None and author == user_id else Trust.MODEL
    return Trust.MODEL


@dataclass
class ExtractionResult:
    """What one extraction did: windows read, model calls made, states written (or merged),
    elements dropped (no quote in the window, or gone before the write), and relations
    written."""

    windows: int = 0
    calls: int = 0
    written: list[Written] = field(default_factory=list)
    dropped: int = 0
    relations: int = 0


class MemoryExtractor:
    def __init__(
        self,
        *,
        summarize: Summarize,
        items: MemoryItems | None = None,
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        continuations: int = EXTRACTION_CONTINUATIONS,
        tries: int = EXTRACTION_TRIES,
        mode: str = SHADOW,
        write_relations: WriteRelations | None = None,
    ) -> None:
        if mode not in (SHADOW, AUTO):
            raise InvalidInput({"mode": f"mode is {SHADOW!r} or {AUTO!r}, not {mode!r}."})
        self.summarize = summarize
        self.items = items or MemoryItems()
        self.window_tokens = window_tokens
        self.max_tokens = max_tokens
        self.continuations = continuations
        self.tries = tries
        self.mode = mode
        self.write_relations = write_relations

    # --- windows and transcripts ---------------------------------------------------------

    def windows(self, entries: Sequence[Entry]) -> list[list[Entry]]:
        """The entries with text, in windows of at most ``window_tokens`` (a longer entry
        is a window of its own)."""
        windows: list[list[Entry]] = []
        current: list[Entry] = []
        used = 0
        for entry in entries:
            text = entry_text(entry)
            if not text.strip() or entry.is_redacted:
                continue
            tokens = count_tokens(text)
            if current and used + tokens > self.window_tokens:
                windows.append(current)
                current, used = [], 0
            current.append(entry)
            used += tokens
        if current:
            windows.append(current)
        return windows

    @staticmethod
    def transcript(window: Sequence[Entry], time_zone: str) -> str:
        zone = ZoneInfo(time_zone)
        lines = []
        for number, entry in enumerate(window, start=1):
            said_at = entry.created_at.astimezone(zone).strftime("%Y-%m-%d %H:%M (%a)")
            who = entry.role or "tool"
            if entry.name:
                who = f"{who} {entry.name}"
            lines.append(f"[{number}] {said_at}, {who}:\n{entry_text(entry)}")
        return "\n\n".join(lines)

    # --- the model -------------------------------------------------------------------

    def _ask(self, messages: list[Message], result: ExtractionResult) -> Completion:
        result.calls += 1
        return self.summarize(messages, prompt=EXTRACTION_PROMPT, max_tokens=self.max_tokens)

    def read_window(
        self, window: Sequence[Entry], time_zone: str, result: ExtractionResult
    ) -> list[ExtractedItem]:
        """The elements the model finds in one window, cut answers continued."""
        asked: list[Message] = [{"role": "user", "content": self.transcript(window, time_zone)}]
        for _try in range(self.tries):
            answer = self._ask(asked, result)
            parsed = parse_extraction(answer.text)
            if parsed.found_array:
                break
        else:
            raise ExtractionAnswerError(self.tries)
        found = list(parsed.items)
        conversation = list(asked)
        continued = 0
        while (answer.truncated or not parsed.complete) and continued < self.continuations:
            continued += 1
            conversation += [
                {"role": "assistant", "content": answer.text},
                {"role": "user", "content": EXTRACTION_CONTINUATION_PROMPT},
            ]
            answer = self._ask(conversation, result)
            parsed = parse_extraction(answer.text)
            if not parsed.found_array:
                break
            found += parsed.items
        return found

    # --- writing ---------------------------------------------------------------------

    def _new_item(
        self,
        element: ExtractedItem,
        window: Sequence[Entry],
        scope: MemoryScope,
        time_zone: str,
        standing: set[str],
    ) -> NewItem | None:
        """The item an element says, standing on its quotes of the window's ``standing``
        entries (a quote of another message or of one that went is left out); None when
        none is left. Trust is read from those entries only."""
        evidence: list[NewEvidence] = []
        holding: list[Entry] = []
        for quote in element.quotes:
            if not 1 <= quote.message <= len(window):
                continue
            entry = window[quote.message - 1]
            if entry.pk not in standing:
                continue
            evidence.append(NewEvidence(quote=quote.text, entry_id=entry.pk))
            if quote_holds(quote.text, entry_text(entry)):
                holding.append(entry)
        if not evidence:
            return None
        trust = min(
            (trust_of_entry(entry, scope.user_id) for entry in holding),
            key=lambda value: TRUST_RANK[value],
            default=Trust.MODEL,
        )
        said_in = holding[0] if holding else window[-1]
        valid_from = ends_at = None
        if element.when:
            resolved = resolve_time(element.when, said_in.created_at, time_zone)
            if resolved is not None:
                valid_from = resolved.start
                if element.kind == ItemKind.EVENT:
                    ends_at = resolved.end
        return NewItem(
            kind=element.kind,
            subject=element.subject,
            attribute=element.attribute,
            value=element.value,
            content=element.statement,
            trust=trust,
            confidence=element.confidence,
            valid_from=valid_from,
            ends_at=ends_at,
            evidence=evidence,
            metadata={
                "extractor": EXTRACTOR_VERSION,
                **({"when": element.when} if element.when else {}),
            },
        )

    @staticmethod
    def _new_relations(
        elements: Sequence[ExtractedItem], window: Sequence[Entry], standing: set[str]
    ) -> list[NewRelation]:
        """The relations of the elements whose quote is of a standing entry of the window."""
        relations: list[NewRelation] = []
        for element in elements:
            for relation in element.relations:
                quote: ExtractedQuote = relation.quote
                if not 1 <= quote.message <= len(window):
                    continue
                entry = window[quote.message - 1]
                if entry.pk not in standing:
                    continue
                evidence = (NewEvidence(quote=quote.text, entry_id=entry.pk),)
                relations.append(
                    NewRelation(relation.source, relation.relation, relation.target, evidence)
                )
        return relations

    def extract(
        self,
        entries: Sequence[Entry],
        *,
        scope: MemoryScope,
        time_zone: str = "UTC",
        before_write: BeforeWrite | None = None,
    ) -> ExtractionResult:
        """Read ``entries`` (oldest first) and write what they established into ``scope``,
        each window in a transaction of its own (``write_window``). Raises
        ``ExtractionAnswerError`` for a window the model answered without an array three
        times, and ``LLMError`` when the model fails; windows before it are kept."""
        try:
            ZoneInfo(time_zone)
        except (ValueError, KeyError) as exc:
            raise InvalidInput({"time_zone": f"Unknown time zone {time_zone!r}."}) from exc
        result = ExtractionResult()
        for window in self.windows(entries):
            result.windows += 1
            elements = self.read_window(window, time_zone, result)
            result.written += self.write_window(
                window,
                elements,
                scope=scope,
                time_zone=time_zone,
                before_write=before_write,
                result=result,
            )
        return result

    def write_window(
        self,
        window: Sequence[Entry],
        elements: Sequence[ExtractedItem],
        *,
        scope: MemoryScope,
        time_zone: str,
        result: ExtractionResult,
        before_write: BeforeWrite | None = None,
        standing: set[str] | None = None,
    ) -> list[Written]:
        """Write the elements of one window, in one transaction: the window's thread is
        locked first (the lock a cascade takes before it deletes or redacts entries), then
        the quotes of entries that went (deleted or redacted) while the model answered are
        left out and the items left without a quote dropped, then ``before_write`` sees
        the items, then they are written. ``standing``: the window's entries that stand,
        when the caller read them under the lock already (``standing_entries``)."""
        with transaction.atomic():
            lock_threads(entry.thread_id for entry in window)
            if standing is None:
                standing = standing_entries(window)
            kept = [
                item
                for item in (
                    self._new_item(element, window, scope, time_zone, standing)
                    for element in elements
                )
                if item is not None
            ]
            if before_write is not None:
                kept = before_write(kept)
            result.dropped += len(elements) - len(kept)
            activate = self.mode == AUTO
            written = [self.items.write(scope, item, activate=activate) for item in kept]
            if self.write_relations is not None:
                relations = self._new_relations(elements, window, standing)
                if relations:
                    result.relations += self.write_relations(scope, relations)
            return written
