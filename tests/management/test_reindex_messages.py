"""``manage.py reindex_messages``: scopes, the progress bar, and resuming a run stopped
part way from its checkpoint file."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from cogitator_memory.embeddings.models import Embedding, PendingVector
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import NewEmbedding
from cogitator_memory.jobs import RunStatus
from cogitator_memory.threads.models import Entry, Thread
from tests.embeddings.fakes import HASH_EMBEDDINGS, HashEmbeddings
from tests.factories import EntryFactory, ThreadFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def hash_embeddings() -> Iterator[type[HashEmbeddings]]:
    HashEmbeddings.reset()
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}):
        yield HashEmbeddings
    HashEmbeddings.reset()


@pytest.fixture
def entries() -> list[Entry]:
    """Five messages of thread t1 (agent-1), one of t2 (agent-1), one of t3 (agent-2),
    written without signals, so none has a vector yet."""
    t1 = ThreadFactory(id="t1", agent_id="agent-1")
    written = [EntryFactory(thread=t1, content=f"t1 message {n}") for n in range(5)]
    written.append(EntryFactory(thread=ThreadFactory(id="t2", agent_id="agent-1"), content="t2"))
    written.append(EntryFactory(thread=ThreadFactory(id="t3", agent_id="agent-2"), content="t3"))
    return written


def reindex(*args: str) -> str:
    out = io.StringIO()
    call_command("reindex_messages", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def indexed_threads() -> list[str]:
    ids = list(Entry.objects.values_list("pk", flat=True))
    return sorted(
        {vector.metadata["threadId"] for vector in get_embedding_store().get_by_sources(ids)}
    )


def indexed_entries() -> set[str]:
    ids = list(Entry.objects.values_list("pk", flat=True))
    return {vector.source_id for vector in get_embedding_store().get_by_sources(ids)}


def t1_ids_in_order() -> list[str]:
    return sorted(Entry.objects.filter(thread_id="t1").values_list("pk", flat=True))


# --- scopes --------------------------------------------------------------------------------


def test_thread_scope_embeds_the_messages_of_that_thread(entries: list[Entry]) -> None:
    # when
    reindex("--thread", "t1")
    # then
    assert indexed_threads() == ["t1"]
    assert len(indexed_entries()) == 5


def test_agent_scope_embeds_the_threads_of_that_agent(entries: list[Entry]) -> None:
    # when
    reindex("--agent", "agent-1")
    # then
    assert indexed_threads() == ["t1", "t2"]


def test_all_scope_embeds_every_thread(entries: list[Entry]) -> None:
    # when
    reindex("--all")
    # then
    assert indexed_threads() == ["t1", "t2", "t3"]


def test_missing_embeds_only_the_entries_without_a_vector_and_clears_dead_ones(
    entries: list[Entry], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given two of t1's messages embedded, and one whose pending vector is dead
    t1 = [entry for entry in entries if entry.thread_id == "t1"]
    reindex("--thread", "t1")
    Embedding.objects.filter(source_id__in=[entry.pk for entry in t1[2:]]).delete()
    PendingVector.objects.create(entry=t1[4], status=RunStatus.DEAD, attempts=3)
    hash_embeddings.calls.clear()
    # when
    out = reindex("--thread", "t1", "--missing")
    # then only the three without a vector went to the provider
    assert sorted(hash_embeddings.texts()) == ["t1 message 2", "t1 message 3", "t1 message 4"]
    assert "3 of 5 entries embedded" in out
    assert len(indexed_entries()) == 5
    assert not PendingVector.objects.exists()


def test_a_scope_is_required() -> None:
    # when
    with pytest.raises(CommandError) as raised:
        reindex()
    # then
    assert str(raised.value) == "Give one of --thread ID, --agent ID or --all (or --prune)."


def test_only_one_scope_is_taken() -> None:
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--thread", "t1", "--all")
    # then
    assert str(raised.value) == "Error: argument --all: not allowed with argument --thread"


def test_an_unknown_thread_is_reported() -> None:
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--thread", "nope")
    # then
    assert str(raised.value) == "Thread not found: 'nope'"


def test_without_a_provider_the_command_says_the_index_is_off(entries: list[Entry]) -> None:
    # when
    with override_settings(COGITATOR_MEMORY={}), pytest.raises(CommandError) as raised:
        reindex("--all")
    # then
    assert str(raised.value) == (
        "The message index is off: no embedding provider is configured "
        "(set COGITATOR_MEMORY['EMBEDDINGS']['PROVIDER'])."
    )


# --- output and batches --------------------------------------------------------------------


def test_the_progress_bar_counts_the_entries_and_a_summary_follows(entries: list[Entry]) -> None:
    # when
    output = reindex("--thread", "t1", "--batch-size", "2")
    # then
    assert "5/5" in output
    assert "100%" in output
    assert output.rstrip().endswith(
        "Re-indexed thread t1: 5 of 5 entries embedded (the others are redacted or have no text)."
    )


def test_redacted_entries_are_counted_but_not_embedded(entries: list[Entry]) -> None:
    # given
    EntryFactory(
        thread=entries[0].thread,
        content="[redacted]",
        redaction={"at": "2026-01-01T00:00:00+00:00"},
    )
    # when
    output = reindex("--thread", "t1")
    # then
    assert "Re-indexed thread t1: 5 of 6 entries embedded" in output


def test_verbosity_zero_shows_no_progress_bar(entries: list[Entry]) -> None:
    # when
    output = reindex("--thread", "t1", "--verbosity", "0")
    # then
    assert "5/5" not in output
    assert output.startswith("Re-indexed thread t1")


def test_batch_size_sets_the_texts_per_provider_request(
    entries: list[Entry], hash_embeddings: type[HashEmbeddings]
) -> None:
    # when
    reindex("--thread", "t1", "--batch-size", "2")
    # then
    assert [len(call) for call in hash_embeddings.calls] == [2, 2, 1]


def test_a_batch_size_below_one_is_refused() -> None:
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--all", "--batch-size", "0")
    # then
    assert str(raised.value) == "--batch-size must be 1 or more."


# --- resuming ------------------------------------------------------------------------------


def test_a_failed_run_records_the_last_entry_done_in_its_checkpoint(
    entries: list[Entry], hash_embeddings: type[HashEmbeddings], tmp_path: Path
) -> None:
    # given: the provider fails on the second batch
    checkpoint = tmp_path / "reindex.json"
    hash_embeddings.fail_on(2)
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--thread", "t1", "--batch-size", "2", "--checkpoint", str(checkpoint))
    # then
    assert str(raised.value) == (
        "Stopped: hash embeddings failed (HTTP 503): unavailable. "
        f"Run the same command again to continue from {checkpoint}."
    )
    assert json.loads(checkpoint.read_text()) == {
        "version": 1,
        "scope": {"thread_id": "t1", "agent_id": None, "all_threads": False},
        "last_entry_id": t1_ids_in_order()[1],
    }
    assert indexed_entries() == set(t1_ids_in_order()[:2])


def test_a_run_started_again_continues_after_its_checkpoint(
    entries: list[Entry], hash_embeddings: type[HashEmbeddings], tmp_path: Path
) -> None:
    # given: a run that stopped after its first batch of two
    checkpoint = tmp_path / "reindex.json"
    hash_embeddings.fail_on(2)
    arguments = ("--thread", "t1", "--batch-size", "2", "--checkpoint", str(checkpoint))
    with pytest.raises(CommandError):
        reindex(*arguments)
    hash_embeddings.reset()
    # when
    output = reindex(*arguments)
    # then: only the three entries after the checkpoint were sent
    ids = t1_ids_in_order()
    assert f"Resuming after entry {ids[1]} (from {checkpoint})." in output
    assert "3/3" in output
    assert hash_embeddings.texts() == [
        entry.content for entry in sorted(entries[:5], key=lambda entry: entry.pk)[2:]
    ]
    assert indexed_entries() == set(ids)
    assert not checkpoint.exists()


def test_an_interrupted_run_keeps_its_checkpoint(
    entries: list[Entry], hash_embeddings: type[HashEmbeddings], tmp_path: Path
) -> None:
    # given: Ctrl-C during the third batch
    checkpoint = tmp_path / "reindex.json"
    hash_embeddings.fail_on(3, KeyboardInterrupt())
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--thread", "t1", "--batch-size", "2", "--checkpoint", str(checkpoint))
    # then
    assert str(raised.value) == (
        f"Interrupted. Run the same command again to continue from {checkpoint}."
    )
    assert json.loads(checkpoint.read_text())["last_entry_id"] == t1_ids_in_order()[3]


def test_a_failed_run_without_a_checkpoint_says_how_to_make_one_resumable(
    entries: list[Entry], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given
    hash_embeddings.fail_on(1)
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--all")
    # then
    assert str(raised.value) == (
        "Stopped: hash embeddings failed (HTTP 503): unavailable. "
        "Use --checkpoint FILE to be able to resume a run."
    )


def test_a_checkpoint_of_another_scope_is_refused(entries: list[Entry], tmp_path: Path) -> None:
    # given
    checkpoint = tmp_path / "reindex.json"
    checkpoint.write_text(
        json.dumps(
            {
                "version": 1,
                "scope": {"thread_id": None, "agent_id": "agent-2", "all_threads": False},
                "last_entry_id": "entry_x",
            }
        )
    )
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--thread", "t1", "--checkpoint", str(checkpoint))
    # then
    assert str(raised.value) == (
        f"The checkpoint {checkpoint} belongs to a run over the threads of agent agent-2; "
        "use another file, or delete it to start over."
    )
    assert indexed_entries() == set()


def test_a_file_that_is_not_a_checkpoint_is_refused(tmp_path: Path) -> None:
    # given
    checkpoint = tmp_path / "notes.json"
    checkpoint.write_text('{"hello": "world"}')
    # when
    with pytest.raises(CommandError) as raised:
        reindex("--all", "--checkpoint", str(checkpoint))
    # then
    assert str(raised.value) == f"{checkpoint} is not a checkpoint of reindex_messages."


def test_a_finished_run_deletes_its_checkpoint(entries: list[Entry], tmp_path: Path) -> None:
    # given
    checkpoint = tmp_path / "reindex.json"
    # when
    reindex("--all", "--checkpoint", str(checkpoint))
    # then
    assert not checkpoint.exists()
    assert list(tmp_path.iterdir()) == []


# --- pruning -------------------------------------------------------------------------------


def vector_sources() -> set[str]:
    return {row.source_id for row in Embedding.objects.all()}


def orphan(entry: Entry) -> None:
    """Remove the entry's row behind the services' back (as a restore from an old backup
    or a hand edit would), leaving its vector."""
    Entry.objects.filter(parent_id=entry.pk).update(parent_id=entry.parent_id)
    Thread.objects.filter(active_leaf_id=entry.pk).update(active_leaf_id=entry.parent_id)
    Entry.objects.filter(pk=entry.pk).delete()


@pytest.mark.parametrize("with_provider", [True, False], ids=["provider", "no-provider"])
def test_prune_deletes_the_vectors_of_gone_and_redacted_entries(
    entries: list[Entry], with_provider: bool
) -> None:
    # given every entry indexed, then one entry gone and one redacted behind the index
    reindex("--all")
    gone, redacted, kept = entries[0], entries[1], entries[2:]
    orphan(gone)
    Entry.objects.filter(pk=redacted.pk).update(redaction={"at": "2026-01-01T00:00:00+00:00"})
    assert vector_sources() == {entry.pk for entry in entries}
    # when, with or without an embedding provider
    settings = {"EMBEDDINGS": HASH_EMBEDDINGS} if with_provider else {}
    with override_settings(COGITATOR_MEMORY=settings):
        output = reindex("--prune", "--verbosity", "0")
    # then
    assert vector_sources() == {entry.pk for entry in kept}
    assert "2 vectors deleted of 7 sources checked (message: 2)" in output


def test_prune_keeps_vectors_of_other_sources(entries: list[Entry]) -> None:
    # given a document vector whose source is no entry at all
    reindex("--thread", "t1")
    get_embedding_store().add(
        [NewEmbedding("document", "doc-1", [1.0] + [0.0] * 15, "a document", {})]
    )
    # when
    reindex("--prune", "--verbosity", "0")
    # then only message-index vectors are checked against entries
    assert "doc-1" in vector_sources()
    assert len(vector_sources()) == 6


def test_prune_with_a_scope_prunes_then_reindexes(entries: list[Entry]) -> None:
    # given
    reindex("--all")
    orphan(entries[-1])
    # when
    output = reindex("--prune", "--all", "--verbosity", "0")
    # then
    assert vector_sources() == {entry.pk for entry in entries[:-1]}
    assert "1 vectors deleted" in output
    assert "Re-indexed every thread: 6 of 6 entries embedded" in output
