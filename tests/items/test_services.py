"""MemoryItems: each rule of writing, merging, laying out, reviewing and reading items."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cogitator_memory.exceptions import InvalidItem, NoGrant
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import Entity, Evidence, ItemStatus, MemoryItem
from cogitator_memory.items.review import ActivateItems
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem, Slot, entity_key, same_value
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ANA = MemoryScope("concierge", user_id="ana")
BEN = MemoryScope("concierge", user_id="ben")
AGENT = MemoryScope("concierge")


class Clock:
    """A clock that stands still unless moved."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def items(clock: Clock) -> MemoryItems:
    return MemoryItems(clock=clock)


@pytest.fixture
def said() -> Entry:
    """A message of Ana's in a thread of the concierge."""
    thread = threads.create_thread("concierge", {"userId": "ana"})
    return threads.add_entry(thread.pk, role="user", content="I live in   Lisbon now, since May.")


def home(value: str, trust: str = "user", **fields: Any) -> NewItem:
    return NewItem(
        kind=fields.pop("kind", "fact"),
        subject=fields.pop("subject", "Ana"),
        attribute=fields.pop("attribute", "home city"),
        value=value,
        trust=trust,
        **fields,
    )


def quoted(entry: Entry, quote: str = "I live in Lisbon") -> list[NewEvidence]:
    return [NewEvidence(quote=quote, entry_id=entry.pk)]


def timeline(items: MemoryItems, scope: MemoryScope = ANA) -> list[tuple[str, str, Any, Any]]:
    entity = Entity.objects.get(key="ana")
    return [
        (item.value, item.status, item.valid_from, item.valid_to)
        for item in items.history(scope, Slot(entity.pk, "home city"))
    ]


# --- activation -------------------------------------------------------------------------


def test_a_system_item_is_active_on_its_own(items: MemoryItems) -> None:
    written = items.write(ANA, home("Lisbon", "system"))
    assert written.item.status == ItemStatus.ACTIVE
    assert written.item.activated_at == T0


def test_a_users_item_with_a_quote_that_holds_at_the_confidence_is_active(
    items: MemoryItems, said: Entry
) -> None:
    written = items.write(ANA, home("Lisbon", confidence=0.7, evidence=quoted(said)))
    assert (written.item.status, written.item.verified) == (ItemStatus.ACTIVE, True)


@pytest.mark.parametrize(
    ("trust", "confidence", "quote"),
    [
        ("user", 0.69, "I live in Lisbon"),  # below the activation confidence
        ("user", 0.9, "I live in Porto"),  # a quote that does not hold
        ("model", 1.0, "I live in Lisbon"),
        ("tool", 1.0, "I live in Lisbon"),
        ("web", 1.0, "I live in Lisbon"),
    ],
)
def test_everything_else_stays_suggested(
    items: MemoryItems, said: Entry, trust: str, confidence: float, quote: str
) -> None:
    written = items.write(
        ANA, home("Lisbon", trust, confidence=confidence, evidence=quoted(said, quote))
    )
    assert written.item.status == ItemStatus.SUGGESTED
    assert written.item.activated_at is None
    assert items.query(ANA) == []


def test_a_quote_holds_whitespace_aside_and_case_counts(items: MemoryItems, said: Entry) -> None:
    # given the entry says "I live in   Lisbon now"
    spaced = items.write(
        ANA, home("Lisbon", confidence=0.9, evidence=quoted(said, "live in\nLisbon"))
    )
    cased = items.write(
        ANA, home("X", attribute="other", confidence=0.9, evidence=quoted(said, "i live in lisbon"))
    )
    assert spaced.item.verified is True
    assert cased.item.verified is False


def test_a_quote_of_another_agents_entry_stands_on_nothing(items: MemoryItems) -> None:
    # given the same words in a thread of another agent
    other = threads.create_thread("rival", {"userId": "ana"})
    entry = threads.add_entry(other.pk, role="user", content="I live in Lisbon")
    # when
    written = items.write(ANA, home("Lisbon", confidence=1.0, evidence=quoted(entry)))
    # then
    assert written.item.status == ItemStatus.SUGGESTED
    [evidence] = Evidence.objects.filter(item=written.item)
    assert (evidence.entry_id, evidence.verified) == (None, False)


# --- merging ------------------------------------------------------------------------------


