"""The model seam: what every model client takes and gives back.

A client is a callable (``Summarize``): a list of messages in, one ``Completion`` out.
Extraction, compaction and upkeep call it and never see which provider answers.
``get_summarizer()`` (``llm/registry.py``) builds the configured one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.limits import is_whole_number

__all__ = [
    "ROLES",
    "Completion",
    "Message",
    "Summarize",
    "checked_max_tokens",
    "checked_messages",
    "checked_prompt_and_model",
]

ROLES = ("system", "user", "assistant")


class Message(TypedDict):
    """One turn of the conversation a model is shown."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    """A model's answer.

    ``truncated`` says the answer was cut at the token limit (OpenAI's finish reason
    ``length``, Anthropic's stop reason ``max_tokens``, Google's finish reason
    ``MAX_TOKENS``): the text is incomplete. ``model`` is the model that answered, as the
    provider names it. ``usage`` counts ``input_tokens`` and ``output_tokens`` when the
    provider reports them, else it is None.
    """

    text: str
    truncated: bool
    model: str
    usage: dict[str, int] | None = None


class Summarize(Protocol):
    """A model client: ``summarize(messages, model=None, prompt=None, max_tokens=None)``.

    ``model`` None asks the configured model; ``prompt`` is a system prompt put before the
    messages; ``max_tokens`` None allows the configured answer budget. Raises
    ``InvalidInput`` for messages that are not a non-empty list of ``{"role", "content"}``
    and ``LLMError`` when the provider fails.
    """

    provider: str
    model: str

    def __call__(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        prompt: str | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...


def checked_messages(messages: Any) -> list[Message]:
    """Copies of ``messages`` after checking each is ``{"role": one of ROLES, "content": str}``.

    Raises InvalidInput naming the first bad message.
    """
    if isinstance(messages, str | bytes | dict) or not isinstance(messages, Sequence):
        raise InvalidInput({"messages": "Give a list of {'role', 'content'} messages."})
    if not messages:
        raise InvalidInput({"messages": "Give at least one message."})
    checked: list[Message] = []
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise InvalidInput(
                {"messages": f"Message {position} must be a dict with 'role' and 'content' only."}
            )
        role, content = message["role"], message["content"]
        if role not in ROLES:
            allowed = ", ".join(ROLES)
            raise InvalidInput(
                {"messages": f"Message {position} has role {role!r}, not one of {allowed}."}
            )
        if not isinstance(content, str):
            kind = type(content).__name__
            raise InvalidInput(
                {"messages": f"Message {position} has content of type {kind}, not str."}
            )
        checked.append({"role": role, "content": content})
    return checked


def checked_max_tokens(max_tokens: Any) -> int:
    """``max_tokens`` when it is a whole number of 1 or more; raises InvalidInput otherwise."""
    if not is_whole_number(max_tokens, minimum=1):
        raise InvalidInput(
            {"max_tokens": f"Must be a whole number of 1 or more, not {max_tokens!r}."}
        )
    return max_tokens


def checked_prompt_and_model(prompt: Any, model: Any) -> tuple[str | None, str | None]:
    """``prompt`` (None when empty) and ``model`` after checking their types; raises
    InvalidInput naming the bad one."""
    if prompt is not None and not isinstance(prompt, str):
        raise InvalidInput({"prompt": f"Must be a str or None, not {type(prompt).__name__}."})
    if model is not None and (not isinstance(model, str) or not model):
        raise InvalidInput({"model": "Must be a non-empty str or None."})
    return prompt or None, model
