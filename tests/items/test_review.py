"""The review decisions on memory items as action classes (``items.review``): the
permission each takes, the refusal of API keys, the statuses each applies to, all or
nothing for a batch, the reason of a rejection, the admin log, and the caller's grants."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import AnonymousUser, Permission, User
from rest_framework_api_key.models import APIKey

from cogitator_memory.exceptions import (
    InvalidItem,
    ItemNotFound,
    ItemNotReviewable,
    ReviewRefused,
)
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.review import ActivateItems, ItemReview, LetGoItems, RejectItems
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem
from cogitator_memory.review import Via

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
DECISIONS: list[type[ItemReview]] = [ActivateItems, RejectItems, LetGoItems]
CONCIERGE = Grants.for_agents(["concierge"])


def write(
    value: str, trust: str = "model", *, scope: MemoryScope = ANA, **fields: Any
) -> MemoryItem:
    new = NewItem(
        kind="fact",
        subject=fields.pop("subject", "Ana"),
        attribute=fields.pop("attribute", value),
        value=value,
        trust=trust,
        **fields,
    )
    return MemoryItems().write(scope, new).item


def with_status(value: str, status: str) -> MemoryItem:
    """An item of Ana's brought to ``status`` by the transitions themselves."""
    item = write(value, "system" if status != ItemStatus.SUGGESTED else "model")
    items = MemoryItems()
    if status == ItemStatus.STALE:
        items.mark_stale([item.pk], {"reason": "changed"})
    elif status == ItemStatus.LET_GO:
        items.let_go([item.pk])
    elif status == ItemStatus.SUPERSEDED:
        # A later state of the same slot closes the first.
        write("newer", "system", attribute=value)
    item.refresh_from_db()
    assert item.status == status, (item.status, status)
    return item


def reviewer(*codenames: str, name: str = "rev", **fields: Any) -> User:
    user = User.objects.create_user(name, password="pw", **fields)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # no cached permissions


def decide(
    decision: type[ItemReview],
    user: Any,
    ids: list[str],
    *,
    reason: str = "wrong",
    grants: Grants = CONCIERGE,
    via: Via = Via.API,
    api_key: object | None = None,
) -> list[MemoryItem]:
    review = decision(user, grants=grants, via=via, api_key=api_key)
    return review.execute(ids, reason=reason)


def statuses() -> dict[str, str]:
    return dict(MemoryItem.objects.values_list("value", "status"))


# --- what each decision is --------------------------------------------------------------


def test_each_decision_names_its_permission_and_its_statuses() -> None:
    # the one place the statuses are listed, and the permission of MemoryItem.Meta
    assert [(d.permission, d.statuses) for d in DECISIONS] == [
        ("cogitator_memory.activate_memoryitem", ("suggested", "stale")),
        ("cogitator_memory.reject_memoryitem", ("suggested", "active", "superseded")),
        ("cogitator_memory.let_go_memoryitem", ("suggested", "active", "superseded")),
    ]
    assert [d.takes_reason for d in DECISIONS] == [False, True, False]


@pytest.mark.parametrize("decision", DECISIONS)
def test_a_user_holding_the_permission_makes_the_decision(decision: type[ItemReview]) -> None:
    # given
    item = write("Lisbon")
    user = reviewer(decision.permission.split(".")[1])
    # when
    [done] = decide(decision, user, [item.pk])
    # then
    expected = {
        ActivateItems: ItemStatus.ACTIVE,
        RejectItems: ItemStatus.STALE,
        LetGoItems: ItemStatus.LET_GO,
    }
    assert done.pk == item.pk and done.status == expected[decision]
    assert MemoryItem.objects.get(pk=item.pk).status == expected[decision]


@pytest.mark.parametrize("decision", DECISIONS)
def test_the_other_decisions_permissions_do_not_grant_this_one(
    decision: type[ItemReview],
) -> None:
    # given a user holding every review permission but this decision's
    item = write("Lisbon")
    others = [d.permission.split(".")[1] for d in DECISIONS if d is not decision]
    user = reviewer(*others, "change_memoryitem")
    # when
    with pytest.raises(ReviewRefused) as refused:
        decide(decision, user, [item.pk])
    # then
    assert refused.value.permission == decision.permission
    assert refused.value.message == (
        f"You need the permission {decision.permission} to {decision.label()} memory items."
    )
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED}
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("decision", DECISIONS)
def test_an_api_key_never_reviews_whoever_stands_behind_it(decision: type[ItemReview]) -> None:
    # given a key, and even a superuser as the request's user
    item = write("Lisbon")
    api_key, _secret = APIKey.objects.create_key(name="server")
    boss = reviewer(name="boss", is_superuser=True)
    # when
    with pytest.raises(ReviewRefused) as refused:
        decide(decision, boss, [item.pk], api_key=api_key)
    # then
    assert refused.value.message == (
        f"Reviews are made by people: an API key cannot {decision.label()} memory items."
    )
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED}


