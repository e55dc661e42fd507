"""Every model that holds entry ids or text derived from entries is kept in step with them.

Derived data never outlives its source by construction: each model of the app is listed
below, either with the fields in which it holds entry ids or text derived from entries
(``DERIVED``) or as holding none (``NOT_DERIVED``, with why), and the test fails when

- a model of the app is in neither list (a new model must join one);
- a model of ``DERIVED`` is named by no registered dependent's ``models``
  (``cogitator_memory.dependents``: the step that forgets what stands on entries);
- a model has a foreign key to ``Entry`` or ``Thread`` that the database does not
  cascade (its rows would stay when the entry or thread goes) and no dependent names it;
- a field whose name speaks of entries is not declared, or a declared field is missing.

The sources themselves (``Thread``, ``Entry``) and ``Grant`` are exempt by name (below).
The runs' own step (``jobs.RunsOnEntries``) is tested at the end.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import models, transaction

from cogitator_memory import dependents
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.jobs import RunStatus
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import REDACTED_TEXT

# Not derived data: the sources that everything else stands on, and who may read them.
EXEMPT = {
    # The entries and their threads are what the rest is derived from.
    "Thread",
    "Entry",
    # A grant says which agents and users a Django user or API key may reach: written by
    # staff, never derived from a conversation.
    "Grant",
}

# model -> the fields that hold entry ids or text derived from entries.
DERIVED: dict[str, tuple[str, ...]] = {
    "Embedding": ("source_id", "content", "metadata"),
    "KeywordCorpus": ("documents", "total_length"),
    "KeywordTerm": ("term",),
    "KeywordPosting": ("document_id", "term"),
    "MemoryItem": ("value", "content", "stale_because", "metadata"),
    "Evidence": ("entry", "quote", "tool_call_id"),
    "Entity": ("name", "aliases"),
    "MemoryFileVersion": ("place", "content", "path", "renamed_from"),
    "MemoryFileHead": ("version", "path", "size"),
    "ExtractionWindow": ("first_entry_id", "last_entry_id"),
    "ExtractionRun": ("error",),
    "CompactionRun": ("compaction_entry_id", "error"),
    # Payloads name the entries and items whose vectors a store outside the database
    # must delete: the forgetting itself, carried out and then deleted.
    "OutboxMessage": ("payload",),
    # An entry waiting for its vector: goes with it, and when it is redacted.
    "PendingVector": ("entry", "error"),
    # The knowledge graph: names and quotes said in conversations, and the evidence rows
    # that name the entries they stand on.
    "GraphNode": ("name", "key", "aliases", "properties"),
    "GraphEdge": ("relation", "properties"),
    "GraphEvidence": ("entry", "quote", "tool_call_id"),
}

# model -> why it holds no entry id and no text derived from entries.
NOT_DERIVED: dict[str, str] = {
    "ChannelSession": "the user, channel and agent of a thread; goes with its thread (CASCADE)",
    "ThreadUser": "a user a thread lists in metadata.memoryUserIds, an indexed copy of the "
    "thread's own metadata; goes with its thread (CASCADE) and with the user it names "
    "(MemoryCascade.delete_user)",
    "PlaybookDraft": "a proxy of MemoryFileHead: its rows are the heads at the playbook "
    "draft's path, kept in step by the file_versions and playbook_rules dependents",
    "ForgetRun": "the record of forgetting a user: the user id, agents and counts, no entry "
    "id and no text of what went",
    "UpkeepRun": "upkeep of a scope: the scope, counts and an error, no entry id and no text "
    "of memory; goes with the scope's user (MemoryCascade.delete_user)",
    "UpkeepScopeState": "where upkeep of a scope stands: the scope and times; goes with the "
    "scope's user (MemoryCascade.delete_user)",
    "UpkeepCursor": "how far the sleep-time pass read the items: a time and an item id, "
    "a position in the table, not a text of memory",
}


def app_models() -> dict[str, type[models.Model]]:
    return {model.__name__: model for model in apps.get_app_config("cogitator_memory").get_models()}


def kept_in_step() -> dict[str, list[str]]:
    """model name -> the registered dependents that name it."""
    named: dict[str, list[str]] = {}
    for dependent in dependents.dependents():
        for model in dependent.models:
            named.setdefault(model.__name__, []).append(dependent.name)
    return named


def test_every_model_is_declared_derived_or_not() -> None:
    unlisted = set(app_models()) - EXEMPT - set(DERIVED) - set(NOT_DERIVED)
    assert not unlisted, (
        f"Declare {sorted(unlisted)} in DERIVED (with the fields holding entry ids or text "
        "derived from entries, and register a dependent naming it) or in NOT_DERIVED."
    )
    assert not (set(DERIVED) | set(NOT_DERIVED) | EXEMPT) - set(app_models())
    assert not set(DERIVED) & set(NOT_DERIVED)


def test_every_derived_model_is_kept_in_step_by_a_dependent() -> None:
    named = kept_in_step()
    missing = sorted(model for model in DERIVED if model not in named)
    assert not missing, f"No registered dependent names {missing} in its models."


def test_every_key_to_an_entry_or_thread_cascades_or_a_dependent_keeps_it() -> None:
    sources = {apps.get_model("cogitator_memory", name) for name in ("Entry", "Thread")}
    named = kept_in_step()
    loose = []
    for name, model in app_models().items():
        if name in EXEMPT:
            continue
        for field in model._meta.get_fields():
            if not (field.is_relation and field.concrete and field.related_model in sources):
                continue
            assert isinstance(field, models.ForeignKey)
            if field.remote_field.on_delete is not models.CASCADE and name not in named:
                loose.append(f"{name}.{field.name}")
    assert not loose, f"Rows of {loose} outlive their entry or thread: register a dependent."


def test_the_declared_fields_exist_and_every_field_naming_entries_is_declared() -> None:
    for name, model in app_models().items():
        if name in EXEMPT:
            continue
        fields = {field.name for field in model._meta.get_fields() if field.concrete}
        declared = set(DERIVED.get(name, ()))
        assert declared <= fields, f"{name} has no field {sorted(declared - fields)}"
        entry_like = {field for field in fields if "entry" in field or field == "place"}
        assert entry_like <= declared, f"Declare {name}.{sorted(entry_like - declared)}"


# --- the runs' own step ----------------------------------------------------------------


@pytest.mark.django_db
def test_runs_lose_the_ids_of_entries_that_go_and_stay_records() -> None:
    # given runs of a thread that name an entry: the compaction entry a run wrote, and an
    # error naming it; and a run of another thread naming the same id
    thread = threads.create_thread("concierge")
    entry = threads.add_entry(thread.pk, role="user", content="Hello.")
    compaction = CompactionRun.objects.create(
        thread=thread, status=RunStatus.DONE, compaction_entry_id=entry.pk
    )
    failed = ExtractionRun.objects.create(
        thread=thread, status=RunStatus.FAILED, error=f"not_found: Entry not found: '{entry.pk}'"
    )
    other = threads.create_thread("concierge")
    elsewhere = ExtractionRun.objects.create(
        thread=other, status=RunStatus.FAILED, error=f"about {entry.pk}"
    )
    # when
    with transaction.atomic():
        forgotten = dependents.forget_entries([entry.pk])
    # then the runs of its thread stay, without its id; the other thread's run is not read
    compaction.refresh_from_db()
    failed.refresh_from_db()
    elsewhere.refresh_from_db()
    assert (compaction.status, compaction.compaction_entry_id) == (RunStatus.DONE, "")
    assert failed.error == f"not_found: Entry not found: '{REDACTED_TEXT}'"
    assert elsewhere.error == f"about {entry.pk}"
    assert forgotten["runs"] == 2
    # and a thread deleted takes its runs with it
    threads.delete_thread(thread.pk)
    assert not CompactionRun.objects.filter(thread_id=thread.pk).exists()
    assert not ExtractionRun.objects.filter(thread_id=thread.pk).exists()
