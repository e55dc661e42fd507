"""Load the demo conversation once and extract its memory items in shadow mode.

Demo data: ``project/demo/data/conversation.json`` is an invented conversation, and
``extraction-answers.json`` holds extraction answers written for it, replayed by the
scripted model, so the demo shows suggested items (with their quotes) to review without
any model being reachable. Running it again changes nothing.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Thread

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
            for message in conversation["messages"]:
                services.add_entry(
                    thread_id,
                    type=message.get("type", "message"),
                    role=message["role"],
                    content=message["content"],
                    created_at=datetime.fromisoformat(message["at"]),
                )
        model = ScriptedModel.from_file(DATA / "extraction-answers.json")
        done = extract_thread(thread_id, summarize=model, mode="shadow")
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded the demo conversation ({len(conversation['messages'])} messages) and "
                f"extracted {done.items} suggested memory items: review them at "
                "http://127.0.0.1:8000/admin/cogitator_memory/memoryitem/"
            )
        )
