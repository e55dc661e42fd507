"""A scripted model: answers written in advance, replayed, for tests and the demo.

Each ``ScriptedAnswer`` is a text and whether it counts as cut at the token limit. Answers
without a matcher are given in order, one per call; an answer with a matcher (a substring
of the call's text, a regular expression, or a function of the ``ScriptedCall``) is given to
the first call it matches, and takes precedence over the answers in order. An answer is used
once unless it repeats. A call that finds no answer raises ``ScriptExhausted``, which names
the call. Every call is recorded in ``calls``.

The demo loads its answers from a JSON file (``COGITATOR_MEMORY["LLM"]["SCRIPT"]``)::

    {"model": "recorded", "answers": [
        "Ana prefers aisle seats.",
        {"text": "A summary cut sh", "truncated": true},
        {"text": "[]", "match": "Extract the facts", "repeat": true},
        {"text": "Rome, May", "pattern": "trip to \\\\w+"}
    ]}

A bare list of answers is a file too. Each answer may also give ``usage``
(``{"input_tokens": int, "output_tokens": int}``).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.exceptions import ScriptExhausted
from cogitator_memory.llm.protocol import (
    Completion,
    Message,
    checked_max_tokens,
    checked_messages,
    checked_prompt_and_model,
)

__all__ = ["ScriptedAnswer", "ScriptedCall", "ScriptedModel", "load_answers"]

# Characters of a call's last message quoted when no answer is left for it.
EXCERPT_CHARS = 80


@dataclass(frozen=True)
class ScriptedCall:
    """One call the scripted model got, as it got it."""

    messages: list[Message]
    model: str
    prompt: str | None
    max_tokens: int

    @property
    def text(self) -> str:
        """The prompt and every message's content, a line apart: what matchers search."""
        return "\n".join([self.prompt or "", *(message["content"] for message in self.messages)])


Matcher = str | re.Pattern[str] | Callable[[ScriptedCall], bool]


@dataclass(frozen=True)
class ScriptedAnswer:
    """An answer to give: ``text``, whether it was ``truncated``, to which call (``match``,
    None for the next in order), whether it ``repeat``s, and the ``usage`` to report."""

    text: str
    truncated: bool = False
    match: Matcher | None = None
    repeat: bool = False
    usage: dict[str, int] | None = field(default=None)

    def matches(self, call: ScriptedCall) -> bool:
        if self.match is None:
            return False
        if isinstance(self.match, str):
            return self.match in call.text
        if isinstance(self.match, re.Pattern):
            return self.match.search(call.text) is not None
        return bool(self.match(call))


AnswerLike = ScriptedAnswer | str | tuple[str, bool]


def _as_answer(answer: AnswerLike) -> ScriptedAnswer:
    if isinstance(answer, ScriptedAnswer):
        return answer
    if isinstance(answer, str):
        return ScriptedAnswer(answer)
    text, truncated = answer
    return ScriptedAnswer(text, truncated=truncated)


