"""``export_user``: everything memory keeps of a user, nothing of anyone else's, within the
grants, as one JSON document written a record at a time."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any

import pytest

from cogitator_memory.exceptions import InvalidInput, NoGrant, UserNotGranted
from cogitator_memory.export import services as export_services
from cogitator_memory.export.services import (
    COUNTED,
    FORMAT,
    FORMAT_VERSION,
    SECTIONS,
    ExportProgress,
    export_user,
)
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads.models import REDACTED_TEXT
from tests.export.conftest import (
    AGENT,
    CANARY,
    FILE_PATH,
    OTHER_AGENT,
    OTHER_USER,
    USER,
    Memory,
    document,
    remember,
)

pytestmark = pytest.mark.django_db


def test_the_document_opens_with_its_header_and_ends_with_its_counts(memory: Memory):
    # when
    exported = document(export_user(USER))
    # then
    assert list(exported) == [
        "format",
        "format_version",
        "user_id",
        "agents",
        "generated_at",
        *SECTIONS,
        "counts",
    ]
    assert exported["format"] == FORMAT
    assert exported["format_version"] == FORMAT_VERSION == 1
    assert exported["user_id"] == USER
    assert exported["agents"] == [AGENT]
    assert exported["generated_at"].endswith("Z")
    assert list(exported["counts"]) == list(COUNTED)
    for section in SECTIONS:
        assert exported["counts"][section] == len(exported[section]), section


def test_every_thread_of_the_user_comes_with_every_entry_of_every_branch_in_seq_order(
    memory: Memory,
):
    # when
    exported = document(export_user(USER))
    # then: both threads, as the API reads them
    threads = {thread["id"]: thread for thread in exported["threads"]}
    assert set(threads) == {memory.first.pk, memory.second.pk}
    first = threads[memory.first.pk]
    assert first["metadata"] == {"userId": USER, "topic": "parcel"}
    assert first["active_leaf_id"] == memory.first.active_leaf_id
    # then: the entries of both branches, in the order they were added
    for thread_id, entry_ids in memory.entries.items():
        entries = threads[thread_id]["entries"]
        assert [entry["id"] for entry in entries] == entry_ids
        assert [entry["seq"] for entry in entries] == [1, 2, 3, 4]
    branch = next(e for e in first["entries"] if e["id"] == memory.branch.pk)
    assert branch["parent_id"] == memory.root.pk
    assert exported["counts"]["threads"] == 2
    assert exported["counts"]["entries"] == 8


def test_entries_have_the_fields_the_api_gives_them(memory: Memory):
    # when
    exported = document(export_user(USER))
    # then: every field as Entry.as_dict has it; a field never set is absent
    second = next(t for t in exported["threads"] if t["id"] == memory.second.pk)
    ask, call, result, label = second["entries"]
    assert ask["content"] == "I drink green tea." and ask["role"] == "user"
    assert "tool_calls" not in ask and "redaction" not in ask
    assert call["tool_calls"] == [{"id": "call-1", "name": "lookup", "arguments": {"q": "tea"}}]
    assert result["type"] == "tool_result" and result["tool_call_id"] == "call-1"
    assert label["event"] == {"label": "tea"} and "role" not in label
    assert ask["created_at"].endswith("Z")


def test_a_redacted_entry_is_exported_as_it_is_stored(memory: Memory):
    # when
    text = "".join(export_user(USER))
    exported = json.loads(text)
    # then: its place and its redaction, never the text it had
    first = next(t for t in exported["threads"] if t["id"] == memory.first.pk)
    redacted = next(e for e in first["entries"] if e["id"] == memory.redacted.pk)
    assert redacted["content"] == REDACTED_TEXT
    assert redacted["redaction"]["reason"] == "a card number"
    # (a word of the text, which no id, time or count can hold by chance)
    assert "card-5555-visa" not in text


def test_items_of_every_status_come_with_their_subject_and_evidence(memory: Memory):
    # when
    exported = document(export_user(USER))
    # then
    items = {item["id"]: item for item in exported["items"]}
    assert set(items) == {memory.fact.pk, memory.preference.pk}
    fact = items[memory.fact.pk]
    assert fact["value"] == "4711" and fact["status"] == memory.fact.status
    assert fact["subject"] == {"id": memory.fact.subject_id, "name": "Parcel", "kind": ""}
    [quote] = fact["evidence"]
    assert quote["quote"] == "My parcel code is 4711"
    assert quote["entry_id"] == memory.root.pk
    assert quote["thread_id"] == memory.first.pk
    assert items[memory.preference.pk]["status"] == "let_go"
    assert exported["counts"]["evidence"] == 2
    # then: the entities they are about
    assert {entity["name"] for entity in exported["entities"]} == {"Parcel", "Tea"}


def test_every_version_of_the_users_memory_files_is_exported(memory: Memory):
    # when
    exported = document(export_user(USER))
    # then
    versions = exported["file_versions"]
    assert [(v["path"], v["sequence"], v["content"]) for v in versions] == [
        (FILE_PATH, 1, "Likes tea."),
        (FILE_PATH, 2, "Likes green tea."),
    ]
    assert versions[0]["scope"] == {"agent_id": AGENT, "user_id": USER}
    assert {v["author"] for v in versions} == {"model"}
    assert all(v["created_at"].endswith("Z") for v in versions)


def test_sessions_and_runs_are_exported_without_the_errors_workers_met(memory: Memory):
    # when
    text = "".join(export_user(USER))
    exported = json.loads(text)
    # then
    [session] = exported["sessions"]
    assert session["id"] == memory.session.pk
    assert session["thread_id"] == memory.second.pk
    [extraction] = exported["extraction_runs"]
    assert extraction["id"] == memory.extraction_run.pk
    assert extraction["status"] == "done" and extraction["items_written"] == 1
    [compaction] = exported["compaction_runs"]
    assert compaction["status"] == "failed" and compaction["attempts"] == 3
    assert "error" not in extraction and "error" not in compaction
    assert "worker trace" not in text and "provider said" not in text


def test_the_users_graph_nodes_and_edges_come_with_their_evidence(
    memory: Memory, others: list[Memory]
):
    # given: the user's graph quotes their first message; another user's graph beside it
    graph = MemoryGraph()
    first_entry = memory.entries[memory.first.pk][0]
    quote = NewEvidence("My parcel code is 4711", first_entry)
    scope = MemoryScope(agent_id=AGENT, user_id=USER)
    parcel = graph.add_node(scope, name="Parcel", aliases=["the box"], evidence=[quote])
    home = graph.add_node(scope, name="Home", type="place", trust="user")
    edge = graph.add_edge(scope, source=parcel, target=home, relation="sent_to", evidence=[quote])
    foreign = MemoryScope(agent_id=AGENT, user_id=OTHER_USER)
    graph.add_node(foreign, name="Parcel of another", evidence=[])
    # when
    exported = document(export_user(USER))
    # then
    nodes = {node["name"]: node for node in exported["graph_nodes"]}
    assert set(nodes) == {"Parcel", "Home"}
    assert nodes["Parcel"]["id"] == parcel.pk and nodes["Parcel"]["aliases"] == ["the box"]
    assert nodes["Parcel"]["scope"] == {"agent_id": AGENT, "user_id": USER}
    assert nodes["Parcel"]["status"] == "suggested" and nodes["Home"]["type"] == "place"
    [evidence] = nodes["Parcel"]["evidence"]
    assert evidence["quote"] == "My parcel code is 4711"
    assert evidence["entry_id"] == first_entry and evidence["verified"] is True
    [exported_edge] = exported["graph_edges"]
    assert (exported_edge["id"], exported_edge["relation"]) == (edge.pk, "sent_to")
    assert (exported_edge["source_id"], exported_edge["target_id"]) == (parcel.pk, home.pk)
    assert [e["quote"] for e in exported_edge["evidence"]] == ["My parcel code is 4711"]
    assert exported["counts"]["graph_nodes"] == 2 and exported["counts"]["graph_edges"] == 1


def test_nothing_of_another_user_is_exported(memory: Memory, others: list[Memory]):
    # given: the other user's item quotes the user's own words, and the user's item quotes
    # the other user's entry
    MemoryItems().write(
        MemoryScope(AGENT, user_id=USER),
        NewItem(
            kind="fact",
            subject="Neighbour",
            attribute="code",
            value="4711",
            trust="model",
            evidence=[NewEvidence(quote="parcel code", entry_id=others[0].root.pk)],
        ),
    )
    # when
    text = "".join(export_user(USER))
    exported = json.loads(text)
    # then: not a text, and not an id, of the other user's
    assert CANARY not in text
    other = others[0]
    for secret in [
        other.first.pk,
        other.second.pk,
        *[entry_id for ids in other.entries.values() for entry_id in ids],
        other.fact.pk,
        other.fact.subject_id,
        other.session.pk,
        other.extraction_run.pk,
        other.compaction_run.pk,
        OTHER_USER,
    ]:
        assert secret not in text
    # then: the quote of the other user's entry stays, without the entry
    neighbour = next(item for item in exported["items"] if item["subject"]["name"] == "Neighbour")
    assert neighbour["evidence"][0]["quote"] == "parcel code"
    assert "entry_id" not in neighbour["evidence"][0]
    # then: the agent's shared file is the agent's, not the user's
    assert [v["path"] for v in exported["file_versions"]] == [FILE_PATH, FILE_PATH]


def test_a_trusted_export_covers_every_agent_that_holds_the_user(memory: Memory):
    # given
    elsewhere = remember(OTHER_AGENT, USER, tag=" (sales)")
    # when
    exported = document(export_user(USER))
    # then
    assert exported["agents"] == [OTHER_AGENT, AGENT]
    assert {thread["id"] for thread in exported["threads"]} == {
        memory.first.pk,
        memory.second.pk,
        elsewhere.first.pk,
        elsewhere.second.pk,
    }


def test_agents_named_limit_the_export(memory: Memory):
    # given
    remember(OTHER_AGENT, USER, tag=" (sales)")
    # when
    text = "".join(export_user(USER, agent_ids=[AGENT]))
    # then
    assert json.loads(text)["agents"] == [AGENT]
    assert "(sales)" not in text


def test_grants_limit_the_export_to_the_agents_they_reach(memory: Memory):
    # given: the user in two agents, grants of one
    remember(OTHER_AGENT, USER, tag=" (sales)")
    grants = Grants.for_agents([AGENT], {AGENT: [USER]})
    # when
    text = "".join(export_user(USER, grants=grants))
    # then
    exported = json.loads(text)
    assert exported["agents"] == [AGENT]
    assert "(sales)" not in text
    assert exported["counts"]["threads"] == 2


def test_a_grant_of_every_user_of_an_agent_reaches_a_user_it_holds_nothing_of(
    memory: Memory,
):
    # given
    grants = Grants.for_agents([OTHER_AGENT])
    # when
    exported = document(export_user(USER, grants=grants))
    # then: the agent's memory of the user, which is none
    assert exported["agents"] == [OTHER_AGENT]
    assert exported["threads"] == [] and exported["items"] == []


def test_grants_that_name_other_users_reach_nothing_of_the_user(memory: Memory):
    # given
    grants = Grants.for_agents([AGENT], {AGENT: [OTHER_USER]})
    # when
    with pytest.raises(UserNotGranted) as refused:
        export_user(USER, grants=grants)
    # then: refused before anything is read
    assert refused.value.message == "None of your grants reaches the memory of user 'u1'."


@pytest.mark.parametrize(
    ("grants", "message"),
    [
        (Grants.for_agents([AGENT]), "You have no grant for agent 'sales'."),
        (
            Grants.for_agents([AGENT, OTHER_AGENT], {OTHER_AGENT: [OTHER_USER]}),
            "You have no grant for user 'u1' of agent 'sales'.",
        ),
    ],
)
def test_an_agent_named_that_the_grants_do_not_reach_for_the_user_is_refused(
    memory: Memory, grants: Grants, message: str
):
    # when
    with pytest.raises(NoGrant) as refused:
        export_user(USER, agent_ids=[AGENT, OTHER_AGENT], grants=grants)
    # then
    assert refused.value.message == message


@pytest.mark.parametrize("user_id", ["", "a\x00b", "x" * 256, None])
def test_a_user_id_no_row_can_have_is_refused(user_id: object):
    # when
    with pytest.raises(InvalidInput) as refused:
        export_user(user_id)  # type: ignore[arg-type]
    # then
    assert refused.value.errors == {
        "user_id": ["A user id is a non-empty text of at most 255 characters, without NUL."]
    }


@pytest.mark.parametrize("agent_ids", [[], ["  "], ["a\x00"], ["x" * 256]])
def test_an_agent_id_no_row_can_have_is_refused(agent_ids: list[str]):
    # when
    with pytest.raises(InvalidInput) as refused:
        export_user(USER, agent_ids=agent_ids)
    # then
    assert list(refused.value.errors) == ["agent_id"]


def test_a_user_memory_keeps_nothing_of_gets_an_empty_document(db: None):
    # when
    exported = document(export_user("nobody"))
    # then
    assert exported["agents"] == []
    assert all(exported[section] == [] for section in SECTIONS)
    assert set(exported["counts"].values()) == {0}


def test_the_document_is_written_a_record_at_a_time(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
):
    # given: rows fetched two at a time
    monkeypatch.setattr(export_services, "CHUNK_SIZE", 2)
    # when
    pieces = export_user(USER)
    # then: an iterator, not a text; its first piece comes before any record is read
    assert inspect.isgenerator(pieces)
    with django_assert_num_queries(0):
        first = next(pieces)
    assert first.startswith('{"format": ') and '"threads"' not in first
    rest = list(pieces)
    # then: a piece for each record at least, and together one JSON document
    exported = json.loads(first + "".join(rest))
    records = sum(exported["counts"][name] for name in COUNTED if name != "evidence")
    assert len(rest) > records
    assert max(len(piece) for piece in rest) < 2000


def test_progress_is_reported_after_each_record_against_the_counted_total(memory: Memory):
    # given
    reports: list[ExportProgress] = []
    # when
    exported = document(export_user(USER, progress=reports.append))
    # then
    records = sum(exported["counts"][name] for name in COUNTED if name != "evidence")
    assert [report.written for report in reports] == list(range(1, records + 1))
    assert {report.total for report in reports} == {records}
    assert reports[0].section == "threads" and reports[1].section == "entries"
    assert reports[-1].section == "compaction_runs"


def _pieces(memory: Memory) -> Iterator[str]:
    return export_user(memory.user_id, agent_ids=[memory.agent_id])


def test_two_users_exports_are_apart(memory: Memory, others: list[Memory]):
    # when
    mine = document(_pieces(memory))
    theirs = document(_pieces(others[0]))
    # then
    assert {t["id"] for t in mine["threads"]}.isdisjoint({t["id"] for t in theirs["threads"]})
    assert mine["counts"] == theirs["counts"]