@pytest.mark.parametrize("user", [None, AnonymousUser()])
def test_nobody_reviews_without_a_user(user: Any) -> None:
    item = write("Lisbon")
    with pytest.raises(ReviewRefused):
        decide(ActivateItems, user, [item.pk])
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED}


def test_an_inactive_user_is_refused_even_with_the_permission() -> None:
    item = write("Lisbon")
    user = reviewer("activate_memoryitem", is_active=False)
    with pytest.raises(ReviewRefused):
        decide(ActivateItems, user, [item.pk])


def test_a_superuser_holds_every_decision() -> None:
    item = write("Lisbon")
    boss = reviewer(name="boss", is_superuser=True)
    decide(LetGoItems, boss, [item.pk], grants=Grants.everything())
    assert statuses() == {"Lisbon": ItemStatus.LET_GO}


# --- the statuses ---------------------------------------------------------------------------


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("status", [choice.value for choice in ItemStatus])
def test_a_decision_takes_the_statuses_it_lists_and_refuses_the_others(
    decision: type[ItemReview], status: str
) -> None:
    # given
    item = with_status("Lisbon", status)
    user = reviewer(decision.permission.split(".")[1])
    review = decision(user, grants=CONCIERGE, via=Via.ADMIN)
    assert review.applies_to(item) == (status in decision.statuses)
    assert review.allowed_on(item) == (status in decision.statuses)
    # when / then
    if status in decision.statuses:
        review.execute([item.pk], reason="wrong")
        assert LogEntry.objects.count() == 1
        return
    with pytest.raises(ItemNotReviewable) as refused:
        review.execute([item.pk], reason="wrong")
    assert (refused.value.item_id, refused.value.status) == (item.pk, status)
    assert refused.value.refused == {item.pk: status}
    assert refused.value.message == (
        f"Memory item {item.pk!r} is {status}; {decision.label()} applies to "
        f"{' or '.join(decision.statuses)} memory items only."
    )
    assert MemoryItem.objects.get(pk=item.pk).status == status
    assert not LogEntry.objects.exists()


def test_a_batch_changes_every_item_or_none_and_says_which_and_why() -> None:
    # given two suggested items and two that activating does not take
    first, second = write("Lisbon"), write("aisle")
    active = with_status("tea", ItemStatus.ACTIVE)
    gone = with_status("cats", ItemStatus.LET_GO)
    user = reviewer("activate_memoryitem")
    # when
    with pytest.raises(ItemNotReviewable) as refused:
        decide(ActivateItems, user, [first.pk, active.pk, second.pk, gone.pk])
    # then: nothing changed, and the error names both refused items with their statuses
    assert refused.value.refused == {active.pk: "active", gone.pk: "let_go"}
    assert refused.value.message == (
        f"Memory items {active.pk!r} (active), {gone.pk!r} (let_go) cannot take it: "
        "activate applies to suggested or stale memory items only."
    )
    assert statuses() == {
        "Lisbon": ItemStatus.SUGGESTED,
        "aisle": ItemStatus.SUGGESTED,
        "tea": ItemStatus.ACTIVE,
        "cats": ItemStatus.LET_GO,
    }
    assert not LogEntry.objects.exists()


def test_a_change_that_comes_first_leaves_the_whole_batch_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given: between the decision's read and its transition, another reviewer lets one go
    first, second = write("Lisbon"), write("aisle")
    user = reviewer("activate_memoryitem")
    real_activate = MemoryItems.activate

    def activate_after_another_change(self: MemoryItems, ids: Any, **kwargs: Any) -> list[str]:
        MemoryItems().let_go([second.pk])
        return real_activate(self, ids, **kwargs)

    monkeypatch.setattr(MemoryItems, "activate", activate_after_another_change)
    # when
    with pytest.raises(ItemNotReviewable) as refused:
        decide(ActivateItems, user, [first.pk, second.pk])
    # then: the first one, activated by the transition, is rolled back too
    assert refused.value.refused == {second.pk: "let_go"}
    assert MemoryItem.objects.get(pk=first.pk).status == ItemStatus.SUGGESTED
    assert not LogEntry.objects.exists()


def test_an_id_chosen_twice_is_decided_once() -> None:
    item = write("Lisbon")
    user = reviewer("activate_memoryitem")
    assert [row.pk for row in decide(ActivateItems, user, [item.pk, item.pk])] == [item.pk]
    assert LogEntry.objects.count() == 1


