"""Google's Gemini API, over the official ``google-genai`` SDK (extra ``google``)."""

from __future__ import annotations

from typing import Any

from cogitator_memory.llm.protocol import Completion, Message
from cogitator_memory.llm.sdk import (
    NO_KEY,
    SDKSummarizer,
    error_detail,
    import_sdk,
    reported_model,
    split_system,
    token_usage,
)

GOOGLE_BASE_URL = "https://generativelanguage.googleapis.com"


class GoogleSummarizer(SDKSummarizer):
    """``models.generate_content``. The prompt and the system messages become its
    ``system_instruction``; assistant turns are the role ``model``.

    Retries are the SDK's: ``max_retries`` of 408, 429, 5xx, timeouts and lost
    connections, ``backoff`` seconds before the first, doubled (with jitter) up to
    ``max_wait``. Requests go to the Gemini API, never Vertex AI, whatever the environment
    says.
    """

    provider = "google"
    sdk_module = "google.genai"
    sdk_package = "google-genai"
    extra = "google"
    default_base_url = GOOGLE_BASE_URL

    def __init__(self, *, backoff: float = 1.0, max_wait: float = 30.0, **options: Any) -> None:
        super().__init__(**options)
        self.backoff = backoff
        self.max_wait = max_wait
        # httpx2 is the SDK's transport, installed with it: its timeout and connection
        # errors come through once the retries are used up.
        self.transport = import_sdk(
            "httpx2", package="httpx2", provider=self.provider, extra=self.extra
        )

    def build_client(self) -> Any:
        types = self.sdk.types
        return self.sdk.Client(
            api_key=self.api_key or NO_KEY,
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=self.base_url,
                # The SDK counts in milliseconds.
                timeout=max(1, round(self.timeout * 1000)),
                retry_options=types.HttpRetryOptions(
                    attempts=self.max_retries + 1,
                    initial_delay=self.backoff,
                    max_delay=self.max_wait,
                ),
            ),
        )

    def complete(
        self, messages: list[Message], *, model: str, prompt: str | None, max_tokens: int
    ) -> Completion:
        system, turns = split_system(prompt, messages)
        types = self.sdk.types
        contents = [
            types.Content(
                role="model" if turn["role"] == "assistant" else "user",
                parts=[types.Part(text=turn["content"])],
            )
            for turn in turns
        ]
        config = types.GenerateContentConfig(
            system_instruction=system, max_output_tokens=max_tokens
        )
        try:
            response = self.sdk_client().models.generate_content(
                model=model, contents=contents, config=config
            )
        except self.sdk.errors.APIError as error:
            detail = error.message or error_detail(error.details, str(error))
            self.failed(str(detail), status=error.code or None)
        except self.transport.TimeoutException:
            self.no_answer_in_time()
        except self.transport.TransportError as error:
            self.failed(f"could not reach {self.base_url}: {error}")
        except ValueError as error:
            # A body that is not JSON, or whose fields have the wrong types.
            self.unreadable(error)
        return self.read(response, model)

    def read(self, response: Any, model: str) -> Completion:
        """The ``Completion`` in the first candidate: its text parts joined (thoughts left
        out) and whether it finished at the token limit."""
        candidates = getattr(response, "candidates", None)
        if not candidates:
            feedback = getattr(response, "prompt_feedback", None)
            reason = getattr(feedback, "block_reason", None)
            if reason is not None:
                self.failed(f"the prompt was blocked ({getattr(reason, 'value', reason)})")
            self.malformed("no 'candidates'")
        candidate = candidates[0]
        finish_reason = getattr(candidate, "finish_reason", None)
        if finish_reason is None:
            self.malformed("the first candidate has no 'finishReason'")
        content = getattr(candidate, "content", None)
        parts = getattr(content, "parts", None) or []
        text = "".join(
            part.text
            for part in parts
            if isinstance(getattr(part, "text", None), str) and not getattr(part, "thought", None)
        )
        usage = getattr(response, "usage_metadata", None)
        return Completion(
            text=text,
            truncated=getattr(finish_reason, "value", finish_reason) == "MAX_TOKENS",
            model=reported_model(response, "model_version", model),
            usage=token_usage(
                getattr(usage, "prompt_token_count", None),
                getattr(usage, "candidates_token_count", None),
            ),
        )
