"""Lineage: quotes checked against the entries they say they stand on."""

from __future__ import annotations

import pytest

from cogitator_memory.lineage import (
    Quote,
    evidence_on_path,
    quote_holds,
    verify_evidence,
    verify_evidence_in_memory,
)
from cogitator_memory.threads import selectors, services

pytestmark = pytest.mark.django_db


@pytest.fixture
def question():
    thread = services.create_thread("agent-1")
    return services.add_entry(thread.pk, role="user", content="Plan   a day\nin Rome, please")


def test_a_quote_holds_whitespace_aside() -> None:
    assert quote_holds("a day in Rome", "Plan   a day\n\tin Rome")
    assert not quote_holds("A day in Rome", "Plan a day in Rome")
    assert not quote_holds("   ", "anything")


def test_verify_evidence_says_verified_or_suggested(question) -> None:
    assert verify_evidence(Quote("Plan a day", question.pk), question) == "verified"
    assert verify_evidence(Quote("a week in Rome", question.pk), question) == "suggested"
    assert verify_evidence(Quote("Plan a day"), question) == "suggested"
    assert verify_evidence(Quote("Plan a day", question.pk), None) == "suggested"


def test_verify_evidence_in_memory_reads_the_entries_as_stored(question) -> None:
    holding = Quote("Plan a day", question.pk)
    gone = Quote("Plan a day", "entry_gone")
    assert verify_evidence_in_memory([holding]).status == "verified"
    checked = verify_evidence_in_memory([holding, gone])
    assert checked.status == "suggested"
    assert checked.evidence == [(holding, "verified"), (gone, "suggested")]
    services.redact_entry(question.pk)
    assert verify_evidence_in_memory([holding]).status == "suggested"
    assert verify_evidence_in_memory([]).status == "suggested"


def test_evidence_on_path_needs_every_quote_on_the_branch(question) -> None:
    path = {entry.pk for entry in selectors.get_path(question.thread_id)}
    assert evidence_on_path([Quote("Plan", question.pk)], path)
    assert not evidence_on_path([Quote("Plan", question.pk), Quote("x", "elsewhere")], path)
    assert not evidence_on_path([Quote("Plan")], path)
    assert not evidence_on_path([], path)
