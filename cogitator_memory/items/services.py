"""``MemoryItems``: the rules of memory items, over the ``MemoryItem`` rows.

- Writing only adds: a statement becomes a new state of its slot (a subject's attribute in
  one exact scope), or merges into the newest open state when that state has the same
  value (``same_value``) and no other value followed it.
- One agent's writes go one after another (a transaction-scoped advisory lock on
  PostgreSQL; on SQLite the IMMEDIATE transaction holds the database's write lock), and new
  states are recorded at least a millisecond apart, so "known at" reads are unambiguous.
- After every change of a slot, its active, superseded and let-go states are laid out by
  time (``layout_slot``): each closed where the next starts (or at the end it was given),
  the last open. A let-go state keeps its place, so the one before it does not come back.
- An item is active on its own only when said by the system, or by the user with quotes
  that hold at ``activation_confidence``; everything else is suggested, for a reviewer.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, router, transaction
from django.db.models import F, Q, prefetch_related_objects
from django.db.models.sql import InsertQuery
from django.utils import timezone

from cogitator_memory import policy, signals
from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import InvalidItem
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import (
    TRUST_RANK,
    Entity,
    Evidence,
    ItemKind,
    ItemStatus,
    MemoryItem,
    Trust,
)
from cogitator_memory.items.querysets import ItemQuerySet
from cogitator_memory.items.selectors import DEFAULT_HELD_STATUSES, held
from cogitator_memory.jsondata import json_problem, text_problem
from cogitator_memory.lineage import Quote, verify_evidence
from cogitator_memory.prepared import prepares_statements
from cogitator_memory.threads.models import Entry, Thread

__all__ = [
    "DEFAULT_ACTIVATION_CONFIDENCE",
    "MemoryItems",
    "NewEvidence",
    "NewItem",
    "Slot",
    "Written",
    "entity_key",
    "same_value",
]

DEFAULT_ACTIVATION_CONFIDENCE = 0.7
# What an opinion gains when said again with quotes that hold, and loses when a less
# trusted source contradicts it.
OPINION_GAIN = 0.1
OPINION_LOSS = 0.2
# New states of one agent are recorded at least this far apart.
RECORDING_STEP = timedelta(milliseconds=1)
# The states a slot's timeline is made of.
TIMELINE_STATUSES = (ItemStatus.ACTIVE, ItemStatus.SUPERSEDED, ItemStatus.LET_GO)
# The states a new statement may merge into.
OPEN_STATUSES = (ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)
MAX_TEXT = 10_000
# What the layout changes in a state.
LAYOUT_SAVED = ("valid_to", "valid_to_known_at", "status")
# What activating, rejecting, letting go and marking stale change in a state.
REVIEWED_FIELDS = ("status", "activated_at", "expired_at", "stale_because")
# What merging a repeated statement may change in a state.
MERGED_FIELDS = ("trust", "verified", "confidence", "status", "activated_at")
MAX_NAME = 255


def same_value(first: str, second: str) -> bool:
    """Whether two values of a slot are the same: spacing aside; case and signs count."""
    return " ".join(first.split()) == " ".join(second.split())


def entity_key(name: str) -> str:
    """The key an entity is matched by: its name with case and spacing folded."""
    return re.sub(r"\s+", " ", name).strip().casefold()[:MAX_NAME]


@dataclass(frozen=True)
class Slot:
    """A subject's attribute: what the states of one timeline are values of."""

    subject_id: str
    attribute: str


@dataclass(frozen=True)
class NewEvidence:
    """A quote a new item stands on, and the entry it is said to be in."""

    quote: str
    entry_id: str | None = None
    tool_call_id: str | None = None
    file_range: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class NewItem:
    """A statement to write: what about whom, said by whom, holding from when."""

    kind: str
    subject: str
    attribute: str
    value: str
    trust: str
    content: str = ""
    subject_kind: str = ""
    confidence: float = 0.5
    valid_from: datetime | None = None
    ends_at: datetime | None = None
    evidence: Sequence[NewEvidence] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Written:
    """The state a statement became or merged into (``merged``)."""

    item: MemoryItem
    merged: bool