class ScriptedModel:
    """A ``Summarize`` that replays ``answers`` (or those of the JSON file ``script``)."""

    provider = "scripted"

    def __init__(
        self,
        answers: Iterable[AnswerLike] = (),
        *,
        model: str | None = None,
        max_tokens: int = 1024,
        script: str | os.PathLike[str] | None = None,
    ) -> None:
        """Raises ImproperlyConfigured when ``script`` cannot be read as answers."""
        recorded_model, recorded = load_answers(script) if script is not None else (None, [])
        self.model = model or recorded_model or "scripted"
        self.max_tokens = checked_max_tokens(max_tokens)
        self.answers: list[ScriptedAnswer] = [*recorded, *(_as_answer(a) for a in answers)]
        self.calls: list[ScriptedCall] = []
        self._used: set[int] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<ScriptedModel model={self.model!r} answers left={self.remaining}>"

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **options: Any) -> ScriptedModel:
        """A scripted model replaying the answers of a JSON file (see the module's doc)."""
        return cls(script=path, **options)

    @property
    def remaining(self) -> int:
        """Answers not given yet (a repeating answer counts while it has not been given)."""
        with self._lock:
            return len(self.answers) - len(self._used)

    def add(self, *answers: AnswerLike) -> None:
        """Appends answers to the script."""
        with self._lock:
            self.answers.extend(_as_answer(answer) for answer in answers)

    def __call__(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        prompt: str | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """The next scripted answer for this call; see ``Summarize``.

        Raises InvalidInput for bad messages (as every client does) and ScriptExhausted when
        no answer is left for the call.
        """
        checked = checked_messages(messages)
        budget = self.max_tokens if max_tokens is None else checked_max_tokens(max_tokens)
        prompt, model = checked_prompt_and_model(prompt, model)
        call = ScriptedCall(
            messages=checked, model=model or self.model, prompt=prompt, max_tokens=budget
        )
        with self._lock:
            self.calls.append(call)
            number = len(self.calls)
            answer = self._take(call)
        if answer is None:
            raise ScriptExhausted(number, checked[-1]["content"][:EXCERPT_CHARS])
        return Completion(
            text=answer.text, truncated=answer.truncated, model=call.model, usage=answer.usage
        )

    def _take(self, call: ScriptedCall) -> ScriptedAnswer | None:
        """The answer for ``call``, marked used: the first free one that matches it, else the
        first free one without a matcher. Called with the lock held."""
        free = [
            (index, answer)
            for index, answer in enumerate(self.answers)
            if index not in self._used or answer.repeat
        ]
        chosen = next(((i, a) for i, a in free if a.matches(call)), None) or next(
            ((i, a) for i, a in free if a.match is None), None
        )
        if chosen is None:
            return None
        self._used.add(chosen[0])
        return chosen[1]


def load_answers(path: str | os.PathLike[str]) -> tuple[str | None, list[ScriptedAnswer]]:
    """The model name and the answers of a JSON file of recorded answers.

    Raises ImproperlyConfigured naming the file and what is wrong in it.
    """
    where = f"The scripted model's answers file {os.fspath(path)!r}"
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ImproperlyConfigured(
            f"{where} cannot be read: {type(error).__name__}: {error}"
        ) from error
    model: Any = None
    if isinstance(payload, dict):
        model, payload = payload.get("model"), payload.get("answers")
        if model is not None and not isinstance(model, str):
            raise ImproperlyConfigured(f"{where}: 'model' must be a string.")
    if not isinstance(payload, list):
        raise ImproperlyConfigured(
            f"{where} must hold a list of answers, or an object with an 'answers' list."
        )
    return model, [
        _answer_from_json(item, position, where) for position, item in enumerate(payload)
    ]


ANSWER_KEYS = {"text", "truncated", "match", "pattern", "repeat", "usage"}


def _answer_from_json(item: Any, position: int, where: str) -> ScriptedAnswer:
    def refuse(problem: str) -> ImproperlyConfigured:
        return ImproperlyConfigured(f"{where}: answer {position} {problem}.")

    if isinstance(item, str):
        return ScriptedAnswer(item)
    if not isinstance(item, dict):
        raise refuse("must be a string or an object")
    unknown = set(item) - ANSWER_KEYS
    if unknown:
        raise refuse(
            f"has unknown keys {sorted(unknown)} (known: {', '.join(sorted(ANSWER_KEYS))})"
        )
    text, truncated, repeat = (
        item.get("text"),
        item.get("truncated", False),
        item.get("repeat", False),
    )
    if not isinstance(text, str):
        raise refuse("has no 'text' string")
    if not isinstance(truncated, bool) or not isinstance(repeat, bool):
        raise refuse("has a 'truncated' or 'repeat' that is not true or false")
    if "match" in item and "pattern" in item:
        raise refuse("has both 'match' and 'pattern'")
    match: Matcher | None = None
    if "match" in item:
        if not isinstance(item["match"], str) or not item["match"]:
            raise refuse("has a 'match' that is not a non-empty string")
        match = item["match"]
    elif "pattern" in item:
        try:
            match = re.compile(item["pattern"])
        except (TypeError, re.error) as error:
            raise refuse(f"has a 'pattern' that is no regular expression ({error})") from error
    usage = item.get("usage")
    if usage is not None and (
        not isinstance(usage, dict)
        or set(usage) != {"input_tokens", "output_tokens"}
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in usage.values())
    ):
        raise refuse("has a 'usage' that is not {'input_tokens': int, 'output_tokens': int}")
    return ScriptedAnswer(text, truncated=truncated, match=match, repeat=repeat, usage=usage)
