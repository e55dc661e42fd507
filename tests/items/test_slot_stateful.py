"""Random sequences of statements about one slot (said, said again, said with a later
start, told late, suggested, let go, rejected, activated) against a reference model of its
timeline.

The model is plain Python: each state's value, status, start, end, the order it was
recorded in and whether it was ever active. It merges a statement into the timeline's
newest state (active or superseded) when that is open and of the same value, else into
the slot's newest state when that is a suggestion of the same value; it lays the timeline
out (active, superseded and once-active let-go states by start, each closed where the next
starts, the last open) and reads what holds now. After every step the slot's history and
what a query returns must agree with it, and a statement that stays suggested (a model's)
must leave every state of the timeline as it was: the active timeline ignores suggested
states.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem, Slot
from tests.examples import examples

ANA = MemoryScope("concierge", user_id="ana")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
VALUES = ["Lisbon", "Porto", " Lisbon ", "Rome"]
# Written out here rather than imported, so the model does not share the code's idea.
HELD = ("active", "superseded")
OPEN = ("suggested", "active", "superseded")
picks = st.integers(min_value=0, max_value=31)


@dataclass
class State:
    id: str
    value: str
    trust: str
    status: str
    valid_from: datetime
    valid_to: datetime | None
    order: int
    ever_active: bool

    @property
    def in_timeline(self) -> bool:
        return self.status in HELD or (self.status == "let_go" and self.ever_active)


def same(first: str, second: str) -> bool:
    return first.split() == second.split()


class SlotMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self.now = T0
        self.items = MemoryItems(clock=lambda: self.now)
        self.states: list[State] = []
        self.order = 0

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    # --- the model -------------------------------------------------------------------

    def layout(self) -> None:
        line = sorted(
            (s for s in self.states if s.in_timeline), key=lambda s: (s.valid_from, s.order)
        )
        for index, state in enumerate(line):
            following = line[index + 1] if index + 1 < len(line) else None
            state.valid_to = following.valid_from if following else None
            if state.status != "let_go":
                state.status = "superseded" if following else "active"

    def pick(self, pick: int, statuses: tuple[str, ...]) -> State | None:
        eligible = [s for s in self.states if s.status in statuses]
        return eligible[pick % len(eligible)] if eligible else None

    def merge_target(self, value: str) -> State | None:
        in_order = sorted(self.states, key=lambda s: (s.valid_from, s.order))
        held = [s for s in in_order if s.status in HELD]
        if held and held[-1].valid_to is None and same(held[-1].value, value):
            return held[-1]
        placed = [s for s in in_order if s.status == "suggested" or s.in_timeline]
        if placed and placed[-1].status == "suggested" and same(placed[-1].value, value):
            return placed[-1]
        return None

    def timeline_in_the_database(self) -> list[tuple[object, ...]]:
        """Every state of the slot's timeline as stored: place, status and confidence."""
        entity = Entity.objects.filter(key="ana").first()
        if entity is None:
            return []
        return [
            (
                item.pk,
                item.status,
                item.valid_from,
                item.valid_to,
                item.valid_to_known_at,
                item.confidence,
                item.trust,
            )
            for item in self.items.history(ANA, Slot(entity.pk, "home"))
            if item.status != "suggested"
        ]

    # --- steps -----------------------------------------------------------------------

    @rule(minutes=st.integers(min_value=1, max_value=5000))
    def tick(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)

    @rule(
        value=st.sampled_from(VALUES),
        trust=st.sampled_from(["system", "model"]),
        kind=st.sampled_from(["fact", "opinion"]),
        start=st.one_of(st.none(), st.integers(min_value=-3000, max_value=3000)),
    )
    def say(self, value: str, trust: str, kind: str, start: int | None) -> None:
        valid_from = self.now + timedelta(minutes=start) if start is not None else None
        before = self.timeline_in_the_database()
        written = self.items.write(
            ANA,
            NewItem(
                kind=kind,
                subject="Ana",
                attribute="home",
                value=value,
                trust=trust,
                valid_from=valid_from,
            ),
        )
        target = self.merge_target(value)
        if target is not None:
            assert written.merged and written.item.pk == target.id
            if trust == "system" and target.trust != "system":
                target.trust = "system"
                if target.status == "suggested":
                    target.status = "active"
                    target.ever_active = True
        else:
            assert not written.merged
            self.order += 1
            self.states.append(
                State(
                    id=written.item.pk,
                    value=value,
                    trust=trust,
                    status="active" if trust == "system" else "suggested",
                    valid_from=valid_from or self.now,
                    valid_to=None,
                    order=self.order,
                    ever_active=trust == "system",
                )
            )
        self.layout()
        if trust == "model":
            # A model's word is never active on its own, and leaves the timeline as it was:
            # no state of it moved, closed, reopened or lost confidence.
            assert written.item.status != "active" or written.merged
            assert self.timeline_in_the_database() == before

    @precondition(lambda self: any(s.status in OPEN for s in self.states))
    @rule(pick=picks)
    def let_go(self, pick: int) -> None:
        state = self.pick(pick, OPEN)
        assert state is not None
        assert self.items.let_go([state.id]) == [state.id]
        state.status = "let_go"
        self.layout()

    @precondition(lambda self: any(s.status in OPEN for s in self.states))
    @rule(pick=picks)
    def reject(self, pick: int) -> None:
        state = self.pick(pick, OPEN)
        assert state is not None
        assert self.items.reject([state.id], "not so") == [state.id]
        state.status = "stale"
        self.layout()

    @precondition(lambda self: any(s.status in ("suggested", "stale") for s in self.states))
    @rule(pick=picks)
    def activate(self, pick: int) -> None:
        state = self.pick(pick, ("suggested", "stale"))
        assert state is not None
        assert self.items.activate([state.id]) == [state.id]
        state.status = "active"
        state.ever_active = True
        self.layout()

    # --- what must hold ----------------------------------------------------------------

    @invariant()
    def the_history_is_the_models_timeline(self) -> None:
        if not self.states:
            return
        entity = Entity.objects.get(key="ana")
        history = self.items.history(ANA, Slot(entity.pk, "home"))
        by_id = {state.id: state for state in self.states}
        assert len(history) == len(self.states)
        for item in history:
            model = by_id[item.pk]
            assert (item.status, item.valid_from, item.valid_to) == (
                model.status,
                model.valid_from,
                model.valid_to,
            ), (item.value, model)

    @invariant()
    def a_query_returns_what_holds_now(self) -> None:
        holds = {
            s.id
            for s in self.states
            if s.status in ("active", "superseded")
            and s.valid_from <= self.now
            and (s.valid_to is None or s.valid_to > self.now)
        }
        assert {item.pk for item in self.items.query(ANA)} == holds
        assert len(holds) <= 1


@pytest.mark.django_db
def test_a_slots_timeline_agrees_with_the_reference_model() -> None:
    run_state_machine_as_test(
        SlotMachine,
        settings=settings(
            max_examples=examples(full=40, ci=20),
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
            report_multiple_bugs=False,
        ),
    )
