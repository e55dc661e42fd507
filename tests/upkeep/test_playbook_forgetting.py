"""Forgetting a lesson takes its rules out of the playbook and its draft and redacts every
version that named it (``upkeep.playbook_forgetting``), through a cascade that deletes
the entry the lesson stands on."""

from __future__ import annotations

import json

import pytest

from cogitator_memory import dependents
from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileVersion
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import REDACTED_TEXT, Entry
from cogitator_memory.upkeep import (
    PLAYBOOK_DRAFT_PATH,
    PLAYBOOK_PATH,
    fold_lessons,
    read_playbook,
    read_playbook_draft,
)
from cogitator_memory.upkeep.playbook_forgetting import PlaybookRulesOnLessons

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")


def said(text: str) -> Entry:
    return threads.add_entry("chat", role="user", content=text)


def lesson(text: str, entry: Entry) -> MemoryItem:
    new = NewItem(
        kind="lesson",
        subject="agent",
        attribute=text,
        value=text,
        trust="system",
        evidence=[NewEvidence(quote=text, entry_id=entry.pk)],
    )
    return MemoryItems().write(ANA, new).item


def fold(item: MemoryItem, rule: str, *, mode: str = "apply") -> None:
    model = ScriptedModel([json.dumps([{"op": "add", "rule": f"{rule} [lesson:{item.pk}]"}])])
    assert fold_lessons(ANA, summarize=model, mode=mode) is not None


def rules(found: object) -> list[str]:
    return [rule.text for rule in getattr(found, "rules", ())]


def test_the_item_dependent_is_registered() -> None:
    assert any(isinstance(d, PlaybookRulesOnLessons) for d in dependents.item_dependents())


def test_deleting_the_entry_of_a_lesson_takes_its_rules_out_and_redacts_what_named_it() -> None:
    threads.create_thread("concierge", {"userId": "ana"}, thread_id="chat")
    locker = said("Always check the locker first.")
    dates = said("Confirm the dates before booking.")
    gone = lesson("Always check the locker first.", locker)
    fold(gone, "Check the locker first.")
    kept = lesson("Confirm the dates before booking.", dates)
    fold(kept, "Confirm dates.", mode="shadow")
    # A version a model wrote that names the lesson goes too.
    MemoryFiles().put(
        FileAccess(scope=MemoryScope("concierge", user_id="ana"), author=Author.MODEL),
        PLAYBOOK_PATH,
        f"# Playbook\n\n- Open every locker. [lesson:{gone.pk}]\n",
    )
    before = MemoryFileVersion.objects.count()

    report = MemoryCascade().delete_entries([locker.pk])

    assert not MemoryItem.objects.filter(pk=gone.pk).exists()
    assert report.playbook_rules == 2  # one in the playbook, one in the draft
    # The playbook (from its last version by memory) and the draft, written again.
    assert MemoryFileVersion.objects.count() == before + 2
    assert rules(read_playbook(ANA)) == []
    assert rules(read_playbook_draft(ANA)) == [f"Confirm dates. [lesson:{kept.pk}]"]
    naming = MemoryFileVersion.objects.filter(content__contains=gone.pk)
    assert not naming.exists()
    redacted = MemoryFileVersion.objects.filter(content=REDACTED_TEXT)
    # The playbook's fold, the model's version, the draft's fold.
    assert redacted.count() == 3
    assert report.file_versions >= 3
    assert {version.path for version in redacted} == {PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH}
    # The lesson left standing is still folded where it was.
    assert MemoryItem.objects.filter(pk=kept.pk).exists()


def test_a_deleted_draft_is_left_deleted() -> None:
    threads.create_thread("concierge", {"userId": "ana"}, thread_id="chat")
    locker = said("Always check the locker first.")
    gone = lesson("Always check the locker first.", locker)
    fold(gone, "Check the locker first.", mode="shadow")
    from cogitator_memory.upkeep import discard_playbook_draft

    discard_playbook_draft(ANA)

    report = MemoryCascade().delete_entries([locker.pk])

    assert report.playbook_rules == 0
    assert read_playbook_draft(ANA) is None
    assert not MemoryFileVersion.objects.filter(content__contains=gone.pk).exists()
    assert MemoryFileVersion.objects.filter(path=PLAYBOOK_DRAFT_PATH).count() == 2
