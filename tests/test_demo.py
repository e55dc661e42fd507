"""The demo: make run loads an invented conversation and its recorded extraction, so a
newcomer who logs in finds suggested items with their quotes to review."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from cogitator_memory.items.models import Evidence, ItemStatus, MemoryItem
from cogitator_memory.threads.models import Entry, Thread

pytestmark = pytest.mark.django_db


def test_load_demo_loads_the_conversation_and_suggested_items_once() -> None:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "extracted 9 suggested memory items" in out.getvalue()
    thread = Thread.objects.get(pk="demo-ana")
    assert (thread.agent_id, thread.user_id) == ("concierge", "ana")
    assert Entry.objects.filter(thread=thread).count() == 8
    assert set(MemoryItem.objects.values_list("status", flat=True)) == {ItemStatus.SUGGESTED}
    trusts = dict(MemoryItem.objects.values_list("value", "trust"))
    assert trusts["Lisbon"] == "user"
    assert trusts["great bacon"] == "tool"
    assert trusts["window"] == "model"
    assert Evidence.objects.filter(verified=True).count() == 9
    again = io.StringIO()
    call_command("load_demo", stdout=again)
    assert "loaded already" in again.getvalue()
    assert MemoryItem.objects.count() == 9


def test_the_front_page_leads_to_the_admin(client: Client) -> None:
    response = client.get("/")
    assert (response.status_code, response["Location"]) == (302, "/admin/")
