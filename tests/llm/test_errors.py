"""The model's errors as the API answers them: a failed provider is a 503 that keeps the
provider's words out of the body; no model configured is a 409 that says the work is off."""

from __future__ import annotations

from cogitator_memory.api.exceptions import memory_exception_handler
from cogitator_memory.exceptions import LLMError, LLMUnavailable


def test_a_failed_model_call_answers_503_without_the_providers_words() -> None:
    # given
    error = LLMError("anthropic", "Overloaded: region us-east-5 at capacity", status=529)

    # when
    response = memory_exception_handler(error, {})

    # then
    assert response is not None
    assert response.status_code == 503
    assert response.data == {
        "code": "llm_failed",
        "message": "The model service failed; try again later.",
        "errors": {},
    }
    assert str(error) == (
        "anthropic model call failed (HTTP 529): Overloaded: region us-east-5 at capacity"
    )


def test_no_model_configured_answers_409_saying_the_work_is_off() -> None:
    # when
    response = memory_exception_handler(LLMUnavailable("Compaction"), {})

    # then
    assert response is not None
    assert response.status_code == 409
    assert response.data["code"] == "llm_unavailable"
    assert response.data["message"] == (
        "Compaction is off: no model is configured "
        "(set COGITATOR_MEMORY['LLM']['PROVIDER'] and MODEL)."
    )
