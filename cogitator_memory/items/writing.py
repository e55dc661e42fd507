"""The write rules of memory items (``ItemWriting``): writing only adds.

- A statement becomes a new state of its slot (a subject's attribute in one exact
  scope), or merges into a state of the same value (``same_value``): the newest state of
  the slot's timeline (active or superseded) while it is open, else a suggested state
  that is the newest state of the slot and open (a suggestion absorbs a repeat of itself).
- Suggested states are out of the timeline until a person (or a statement that would be
  active on its own) activates them: they never stand between a repeat and the state it
  repeats, and they contradict nothing and are contradicted by nothing.
- One agent's writes go one after another (a transaction-scoped advisory lock on
  PostgreSQL; on SQLite the IMMEDIATE transaction holds the database's write lock), and
  new states are recorded at least a millisecond apart, so "known at" reads are
  unambiguous.
- After every change of a slot, its timeline is laid out again (``timeline.lay_out``).
- A statement is active on its own only when said by the system, or by the user with
  quotes that are grounded (every quote holds in its entry, and one says the value:
  ``support.quote_supports``) at ``activation_confidence``; everything else is
  suggested, for a reviewer. Its item is verified when every quote holds."""

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, router, transaction

from cogitator_memory import policy, signals
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
from cogitator_memory.items.rules import ItemRules
from cogitator_memory.items.statements import (
    MAX_NAME,
    NewEvidence,
    NewItem,
    Written,
    check_new_item,
    entity_key,
    same_value,
)
from cogitator_memory.items.support import quote_supports
from cogitator_memory.items.timeline import LAYOUT_SAVED, SlotState, in_timeline, lay_out
from cogitator_memory.items.write_sql import WriteSQL, save_layout
from cogitator_memory.lineage import Quote, verify_evidence
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread

# What an opinion gains when said again with quotes that hold, and loses when a less
# trusted source contradicts it.
OPINION_GAIN = 0.1
OPINION_LOSS = 0.2
# New states of one agent are recorded at least this far apart.
RECORDING_STEP = timedelta(milliseconds=1)
# The states a new statement may merge into.
OPEN_STATUSES = (ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)
# The states of the timeline a new statement may merge into or contradict.
HELD_STATUSES = (ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)
# What merging a repeated statement may change in a state.
MERGED_FIELDS = ("trust", "verified", "confidence", "status", "activated_at")


def better_source(first: tuple[str, bool], second: tuple[str, bool]) -> tuple[str, bool]:
    """The more trusted source, then the one whose quotes hold."""
    return max(first, second, key=lambda source: (TRUST_RANK[source[0]], source[1]))


