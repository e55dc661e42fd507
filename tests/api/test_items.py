"""The memory items API: the list and its filters, one item with its evidence, a slot's
history, and the review actions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services
from tests.api.conftest import API, Conversation, api_key_client, assert_error, token_client

pytestmark = pytest.mark.django_db

ITEMS = f"{API}/items/"
U1 = MemoryScope("agent-a", user_id="u1")
REVIEWS = ("activate_memoryitem", "reject_memoryitem", "let_go_memoryitem")


def write(
    value: str,
    trust: str = "model",
    *,
    scope: MemoryScope = U1,
    attribute: str = "home city",
    **fields: Any,
) -> MemoryItem:
    new = NewItem(
        kind=fields.pop("kind", "fact"),
        subject=fields.pop("subject", "Ana"),
        attribute=attribute,
        value=value,
        trust=trust,
        **fields,
    )
    return MemoryItems().write(scope, new).item


def reviewer(make_user: Callable[..., User], *codenames: str, name: str = "rev") -> APIClient:
    user = make_user(name, {"agent-a": None})
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return token_client(user)


def ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def moment(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


# --- the list ---------------------------------------------------------------------------


def test_the_list_holds_the_visible_items_newest_first(client: APIClient) -> None:
    # given
    first = write("Porto")
    second = write("Lisbon", attribute="work city")
    foreign = write("Oslo", scope=MemoryScope("agent-b", user_id="u9"))
    # when
    listed = ids(client.get(ITEMS))
    # then
    assert listed == [second.pk, first.pk]
    assert foreign.pk not in listed


def test_an_item_is_absent_fields_and_its_subject(client: APIClient) -> None:
    # given
    item = write("Porto", content="Ana lives in Porto.", confidence=0.8)
    # when
    [row] = client.get(ITEMS).json()["results"]
    # then
    assert row["subject"] == {"id": item.subject_id, "name": "Ana", "kind": ""}
    assert (row["value"], row["content"], row["trust"], row["status"]) == (
        "Porto",
        "Ana lives in Porto.",
        "model",
        "suggested",
    )
    assert (row["agent_id"], row["user_id"], row["confidence"]) == ("agent-a", "u1", 0.8)
    # never set: absent, not null
    assert not {"project_id", "thread_id", "valid_to", "expired_at", "activated_at"} & set(row)
    assert row["valid_from"].endswith("Z") and row["recorded_at"].endswith("Z")


def test_the_list_filters_by_status_kind_user_and_slot(client: APIClient) -> None:
    # given
    suggested = write("Porto")
    active = write("tea", "system", attribute="drink", kind="preference")
    other_user = write("Oslo", scope=MemoryScope("agent-a", user_id="u2"))
    other_subject = write("Rome", subject="Bruno")
    # when / then
    assert ids(client.get(ITEMS, {"status": "active"})) == [active.pk]
    assert set(ids(client.get(ITEMS, {"status": "suggested,active"}))) == {
        suggested.pk,
        active.pk,
        other_user.pk,
        other_subject.pk,
    }
    assert ids(client.get(ITEMS, {"kind": "preference"})) == [active.pk]
    assert ids(client.get(ITEMS, {"user_id": "u2"})) == [other_user.pk]
    slot = {"subject_id": suggested.subject_id, "attribute": "home city"}
    assert ids(client.get(ITEMS, slot)) == [suggested.pk]
    assert ids(client.get(ITEMS, {"agent_id": "agent-b"})) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"status": "active,gone"}, "status"),
        ({"status": "active, stale"}, "status"),
        ({"status": ""}, "status"),
        ({"kind": "rumour"}, "kind"),
        ({"as_of": "2025-01-01"}, "as_of"),
        ({"known_at": "yesterday"}, "known_at"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"cursor": "nope"}, "cursor"),
        ({"agent_id": "  "}, "agent_id"),
        ({"user_id": "a\x00b"}, "user_id"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(
    client: APIClient, query: dict[str, str], field: str
) -> None:
    assert_error(client.get(ITEMS, query), 400, "invalid", [field])


def test_the_page_size_bound_is_the_setting_read_when_the_request_comes(
    client: APIClient, settings: Any
) -> None:
    # given a project that allows pages of at most 3
    settings.COGITATOR_MEMORY = {**settings.COGITATOR_MEMORY, "LIST_THREADS_MAX_LIMIT": 3}
    for n in range(4):
        write(f"value {n}", attribute=f"attribute {n}")
    # then a page of 3 is served and one of 4 is refused, naming the bound
    assert len(client.get(ITEMS, {"limit": "3"}).json()["results"]) == 3
    refused = client.get(ITEMS, {"limit": "4"})
    assert_error(refused, 400, "invalid", ["limit"])
    assert "3" in refused.json()["errors"]["limit"][0]
    # and the schema publishes the same bound
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    parameters = schema["paths"]["/api/memory/items/"]["get"]["parameters"]
    (limit,) = [parameter for parameter in parameters if parameter["name"] == "limit"]
    assert limit["schema"]["maximum"] == 3


def test_pages_follow_each_other_without_repeats(client: APIClient) -> None:
    # given five items, recorded a millisecond apart
    written = [write(f"value {n}", attribute=f"attribute {n}").pk for n in range(5)]
    seen: list[str] = []
    url: str | None = f"{ITEMS}?limit=2"
    # when
    pages = 0
    while url:
        body = client.get(url).json()
        seen += [row["id"] for row in body["results"]]
        url = body["next"]
        pages += 1
    # then
    assert seen == list(reversed(written))
    assert pages == 3


def test_as_of_and_known_at_read_the_slot_as_it_stood(client: APIClient) -> None:
    # given Porto from 2020, then (learned later) Lisbon from 2024
    porto = write("Porto", "system", valid_from=moment(2020))
    lisbon = write("Lisbon", "system", valid_from=moment(2024))
    learned_lisbon = MemoryItem.objects.get(pk=lisbon.pk).recorded_at
    before_lisbon = (learned_lisbon - timedelta(microseconds=500)).isoformat()
    # when / then: the world in 2022, and now
    assert ids(client.get(ITEMS, {"as_of": "2022-06-01T00:00:00Z"})) == [porto.pk]
    assert ids(client.get(ITEMS, {"as_of": "2030-01-01T00:00:00Z"})) == [lisbon.pk]
    # as memory knew it before Lisbon was said: Porto still held in 2030
    assert ids(client.get(ITEMS, {"as_of": "2030-01-01T00:00:00Z", "known_at": before_lisbon})) == [
        porto.pk
    ]
    # without a moment, every state, the superseded one too
    assert ids(client.get(ITEMS)) == [lisbon.pk, porto.pk]
    assert MemoryItem.objects.get(pk=porto.pk).status == ItemStatus.SUPERSEDED


def test_a_suggested_item_is_no_state_of_the_world(client: APIClient) -> None:
    # given
    suggested = write("Porto")
    # when / then: a moment reads active and superseded states unless told otherwise
    assert ids(client.get(ITEMS, {"as_of": "2999-01-01T00:00:00Z"})) == []
    now = {"known_at": "2999-01-01T00:00:00Z", "status": "suggested"}
    assert ids(client.get(ITEMS, now)) == [suggested.pk]


# --- one item ---------------------------------------------------------------------------


def test_the_detail_shows_each_quote_and_where_it_stands(
    client: APIClient, conversation: Conversation
) -> None:
    # given a quote that holds and one altered
    reply = conversation.reply
    item = write(
        "the depot",
        evidence=[
            NewEvidence(quote="It left the depot.", entry_id=reply.pk),
            NewEvidence(quote="It left the moon.", entry_id=reply.pk),
        ],
    )
    # when
    response = client.get(f"{ITEMS}{item.pk}/")
    # then
    assert response.status_code == 200
    evidence = response.json()["evidence"]
    assert [(e["quote"], e["verified"], e["entry_id"]) for e in evidence] == [
        ("It left the depot.", True, reply.pk),
        ("It left the moon.", False, reply.pk),
    ]
    assert {e["thread_id"] for e in evidence} == {conversation.thread_id}


def test_the_quotes_of_a_deleted_entry_leave_with_it(
    client: APIClient, conversation: Conversation
) -> None:
    # given one item standing on the root alone, one on the root and the reply
    only_root = write(
        "the parcel",
        evidence=[NewEvidence(quote="Where is my parcel?", entry_id=conversation.root.pk)],
    )
    both = write(
        "the depot",
        attribute="whereabouts",
        evidence=[
            NewEvidence(quote="Where is my parcel?", entry_id=conversation.root.pk),
            NewEvidence(quote="It left the depot.", entry_id=conversation.reply.pk),
        ],
    )
    # when
    services.delete_entry(conversation.root.pk)
    # then
    assert_error(client.get(f"{ITEMS}{only_root.pk}/"), 404, "item_not_found")
    quotes = client.get(f"{ITEMS}{both.pk}/").json()["evidence"]
    assert [quote["quote"] for quote in quotes] == ["It left the depot."]


def test_a_quote_in_a_thread_the_caller_cannot_see_keeps_its_text_only(
    make_user: Callable[..., User], conversation: Conversation
) -> None:
    # given an item of u2 quoting u1's thread
    item = write(
        "the depot",
        scope=MemoryScope("agent-a", user_id="u2"),
        evidence=[NewEvidence(quote="It left the depot.", entry_id=conversation.reply.pk)],
    )
    only_u2 = token_client(make_user("u2-desk", {"agent-a": ["u2"]}))
    # when
    response = only_u2.get(f"{ITEMS}{item.pk}/")
    # then
    [quote] = response.json()["evidence"]
    assert quote["quote"] == "It left the depot."
    assert "entry_id" not in quote and "thread_id" not in quote
    assert conversation.thread_id not in response.content.decode()


def test_an_item_of_another_agent_is_a_404_like_a_missing_one(client: APIClient) -> None:
    # given
    foreign = write("Oslo", scope=MemoryScope("agent-b", user_id="u9"))
    # when
    theirs = assert_error(client.get(f"{ITEMS}{foreign.pk}/"), 404, "item_not_found")
    missing = assert_error(client.get(f"{ITEMS}item_missing/"), 404, "item_not_found")
    # then
    assert theirs["message"].replace(foreign.pk, "<id>") == missing["message"].replace(
        "item_missing", "<id>"
    )


def test_the_history_lays_out_the_slot(client: APIClient) -> None:
    # given
    porto = write("Porto", "system", valid_from=moment(2020))
    lisbon = write("Lisbon", "system", valid_from=moment(2024))
    write("tea", "system", attribute="drink")
    # when
    response = client.get(f"{ITEMS}{porto.pk}/history/")
    # then
    states = response.json()["results"]
    assert [(s["id"], s["status"]) for s in states] == [
        (porto.pk, "superseded"),
        (lisbon.pk, "active"),
    ]
    assert states[0]["valid_to"] == states[1]["valid_from"]


# --- reviews ----------------------------------------------------------------------------


def test_a_reviewer_activates_and_the_admin_log_says_who(
    make_user: Callable[..., User],
) -> None:
    # given
    item = write("Porto")
    client = reviewer(make_user, "activate_memoryitem")
    # when
    response = client.post(f"{ITEMS}{item.pk}/activate/")
    # then
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "active"
    assert "activated_at" in response.json()
    assert MemoryItem.objects.get(pk=item.pk).status == ItemStatus.ACTIVE
    [logged] = LogEntry.objects.all()
    assert (logged.user.username, logged.object_id) == ("rev", item.pk)
    assert logged.change_message == "activated (API)"


def test_a_rejection_needs_a_reason_and_keeps_it(make_user: Callable[..., User]) -> None:
    # given
    item = write("Porto")
    client = reviewer(make_user, "reject_memoryitem")
    # when
    without = client.post(f"{ITEMS}{item.pk}/reject/", {}, format="json")
    blank = client.post(f"{ITEMS}{item.pk}/reject/", {"reason": "  "}, format="json")
    given = client.post(f"{ITEMS}{item.pk}/reject/", {"reason": "wrong city"}, format="json")
    # then
    assert_error(without, 400, "invalid", ["reason"])
    assert_error(blank, 400, "invalid", ["reason"])
    assert given.status_code == 200
    assert given.json()["status"] == "stale"
    assert given.json()["stale_because"]["note"] == "wrong city"


def test_letting_go_keeps_the_item_for_the_record(make_user: Callable[..., User]) -> None:
    # given
    item = write("Porto", "system")
    client = reviewer(make_user, "let_go_memoryitem")
    # when
    response = client.post(f"{ITEMS}{item.pk}/let-go/")
    # then
    assert response.json()["status"] == "let_go"
    assert ids(client.get(ITEMS, {"status": "active"})) == []
    assert ids(client.get(ITEMS, {"status": "let_go"})) == [item.pk]


@pytest.mark.parametrize(
    ("action", "granted"),
    [("activate", "reject_memoryitem"), ("reject", "activate_memoryitem"), ("let-go", None)],
)
def test_a_user_without_the_actions_permission_gets_a_403_and_nothing_changes(
    make_user: Callable[..., User], action: str, granted: str | None
) -> None:
    # given
    item = write("Porto")
    client = reviewer(make_user, *([granted] if granted else []))
    # when
    response = client.post(f"{ITEMS}{item.pk}/{action}/", {"reason": "x"}, format="json")
    # then
    assert_error(response, 403, "review_not_permitted")
    assert MemoryItem.objects.get(pk=item.pk).status == ItemStatus.SUGGESTED
    assert not LogEntry.objects.exists()


def test_an_api_key_never_reviews(make_api_key: Callable[..., tuple[APIKey, str]]) -> None:
    # given a key granted the item's agent
    item = write("Porto")
    _api_key, key = make_api_key("agent-server", {"agent-a": None})
    client = api_key_client(key)
    # when
    answers = [
        client.post(f"{ITEMS}{item.pk}/{action}/", {"reason": "x"}, format="json")
        for action in ("activate", "reject", "let-go")
    ]
    # then: it may read the item, not review it
    assert client.get(f"{ITEMS}{item.pk}/").status_code == 200
    for answer in answers:
        assert_error(answer, 403, "review_not_permitted")
    assert MemoryItem.objects.get(pk=item.pk).status == ItemStatus.SUGGESTED


def test_a_review_the_status_does_not_take_is_a_409(make_user: Callable[..., User]) -> None:
    # given an active item and a let-go one
    active = write("Porto", "system")
    gone = write("tea", "system", attribute="drink")
    client = reviewer(make_user, *REVIEWS)
    client.post(f"{ITEMS}{gone.pk}/let-go/")
    # when / then
    body = assert_error(client.post(f"{ITEMS}{active.pk}/activate/"), 409, "item_not_reviewable")
    assert "active" in body["message"]
    assert_error(client.post(f"{ITEMS}{gone.pk}/let-go/"), 409, "item_not_reviewable")
    assert_error(
        client.post(f"{ITEMS}{gone.pk}/reject/", {"reason": "x"}, format="json"),
        409,
        "item_not_reviewable",
    )
    assert MemoryItem.objects.get(pk=active.pk).status == ItemStatus.ACTIVE


def test_a_review_of_an_invisible_item_is_a_404_before_any_permission(
    make_user: Callable[..., User],
) -> None:
    # given an item of agent-b, and a reviewer of agent-a without any permission
    foreign = write("Oslo", scope=MemoryScope("agent-b", user_id="u9"))
    client = reviewer(make_user)
    # when / then: the same answer as for a missing item, so ids cannot be probed
    assert_error(client.post(f"{ITEMS}{foreign.pk}/activate/"), 404, "item_not_found")
    assert MemoryItem.objects.get(pk=foreign.pk).status == ItemStatus.SUGGESTED