def _check_new_item(new: NewItem) -> None:
    errors: dict[str, list[str]] = {}

    def add(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    if new.kind not in ItemKind.values:
        add("kind", f"Unknown kind {new.kind!r}; expected one of {', '.join(ItemKind.values)}.")
    if new.trust not in Trust.values:
        add("trust", f"Unknown trust {new.trust!r}; expected one of {', '.join(Trust.values)}.")
    for name, value, limit in (
        ("subject", new.subject, MAX_NAME),
        ("attribute", new.attribute, MAX_NAME),
        ("value", new.value, MAX_TEXT),
    ):
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            add(name, f"A {name} is a non-empty text of at most {limit} characters.")
        elif problem := text_problem(value):
            add(name, problem)
    if not isinstance(new.content, str) or len(new.content) > MAX_TEXT:
        add("content", f"Content is a text of at most {MAX_TEXT} characters.")
    elif problem := text_problem(new.content):
        add("content", problem)
    if (
        isinstance(new.confidence, bool)
        or not isinstance(new.confidence, int | float)
        or not 0 <= new.confidence <= 1
    ):
        add("confidence", "A confidence is a number from 0 to 1.")
    for name, moment in (("valid_from", new.valid_from), ("ends_at", new.ends_at)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            add(name, f"{name} must be a datetime with a time zone.")
    if (
        isinstance(new.valid_from, datetime)
        and isinstance(new.ends_at, datetime)
        and new.valid_from.tzinfo is not None
        and new.ends_at.tzinfo is not None
        and new.ends_at <= new.valid_from
    ):
        add("ends_at", "ends_at must come after valid_from.")
    for index, evidence in enumerate(new.evidence):
        if not isinstance(evidence, NewEvidence) or not isinstance(evidence.quote, str):
            add("evidence", f"Evidence {index} must be a NewEvidence with a quote.")
        elif problem := text_problem(evidence.quote) or (
            text_problem(evidence.entry_id) if isinstance(evidence.entry_id, str) else None
        ):
            add("evidence", f"Evidence {index}: {problem}")
    if problem := json_problem(dict(new.metadata)):
        add("metadata", f"Must be JSON data: {problem}")
    if errors:
        raise InvalidItem(errors)


def _better_source(first: tuple[str, bool], second: tuple[str, bool]) -> tuple[str, bool]:
    """The more trusted source, then the one whose quotes hold."""
    return max(first, second, key=lambda source: (TRUST_RANK[source[0]], source[1]))


class MemoryItems:
    """The rules of memory items. ``activation_confidence``: the confidence at which a
    user's item whose quotes hold becomes active on its own (``ITEMS`` setting, 0.7 by
    default). ``clock`` gives "now" (tests pass their own)."""

    def __init__(
        self,
        *,
        activation_confidence: float | None = None,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.activation_confidence = (
            float(memory_settings.ITEMS["ACTIVATION_CONFIDENCE"])
            if activation_confidence is None
            else activation_confidence
        )
        self.clock = clock

    # --- the write lock and the clock ----------------------------------------------------

    def _lock_agent(self, agent_id: str) -> None:
        """Serialize the writes of one agent until the transaction ends."""
        connection = connections[router.db_for_write(MemoryItem)]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(AGENT_LOCK, [agent_lock_key(agent_id)])
        # SQLite: the IMMEDIATE transaction holds the database's write lock already.

    def lock_agents(self, agent_ids: Iterable[str]) -> None:
        """Serialize with the writes of these agents until the transaction ends (in one
        order, so two lockers of the same agents never wait on each other)."""
        for agent_id in sorted(set(agent_ids)):
            self._lock_agent(agent_id)

    # --- entities and quotes ---------------------------------------------------------

    @staticmethod
    def _lock_quoted_threads(evidence: Sequence[NewEvidence]) -> None:
        """Lock the threads of the entries the quotes name, before the agent's lock (the
        order a deletion of entries takes them: thread, then agent). A deletion either
        ends before the quotes are checked (the entry is gone: the quote stands on
        nothing) or waits for this write and then finds its evidence. SQLite's IMMEDIATE
        transaction serializes the two already."""
        ids = sorted({quote.entry_id for quote in evidence if isinstance(quote.entry_id, str)})
        connection = connections[router.db_for_write(Thread)]
        if ids and connection.features.has_select_for_update:
            locked = Thread.objects.select_for_update(of=("self",)).filter(entries__pk__in=ids)
            list(locked.order_by("pk").values_list("pk", flat=True))

    @staticmethod
    def _entities_named(scope: MemoryScope, name: str) -> Any:
        return Entity.objects.filter(agent_id=scope.agent_id, key=entity_key(name)).filter(
            Q(user_id__isnull=True) | Q(user_id=scope.user_id)
            if scope.user_id is not None
            else Q(user_id__isnull=True)
        )

    @staticmethod
    def _first_entity(candidates: Iterable[Entity]) -> Entity | None:
        """The scope's own user's entity first (there are at most a few candidates)."""
        found = sorted(candidates, key=lambda entity: (entity.user_id is None, entity.pk))
        return found[0] if found else None

    def entity_named(self, scope: MemoryScope, name: str) -> Entity | None:
        """The entity of this name the scope sees (its own user's first), if there is one."""
        return self._first_entity(self._entities_named(scope, name))

    def _entity_slot_and_recorded_at(
        self, scope: MemoryScope, new: NewItem, said_at: datetime, statuses: Sequence[str]
    ) -> tuple[Entity, list[SlotState], datetime]:
        """The entity of the statement's subject the scope sees (the rule of
        ``entity_named``) or a new one, the states of ``statuses`` of its slot in the
        scope (timeline order), and when the new state is recorded: ``said_at``, or a
        millisecond after the agent's last recorded state if that is later. One statement
        reads all three (a second one the time, for a new entity). It runs after the lock,
        as a statement of its own: a statement's snapshot is taken when it starts, so one
        that also waited for the lock would miss the writer it waited for; where the
        driver binds parameters itself, the lock is the statement before it in the same
        round trip."""
        candidates, last, slots = WriteSQL.entity_and_slot(
            scope, entity_key(new.subject), new.attribute, statuses, locking=True
        )
        entity = self._first_entity(candidates) or Entity.objects.create(
            agent_id=scope.agent_id,
            user_id=scope.user_id,
            name=" ".join(new.subject.split())[:MAX_NAME],
            key=entity_key(new.subject),
            kind=new.subject_kind or "",
        )
        now = max(said_at, last + RECORDING_STEP) if last is not None else said_at
        return entity, slots.get(entity.pk, []), now

    def _checked_quotes(
        self, scope: MemoryScope, evidence: Sequence[NewEvidence], grants: Grants | None
    ) -> list[tuple[NewEvidence, Entry | None, bool]]:
        """Each quote, the entry it may stand on, and whether it holds there. Only entries
        of threads of the item's agent count (and, with ``access``, only those the caller
        may see); a quote of any other entry stands on nothing and holds nowhere."""
        ids = [quote.entry_id for quote in evidence if isinstance(quote.entry_id, str)]
        found: dict[str, Entry] = {}
        if ids:
            entries = Entry.objects.filter(pk__in=ids, thread__agent_id=scope.agent_id)
            if grants is not None:
                entries = entries.visible_to(grants)
            found = {entry.pk: entry for entry in entries}
        checked = []
        for quote in evidence:
            entry = found.get(quote.entry_id) if quote.entry_id else None
            verdict = verify_evidence(Quote(quote.quote, quote.entry_id), entry)
            checked.append((quote, entry, verdict == "verified"))
        return checked

    def _qualifies(self, trust: str, verified: bool, confidence: float) -> bool:
        return trust == Trust.SYSTEM or (
            trust == Trust.USER and verified and confidence >= self.activation_confidence
        )

    # --- writing ---------------------------------------------------------------------

    @transaction.atomic
    def write(
        self,
        scope: MemoryScope,
        new: NewItem,
        *,
        grants: Grants | None = None,
        activate: bool = True,
    ) -> Written:
        """Write a statement into ``scope``: a new state of its slot, or a merge into the
        newest open state when it repeats its value. ``activate`` False (shadow mode)
        leaves a new item suggested whoever said it. Raises ``InvalidItem`` and, with
        ``access``, ``NoGrant`` for a scope the caller's grants do not reach."""
        _check_new_item(new)
        policy.require_write(grants, scope.agent_id, scope.user_id)
        self._lock_quoted_threads(new.evidence)
        # The agent's lock is taken by the read below, first.
        said_at = self.clock()
        # The slot is read once, with its subject: the newest open state (to merge into or
        # to contradict) is the last open one in timeline order, and the rest is what the
        # layout needs. Suggested states are read for the merge only; they have no place in
        # the timeline.
        entity, read, now = self._entity_slot_and_recorded_at(
            scope, new, said_at, (*OPEN_STATUSES, ItemStatus.LET_GO)
        )
        quotes = self._checked_quotes(scope, new.evidence, grants)
        verified = any(holds for _quote, _entry, holds in quotes)
        latest = next((state for state in reversed(read) if state.status in OPEN_STATUSES), None)
        states: list[SlotState | MemoryItem] = list(read)
        item_fields: list[str] = []
        if latest is not None and latest.valid_to is None and same_value(latest.value, new.value):
            # The whole row: it is what the caller gets back.
            item = MemoryItem.objects.get(pk=latest.pk)
            states[states.index(latest)] = item
            item_fields = self._merge(item, new, verified, now, activate=activate)
            merged = True
        else:
            if latest is not None and new.kind == ItemKind.OPINION:
                self._contradict(latest, new.trust)
            item = self._new_state(scope, entity, new, verified, now, said_at, activate=activate)
            # Recorded after every state of its agent, the new state never ties another on
            # (valid_from, recorded_at): its place in timeline order needs no id.
            bisect.insort(states, item, key=lambda state: (state.valid_from, state.recorded_at))
            merged = False
        changed = lay_out([state for state in states if state.status in TIMELINE_STATUSES], now)
        others = [state for state in changed if state is not item]
        if not merged:
            # Inserted as laid out: no UPDATE of the new row afterwards; on PostgreSQL the
            # states it closes are updated in the same statement.
            others = WriteSQL.insert_laid_out(item, others)
        elif item_fields or any(state is item for state in changed):
            laid_out = any(state is item for state in changed)
            item.save(update_fields=[*item_fields, *(LAYOUT_SAVED if laid_out else ())])
        if quotes:
            Evidence.objects.bulk_create(
                [
                    Evidence(
                        item=item,
                        entry=entry,
                        tool_call_id=quote.tool_call_id,
                        file_range=dict(quote.file_range) if quote.file_range else None,
                        quote=quote.quote,
                        verified=holds,
                    )
                    for quote, entry, holds in quotes
                ]
            )
        save_layout(others)
        item_id = item.pk
        transaction.on_commit(lambda: signals.item_written.send(sender=MemoryItem, item_id=item_id))
        return Written(item, merged)

    def _new_state(
        self,
        scope: MemoryScope,
        entity: Entity,
        new: NewItem,
        verified: bool,
        now: datetime,
        said_at: datetime,
        *,
        activate: bool,
    ) -> MemoryItem:
        """The new state, not saved yet."""
        active = activate and self._qualifies(new.trust, verified, float(new.confidence))
        return MemoryItem(
            **scope.as_fields(),
            kind=new.kind,
            subject=entity,
            attribute=new.attribute,
            value=new.value,
            content=new.content,
            trust=new.trust,
            verified=verified,
            confidence=float(new.confidence),
            status=ItemStatus.ACTIVE if active else ItemStatus.SUGGESTED,
            valid_from=new.valid_from or said_at,
            ends_at=new.ends_at,
            valid_to=new.ends_at,
            valid_to_known_at=now if new.ends_at is not None else None,
            recorded_at=now,
            activated_at=now if active else None,
            metadata=dict(new.metadata),
        )

    def _merge(
        self, item: MemoryItem, new: NewItem, verified: bool, now: datetime, *, activate: bool
    ) -> list[str]:
        """Merge a repeated statement into ``item``, unsaved. Returns the fields changed."""
        before = [getattr(item, name) for name in MERGED_FIELDS]
        item.trust, item.verified = _better_source(
            (item.trust, item.verified), (new.trust, verified)
        )
        if item.kind == ItemKind.OPINION and verified:
            item.confidence = min(1.0, item.confidence + OPINION_GAIN)
        else:
            item.confidence = max(item.confidence, float(new.confidence))
        if (
            activate
            and item.status == ItemStatus.SUGGESTED
            and self._qualifies(item.trust, item.verified, item.confidence)
        ):
            item.status = ItemStatus.ACTIVE
            item.activated_at = now
        return [
            name
            for name, old in zip(MERGED_FIELDS, before, strict=True)
            if getattr(item, name) != old
        ]

    @staticmethod
    def _contradict(current: SlotState, trust: str) -> None:
        """An opinion a less trusted source contradicts loses confidence."""
        if current.kind == ItemKind.OPINION and TRUST_RANK[trust] < TRUST_RANK[current.trust]:
            confidence = max(0.0, current.confidence - OPINION_LOSS)
            if confidence != current.confidence:
                MemoryItem.objects.filter(pk=current.pk).update(confidence=confidence)

    # --- reviewing and forgetting ----------------------------------------------------

    def _change(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None,
        from_statuses: Sequence[str] | None,
        apply: Callable[[MemoryItem, datetime], None],
    ) -> list[str]:
        """Change the items of ``ids`` the caller may see (of ``from_statuses``), lay
        their slots out again, and return the ids changed."""
        items = MemoryItem.objects.filter(pk__in=list(dict.fromkeys(ids)))
        if grants is not None:
            items = items.visible_to(grants)
        if from_statuses is not None:
            items = items.filter(status__in=list(from_statuses))
        changed: list[str] = []
        slots: set[tuple[Slot, MemoryScope]] = set()
        for agent_id in sorted(set(items.values_list("agent_id", flat=True))):
            self._lock_agent(agent_id)
        now = self.clock()
        for item in items.select_for_update().order_by("id"):
            apply(item, now)
            item.save(update_fields=REVIEWED_FIELDS)
            changed.append(item.pk)
            slots.add((Slot(item.subject_id, item.attribute), MemoryScope.of(item)))
        for slot, scope in sorted(slots, key=lambda pair: (pair[0].subject_id, pair[0].attribute)):
            layout_slot(slot, scope, known_at=now)
        return changed

    @transaction.atomic
    def activate(self, ids: Iterable[str], *, grants: Grants | None = None) -> list[str]:
        """A reviewer's approval: suggested (or stale) items become active. Returns the
        ids activated."""

        def apply(item: MemoryItem, now: datetime) -> None:
            item.status = ItemStatus.ACTIVE
            item.activated_at = now
            item.expired_at = None
            item.stale_because = None

        return self._change(
            ids,
            grants=grants,
            from_statuses=[ItemStatus.SUGGESTED, ItemStatus.STALE],
            apply=apply,
        )

    @transaction.atomic
    def reject(self, ids: Iterable[str], reason: str, *, grants: Grants | None = None) -> list[str]:
        """A reviewer's refusal: the items become stale with the reason, out of every
        context, kept for the record. Returns the ids rejected."""
        if not isinstance(reason, str) or not reason.strip() or text_problem(reason):
            raise InvalidItem({"reason": "Give the reason, a non-empty text."})
        return self.mark_stale(
            ids,
            {"reason": "rejected", "note": reason},
            only_from=[ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED],
            grants=grants,
        )

    @transaction.atomic
    def let_go(self, ids: Iterable[str], *, grants: Grants | None = None) -> list[str]:
        """Memory lets the items go: they keep their place in their slot's timeline, so
        the state before does not come back, and leave every context."""

        def apply(item: MemoryItem, now: datetime) -> None:
            item.status = ItemStatus.LET_GO
            item.expired_at = now

        return self._change(
            ids,
            grants=grants,
            from_statuses=[ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED],
            apply=apply,
        )

    @transaction.atomic
    def mark_stale(
        self,
        ids: Iterable[str],
        because: Mapping[str, Any] | None = None,
        only_from: Sequence[str] | None = None,
        *,
        grants: Grants | None = None,
    ) -> list[str]:
        """Mark items stale with ``because`` (kept in ``stale_because``); with
        ``only_from``, items whose status is no longer one of those are left as they are.
        Returns the ids it marked."""
        reason = dict(because or {})
        if problem := json_problem(reason):
            raise InvalidItem({"because": f"Must be JSON data: {problem}"})

        def apply(item: MemoryItem, now: datetime) -> None:
            item.status = ItemStatus.STALE
            item.expired_at = now
            item.stale_because = {**reason, "at": now.isoformat()}

        statuses = list(only_from) if only_from is not None else None
        return self._change(ids, grants=grants, from_statuses=statuses, apply=apply)

    @transaction.atomic
    def revise_evidence(self, ids: Iterable[str], keep: Callable[[Evidence], bool]) -> list[str]:
        """Drop the evidence ``keep`` refuses from these items (the quotes of entries that
        went); an item whose quotes no longer hold is no longer verified. Returns the ids
        of the items changed."""
        changed: list[str] = []
        chosen = MemoryItem.objects.filter(pk__in=list(ids))
        self.lock_agents(chosen.values_list("agent_id", flat=True))
        for item in chosen.order_by("id"):
            dropped = [row.pk for row in item.evidence.all() if not keep(row)]
            if not dropped:
                continue
            Evidence.objects.filter(pk__in=dropped).delete()
            item.verified = item.evidence.filter(verified=True).exists()
            item.save(update_fields=["verified"])
            changed.append(item.pk)
        return changed

    def note_retrieved(self, ids: Iterable[str], at: datetime | None = None) -> int:
        """Count that these items went to a model (one UPDATE). Returns how many rows."""
        moment = at or self.clock()
        return MemoryItem.objects.filter(pk__in=list(dict.fromkeys(ids))).update(
            times_retrieved=F("times_retrieved") + 1, last_retrieved_at=moment
        )

    # --- reading ---------------------------------------------------------------------

    def query(
        self,
        scope: MemoryScope,
        *,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        statuses: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        slot: Slot | None = None,
        grants: Grants | None = None,
    ) -> list[MemoryItem]:
        """The items a run of ``scope`` sees that held in the world ``as_of`` (default
        ``known_at``) as memory knew them ``known_at`` (default now), newest first. By
        default active and superseded items, the state that holds read from the times;
        an item let go or made stale after ``known_at`` counts as it stood then."""
        items: ItemQuerySet = MemoryItem.objects.seen_from(scope)
        if grants is not None:
            items = items.visible_to(grants)
        items = held(items, as_of=as_of, known_at=known_at, statuses=statuses, now=self.clock())
        if kinds is not None:
            items = items.filter(kind__in=list(kinds))
        if slot is not None:
            items = items.of_slot(slot.subject_id, slot.attribute)
        return _newest_first(items, scope)

    def recallable(
        self, scope: MemoryScope, *, as_of: datetime, grants: Grants | None = None
    ) -> list[MemoryItem]:
        """The items recall searches: those a run of ``scope`` sees that memory holds
        (active or superseded, not let go, stale or rejected) and that began by ``as_of``,
        whether they still hold or held before, newest first. Those of them that hold at
        ``as_of`` are what ``query(scope, as_of=as_of)`` returns."""
        items: ItemQuerySet = MemoryItem.objects.seen_from(scope)
        if grants is not None:
            items = items.visible_to(grants)
        items = items.filter(
            status__in=list(DEFAULT_HELD_STATUSES), expired_at__isnull=True, valid_from__lte=as_of
        )
        return _newest_first(items, scope)

    def history(
        self, scope: MemoryScope, slot: Slot, *, grants: Grants | None = None
    ) -> list[MemoryItem]:
        """Every state of a slot the scope sees, closed, let go and stale ones included,
        in the order of their validity."""
        items: ItemQuerySet = MemoryItem.objects.seen_from(scope).of_slot(
            slot.subject_id, slot.attribute
        )
        if grants is not None:
            items = items.visible_to(grants)
        return list(items.select_related("subject").in_timeline_order())


@dataclass
class SlotState:
    """A state of a slot as a write and the layout read it: its place in the timeline,
    and what deciding on a merge or a contradiction looks at."""

    pk: str
    status: str
    valid_from: datetime
    valid_to: datetime | None
    valid_to_known_at: datetime | None
    ends_at: datetime | None
    recorded_at: datetime
    value: str
    kind: str
    trust: str
    confidence: float


AGENT_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


def agent_lock_key(agent_id: str) -> str:
    """The key of the advisory lock that serializes one agent's item writes."""
    return f"cogitator_memory.items:{agent_id}"


class WriteSQL:
    """The reads and the layout's updates of a write, written out as SQL.

    A write is the hottest path of items: through the ORM, compiling its statements and
    building model instances of the slot's states took longer than the database needed
    for the whole write (bench/RESULTS.md). Each reads what the ORM would: the same rows,
    in the same order, with the same locks, values converted as the ORM converts them."""

    ITEMS = MemoryItem._meta.db_table
    ENTITIES = Entity._meta.db_table

    @staticmethod
    def _connection() -> Any:
        return connections[router.db_for_write(MemoryItem)]

    @staticmethod
    def _binds_on_server(connection: Any) -> bool:
        """Whether the write's hot statements go through a cursor binding parameters on
        the server: on PostgreSQL when the connection binds on the server anyway
        (``server_side_binding``), or prepares statements (a ``prepare_threshold`` in
        ``OPTIONS``; Django's default, None, is for poolers in transaction mode) and
        queries are not logged (a logged statement shows as psycopg composed it, which
        a prepared one is not)."""
        if connection.vendor != "postgresql":
            return False
        if connection.settings_dict.get("OPTIONS", {}).get("server_side_binding"):
            return True
        return prepares_statements(connection) and not connection.queries_logged

    @classmethod
    def _hot_cursor(cls, connection: Any) -> Any:
        """A cursor for the statements every write sends (the slot's read, the insert).
        Where ``_binds_on_server``, it binds parameters on the server, so psycopg prepares
        each statement after ``prepare_threshold`` runs and the server parses and plans it
        once per connection (a quarter of a write's time); Django's cursor otherwise.
        Django wraps it either way, so execute wrappers see its statements."""
        if not cls._binds_on_server(connection):
            return connection.cursor()
        from django.db.backends.postgresql.base import ServerBindingCursor

        connection.ensure_connection()
        cursor = ServerBindingCursor(connection.connection)  # type: ignore[call-arg]
        return connection._prepare_cursor(cursor)

    LAYOUT_UPDATE = (
        f'UPDATE "{ITEMS}" SET "valid_to" = %s, "valid_to_known_at" = %s, "status" = %s'
        ' WHERE "id" = %s'
    )

    # The agent's last recorded time (an index on (agent, recorded_at) serves it).
    LAST_RECORDED = (
        f'SELECT "recorded_at" FROM "{ITEMS}" WHERE "agent_id" = %s'
        ' ORDER BY "recorded_at" DESC LIMIT 1'
    )

    @staticmethod
    def _datetime_converter(connection: Any) -> Callable[[Any], Any]:
        """A function converting a datetime read through a cursor as the ORM converts it
        (SQLite gives it naive, or as text from a subquery)."""
        column = MemoryItem._meta.get_field("recorded_at").cached_col
        converters = connection.ops.get_db_converters(column)

        def convert(value: Any) -> Any:
            for converter in converters:
                value = converter(value, column, connection)
            return value

        return convert

    @classmethod
    def _datetime(cls, value: Any, connection: Any) -> Any:
        return cls._datetime_converter(connection)(value)

    @classmethod
    def last_recorded(cls, agent_id: str) -> datetime | None:
        connection = cls._connection()
        with connection.cursor() as cursor:
            cursor.execute(cls.LAST_RECORDED, [agent_id])
            row = cursor.fetchone()
        return cls._datetime(row[0], connection) if row else None

    # What a write reads of a slot's states, in the order of ``SlotState``'s fields.
    STATE_COLUMNS = (
        "id",
        "status",
        "valid_from",
        "valid_to",
        "valid_to_known_at",
        "ends_at",
        "recorded_at",
        "value",
        "kind",
        "trust",
        "confidence",
    )
    STATE_MOMENTS = frozenset(
        {"valid_from", "valid_to", "valid_to_known_at", "ends_at", "recorded_at"}
    )

    @staticmethod
    def _scope_conditions(scope: MemoryScope, table: str) -> tuple[list[str], list[Any]]:
        """The exact scope as conditions on ``table``'s columns, and their parameters."""
        conditions: list[str] = []
        params: list[Any] = []
        for name, value in scope.as_fields().items():
            conditions.append(
                f'{table}"{name}" IS NULL' if value is None else f'{table}"{name}" = %s'
            )
            params += [] if value is None else [value]
        return conditions, params

    @classmethod
    def entity_and_slot(
        cls,
        scope: MemoryScope,
        key: str,
        attribute: str,
        statuses: Sequence[str],
        *,
        locking: bool = False,
    ) -> tuple[list[Entity], datetime | None, dict[str, list[SlotState]]]:
        """The entities of this key the scope sees (``MemoryItems._entities_named``), the
        agent's last recorded time, and each entity's states of ``statuses`` in the slot of
        ``attribute`` in the exact scope, in timeline order: one statement (the time on
        its own when no entity matches).

        The states are not locked row by row: every change of a slot's layout (a write, a
        review, forgetting) holds the agent's lock. ``locking`` takes it first: on
        PostgreSQL with parameters bound by the driver (Django's default), as a statement
        of its own sent with the read (each statement of a query string takes its own
        snapshot, so the read sees what the writer it waited for committed); otherwise
        as a statement before it."""
        connection = cls._connection()
        lock_first = locking and connection.vendor == "postgresql"
        # Parameters bound on the server allow one statement per execute.
        in_one_trip = lock_first and not cls._binds_on_server(connection)
        if lock_first and not in_one_trip:
            with cls._hot_cursor(connection) as cursor:
                cursor.execute(AGENT_LOCK, [agent_lock_key(scope.agent_id)])
        in_scope, scope_params = cls._scope_conditions(scope, "i.")
        marks = ", ".join(["%s"] * len(statuses))
        joined = " AND ".join(
            ['i."subject_id" = e."id"', 'i."attribute" = %s', *in_scope, f'i."status" IN ({marks})']
        )
        users = 'e."user_id" IS NULL' + (
            ' OR e."user_id" = %s' if scope.user_id is not None else ""
        )
        entity_fields = Entity._meta.concrete_fields
        entity_columns = ", ".join(f'e."{field.column}"' for field in entity_fields)
        state_columns = ", ".join(f'i."{name}"' for name in cls.STATE_COLUMNS)
        params: list[Any] = [scope.agent_id, attribute, *scope_params, *statuses]
        params += [scope.agent_id, key] + ([scope.user_id] if scope.user_id is not None else [])
        read = (
            f"SELECT ({cls.LAST_RECORDED}), {entity_columns}, {state_columns}"
            f' FROM "{cls.ENTITIES}" e LEFT JOIN "{cls.ITEMS}" i ON {joined}'
            f' WHERE e."agent_id" = %s AND e."key" = %s AND ({users})'
            ' ORDER BY e."id", i."valid_from", i."recorded_at", i."id"'
        )
        with cls._hot_cursor(connection) as cursor:
            if in_one_trip:
                cursor.execute(f"{AGENT_LOCK}; {read}", [agent_lock_key(scope.agent_id), *params])
                cursor.nextset()
            else:
                cursor.execute(read, params)
            rows = cursor.fetchall()
        if not rows:
            return [], cls.last_recorded(scope.agent_id), {}
        # A plain cursor: the rows repeat each entity once per state, and building a model
        # instance per row (as a raw queryset does) cost more than the statement.
        width = len(entity_fields)
        pk_at = entity_fields.index(Entity._meta.pk)
        moment = cls._datetime_converter(connection)
        converters = [moment if name in cls.STATE_MOMENTS else None for name in cls.STATE_COLUMNS]
        entities: dict[str, Entity] = {}
        slots: dict[str, list[SlotState]] = {}
        for row in rows:
            entity_values, state_values = row[1 : 1 + width], row[1 + width :]
            entity_id = entity_values[pk_at]
            if entity_id not in entities:
                entities[entity_id] = cls._entity(entity_fields, entity_values, connection)
            states = slots.setdefault(entity_id, [])
            if state_values[0] is None:
                continue
            states.append(
                SlotState(
                    *(
                        value if convert is None else convert(value)
                        for convert, value in zip(converters, state_values, strict=True)
                    )
                )
            )
        return list(entities.values()), moment(rows[0][0]), slots

    @staticmethod
    def _entity(fields: Sequence[Any], values: Sequence[Any], connection: Any) -> Entity:
        """An entity from its columns, each value converted as the ORM converts it."""
        converted = []
        for model_field, value in zip(fields, values, strict=True):
            column = model_field.cached_col
            for converter in [
                *connection.ops.get_db_converters(column),
                *column.get_db_converters(connection),
            ]:
                value = converter(value, column, connection)
            converted.append(value)
        return Entity.from_db(connection.alias, [f.attname for f in fields], converted)

    # The INSERT of a new state, as the ORM compiles it, per database alias: its text
    # depends on the model and the backend only, and compiling it cost a tenth of a write.
    _insert_sql: dict[str, str] = {}

    @classmethod
    def insert_statement(cls, item: MemoryItem, connection: Any) -> tuple[str, list[Any]]:
        """The statement inserting ``item`` and its parameters, as ``bulk_create`` of the
        one item would send them (the text compiled once per alias)."""
        fields = MemoryItem._meta.concrete_fields
        sql = cls._insert_sql.get(connection.alias)
        if sql is None:
            query = InsertQuery(MemoryItem)
            query.insert_values(fields, [item])
            [(sql, params)] = query.get_compiler(connection=connection).as_sql()
            cls._insert_sql[connection.alias] = sql
            return sql, list(params)
        return sql, [
            field.get_db_prep_save(field.pre_save(item, True), connection=connection)
            for field in fields
        ]

    @classmethod
    def insert_laid_out(
        cls, item: MemoryItem, changed: list[SlotState | MemoryItem]
    ) -> list[SlotState | MemoryItem]:
        """Insert a new state, and on PostgreSQL save the states its layout changed in the
        same statement (one round trip instead of one per statement). Returns the changed
        states still to save. Like ``bulk_create``, it sends no model signals."""
        connection = cls._connection()
        if connection.vendor != "postgresql" or not changed:
            MemoryItem.objects.bulk_create([item])
            return changed
        insert, insert_params = cls.insert_statement(item, connection)
        adapt = connection.ops.adapt_datetimefield_value
        updates, params = [], []
        for number, state in enumerate(changed):
            updates.append(f"closed_{number} AS ({cls.LAYOUT_UPDATE})")
            params += [
                adapt(state.valid_to),
                adapt(state.valid_to_known_at),
                state.status,
                state.pk,
            ]
        item._state.adding = False
        item._state.db = connection.alias
        with cls._hot_cursor(connection) as cursor:
            cursor.execute(f"WITH {', '.join(updates)} {insert}", [*params, *insert_params])
        return []

    @classmethod
    def slot_states(
        cls, slot: Slot, scope: MemoryScope, statuses: Sequence[str]
    ) -> list[SlotState]:
        """The states of ``statuses`` of a slot in one exact scope, in timeline order
        (``ItemQuerySet.in_timeline_order``), their rows locked until the transaction ends."""
        connection = cls._connection()
        in_scope, scope_params = cls._scope_conditions(scope, "")
        conditions = ['"subject_id" = %s', '"attribute" = %s', *in_scope]
        params: list[Any] = [slot.subject_id, slot.attribute, *scope_params]
        conditions.append(f'"status" IN ({", ".join(["%s"] * len(statuses))})')
        params += list(statuses)
        # SQLite: the IMMEDIATE transaction holds the database's write lock already.
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        with connection.cursor() as cursor:
            cursor.execute(
                f'SELECT "id", "status", "valid_from", "valid_to", "valid_to_known_at",'
                f' "ends_at", "recorded_at", "value", "kind", "trust", "confidence"'
                f' FROM "{cls.ITEMS}" WHERE {" AND ".join(conditions)}'
                f' ORDER BY "valid_from", "recorded_at", "id"{lock}',
                params,
            )
            rows = cursor.fetchall()
        # valid_from, valid_to, valid_to_known_at, ends_at and recorded_at are datetimes.
        moment = cls._datetime_converter(connection)
        return [
            SlotState(*(moment(value) if 2 <= n <= 6 else value for n, value in enumerate(row)))
            for row in rows
        ]


def layout_slot(
    slot: Slot, scope: MemoryScope, *, known_at: datetime
) -> list[SlotState | MemoryItem]:
    """Lay the slot's timeline out again in one exact scope (``lay_out``) and save the
    states it changed. Returns them."""
    states = WriteSQL.slot_states(slot, scope, TIMELINE_STATUSES)
    changed = lay_out(states, known_at)
    save_layout(changed)
    return changed


def lay_out(
    states: Sequence[SlotState | MemoryItem], known_at: datetime
) -> list[SlotState | MemoryItem]:
    """Lay out a slot's active, superseded and let-go states, given in order of validity:
    each closed where the next starts (or at the end it was given, if earlier) and the
    last open; every state but a let-go one superseded when another follows it, active
    when none does. A changed end is stamped ``known_at``, so a read of what memory knew
    earlier leaves it out. Changes the states in place, saves nothing, and returns those
    it changed."""
    changed: list[SlotState | MemoryItem] = []
    for index, state in enumerate(states):
        following = states[index + 1] if index + 1 < len(states) else None
        end = following.valid_from if following is not None else None
        if state.ends_at is not None and (end is None or state.ends_at < end):
            end = state.ends_at
        status = state.status
        if status != ItemStatus.LET_GO:
            status = ItemStatus.SUPERSEDED if following is not None else ItemStatus.ACTIVE
        if (state.valid_to, state.status) != (end, status):
            if state.valid_to != end:
                state.valid_to_known_at = known_at
            state.valid_to, state.status = end, status
            changed.append(state)
    return changed


def save_layout(changed: Iterable[SlotState | MemoryItem]) -> None:
    """Save what ``lay_out`` changed. Usually one state (the one before a new state): an
    UPDATE each costs less than one bulk CASE statement."""
    connection = WriteSQL._connection()
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        for state in changed:
            cursor.execute(
                WriteSQL.LAYOUT_UPDATE,
                [adapt(state.valid_to), adapt(state.valid_to_known_at), state.status, state.pk],
            )


def _newest_first(items: ItemQuerySet, scope: MemoryScope) -> list[MemoryItem]:
    """``items`` with their subjects, the newest first (by start, then record, then id).

    The subjects are read apart, once each: a user's items are mostly about a few
    subjects (the user first), so a join would build the same entity once per item."""
    items = items.order_by("-valid_from", "-recorded_at", "-id")
    if scope.user_id is not None and connections[items.db].vendor == "sqlite":
        # SQLite serves "the user's or no user's" with no plan but reading every item of
        # the agent; the user's and the shared ones, asked apart, are each one range of
        # the (agent, user, status) index. Its BINARY collation orders ids as Python
        # does, so the merged list is in the order one query would give.
        found = [*items.filter(user_id=scope.user_id), *items.filter(user_id__isnull=True)]
        found.sort(key=lambda item: (item.valid_from, item.recorded_at, item.pk), reverse=True)
    else:
        found = list(items)
    prefetch_related_objects(found, "subject")
    return found