def test_no_ids_decide_nothing() -> None:
    assert decide(ActivateItems, reviewer("activate_memoryitem"), []) == []


# --- the reason of a rejection ------------------------------------------------------------


@pytest.mark.parametrize("reason", ["", "   ", "x" * 1001, "a\x00b"])
def test_a_rejection_needs_a_reason_of_text(reason: str) -> None:
    # given
    item = write("Lisbon")
    user = reviewer("reject_memoryitem")
    # when
    with pytest.raises(InvalidItem) as refused:
        decide(RejectItems, user, [item.pk], reason=reason)
    # then
    assert refused.value.errors == {
        "reason": ["Give the reason, a non-empty text of at most 1000 characters."]
    }
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED}


def test_a_rejection_keeps_its_reason_without_the_spaces_around_it() -> None:
    item = write("Lisbon")
    [done] = decide(
        RejectItems, reviewer("reject_memoryitem"), [item.pk], reason="  she lives in Porto "
    )
    assert done.stale_because["reason"] == "rejected"
    assert done.stale_because["note"] == "she lives in Porto"
    assert list(MemoryItem.objects.rejected().values_list("pk", flat=True)) == [item.pk]


def test_the_other_decisions_take_no_reason() -> None:
    item = write("Lisbon")
    decide(ActivateItems, reviewer("activate_memoryitem"), [item.pk], reason="")
    assert LogEntry.objects.get().change_message == "activated (API)"


# --- the admin log ----------------------------------------------------------------------


def test_each_item_decided_gets_one_log_entry_saying_the_decision_reason_and_way() -> None:
    # given
    first, second = write("Lisbon"), write("aisle")
    user = reviewer("reject_memoryitem")
    # when
    decide(RejectItems, user, [first.pk, second.pk], reason="not said", via=Via.ADMIN)
    decide(ActivateItems, reviewer("activate_memoryitem", name="other"), [first.pk])
    # then
    logged = LogEntry.objects.order_by("id")
    assert [(e.object_id, e.user.username, e.action_flag) for e in logged] == [
        (first.pk, "rev", CHANGE),
        (second.pk, "rev", CHANGE),
        (first.pk, "other", CHANGE),
    ]
    assert [e.change_message for e in logged] == [
        "rejected: not said (admin)",
        "rejected: not said (admin)",
        "activated (API)",
    ]
    assert {e.content_type.model_class() for e in logged} == {MemoryItem}


# --- the caller's grants -------------------------------------------------------------------


@pytest.mark.parametrize("decision", DECISIONS)
def test_an_item_outside_the_reviewers_grants_is_not_found(decision: type[ItemReview]) -> None:
    # given an item of another agent and a reviewer granted the concierge only
    theirs = write("Rome", scope=MemoryScope("rival", user_id="ana"))
    user = reviewer(decision.permission.split(".")[1])
    # when
    with pytest.raises(ItemNotFound) as missing:
        decide(decision, user, [theirs.pk])
    # then: the answer of an id no item has
    assert missing.value.message == f"Memory item not found: {theirs.pk!r}"
    assert statuses() == {"Rome": ItemStatus.SUGGESTED}


def test_a_grant_naming_users_reaches_only_their_items() -> None:
    # given a reviewer granted Ana's memory of the concierge, and one of Ben's
    mine = write("Lisbon")
    bens = write("Oslo", scope=MemoryScope("concierge", user_id="ben"))
    user = reviewer("activate_memoryitem")
    anas = Grants.for_agents(["concierge"], {"concierge": ["ana"]})
    # when: a batch holding Ben's item
    with pytest.raises(ItemNotFound) as missing:
        decide(ActivateItems, user, [mine.pk, bens.pk], grants=anas)
    # then: none changed
    assert missing.value.item_id == bens.pk
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED, "Oslo": ItemStatus.SUGGESTED}
    decide(ActivateItems, user, [mine.pk], grants=anas)
    assert statuses() == {"Lisbon": ItemStatus.ACTIVE, "Oslo": ItemStatus.SUGGESTED}


def test_an_invisible_item_is_not_found_before_any_permission_is_looked_at() -> None:
    # so that ids cannot be probed by who lacks the permission
    theirs = write("Rome", scope=MemoryScope("rival"))
    with pytest.raises(ItemNotFound):
        decide(ActivateItems, reviewer(), [theirs.pk])


@pytest.mark.parametrize("item_id", ["", "a\x00b", "x" * 65])
def test_an_id_no_item_can_have_is_not_found_without_a_query_error(item_id: str) -> None:
    with pytest.raises(ItemNotFound):
        decide(ActivateItems, reviewer("activate_memoryitem"), [item_id])