def test_saying_the_same_value_again_merges_into_the_open_state(
    items: MemoryItems, clock: Clock, said: Entry
) -> None:
    first = items.write(ANA, home("Lisbon", "model", evidence=quoted(said)))
    clock.now = T0 + timedelta(days=1)
    again = items.write(ANA, home("  Lisbon ", "model", evidence=quoted(said, "since May")))
    assert again.merged is True
    assert again.item.pk == first.item.pk
    assert MemoryItem.objects.count() == 1
    assert sorted(Evidence.objects.values_list("quote", flat=True)) == [
        "I live in Lisbon",
        "since May",
    ]


def test_values_differing_in_case_or_sign_are_different_states(items: MemoryItems) -> None:
    items.write(ANA, home("Lisbon", "system"))
    assert items.write(ANA, home("lisbon", "system")).merged is False
    assert items.write(ANA, home("-3", "system", attribute="score")).merged is False
    assert items.write(ANA, home("3", "system", attribute="score")).merged is False
    assert same_value("a  b", " a b ") and not same_value("A", "a") and not same_value("-3", "3")


def test_a_merge_keeps_the_better_source(items: MemoryItems, said: Entry) -> None:
    # given a model's suggestion
    first = items.write(ANA, home("Lisbon", "model", confidence=0.8))
    assert first.item.status == ItemStatus.SUGGESTED
    # when the user says it with a quote that holds
    again = items.write(ANA, home("Lisbon", "user", confidence=0.8, evidence=quoted(said)))
    # then the user's verified word wins and the item becomes active
    assert (again.item.trust, again.item.verified, again.item.status) == (
        "user",
        True,
        ItemStatus.ACTIVE,
    )
    # and a later, less trusted restatement does not lower it
    last = items.write(ANA, home("Lisbon", "web"))
    assert (last.item.trust, last.item.verified) == ("user", True)


def test_a_system_item_stays_system_when_a_user_repeats_it(items: MemoryItems) -> None:
    items.write(ANA, home("Lisbon", "system"))
    again = items.write(ANA, home("Lisbon", "user"))
    assert again.item.trust == "system"


def test_a_statement_after_another_value_is_a_new_state(items: MemoryItems, clock: Clock) -> None:
    items.write(ANA, home("Lisbon", "system"))
    clock.now = T0 + timedelta(days=1)
    items.write(ANA, home("Porto", "system"))
    clock.now = T0 + timedelta(days=2)
    back = items.write(ANA, home("Lisbon", "system"))
    assert back.merged is False
    assert [value for value, *_ in timeline(items)] == ["Lisbon", "Porto", "Lisbon"]


# --- the timeline ----------------------------------------------------------------------------


def test_a_new_value_closes_the_state_before_where_it_starts(
    items: MemoryItems, clock: Clock
) -> None:
    items.write(ANA, home("Lisbon", "system"))
    clock.now = T0 + timedelta(days=3)
    items.write(ANA, home("Porto", "system"))
    assert timeline(items) == [
        ("Lisbon", ItemStatus.SUPERSEDED, T0, T0 + timedelta(days=3)),
        ("Porto", ItemStatus.ACTIVE, T0 + timedelta(days=3), None),
    ]


def test_a_state_told_late_is_placed_by_its_time(items: MemoryItems, clock: Clock) -> None:
    # given Porto since day 10, written first
    items.write(ANA, home("Porto", "system", valid_from=T0 + timedelta(days=10)))
    # when Lisbon since day 0 is told afterwards
    clock.now = T0 + timedelta(days=20)
    items.write(ANA, home("Lisbon", "system", valid_from=T0))
    # then Lisbon closes where Porto starts, and Porto holds
    assert timeline(items) == [
        ("Lisbon", ItemStatus.SUPERSEDED, T0, T0 + timedelta(days=10)),
        ("Porto", ItemStatus.ACTIVE, T0 + timedelta(days=10), None),
    ]
    [now] = items.query(ANA)
    assert now.value == "Porto"


def test_a_state_set_to_start_later_leaves_the_current_one_until_it_starts(
    items: MemoryItems, clock: Clock
) -> None:
    items.write(ANA, home("Lisbon", "system"))
    items.write(ANA, home("Berlin", "system", valid_from=T0 + timedelta(days=30)))
    assert [item.value for item in items.query(ANA)] == ["Lisbon"]
    later = T0 + timedelta(days=31)
    assert [item.value for item in items.query(ANA, as_of=later, known_at=later)] == ["Berlin"]


