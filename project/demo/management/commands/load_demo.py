"""Load the demo conversation once, extract its memory items in shadow mode, and draft a
playbook from the lessons of earlier runs.

Demo data: ``project/demo/data/conversation.json`` is an invented conversation, and
``extraction-answers.json`` holds extraction answers written for it, replayed by the
scripted model, so the demo shows suggested items (with their quotes) to review without
any model being reachable. ``lessons.json`` holds two lessons the agent learned with Ana
(system lessons, each quoting a turn of the conversation); they are folded in shadow mode
by the rule-based stand-in model (``project/demo/rule_model.py``), so a playbook draft
waits for review beside the suggested items. Running it again changes nothing.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Thread
from cogitator_memory.upkeep.playbook import fold_lessons
from project.demo.rule_model import RuleModel
from project.demo.site import demo_url

DATA = Path(__file__).resolve().parents[2] / "data"


class Command(BaseCommand):
    help = "Load the demo conversation and extract its memory items (suggested, for review)."

    def handle(self, *args: Any, **options: Any) -> None:
        conversation = json.loads((DATA / "conversation.json").read_text())
        thread_id = conversation["thread_id"]
        if Thread.objects.filter(pk=thread_id).exists():
            self.stdout.write("The demo conversation is loaded already.")
            return
        with transaction.atomic():
            services.create_thread(
                conversation["agent_id"], conversation["metadata"], thread_id=thread_id
            )
            entries = [
                services.add_entry(
                    thread_id,
                    type=message.get("type", "message"),
                    role=message["role"],
                    content=message["content"],
                    created_at=datetime.fromisoformat(message["at"]),
                )
                for message in conversation["messages"]
            ]
        model = ScriptedModel.from_file(DATA / "extraction-answers.json")
        done = extract_thread(thread_id, summarize=model, mode="shadow")
        scope = MemoryScope(conversation["agent_id"], user_id=conversation["metadata"]["userId"])
        lessons = self.write_lessons(scope, [entry.pk for entry in entries])
        folded = fold_lessons(scope, summarize=RuleModel(), mode="shadow")
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded the demo conversation ({len(conversation['messages'])} messages) and "
                f"extracted {done.items} suggested memory items: review them at "
                f"{demo_url('/admin/cogitator_memory/memoryitem/')}"
            )
        )
        if folded is not None:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Folded {lessons} lessons into a playbook draft: review it at "
                    f"{demo_url('/admin/cogitator_memory/playbookdraft/')}"
                )
            )

    def write_lessons(self, scope: MemoryScope, entry_ids: list[str]) -> int:
        """The lessons of ``lessons.json``, each quoting its turn; returns how many."""
        lessons = json.loads((DATA / "lessons.json").read_text())["lessons"]
        items = MemoryItems()
        for lesson in lessons:
            items.write(
                scope,
                NewItem(
                    kind="lesson",
                    subject=lesson["subject"],
                    attribute=lesson["attribute"],
                    value=lesson["value"],
                    content=lesson["content"],
                    trust="system",
                    evidence=[
                        NewEvidence(quote=lesson["quote"], entry_id=entry_ids[lesson["message"]])
                    ],
                ),
            )
        return len(lessons)
