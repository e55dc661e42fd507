"""OpenAI's chat completions, over the official ``openai`` SDK (extra ``openai``), and every
server that speaks them: Ollama, vLLM, llama.cpp's server, LM Studio, LiteLLM. Point
``BASE_URL`` at the server's ``/v1``; such a server needs no ``API_KEY``."""

from __future__ import annotations

from typing import Any

from cogitator_memory.llm.protocol import Completion, Message
from cogitator_memory.llm.sdk import (
    NO_KEY,
    SDKSummarizer,
    reported_model,
    token_usage,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAISummarizer(SDKSummarizer):
    """``chat.completions.create`` with the prompt as the first, system, message.

    The answer budget goes to OpenAI itself as ``max_completion_tokens`` (its reasoning
    models refuse ``max_tokens``) and to a server at ``BASE_URL`` as ``max_tokens``, the
    name every compatible server reads.
    """

    provider = "openai"
    sdk_module = "openai"
    sdk_package = "openai"
    extra = "openai"
    default_base_url = OPENAI_BASE_URL

    def build_client(self) -> Any:
        return self.sdk.OpenAI(
            api_key=self.api_key or NO_KEY,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def complete(
        self, messages: list[Message], *, model: str, prompt: str | None, max_tokens: int
    ) -> Completion:
        sent: list[dict[str, str]] = [{"role": "system", "content": prompt}] if prompt else []
        sent += [{"role": message["role"], "content": message["content"]} for message in messages]
        budget = "max_completion_tokens" if self.is_own_endpoint else "max_tokens"
        response = self.call_generated_sdk(
            lambda: self.sdk_client().chat.completions.create(
                model=model, messages=sent, **{budget: max_tokens}
            ),
            self.sdk.OpenAIError,
        )
        return self.read(response, model)

    def read(self, response: Any, model: str) -> Completion:
        """The ``Completion`` in a chat completion, after checking the fields it needs."""
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            self.malformed("no 'choices'")
        choice = choices[0]
        message = getattr(choice, "message", None)
        finish_reason = getattr(choice, "finish_reason", None)
        if message is None or not isinstance(finish_reason, str):
            self.malformed("the first choice has no 'message' or no 'finish_reason'")
        text = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        if text is None and isinstance(refusal, str) and refusal:
            self.failed(f"the model refused: {refusal}")
        if text is None:
            text = ""
        if not isinstance(text, str):
            self.malformed(f"the answer's content is {type(text).__name__}, not text")
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            truncated=finish_reason == "length",
            model=reported_model(response, "model", model),
            usage=token_usage(
                getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
            ),
        )