def test_a_state_given_an_end_keeps_it(items: MemoryItems) -> None:
    end = T0 + timedelta(days=5)
    items.write(ANA, home("Lisbon", "system", ends_at=end))
    assert timeline(items) == [("Lisbon", ItemStatus.ACTIVE, T0, end)]
    assert items.query(ANA, as_of=end, known_at=end + timedelta(days=1)) == []


def test_a_state_let_go_keeps_its_place_so_the_one_before_does_not_come_back(
    items: MemoryItems, clock: Clock
) -> None:
    items.write(ANA, home("Lisbon", "system"))
    clock.now = T0 + timedelta(days=3)
    porto = items.write(ANA, home("Porto", "system")).item
    clock.now = T0 + timedelta(days=4)
    assert items.let_go([porto.pk]) == [porto.pk]
    assert timeline(items) == [
        ("Lisbon", ItemStatus.SUPERSEDED, T0, T0 + timedelta(days=3)),
        ("Porto", ItemStatus.LET_GO, T0 + timedelta(days=3), None),
    ]
    assert items.query(ANA) == []


def test_rejecting_the_newest_state_reopens_the_one_before(
    items: MemoryItems, clock: Clock
) -> None:
    items.write(ANA, home("Lisbon", "system"))
    clock.now = T0 + timedelta(days=3)
    porto = items.write(ANA, home("Porto", "system")).item
    assert items.reject([porto.pk], "she never moved") == [porto.pk]
    porto.refresh_from_db()
    assert porto.status == ItemStatus.STALE
    assert porto.stale_because == {
        "reason": "rejected",
        "note": "she never moved",
        "at": clock.now.isoformat(),
    }
    assert timeline(items)[0] == ("Lisbon", ItemStatus.ACTIVE, T0, None)


def test_states_of_one_agent_are_recorded_at_least_a_millisecond_apart(
    items: MemoryItems,
) -> None:
    # given a clock that never moves
    first = items.write(ANA, home("Lisbon", "system")).item
    second = items.write(ANA, home("Porto", "system")).item
    third = items.write(BEN, home("Rome", "system", subject="Ben")).item
    assert second.recorded_at - first.recorded_at >= timedelta(milliseconds=1)
    assert third.recorded_at - second.recorded_at >= timedelta(milliseconds=1)


# --- opinions ------------------------------------------------------------------------------


def test_an_opinion_said_again_with_a_quote_that_says_it_gains_a_tenth(
    items: MemoryItems, said: Entry
) -> None:
    opinion = dict(kind="opinion", attribute="favourite city", confidence=0.5)
    items.write(ANA, home("Lisbon", "user", **opinion))
    unquoted = items.write(ANA, home("Lisbon", "user", **opinion)).item
    # a quote that holds but does not say the value gains nothing
    unrelated = items.write(
        ANA, home("Lisbon", "user", evidence=quoted(said, "since May"), **opinion)
    ).item
    quoted_again = items.write(ANA, home("Lisbon", "user", evidence=quoted(said), **opinion)).item
    assert unquoted.confidence == pytest.approx(0.5)
    assert unrelated.confidence == pytest.approx(0.5)
    assert quoted_again.confidence == pytest.approx(0.6)


def test_an_opinion_a_less_trusted_source_contradicts_loses_a_fifth(
    items: MemoryItems, said: Entry
) -> None:
    opinion = dict(kind="opinion", attribute="favourite city", confidence=0.8)
    first = items.write(ANA, home("Porto", "system", **opinion)).item
    # the user's grounded word enters the timeline and contradicts the system's
    second = items.write(ANA, home("Lisbon", "user", evidence=quoted(said), **opinion)).item
    assert second.status == ItemStatus.ACTIVE
    first.refresh_from_db()
    assert first.confidence == pytest.approx(0.6)
    # a suggestion contradicts nothing, and a contradiction from a more trusted source
    # costs nothing
    items.write(ANA, home("Rome", "web", **opinion))
    items.write(ANA, home("Madrid", "system", **opinion))
    second.refresh_from_db()
    assert second.confidence == pytest.approx(0.8)


