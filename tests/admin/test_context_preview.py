"""The context preview of a thread's page: the form, what a model would get, and why."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

pytestmark = pytest.mark.django_db


@dataclass
class Parcel:
    """question -> reply -> follow_up, the active path of agent-1's thread of user u-7."""

    thread: Thread
    question: Entry
    reply: Entry
    follow_up: Entry


@pytest.fixture
def parcel() -> Parcel:
    thread = services.create_thread("agent-1", {"userId": "u-7"}, thread_id="parcel")
    question = services.add_entry(thread.id, role="user", content="Where is my parcel?")
    reply = services.add_entry(thread.id, role="assistant", content="It left the depot.")
    follow_up = services.add_entry(thread.id, role="user", content="When will it arrive?")
    return Parcel(thread, question, reply, follow_up)


@pytest.fixture
def staff_client(django_user_model: type) -> Client:
    """A staff user who may view threads, entries and items (not change them), granted
    agent-1."""
    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_thread", "view_entry", "view_memoryitem"])
    )
    Grant.objects.create(user=user, agent_id="agent-1")
    client = Client()
    client.force_login(user)
    return client


def preview_url(thread: Thread) -> str:
    return reverse("admin:cogitator_memory_thread_preview_context", args=[quote(thread.pk)])


def preview(client: Client, thread: Thread, **params: Any) -> Any:
    query = {"max_tokens": 4000, "strategy": "recent", "include_facts": "on", **params}
    return client.get(preview_url(thread), {k: v for k, v in query.items() if v is not None})


