"""A stand-in model that answers the between-runs prompts by simple rules: for the demo,
the benchmarks and the tests of workers, where no model is reachable. It is labelled as
such in every answer's ``model`` and is no model of language: it restates what it is
shown, never makes anything up, and gives answers that the code's checks then judge as
they judge a real model's.

- observations: one statement per entity, "<name>: <fact>; <fact>", naming every fact;
- dedupe: the items whose statements read the same (case and spacing aside) are one
  group, the most trusted (then the last said) kept, "duplicate";
- fold: one "add" edit per lesson, at most three, the lesson's text as the rule;
- brief: one "knowledge" card per source (up to the cards asked for), quoting its first
  words.

Set ``COGITATOR_MEMORY["LLM"]["PROVIDER"] = "project.demo.rule_model.RuleModel"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cogitator_memory.llm.protocol import Completion, Message
from cogitator_memory.upkeep.brief import BRIEF_PROMPT
from cogitator_memory.upkeep.dedupe_prompt import DEDUPE_PROMPT
from cogitator_memory.upkeep.observations import OBSERVATIONS_PROMPT
from cogitator_memory.upkeep.playbook_text import FOLD_PROMPT, MAX_PLAYBOOK_EDITS

__all__ = ["RuleModel"]

TRUST_ORDER = ("system", "user", "model", "tool", "web")
QUOTE_WORDS = 6


def _data(text: str) -> Any:
    """The JSON object of a message: the whole text, or the first {...} in it."""
    start = text.find("{")
    end = text.rfind("}")
    if start < 0 or end < start:
        return {}
    return json.loads(text[start : end + 1].replace("<\\/", "</"))


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


class RuleModel:
    """A ``Summarize`` answering the upkeep prompts by rules (see the module)."""

    provider = "rules"

    def __init__(self, model: str | None = None, **_options: Any) -> None:
        self.model = model or "rules (a stand-in, not a language model)"
        self.calls = 0

    def __call__(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        prompt: str | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.calls += 1
        text = messages[-1]["content"] if messages else ""
        if prompt == OBSERVATIONS_PROMPT:
            answer: list[dict[str, Any]] = self.observations(_data(text))
        elif prompt == DEDUPE_PROMPT:
            answer = self.dedupe(_data(text))
        elif prompt is not None and prompt.startswith(FOLD_PROMPT):
            answer = self.fold(_data(text))
        elif prompt is not None and prompt.startswith(BRIEF_PROMPT):
            answer = self.brief(_data(text))
        else:
            answer = []
        return Completion(text=json.dumps(answer), truncated=False, model=self.model)

    def observations(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        facts = data.get("facts") or []
        if not facts:
            return []
        said = "; ".join(str(fact.get("text", "")).rstrip(".") for fact in facts[:5])
        return [
            {
                "text": f"{data.get('entity', 'It')}: {said}."[:400],
                "items": [fact["id"] for fact in facts[:5]],
            }
        ]

    def dedupe(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        same: dict[str, list[dict[str, Any]]] = {}
        for item in data.get("items") or []:
            same.setdefault(_folded(str(item.get("statement", ""))), []).append(item)
        groups = []
        for items in same.values():
            if len(items) < 2:
                continue
            kept = min(
                items,
                key=lambda item: (
                    TRUST_ORDER.index(item["trust"]) if item["trust"] in TRUST_ORDER else 9,
                    -_said_order(item),
                ),
            )
            groups.append(
                {
                    "keep": kept["id"],
                    "drop": [item["id"] for item in items if item is not kept],
                    "reason": "duplicate",
                    "note": "the same statement",
                }
            )
        return groups

    def fold(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        edits = []
        for lesson in (data.get("lessons") or [])[:MAX_PLAYBOOK_EDITS]:
            rule = re.sub(r"\s+", " ", str(lesson.get("text", ""))).strip()[:200]
            edits.append({"op": "add", "rule": f"{rule} [lesson:{lesson['id']}]"})
        return edits

    def brief(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        cards = []
        for source in (data.get("sources") or [])[: int(data.get("max_cards") or 1)]:
            words = str(source.get("text", "")).split()
            if len(words) < 3:
                continue
            cards.append(
                {
                    "kind": "knowledge",
                    "text": " ".join(words[:20]),
                    "quote": " ".join(words[:QUOTE_WORDS]),
                    "source": source["ref"],
                }
            )
        return cards


def _said_order(item: dict[str, Any]) -> float:
    said = item.get("said")
    try:
        return datetime.fromisoformat(str(said)).timestamp()
    except ValueError:
        return 0.0