# --- reading -------------------------------------------------------------------------------


def test_query_is_bitemporal(items: MemoryItems, clock: Clock) -> None:
    # given Lisbon known on day 0, Porto (since day 5) known on day 7
    items.write(ANA, home("Lisbon", "system"))
    clock.now = T0 + timedelta(days=7)
    items.write(ANA, home("Porto", "system", valid_from=T0 + timedelta(days=5)))

    def values(**when: Any) -> list[str]:
        return [item.value for item in items.query(ANA, **when)]

    # then
    assert values() == ["Porto"]
    assert values(as_of=T0 + timedelta(days=2)) == ["Lisbon"]
    assert values(known_at=T0 + timedelta(days=6), as_of=T0 + timedelta(days=6)) == ["Lisbon"]
    assert values(known_at=T0 - timedelta(days=1)) == []


def test_an_item_that_left_memory_counts_as_it_stood_then(items: MemoryItems, clock: Clock) -> None:
    item = items.write(ANA, home("Lisbon", "system")).item
    clock.now = T0 + timedelta(days=2)
    items.let_go([item.pk])
    assert items.query(ANA) == []
    assert [i.pk for i in items.query(ANA, known_at=T0 + timedelta(days=1))] == [item.pk]


def test_query_filters_by_status_kind_and_slot(items: MemoryItems) -> None:
    suggested = items.write(ANA, home("Lisbon", "model")).item
    active = items.write(ANA, home("aisle", "system", kind="preference", attribute="seat")).item
    assert [i.pk for i in items.query(ANA, statuses=["suggested"])] == [suggested.pk]
    assert [i.pk for i in items.query(ANA, kinds=["preference"])] == [active.pk]
    slot = Slot(active.subject_id, "seat")
    assert [i.pk for i in items.query(ANA, slot=slot)] == [active.pk]


def test_a_scope_sees_its_own_items_and_those_shared_wider(items: MemoryItems) -> None:
    mine = items.write(ANA, home("Lisbon", "system")).item
    shared = items.write(AGENT, home("English", "system", attribute="language")).item
    bens = items.write(BEN, home("Rome", "system", subject="Ben")).item
    threaded = items.write(
        MemoryScope("concierge", user_id="ana", thread_id="t-1"),
        home("window", "system", attribute="seat"),
    ).item
    assert {i.pk for i in items.query(ANA)} == {mine.pk, shared.pk}
    assert {i.pk for i in items.query(BEN)} == {bens.pk, shared.pk}
    assert {i.pk for i in items.query(AGENT)} == {shared.pk}
    in_thread = MemoryScope("concierge", user_id="ana", thread_id="t-1")
    assert {i.pk for i in items.query(in_thread)} == {mine.pk, shared.pk, threaded.pk}
    assert items.query(MemoryScope("rival", user_id="ana")) == []


def test_grants_narrow_every_read_and_write(items: MemoryItems) -> None:
    mine = items.write(ANA, home("Lisbon", "system")).item
    items.write(BEN, home("Rome", "system", subject="Ben"))
    ana_desk = Grants.for_agents(["concierge"], {"concierge": ["ana"]})
    assert [i.pk for i in items.query(ANA, grants=ana_desk)] == [mine.pk]
    assert items.query(BEN, grants=ana_desk) == []
    with pytest.raises(NoGrant):
        items.write(BEN, home("Paris", "system", subject="Ben"), grants=ana_desk)
    assert items.let_go([i.pk for i in MemoryItem.objects.all()], grants=ana_desk) == [mine.pk]


def test_history_holds_every_state_of_the_slot(items: MemoryItems, clock: Clock) -> None:
    items.write(ANA, home("Lisbon", "system"))
    clock.now = T0 + timedelta(days=1)
    rejected = items.write(ANA, home("Madrid", "model")).item
    items.reject([rejected.pk], "wrong")
    clock.now = T0 + timedelta(days=2)
    items.write(ANA, home("Porto", "system"))
    assert [(value, status) for value, status, *_ in timeline(items)] == [
        ("Lisbon", ItemStatus.SUPERSEDED),
        ("Madrid", ItemStatus.STALE),
        ("Porto", ItemStatus.ACTIVE),
    ]