def rows(html: str, table_id: str) -> list[str]:
    """The text of each body row of the table in the module ``table_id``, tags removed."""
    module = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    body = module.split("<tbody>", 1)[1]
    return [
        " ".join(re.sub(r"<[^>]+>", " ", row).split())
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def remember(value: str, *, user_id: str, entry: Entry) -> str:
    """An active fact of ``user_id`` with agent-1 (system trust), quoting ``entry``."""
    written = MemoryItems().write(
        MemoryScope("agent-1", user_id=user_id),
        NewItem(
            kind="fact",
            subject="Parcel",
            attribute="whereabouts",
            value=value,
            trust="system",
            evidence=[NewEvidence(quote="depot", entry_id=entry.pk)],
        ),
    )
    return written.item.pk


# --- the link and the form -------------------------------------------------------------


def test_thread_page_links_to_the_preview(staff_client: Client, parcel: Parcel) -> None:
    # when
    response = staff_client.get(
        reverse("admin:cogitator_memory_thread_change", args=[quote(parcel.thread.pk)])
    )

    # then
    assert response.status_code == 200
    assert f'href="{preview_url(parcel.thread)}"' in response.content.decode()


def test_preview_without_parameters_shows_the_form_only(
    staff_client: Client, parcel: Parcel
) -> None:
    # when
    response = staff_client.get(preview_url(parcel.thread))

    # then
    assert response.status_code == 200
    html = response.content.decode()
    for name in (
        "current_input",
        "max_tokens",
        "strategy",
        "system_prompt",
        "include_facts",
        "leaf_id",
        "as_of",
    ):
        assert f'name="{name}"' in html
    assert '<option value="recent" selected>' in html
    assert 'id="cm-built"' not in html
    assert response.context["form"].is_bound is False


# --- the result --------------------------------------------------------------------------


def test_preview_shows_the_messages_with_their_cache_breakpoints_and_the_partitions(
    staff_client: Client, parcel: Parcel
) -> None:
    # when
    response = preview(
        staff_client, parcel.thread, system_prompt="You track parcels.", current_input="Any news?"
    )

    # then
    assert response.status_code == 200
    html = response.content.decode()
    assert rows(html, "cm-messages") == [
        "1 system You track parcels.",
        "2 user Where is my parcel?",
        "3 assistant It left the depot. cache breakpoint",
        "4 user When will it arrive? cache breakpoint",
    ]
    built = response.context["built"]
    partitions = dict(line.split() for line in rows(html, "cm-partitions"))
    assert partitions["system"] == str(built.partitions["system"]) != "0"
    assert partitions["recent"] == str(built.partitions["recent"]) != "0"
    assert partitions["facts"] == "0"
    assert rows(html, "cm-dropped") == ["Nothing was left out."]
    assert f"{built.token_count} tokens without the input, of a budget of 4000" in html


def test_preview_lists_dropped_blocks_with_reason_and_a_link_to_the_entry(
    staff_client: Client, parcel: Parcel
) -> None:
    # given: the room for a single short message (110 tokens less the 100 kept free)
    # when
    response = preview(staff_client, parcel.thread, max_tokens=110)

    # then
    html = response.content.decode()
    dropped = rows(html, "cm-dropped")
    assert f"recent budget {response.context['built'].dropped.blocks[0].tokens}" in dropped[0]
    entry_url = reverse("admin:cogitator_memory_entry_change", args=[quote(parcel.question.pk)])
    assert f'<a href="{entry_url}">{parcel.question.pk}</a>' in html
    assert "History was left out." in html
    assert "Where is my parcel?" not in "".join(rows(html, "cm-messages"))


def test_preview_shows_the_facts_in_the_memory_context_linked_to_their_items(
    staff_client: Client, parcel: Parcel, django_capture_on_commit_callbacks: Any
) -> None:
    # given: a fact of the thread's user and one of another user
    mine = remember("left the depot", user_id="u-7", entry=parcel.reply)
    remember("SECRET-OF-U8", user_id="u-8", entry=parcel.reply)

    # when
    with django_capture_on_commit_callbacks() as callbacks:
        response = preview(staff_client, parcel.thread, current_input="Where is it?")

    # then
    html = response.content.decode()
    assert "&lt;memory_context&gt;" in html
    assert "left the depot" in html.split('id="cm-memory-context"', 1)[1]
    item_url = reverse("admin:cogitator_memory_memoryitem_change", args=[quote(mine)])
    assert f'<a href="{item_url}">{mine}</a>' in html
    assert "SECRET-OF-U8" not in html
    # a preview is not a turn: nothing is counted as retrieved
    assert callbacks == []


def test_preview_shows_graph_context_of_the_nodes_the_input_names(
    staff_client: Client, parcel: Parcel
) -> None:
    # given: the thread user's graph, and a node of another user
    from cogitator_memory.graph import MemoryGraph

    graph = MemoryGraph()
    scope = MemoryScope("agent-1", user_id="u-7")
    box = graph.add_node(scope, name="Parcel", type="package", trust="system")
    depot = graph.add_node(scope, name="Depot", type="place", trust="system")
    graph.add_edge(scope, source=box, target=depot, relation="left", trust="system")
    graph.add_node(
        MemoryScope("agent-1", user_id="u-8"), name="Parcel", type="secret", trust="system"
    )

    # when
    response = preview(
        staff_client,
        parcel.thread,
        current_input="Where is my parcel?",
        include_graph_context="on",
        graph_depth=1,
        graph_relations="left, held at",
    )

    # then
    html = response.content.decode()
    context = html.split('id="cm-memory-context"', 1)[1]
    assert "Graph context:\n- Parcel (package)\n- Depot (place)\n- Parcel left Depot" in context
    assert "secret" not in context
    assert response.context["built"].metadata.graph_edges_included == 1
    # and a bad option is shown on its field
    bad = preview(staff_client, parcel.thread, include_graph_context="on", graph_depth=99)
    assert "graph_depth" in bad.context["form"].errors


def test_preview_of_another_branch_by_its_leaf(staff_client: Client, parcel: Parcel) -> None:
    # given
    retry = services.add_entry(
        parcel.thread.pk, role="assistant", content="Let me check.", parent_id=parcel.question.pk
    )

    # when
    response = preview(staff_client, parcel.thread, leaf_id=retry.pk)

    # then
    assert rows(response.content.decode(), "cm-messages") == [
        "1 user Where is my parcel?",
        "2 assistant Let me check. cache breakpoint",
    ]


def test_preview_escapes_what_a_model_wrote(staff_client: Client, parcel: Parcel) -> None:
    # given
    services.add_entry(parcel.thread.pk, role="assistant", content="<script>alert(1)</script>")

    # when
    response = preview(staff_client, parcel.thread, system_prompt="<b>bold</b>")

    # then
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html


# --- who may preview ---------------------------------------------------------------------


def test_preview_of_a_thread_of_an_agent_not_granted_is_not_found(
    staff_client: Client,
) -> None:
    # given
    theirs = services.create_thread("agent-2", {"userId": "u-7"}, thread_id="theirs")
    services.add_entry(theirs.id, role="user", content="Not yours.")

    # when
    form = staff_client.get(preview_url(theirs))
    result = preview(staff_client, theirs)

    # then
    assert form.status_code == 404
    assert result.status_code == 404
    assert "Not yours." not in result.content.decode()


def test_preview_needs_the_view_permission_of_threads(
    django_user_model: type, parcel: Parcel
) -> None:
    # given: granted agent-1, but with no permission on threads
    user = django_user_model.objects.create_user("nobody", password="pw", is_staff=True)
    Grant.objects.create(user=user, agent_id="agent-1")
    client = Client()
    client.force_login(user)

    # when
    response = preview(client, parcel.thread)

    # then
    assert response.status_code == 403


def test_preview_asks_an_anonymous_visitor_to_log_in(client: Client, parcel: Parcel) -> None:
    response = preview(client, parcel.thread)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_preview_of_a_missing_thread_is_not_found(admin_client: Client) -> None:
    response = admin_client.get(
        reverse("admin:cogitator_memory_thread_preview_context", args=["nope"])
    )

    assert response.status_code == 404


def test_a_relevant_preview_without_an_embedding_service_is_recent_and_says_so(
    staff_client: Client, parcel: Parcel
) -> None:
    # when: the test settings configure no embedding service
    response = preview(staff_client, parcel.thread, strategy="relevant", current_input="News?")

    # then the context recent builds, with the fallback among its errors
    assert response.status_code == 200
    assert not response.context["form"].errors
    built = response.context["built"]
    assert [message["content"] for message in built.messages] == [
        "Where is my parcel?",
        "It left the depot.",
        "When will it arrive?",
    ]
    assert [error.source for error in built.errors] == ["relevance"]
    html = response.content.decode()
    assert 'id="cm-built"' in html
    assert "relevance: EmbeddingsNotConfigured: the relevant strategy needs" in html


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"max_tokens": -5}, "max_tokens", "greater than or equal to 1"),
        ({"max_tokens": "many"}, "max_tokens", "Enter a whole number."),
        ({"strategy": "newest"}, "strategy", "Select a valid choice."),
        ({"leaf_id": "ent_missing"}, "leaf_id", "is not an entry of thread 'parcel'"),
        ({"as_of": "yesterday"}, "as_of", "Enter a valid date/time."),
    ],
)
def test_bad_input_is_shown_on_the_form(
    staff_client: Client, parcel: Parcel, params: dict[str, Any], field: str, message: str
) -> None:
    # when
    response = preview(staff_client, parcel.thread, **params)

    # then
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert message in " ".join(errors[field])
    html = response.content.decode()
    assert 'class="errornote"' in html
    assert 'id="cm-built"' not in html