class ItemWriting(ItemRules):
    """The write rules: a statement becomes a new state of its slot or merges into the
    newest open one; who said it and whether its quotes hold decide its status."""

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
        return Entity.objects.seen_from(scope).filter(key=entity_key(name))

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
        of threads of the item's agent count (and, with ``grants``, only those the caller
        may see); a quote of any other entry stands on nothing and holds nowhere. A quote
        of a redacted entry is kept as ``[redacted]``, holding nowhere: the words a
        redaction took are never written again."""
        ids = [quote.entry_id for quote in evidence if isinstance(quote.entry_id, str)]
        found: dict[str, Entry] = {}
        if ids:
            entries = Entry.objects.filter(pk__in=ids, thread__agent_id=scope.agent_id)
            if grants is not None:
                entries = entries.visible_to(grants)
            found = {entry.pk: entry for entry in entries}
        checked: list[tuple[NewEvidence, Entry | None, bool]] = []
        for quote in evidence:
            entry = found.get(quote.entry_id) if quote.entry_id else None
            if entry is not None and entry.is_redacted:
                # What the entry said is gone: the quote keeps the link, never the words.
                checked.append((replace(quote, quote=REDACTED_TEXT), entry, False))
                continue
            verdict = verify_evidence(Quote(quote.quote, quote.entry_id), entry)
            checked.append((quote, entry, verdict == "verified"))
        return checked

    @staticmethod
    def _grounded(quotes: Sequence[tuple[NewEvidence, Entry | None, bool]], value: str) -> bool:
        """Whether a statement's quotes ground it: every quote holds, and one of them says
        the value on its own (``quote_supports``)."""
        return (
            bool(quotes)
            and all(holds for _quote, _entry, holds in quotes)
            and any(quote_supports(quote.quote, value) for quote, _entry, _holds in quotes)
        )

    def _qualifies(self, trust: str, grounded: bool, confidence: float) -> bool:
        """Whether a statement is active on its own: the system's, or the user's with
        grounded quotes (``_grounded``) at ``activation_confidence``."""
        return trust == Trust.SYSTEM or (
            trust == Trust.USER and grounded and confidence >= self.activation_confidence
        )

    @staticmethod
    def _newest_held(read: Sequence[SlotState]) -> SlotState | None:
        """The timeline's newest active or superseded state (``read`` in timeline order)."""
        return next((state for state in reversed(read) if state.status in HELD_STATUSES), None)

    def _merge_target(self, read: Sequence[SlotState], value: str) -> SlotState | None:
        """The state a statement of ``value`` merges into, if any: the newest state of the
        timeline (active or superseded) when it is open and of the same value; else the
        newest state of the slot when it is a suggestion, open and of the same value. A
        suggestion never stands between a repeat and the timeline's state it repeats, and
        absorbs a repeat of itself only while no other state (of the timeline, let go
        after it held, or suggested) started after it: else the repeat is a state of its
        own, from when it was said, so activating the older suggestion later cannot put it
        back in front."""
        current = self._newest_held(read)
        if current is not None and current.valid_to is None and same_value(current.value, value):
            return current
        placed = [
            state for state in read if state.status == ItemStatus.SUGGESTED or in_timeline(state)
        ]
        newest = placed[-1] if placed else None
        if (
            newest is not None
            and newest.status == ItemStatus.SUGGESTED
            and newest.valid_to is None
            and same_value(newest.value, value)
        ):
            return newest
        return None

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
        state it repeats (``_merge_target``). ``activate`` False (shadow mode) leaves a
        new item suggested whoever said it. Raises ``InvalidItem`` and, with ``grants``,
        ``NoGrant`` for a scope the caller's grants do not reach."""
        check_new_item(new)
        policy.require_write(grants, scope.agent_id, scope.user_id)
        self._lock_quoted_threads(new.evidence)
        # The agent's lock is taken by the read below, first.
        said_at = self.clock()
        # The slot is read once, with its subject: the states to merge into or to
        # contradict (``_merge_target``, the timeline's newest), and what the layout needs.
        # Suggested states are read for the merge only; they have no place in the timeline.
        entity, read, now = self._entity_slot_and_recorded_at(
            scope, new, said_at, (*OPEN_STATUSES, ItemStatus.LET_GO)
        )
        quotes = self._checked_quotes(scope, new.evidence, grants)
        verified = bool(quotes) and all(holds for _quote, _entry, holds in quotes)
        grounded = self._grounded(quotes, new.value)
        target = self._merge_target(read, new.value)
        states: list[SlotState | MemoryItem] = list(read)
        item_fields: list[str] = []
        if target is not None:
            # The whole row: it is what the caller gets back.
            item = MemoryItem.objects.get(pk=target.pk)
            states[states.index(target)] = item
            item_fields = self._merge(item, new, verified, grounded, now, activate=activate)
            merged = True
            entered = target.status == ItemStatus.SUGGESTED and item.status == ItemStatus.ACTIVE
        else:
            item = self._new_state(
                scope, entity, new, verified, grounded, now, said_at, activate=activate
            )
            # Recorded after every state of its agent, the new state never ties another on
            # (valid_from, recorded_at): its place in timeline order needs no id.
            bisect.insort(states, item, key=lambda state: (state.valid_from, state.recorded_at))
            merged = False
            entered = item.status == ItemStatus.ACTIVE
        if entered and item.kind == ItemKind.OPINION:
            # Only a state that enters the timeline now contradicts, and only the
            # timeline's newest state: a suggestion neither contradicts nor is contradicted.
            current = self._newest_held(read)
            if current is not None and not same_value(current.value, item.value):
                self._contradict(current, new.trust)
        changed = lay_out([state for state in states if in_timeline(state)], now)
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
        grounded: bool,
        now: datetime,
        said_at: datetime,
        *,
        activate: bool,
    ) -> MemoryItem:
        """The new state, not saved yet."""
        active = activate and self._qualifies(new.trust, grounded, float(new.confidence))
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
        self,
        item: MemoryItem,
        new: NewItem,
        verified: bool,
        grounded: bool,
        now: datetime,
        *,
        activate: bool,
    ) -> list[str]:
        """Merge a repeated statement into ``item``, unsaved. Returns the fields changed.
        An opinion gains only from a grounded repeat, and a suggested item becomes active
        only when the repeat would be active on its own: the better source it keeps is
        not grounds to activate with (a user's item whose quotes hold but do not say its
        value stays suggested however often a model repeats it)."""
        before = [getattr(item, name) for name in MERGED_FIELDS]
        item.trust, item.verified = better_source(
            (item.trust, item.verified), (new.trust, verified)
        )
        if item.kind == ItemKind.OPINION and grounded:
            item.confidence = min(1.0, item.confidence + OPINION_GAIN)
        else:
            item.confidence = max(item.confidence, float(new.confidence))
        if (
            activate
            and item.status == ItemStatus.SUGGESTED
            and self._qualifies(new.trust, grounded, float(new.confidence))
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
        """An opinion of the timeline a less trusted source contradicts, with a state
        that enters the timeline active, loses confidence."""
        if current.kind == ItemKind.OPINION and TRUST_RANK[trust] < TRUST_RANK[current.trust]:
            confidence = max(0.0, current.confidence - OPINION_LOSS)
            if confidence != current.confidence:
                MemoryItem.objects.filter(pk=current.pk).update(confidence=confidence)