def test_note_retrieved_counts_in_one_update(items: MemoryItems) -> None:
    first = items.write(ANA, home("Lisbon", "system")).item
    second = items.write(ANA, home("aisle", "system", attribute="seat")).item
    at = T0 + timedelta(hours=1)
    with CaptureQueriesContext(connection) as queries:
        assert items.note_retrieved([first.pk, second.pk, first.pk], at) == 2
    assert len(queries.captured_queries) == 1
    first.refresh_from_db()
    assert (first.times_retrieved, first.last_retrieved_at) == (1, at)


def test_mark_stale_returns_the_ids_it_marked_and_keeps_the_reason(items: MemoryItems) -> None:
    active = items.write(ANA, home("Lisbon", "system")).item
    suggested = items.write(ANA, home("aisle", "model", attribute="seat")).item
    marked = items.mark_stale(
        [active.pk, suggested.pk], {"reason": "repeats"}, only_from=["suggested"]
    )
    assert marked == [suggested.pk]
    suggested.refresh_from_db()
    assert suggested.stale_because == {"reason": "repeats", "at": T0.isoformat()}
    active.refresh_from_db()
    assert active.status == ItemStatus.ACTIVE


def test_activate_changes_only_items_of_the_statuses_it_is_given(items: MemoryItems) -> None:
    # The review decision (items.review.ActivateItems) passes the statuses it applies to.
    active = items.write(ANA, home("Lisbon", "system")).item
    suggested = items.write(ANA, home("aisle", "model", attribute="seat")).item
    changed = items.activate([active.pk, suggested.pk], from_statuses=ActivateItems.statuses)
    assert changed == [suggested.pk]
    suggested.refresh_from_db()
    assert (suggested.status, suggested.activated_at) == (ItemStatus.ACTIVE, T0)


def test_revise_evidence_drops_quotes_and_what_they_verified(
    items: MemoryItems, said: Entry
) -> None:
    item = items.write(ANA, home("Lisbon", confidence=0.9, evidence=quoted(said))).item
    untouched = items.write(ANA, home("aisle", "system", attribute="seat")).item
    changed = items.revise_evidence(
        [item.pk, untouched.pk], keep=lambda evidence: evidence.entry_id != said.pk
    )
    assert changed == [item.pk]
    item.refresh_from_db()
    assert item.verified is False
    assert not Evidence.objects.filter(item=item).exists()


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"kind": "rumour"}, "kind"),
        ({"trust": "gossip"}, "trust"),
        ({"value": "  "}, "value"),
        ({"attribute": ""}, "attribute"),
        ({"subject": "x" * 256}, "subject"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"valid_from": datetime(2026, 1, 1)}, "valid_from"),
        ({"ends_at": T0 - timedelta(days=1), "valid_from": T0}, "ends_at"),
        ({"value": "a\x00b"}, "value"),
        ({"metadata": {"x": float("nan")}}, "metadata"),
    ],
)
def test_a_bad_item_is_refused_naming_the_field_and_writes_nothing(
    items: MemoryItems, fields: dict[str, Any], named: str
) -> None:
    base = {"kind": "fact", "subject": "Ana", "attribute": "home", "value": "Lisbon"}
    base["trust"] = "system"
    with pytest.raises(InvalidItem) as refused:
        items.write(ANA, NewItem(**{**base, **fields}))
    assert named in refused.value.errors
    assert not MemoryItem.objects.exists()
    assert not Entity.objects.exists()


def test_entities_are_matched_by_name_with_case_and_spacing_folded(items: MemoryItems) -> None:
    items.write(ANA, home("Lisbon", "system", subject="Ana  Lima"))
    items.write(ANA, home("aisle", "system", subject="ana lima", attribute="seat"))
    assert Entity.objects.count() == 1
    assert entity_key(" Ana\tLIMA ") == "ana lima"


def test_the_activation_confidence_comes_from_settings(said: Entry, settings) -> None:
    settings.COGITATOR_MEMORY = {"ITEMS": {"ACTIVATION_CONFIDENCE": 0.95}}
    written = MemoryItems().write(ANA, home("Lisbon", confidence=0.9, evidence=quoted(said)))
    assert written.item.status == ItemStatus.SUGGESTED


