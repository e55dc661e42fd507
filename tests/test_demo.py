"""The demo: make run loads an invented conversation and its recorded extraction, so a
newcomer who logs in finds suggested items with their quotes to review."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Evidence, ItemKind, ItemStatus, MemoryItem
from cogitator_memory.threads.models import Entry, Thread
from cogitator_memory.upkeep.models import PlaybookDraft
from cogitator_memory.upkeep.playbook import read_playbook, read_playbook_draft

pytestmark = pytest.mark.django_db


def test_load_demo_loads_the_conversation_and_suggested_items_once() -> None:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "extracted 9 suggested memory items" in out.getvalue()
    thread = Thread.objects.get(pk="demo-ana")
    assert (thread.agent_id, thread.user_id) == ("concierge", "ana")
    assert Entry.objects.filter(thread=thread).count() == 8
    extracted = MemoryItem.objects.exclude(kind=ItemKind.LESSON)
    assert set(extracted.values_list("status", flat=True)) == {ItemStatus.SUGGESTED}
    trusts = dict(MemoryItem.objects.values_list("value", "trust"))
    assert trusts["Lisbon"] == "user"
    assert trusts["great bacon"] == "tool"
    assert trusts["window"] == "model"
    assert Evidence.objects.filter(item__in=extracted, verified=True).count() == 9
    # and a playbook draft of the two lessons waits for review beside them
    assert "Folded 2 lessons into a playbook draft" in out.getvalue()
    scope = MemoryScope("concierge", user_id="ana")
    lessons = MemoryItem.objects.filter(kind=ItemKind.LESSON)
    assert set(lessons.values_list("status", flat=True)) == {ItemStatus.ACTIVE}
    draft = read_playbook_draft(scope)
    assert draft is not None and read_playbook(scope) is None
    assert {f"[lesson:{pk}]" for pk in lessons.values_list("pk", flat=True)} <= {
        f"[lesson:{lesson_id}]" for rule in draft.rules for lesson_id in rule.lesson_ids
    }
    assert PlaybookDraft.objects.count() == 1
    again = io.StringIO()
    call_command("load_demo", stdout=again)
    assert "loaded already" in again.getvalue()
    assert MemoryItem.objects.count() == 11


def test_the_front_page_leads_to_the_admin(client: Client) -> None:
    response = client.get("/")
    assert (response.status_code, response["Location"]) == (302, "/admin/")


def test_the_demo_commands_print_links_to_where_the_demo_is_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given the demo served on another port (make run PORT=8010 passes its address on)
    monkeypatch.setenv("COGITATOR_DEMO_URL", "http://127.0.0.1:8010")
    admin, demo = io.StringIO(), io.StringIO()
    # when the demo's commands run
    call_command("ensure_demo_admin", stdout=admin)
    call_command("load_demo", stdout=demo)
    # then their links are on that port, and none on the default one
    assert "http://127.0.0.1:8010/admin/ " in admin.getvalue()
    assert "http://127.0.0.1:8010/admin/cogitator_memory/memoryitem/" in demo.getvalue()
    assert "http://127.0.0.1:8010/admin/cogitator_memory/playbookdraft/" in demo.getvalue()
    assert ":8000" not in admin.getvalue() + demo.getvalue()
