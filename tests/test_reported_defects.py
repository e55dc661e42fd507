"""The defects found when the base was tried as an attacker and as a reviewer would, each
reproduced as it was reported and each answered as it must be now. Every test ran red on
the code before the fix; the suite runs them on SQLite and on PostgreSQL.

(Defect 7, the install steps and the settings checks, is covered by tests/test_install.py
and tests/test_checks.py; defect 8, the schema, by tests/api/test_schemathesis.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings
from rest_framework.test import APIClient

from cogitator_memory.access.models import Grant
from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.threads import selectors, services
from cogitator_memory.threads.models import Entry, Thread
from tests.api.conftest import API, add_grants, assert_error, token_client
from tests.search.support import CONCEPT_PROVIDER, embeddings_settings

pytestmark = pytest.mark.django_db

MODES = ["keyword", "vector", "hybrid"]


@pytest.fixture(autouse=True)
def concept_embeddings() -> Iterator[None]:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(CONCEPT_PROVIDER)):
        yield


def principal(username: str, grants: dict[str, Any]) -> APIClient:
    user = User.objects.create_user(username, password="pw")
    add_grants(grants, user=user)
    return token_client(user)


def search(client: APIClient, query: str, mode: str) -> list[str]:
    response = client.get(f"{API}/search/", {"q": query, "mode": mode, "limit": 50})
    assert response.status_code == 200, response.json()
    return [hit["source_id"] for hit in response.json()["results"]]


def indexed(*entries: Entry) -> None:
    """The entries' vectors in the message index, as the embedding task writes them."""
    assert message_index.index_entries([entry.pk for entry in entries]) == len(entries)


# --- 1. search and a thread that moved to another user ------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_1_search_follows_a_thread_that_moved_to_another_user(mode: str) -> None:
    # given t-move of a1 and user u1, with a message in the index
    superuser = User.objects.create_superuser("root", "root@example.com", "pw")
    admin = token_client(superuser)
    created = admin.post(
        f"{API}/threads/",
        {"id": "t-move", "agent_id": "a1", "metadata": {"userId": "u1"}},
        format="json",
    )
    assert created.status_code == 201, created.json()
    secret = services.add_entry("t-move", role="user", content="MOVESECRET dinner at eight")
    indexed(secret)
    u1_desk = principal("desk-u1", {"a1": ["u1"]})
    u2_desk = principal("desk-u2", {"a1": ["u2"]})
    assert search(u1_desk, "MOVESECRET dinner", mode) == [secret.pk]
    # when the thread moves to u2
    moved = admin.patch(f"{API}/threads/t-move/", {"metadata": {"userId": "u2"}}, format="json")
    assert moved.status_code == 200, moved.json()
    # then u1's desk can open neither the thread nor its messages by search
    assert u1_desk.get(f"{API}/threads/t-move/").status_code == 404
    assert search(u1_desk, "MOVESECRET dinner", mode) == []
    # and u2's desk, which may open the thread now, finds the message
    assert search(u2_desk, "MOVESECRET dinner", mode) == [secret.pk]
    # and the owner copied into the vector row moved with the thread
    row = Embedding.objects.get(source_id=secret.pk)
    assert (row.user_id, row.metadata["userId"]) == ("u2", "u2")


# --- 2. a userId that is not a text -------------------------------------------------------


def test_2_a_numeric_user_id_is_refused_by_the_api_and_the_services() -> None:
    # given
    admin = token_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    # when
    response = admin.post(
        f"{API}/threads/", {"agent_id": "a1", "metadata": {"userId": 7}}, format="json"
    )
    # then
    assert_error(response, 400, "invalid", ["metadata.userId"])
    with pytest.raises(InvalidInput):
        services.create_thread("a1", {"userId": 7})
    assert not Thread.objects.exists()


@pytest.mark.parametrize("mode", MODES)
def test_2_a_legacy_numeric_user_id_does_not_leak_through_search(mode: str) -> None:
    # given a thread stored before the rule, whose userId is the number 7, and a vector
    # that copied it as the text "7"
    thread = services.create_thread("a1", thread_id="t-seven")
    entry = services.add_entry(thread.pk, role="user", content="SEVENSECRET dinner plans")
    indexed(entry)
    Thread.objects.filter(pk=thread.pk).update(metadata={"userId": 7}, user_id=None)
    Embedding.objects.filter(source_id=entry.pk).update(user_id="7", metadata={"userId": "7"})
    grant_for_7 = principal("desk-7", {"a1": ["7"]})
    # then the grant for user "7" opens neither the thread nor its message
    assert grant_for_7.get(f"{API}/threads/t-seven/").status_code == 404
    assert search(grant_for_7, "SEVENSECRET dinner", mode) == []


# --- 3. a deleted message's text ------------------------------------------------------------


@pytest.mark.parametrize("how", ["delete", "redact", "clear", "delete-thread"])
def test_3_vectors_go_in_the_transaction_that_removes_their_entry(how: str) -> None:
    # given a broker nobody can reach: nothing queued after commit would ever run
    thread = services.create_thread("a1", {"userId": "u1"})
    entry = services.add_entry(thread.pk, role="user", content="GONESECRET dinner at eight")
    indexed(entry)
    assert Embedding.objects.filter(source_id=entry.pk).exists()
    with override_settings(
        CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL="redis://127.0.0.1:1/0"
    ):
        # when
        if how == "delete":
            services.delete_entry(entry.pk)
        elif how == "redact":
            services.redact_entry(entry.pk)
        elif how == "clear":
            services.clear_thread(thread.pk)
        else:
            services.delete_thread(thread.pk)
        # then the vector is gone before the transaction even commits
        assert not Embedding.objects.filter(source_id=entry.pk).exists()