def test_a_write_takes_the_agents_lock_before_it_reads_the_slot(items: MemoryItems) -> None:
    items.write(ANA, home("Lisbon", "system"))
    with CaptureQueriesContext(connection) as queries:
        items.write(ANA, home("Porto", "system"))
    statements = [query["sql"] for query in queries.captured_queries]
    reads = [sql for sql in statements if "pg_advisory_xact_lock" in sql or " LEFT JOIN " in sql]
    if connection.vendor == "postgresql":
        # the lock, then the read, sent together: one round trip, two snapshots
        assert len(reads) == 1, statements
        lock_at = reads[0].index("pg_advisory_xact_lock")
        assert lock_at < reads[0].index(" LEFT JOIN ")
        assert reads[0][:lock_at].count(";") == 0 and ";" in reads[0][lock_at:]
    else:
        # SQLite's IMMEDIATE transaction is the lock
        assert not any("pg_advisory_xact_lock" in sql for sql in statements)
        assert len(reads) == 1


def test_a_new_state_is_inserted_with_the_parameters_the_orm_compiles(
    items: MemoryItems, clock: Clock
) -> None:
    """The INSERT of a new state is compiled once per database; every later write sends
    its own values through it exactly as the ORM's compiler would."""
    from django.db.models.sql import InsertQuery

    from cogitator_memory.items.write_sql import WriteSQL

    first = items.write(
        ANA, NewItem(kind="fact", subject="Ana", attribute="city", value="Porto", trust="system")
    )
    clock.now += timedelta(days=1)
    subject = first.item.subject
    state = MemoryItem(
        agent_id="concierge",
        user_id="ana",
        project_id="p-9",
        thread_id="t-9",
        kind="event",
        subject=subject,
        attribute="trip",
        value="Rome, in May",
        content="Ana goes to Rome.",
        trust="user",
        verified=True,
        confidence=0.8,
        status="suggested",
        valid_from=T0,
        ends_at=T0 + timedelta(days=3),
        valid_to=T0 + timedelta(days=3),
        valid_to_known_at=T0,
        recorded_at=T0,
        metadata={"note": "a", "n": [1, 2]},
    )
    WriteSQL._insert_sql.pop(connection.alias, None)
    WriteSQL.insert_statement(first.item, connection)
    cached = WriteSQL.insert_statement(state, connection)
    query = InsertQuery(MemoryItem)
    query.insert_values(MemoryItem._meta.concrete_fields, [state])
    [(sql, params)] = query.get_compiler(connection=connection).as_sql()
    assert cached[0] == sql
    assert [str(value) for value in cached[1]] == [str(value) for value in params]

    # And a write through it stores every value it was given.
    later = items.write(
        ANA,
        NewItem(kind="fact", subject="Ana", attribute="city", value="Lisbon", trust="system"),
    )
    stored = MemoryItem.objects.get(pk=later.item.pk)
    assert (stored.value, stored.trust, stored.status, stored.recorded_at) == (
        "Lisbon",
        "system",
        ItemStatus.ACTIVE,
        clock.now,
    )
    assert MemoryItem.objects.get(pk=first.item.pk).valid_to == stored.valid_from


def prepared_statements() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        return int(cursor.fetchone()[0])


@pytest.mark.postgres_only
@pytest.mark.parametrize("threshold", [2, None])
def test_writes_prepare_their_statements_where_the_connection_allows(
    items: MemoryItems, clock: Clock, threshold: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a ``prepare_threshold`` in ``OPTIONS`` a write's read and insert are prepared
    on the server after that many runs; with None (behind a pooler) nothing is."""
    options = {**connection.settings_dict.get("OPTIONS", {}), "prepare_threshold": threshold}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    connection.ensure_connection()
    monkeypatch.setattr(connection.connection, "prepare_threshold", threshold)
    before = prepared_statements()

    # when: a slot said again and again, each time a new value
    for number in range(6):
        clock.now += timedelta(minutes=1)
        items.write(
            ANA,
            NewItem(
                kind="fact", subject="Ana", attribute="city", value=f"city {number}", trust="system"
            ),
        )

    # then
    prepared = prepared_statements() - before
    assert prepared >= 2 if threshold is not None else prepared == 0
    states = MemoryItem.objects.filter(attribute="city").order_by("valid_from")
    assert [state.value for state in states] == [f"city {number}" for number in range(6)]
    assert [state.status for state in states] == [ItemStatus.SUPERSEDED] * 5 + [ItemStatus.ACTIVE]
