"""The configured model: ``get_summarizer()`` builds the client ``COGITATOR_MEMORY["LLM"]``
names, once per settings (the cache is dropped when ``override_settings`` changes them), or
gives None when no provider is configured: model-backed work is then off and says so
(``require_summarizer()`` raises ``LLMUnavailable``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import LLMUnavailable
from cogitator_memory.llm.protocol import Summarize

PROVIDERS = {
    "openai": "cogitator_memory.llm.openai.OpenAISummarizer",
    "anthropic": "cogitator_memory.llm.anthropic.AnthropicSummarizer",
    "google": "cogitator_memory.llm.google.GoogleSummarizer",
    "scripted": "cogitator_memory.llm.scripted.ScriptedModel",
}

# The keys of the LLM section each kind of provider is built with (lower-cased, as keyword
# arguments; keys left None are not passed, so the class's defaults stand).
CLIENT_OPTIONS = ("MODEL", "API_KEY", "BASE_URL", "TIMEOUT", "MAX_RETRIES", "MAX_TOKENS")
SCRIPTED_OPTIONS = ("MODEL", "MAX_TOKENS", "SCRIPT")


def summarizer_from_settings(config: dict[str, Any]) -> Summarize | None:
    """The client an ``LLM`` settings section names, or None without a provider.

    Raises ImproperlyConfigured when the client refuses its settings (no model, no key for
    the provider's own endpoint, its SDK not installed, an unreadable script).
    """
    provider = config.get("PROVIDER")
    if not provider:
        return None
    factory = import_string(PROVIDERS.get(provider, provider))
    keys = SCRIPTED_OPTIONS if provider == "scripted" else CLIENT_OPTIONS
    options = {key.lower(): config[key] for key in keys if config.get(key) is not None}
    summarizer: Summarize = factory(**options)
    return summarizer


@lru_cache(maxsize=1)
def get_summarizer() -> Summarize | None:
    """The configured model client (cached), or None when none is configured."""
    return summarizer_from_settings(memory_settings.LLM)


def require_summarizer(work: str = "Model-backed work") -> Summarize:
    """The configured model client; raises ``LLMUnavailable`` naming ``work`` when there is
    none."""
    summarizer = get_summarizer()
    if summarizer is None:
        raise LLMUnavailable(work)
    return summarizer


@receiver(setting_changed, dispatch_uid="cogitator_memory.llm.registry.reset")
def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "COGITATOR_MEMORY":
        get_summarizer.cache_clear()
