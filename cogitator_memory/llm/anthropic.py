"""Anthropic's Messages API, over the official ``anthropic`` SDK (extra ``anthropic``)."""

from __future__ import annotations

from typing import Any

from cogitator_memory.llm.protocol import Completion, Message
from cogitator_memory.llm.sdk import (
    NO_KEY,
    SDKSummarizer,
    reported_model,
    split_system,
    token_usage,
)

ANTHROPIC_BASE_URL = "https://api.anthropic.com"


class AnthropicSummarizer(SDKSummarizer):
    """``messages.create``. The Messages API has no system role among the turns: the prompt
    and the system messages go, in that order, into its ``system`` parameter."""

    provider = "anthropic"
    sdk_module = "anthropic"
    sdk_package = "anthropic"
    extra = "anthropic"
    default_base_url = ANTHROPIC_BASE_URL

    def build_client(self) -> Any:
        return self.sdk.Anthropic(
            api_key=self.api_key or NO_KEY,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def complete(
        self, messages: list[Message], *, model: str, prompt: str | None, max_tokens: int
    ) -> Completion:
        system, turns = split_system(prompt, messages)
        options: dict[str, Any] = {"system": system} if system else {}
        response = self.call_generated_sdk(
            lambda: self.sdk_client().messages.create(
                model=model,
                max_tokens=max_tokens,
                messages=[dict(turn) for turn in turns],
                **options,
            ),
            self.sdk.AnthropicError,
        )
        return self.read(response, model)

    def read(self, response: Any, model: str) -> Completion:
        """The ``Completion`` in a message, after checking the fields it needs: the text
        blocks joined (other blocks, such as thinking, left out) and the stop reason."""
        blocks = getattr(response, "content", None)
        stop_reason = getattr(response, "stop_reason", None)
        if not isinstance(blocks, list):
            self.malformed("no 'content' list")
        if not isinstance(stop_reason, str):
            self.malformed("no 'stop_reason'")
        texts = []
        for position, block in enumerate(blocks):
            if getattr(block, "type", None) != "text":
                continue
            text = getattr(block, "text", None)
            if not isinstance(text, str):
                self.malformed(f"text block {position} has no 'text'")
            texts.append(text)
        if stop_reason == "refusal" and not texts:
            self.failed("the model refused to answer")
        usage = getattr(response, "usage", None)
        return Completion(
            text="".join(texts),
            truncated=stop_reason == "max_tokens",
            model=reported_model(response, "model", model),
            usage=token_usage(
                getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None)
            ),
        )