# --- 4. the admin and the write check ------------------------------------------------------


def test_4_the_admin_refuses_moving_a_thread_out_of_the_staff_users_grant() -> None:
    # given a staff user who may change threads, granted agent a1 for user u-7 only
    staff = User.objects.create_user("staff-7", password="pw", is_staff=True)
    staff.user_permissions.add(
        Permission.objects.get(codename="view_thread"),
        Permission.objects.get(codename="change_thread"),
    )
    Grant.objects.create(user=staff, agent_id="a1", user_ids=["u-7"])
    thread = services.create_thread("a1", {"userId": "u-7"}, thread_id="t-7")
    client = Client()
    client.force_login(staff)
    # when the form moves the thread to u-99
    response = client.post(
        f"/admin/cogitator_memory/thread/{thread.pk}/change/",
        {"metadata": json.dumps({"userId": "u-99"})},
    )
    # then the form says why and nothing changes
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["metadata"]
    assert errors == ["You have no grant for user 'u-99' of agent 'a1'."]
    stored = Thread.objects.get(pk=thread.pk)
    assert (stored.metadata, stored.user_id) == ({"userId": "u-7"}, "u-7")
    # and a change within the grant is saved
    kept = client.post(
        f"/admin/cogitator_memory/thread/{thread.pk}/change/",
        {"metadata": json.dumps({"userId": "u-7", "topic": "x"})},
    )
    assert kept.status_code == 302
    assert Thread.objects.get(pk=thread.pk).metadata == {"userId": "u-7", "topic": "x"}


# --- 5. probing thread ids ----------------------------------------------------------------


def test_5_a_principal_without_a_grant_learns_nothing_about_thread_ids() -> None:
    # given someone's thread, and a principal without any grant
    services.create_thread("a1", {"userId": "u1"}, thread_id="t-someone")
    nobody = principal("nobody", {})
    # when it tries the taken id and an unused one
    taken = nobody.post(f"{API}/threads/", {"id": "t-someone", "agent_id": "zz"}, format="json")
    unused = nobody.post(f"{API}/threads/", {"id": "t-unused", "agent_id": "zz"}, format="json")
    # then both answers are the same refusal
    assert_error(taken, 403, "permission_denied")
    assert_error(unused, 403, "permission_denied")
    assert taken.json() == {**unused.json()}
    assert list(Thread.objects.values_list("pk", flat=True)) == ["t-someone"]


def test_5_a_principal_with_a_grant_learns_only_that_an_id_is_taken() -> None:
    # given someone's thread, and a principal granted another agent
    services.create_thread("a1", {"userId": "u1"}, thread_id="t-someone")
    granted = principal("granted", {"zz": None})
    # when
    taken = granted.post(f"{API}/threads/", {"id": "t-someone", "agent_id": "zz"}, format="json")
    # then it is told the id cannot be used, and nothing of the thread
    body = assert_error(taken, 409, "thread_id_unavailable")
    assert body["message"] == "The thread id 't-someone' cannot be used; choose another."
    assert Thread.objects.get(pk="t-someone").agent_id == "a1"


# --- 6. answers that were 500s -------------------------------------------------------------


def test_6_an_image_of_negative_size_is_refused_with_the_field_named() -> None:
    # given
    admin = token_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    thread = services.create_thread("a1")
    part = {"type": "image_url", "image_url": {"url": "x", "width": 10, "height": -5}}
    # when
    response = admin.post(
        f"{API}/threads/{thread.pk}/entries/",
        {"role": "user", "content": [part]},
        format="json",
    )
    # then
    body = assert_error(response, 400, "invalid_entry", ["content"])
    assert body["errors"]["content"] == [
        "Content part 0: an image height is a whole number of pixels, 1 or more, not -5."
    ]
    assert not Entry.objects.exists()


def test_6_a_metadata_filter_of_many_keys_is_refused_not_a_database_error() -> None:
    # given
    admin = token_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    services.create_thread("a1", {"k0": 0})
    many = {f"k{n}": n for n in range(500)}
    # when
    response = admin.get(f"{API}/threads/", {"metadata": json.dumps(many)})
    # then
    assert_error(response, 400, "invalid", ["metadata"])
    with pytest.raises(InvalidInput) as refused:
        selectors.list_threads(metadata=many)
    assert refused.value.errors == {"metadata": ["A filter holds at most 32 keys, not 500."]}
    # and the largest filter allowed runs on both databases
    assert selectors.list_threads(metadata={f"k{n}": n for n in range(32)}).threads == []


def test_6_a_body_over_the_upload_limit_answers_the_apis_json_error() -> None:
    # given
    admin = token_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    body = json.dumps({"agent_id": "a1", "metadata": {"note": "x" * 3_000_000}})
    # when
    response = admin.post(f"{API}/threads/", data=body, content_type="application/json")
    # then
    assert_error(response, 413, "request_too_large")
    assert not Thread.objects.exists()
