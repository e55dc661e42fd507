"""The thread's admin page shows its compactions as handoffs, levels expandable, atoms
linked to their evidence entries, every text escaped."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.urls import reverse

from cogitator_memory.threads import services

pytestmark = pytest.mark.django_db


def test_a_compaction_is_shown_as_its_handoff_with_levels_and_evidence(
    admin_client: Client,
) -> None:
    # given a thread with a hierarchical compaction whose texts hold markup
    thread = services.create_thread("concierge", thread_id="handoff")
    said = services.add_entry(thread.pk, role="user", content="TODO: <b>ship</b> it")
    atom = {
        "key": "task:ship it",
        "kind": "task",
        "status": "open",
        "text": "Ship <script>alert(1)</script>",
        "verified": True,
        "evidence": [{"entry": said.pk, "quote": "<b>ship</b>", "verified": True}],
    }
    node = {"from": said.pk, "to": said.pk, "atoms": [atom]}
    compaction = services.add_entry(
        thread.pk,
        type="compaction",
        event={
            "strategy": "hierarchical",
            "summary": "Open tasks:\n- Ship <script>alert(1)</script>",
            "first_kept_entry_id": None,
            "covered_to_entry_id": said.pk,
            "levels": {"version": 1, "saga": node, "arcs": [node], "chapters": [node, node]},
        },
    )
    # when
    url = reverse("admin:cogitator_memory_thread_change", args=[quote(thread.pk)])
    html = admin_client.get(url).content.decode()
    # then the handoff, escaped, and each level to expand
    assert 'id="compactions"' in html
    assert "<script>alert(1)</script>" not in html
    assert "Ship &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Saga" in html and "Arcs" in html and "Chapters (2)" in html
    assert html.count("<details") == 1 + 2 + 3  # saga, the two lists, one arc, two chapters
    # and the evidence links to its entry
    entry_url = reverse("admin:cogitator_memory_entry_change", args=[quote(said.pk)])
    assert f'href="{entry_url}"' in html
    assert "&lt;b&gt;ship&lt;/b&gt;" in html
    compaction_url = reverse("admin:cogitator_memory_entry_change", args=[quote(compaction.pk)])
    assert f'href="{compaction_url}"' in html


def test_a_thread_without_compactions_has_no_section(admin_client: Client) -> None:
    thread = services.create_thread("concierge", thread_id="plain")
    services.add_entry(thread.pk, role="user", content="hello")
    url = reverse("admin:cogitator_memory_thread_change", args=[quote(thread.pk)])
    assert 'id="compactions"' not in admin_client.get(url).content.decode()
