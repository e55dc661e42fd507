"""System checks: each bad value of ``COGITATOR_MEMORY`` reported with its id, naming the
key; the apps the app and its REST API need."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.apps import apps
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from cogitator_memory.checks import (
    SECTION_VALIDATORS,
    SETTING_VALIDATORS,
    check_api_apps,
    check_memory_settings,
    check_required_apps,
)
from cogitator_memory.conf import DEFAULTS
from cogitator_memory.embeddings.services import PROVIDERS
from cogitator_memory.llm.registry import PROVIDERS as LLM_PROVIDERS

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper


def reported(settings: SettingsWrapper, value: Any) -> list[tuple[str | None, str]]:
    settings.COGITATOR_MEMORY = value
    return [(message.id, message.msg) for message in check_memory_settings()]


def test_the_defaults_written_out_pass_the_checks(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, dict(DEFAULTS))
    # then
    assert errors == []


def test_an_empty_setting_passes_the_checks(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {})
    # then
    assert errors == []


def test_no_setting_at_all_passes_the_checks(settings: SettingsWrapper) -> None:
    # given
    del settings.COGITATOR_MEMORY
    # when
    errors = check_memory_settings()
    # then
    assert errors == []


def test_a_setting_that_is_not_a_dict_is_e000(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, ["LLM"])
    # then
    assert errors == [("cogitator_memory.E000", "COGITATOR_MEMORY must be a dict, not list.")]


def test_an_unknown_key_is_e001_naming_the_key(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {"THREAD_PREFIX": "t_"})
    # then
    assert errors == [
        ("cogitator_memory.E001", "COGITATOR_MEMORY has an unknown key 'THREAD_PREFIX'.")
    ]


def test_the_hint_of_an_unknown_key_lists_the_known_keys(settings: SettingsWrapper) -> None:
    # given
    settings.COGITATOR_MEMORY = {"THREAD_PREFIX": "t_"}
    # when
    [error] = check_memory_settings()
    # then
    assert error.hint == f"Known keys: {', '.join(sorted(DEFAULTS))}."
    assert "THREAD_ID_PREFIX" in error.hint


def test_a_value_of_the_wrong_type_is_e002_naming_key_and_types(
    settings: SettingsWrapper,
) -> None:
    # when
    errors = reported(settings, {"THREAD_ID_PREFIX": 7})
    # then
    assert errors == [
        ("cogitator_memory.E002", "COGITATOR_MEMORY['THREAD_ID_PREFIX'] must be a str, not int.")
    ]


def test_a_string_where_an_int_is_expected_is_e002_in_plain_english(
    settings: SettingsWrapper,
) -> None:
    # when
    errors = reported(settings, {"LIST_THREADS_MAX_LIMIT": "500"})
    # then
    assert errors == [
        (
            "cogitator_memory.E002",
            "COGITATOR_MEMORY['LIST_THREADS_MAX_LIMIT'] must be an int, not str.",
        )
    ]


def test_a_boolean_where_a_number_is_expected_is_e002(settings: SettingsWrapper) -> None:
    # when: bool is an int subclass, but True is never a page size
    errors = reported(settings, {"CHARS_PER_TOKEN": True})
    # then
    assert errors == [
        ("cogitator_memory.E002", "COGITATOR_MEMORY['CHARS_PER_TOKEN'] must be a number, not bool.")
    ]


def test_a_section_that_is_not_a_dict_is_e002(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {"LLM": "openai"})
    # then
    assert errors == [("cogitator_memory.E002", "COGITATOR_MEMORY['LLM'] must be a dict, not str.")]


def test_an_unknown_key_inside_a_section_is_e003_naming_section_and_key(
    settings: SettingsWrapper,
) -> None:
    # when
    errors = reported(settings, {"EMBEDDINGS": {"PROVIDER": "openai", "DIMENSION": 384}})
    # then
    assert errors == [
        ("cogitator_memory.E003", "COGITATOR_MEMORY['EMBEDDINGS'] has an unknown key 'DIMENSION'.")
    ]


@pytest.mark.parametrize("value", [0, -1])
def test_a_number_that_is_not_positive_is_e004(settings: SettingsWrapper, value: int) -> None:
    # when
    errors = reported(settings, {"PATH_WALK_STEP": value})
    # then
    assert errors == [
        (
            "cogitator_memory.E004",
            f"COGITATOR_MEMORY['PATH_WALK_STEP'] must be greater than 0, not {value}.",
        )
    ]


def test_a_fractional_chars_per_token_passes_the_checks(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {"CHARS_PER_TOKEN": 3.5})
    # then
    assert errors == []


def test_a_default_limit_above_the_max_limit_is_e005(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {"LIST_THREADS_DEFAULT_LIMIT": 100, "LIST_THREADS_MAX_LIMIT": 20})
    # then
    assert errors == [
        (
            "cogitator_memory.E005",
            "COGITATOR_MEMORY['LIST_THREADS_DEFAULT_LIMIT'] (100) is larger than "
            "LIST_THREADS_MAX_LIMIT (20).",
        )
    ]


def test_a_default_limit_above_the_default_max_limit_is_e005(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {"LIST_THREADS_DEFAULT_LIMIT": 501})
    # then
    assert [error_id for error_id, _ in errors] == ["cogitator_memory.E005"]


def test_every_bad_key_is_reported_not_only_the_first(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {"NOPE": 1, "PATH_WALK_STEP": 0, "LLM": {"MODLE": "x"}})
    # then
    assert sorted(error_id for error_id, _ in errors) == [
        "cogitator_memory.E001",
        "cogitator_memory.E003",
        "cogitator_memory.E004",
    ]


def test_the_check_is_registered_with_django(settings: SettingsWrapper) -> None:
    # given
    settings.COGITATOR_MEMORY = {"THREAD_PREFIX": "t_"}
    # when
    ids = [message.id for message in checks.run_checks()]
    # then
    assert "cogitator_memory.E001" in ids


def test_manage_py_check_fails_naming_the_unknown_key(settings: SettingsWrapper) -> None:
    # given
    settings.COGITATOR_MEMORY = {"THREAD_PREFIX": "t_"}
    # when / then
    with pytest.raises(SystemCheckError, match=r"cogitator_memory\.E001.*'THREAD_PREFIX'"):
        call_command("check")


# Every key has a validator


def test_every_key_of_the_defaults_has_a_validator() -> None:
    # given: the keys the checks validate, top-level and per section
    sections = {name for name, default in DEFAULTS.items() if isinstance(default, dict)}
    # then: a key (or section) added to DEFAULTS without a validator fails here
    assert set(SETTING_VALIDATORS) == set(DEFAULTS) - sections
    assert set(SECTION_VALIDATORS) == sections
    for section in sections:
        assert set(SECTION_VALIDATORS[section]) == set(DEFAULTS[section]), section


def test_the_readme_settings_block_is_the_defaults_and_passes_the_checks(
    settings: SettingsWrapper,
) -> None:
    # given: the python block of the README's "### Settings"
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    settings_section = readme.split("\n### Settings\n", 1)[1]
    block = re.search(r"```python\n(.*?)```", settings_section, re.DOTALL)
    assert block is not None
    namespace: dict[str, Any] = {}
    exec(block.group(1), namespace)
    # when
    errors = reported(settings, namespace["COGITATOR_MEMORY"])
    # then
    assert namespace["COGITATOR_MEMORY"] == DEFAULTS
    assert errors == []


# Values inside the sections

PROVIDER_NAMES = ", ".join(sorted(PROVIDERS))
LLM_PROVIDER_NAMES = ", ".join(sorted(LLM_PROVIDERS))

GOOD_VALUES = [
    ("ITEMS", "ACTIVATION_CONFIDENCE", 0.7),
    ("ITEMS", "ACTIVATION_CONFIDENCE", 1),
    ("EXTRACTION", "ENABLED", True),
    ("EXTRACTION", "MODE", "auto"),
    ("EXTRACTION", "WINDOW_TOKENS", 100),
    ("EXTRACTION", "MAX_TOKENS", 8000),
    ("EXTRACTION", "TIME_ZONE", "Europe/Lisbon"),
    ("EXTRACTION", "DEBOUNCE_SECONDS", 0),
    ("COMPACTION", "ENABLED", True),
    ("COMPACTION", "STRATEGY", "hierarchical"),
    ("COMPACTION", "THRESHOLD", 60_000),
    ("COMPACTION", "MESSAGE_THRESHOLD", 40),
    ("COMPACTION", "KEEP_RECENT", 0),
    ("COMPACTION", "KEEP_RECENT_TOKENS", 8000),
    ("COMPACTION", "SUMMARY_MODEL", "gpt-4o-mini"),
    ("COMPACTION", "SUMMARY_PROMPT", "Keep names."),
    ("COMPACTION", "CHAPTER_TOKENS", 4000),
    ("COMPACTION", "CHAPTER_CONCURRENCY", 2),
    ("COMPACTION", "CHAPTERS_PER_ARC", 4),
    ("COMPACTION", "ARCS_PER_SAGA", 4),
    ("LLM", "PROVIDER", None),
    *[("LLM", "PROVIDER", provider) for provider in LLM_PROVIDERS],
    ("LLM", "PROVIDER", "cogitator_memory.llm.scripted.ScriptedModel"),
    ("LLM", "MODEL", None),
    ("LLM", "MODEL", "gpt-4o-mini"),
    ("LLM", "API_KEY", None),
    ("LLM", "API_KEY", "sk-test"),
    ("LLM", "BASE_URL", None),
    ("LLM", "BASE_URL", "https://api.openai.com/v1"),
    ("LLM", "TIMEOUT", 60),
    ("LLM", "TIMEOUT", 0.5),
    ("LLM", "MAX_RETRIES", 0),
    ("LLM", "MAX_RETRIES", 5),
    ("LLM", "MAX_TOKENS", 1),
    ("LLM", "MAX_TOKENS", 4096),
    ("LLM", "SCRIPT", None),
    ("LLM", "SCRIPT", "demo/answers.json"),
    ("EMBEDDINGS", "PROVIDER", None),
    *[("EMBEDDINGS", "PROVIDER", provider) for provider in PROVIDERS],
    (
        "EMBEDDINGS",
        "PROVIDER",
        "cogitator_memory.embeddings.providers.openai.OpenAIEmbeddings",
    ),
    ("EMBEDDINGS", "MODEL", None),
    ("EMBEDDINGS", "MODEL", "nomic-embed-text"),
    ("EMBEDDINGS", "DIMENSIONS", None),
    ("EMBEDDINGS", "DIMENSIONS", 1),
    ("EMBEDDINGS", "DIMENSIONS", 384),
    ("EMBEDDINGS", "DIMENSIONS", 16_000),
    ("EMBEDDINGS", "API_KEY", None),
    ("EMBEDDINGS", "API_KEY", ""),
    ("EMBEDDINGS", "BASE_URL", None),
    # A host of a compose network has no dot; an IPv6 host has brackets.
    ("EMBEDDINGS", "BASE_URL", "http://ollama:11434"),
    ("EMBEDDINGS", "BASE_URL", "http://[::1]:8080/v1"),
    ("EMBEDDINGS", "TIMEOUT", 30),
    ("EMBEDDINGS", "TIMEOUT", 2.5),
    ("EMBEDDINGS", "BATCH_SIZE", 1),
    ("EMBEDDINGS", "BATCH_SIZE", 2048),
    ("EMBEDDINGS", "MAX_RETRIES", 0),
    ("EMBEDDINGS", "MAX_RETRIES", 10),
    ("EMBEDDINGS", "STORE", "auto"),
    ("EMBEDDINGS", "STORE", "exact"),
    ("EMBEDDINGS", "STORE", "pgvector"),
    ("EMBEDDINGS", "STORE", "cogitator_memory.embeddings.stores.exact.ExactEmbeddingStore"),
    ("EMBEDDINGS", "QDRANT_URL", None),
    ("EMBEDDINGS", "QDRANT_URL", "http://localhost:6333"),
    ("EMBEDDINGS", "QDRANT_PATH", None),
    ("EMBEDDINGS", "QDRANT_PATH", ":memory:"),
    ("EMBEDDINGS", "QDRANT_API_KEY", None),
    ("EMBEDDINGS", "QDRANT_API_KEY", "qdrant-key"),
    ("EMBEDDINGS", "QDRANT_COLLECTION", None),
    ("EMBEDDINGS", "QDRANT_COLLECTION", "agents"),
    ("EMBEDDINGS", "HNSW_EF_SEARCH", 1),
    ("EMBEDDINGS", "HNSW_EF_SEARCH", 1000),
    ("EMBEDDINGS", "API_SEARCH_SHARED", True),
    ("EMBEDDINGS", "API_SEARCH_SHARED", False),
    ("KEYWORDS", "CACHE_POSTINGS", 0),
    ("KEYWORDS", "CACHE_POSTINGS", 50_000_000),
    ("RECALL", "RERANKER_PATH", None),
    ("RECALL", "RERANKER_PATH", "/models/ms-marco-MiniLM-L-6-v2"),
    ("JOBS", "MAX_ATTEMPTS", 1),
    ("JOBS", "MAX_ATTEMPTS", 100),
    ("JOBS", "LEASE_SECONDS", 30),
    ("JOBS", "RETRY_DELAY_SECONDS", 0),
    ("JOBS", "RETRY_FACTOR", 1.5),
    ("JOBS", "REPUBLISH_AFTER_SECONDS", 300),
    ("QUOTAS", "MODEL_RUNS_PER_AGENT", None),
    ("QUOTAS", "MODEL_RUNS_PER_AGENT", 100),
    ("QUOTAS", "MODEL_RUNS_PER_USER", 1),
    ("QUOTAS", "PERIOD", 86_400),
    ("UPKEEP", "ENABLED", True),
    ("UPKEEP", "OBSERVATIONS", False),
    ("UPKEEP", "CONSOLIDATION", False),
    ("UPKEEP", "PLAYBOOK_MODE", "apply"),
    ("UPKEEP", "MAX_ENTITIES", 10),
    ("UPKEEP", "MIN_ITEMS", 1),
    ("UPKEEP", "MAX_CHANGES", 50),
    ("UPKEEP", "MAX_SUBJECTS", 1),
    ("UPKEEP", "ITEMS_PER_BATCH", 100_000),
    ("UPKEEP", "SCOPES_PER_PASS", 10_000),
]


# What a good value needs beside it to pass: an SDK provider a model, a script its provider.
COMPANIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("LLM", "PROVIDER"): {"MODEL": "some-model"},
    ("LLM", "SCRIPT"): {"PROVIDER": "scripted"},
}


@pytest.mark.parametrize(("section", "key", "value"), GOOD_VALUES)
def test_a_good_value_of_a_section_passes_the_checks(
    settings: SettingsWrapper, section: str, key: str, value: Any
) -> None:
    # when
    companions = COMPANIONS.get((section, key), {}) if value is not None else {}
    errors = reported(settings, {section: {**companions, key: value}})
    # then
    assert errors == []


def test_every_key_of_every_section_has_a_good_value_tried() -> None:
    # then
    tried = {(section, key) for section, key, _ in GOOD_VALUES}
    assert tried == {(s, key) for s, keys in SECTION_VALIDATORS.items() for key in keys}


BAD_VALUES = [
    # ITEMS and EXTRACTION
    ("ITEMS", "ACTIVATION_CONFIDENCE", 1.5, "E004", "must be from 0 to 1, not 1.5"),
    ("EXTRACTION", "ENABLED", "yes", "E002", "must be a bool, not str"),
    ("COMPACTION", "ENABLED", 1, "E002", "must be a bool, not int"),
    ("COMPACTION", "STRATEGY", "flat", "E006", "must be one of summary, hierarchical, not 'flat'"),
    ("COMPACTION", "THRESHOLD", 0, "E004", "must be greater than 0, not 0"),
    ("COMPACTION", "MESSAGE_THRESHOLD", -1, "E004", "must be greater than 0, not -1"),
    ("COMPACTION", "KEEP_RECENT", -1, "E004", "must be 0 or more, not -1"),
    ("COMPACTION", "KEEP_RECENT_TOKENS", 0, "E004", "must be greater than 0, not 0"),
    ("COMPACTION", "SUMMARY_MODEL", "", "E006", "must be None or a non-empty str, not ''"),
    ("COMPACTION", "SUMMARY_PROMPT", 3, "E002", "must be None or a str, not int"),
    ("COMPACTION", "CHAPTER_TOKENS", 10, "E004", "must be 100 or more, not 10"),
    ("COMPACTION", "CHAPTER_CONCURRENCY", 0, "E004", "must be greater than 0, not 0"),
    ("COMPACTION", "CHAPTERS_PER_ARC", 1, "E004", "must be 2 or more, not 1"),
    ("COMPACTION", "ARCS_PER_SAGA", 1, "E004", "must be 2 or more, not 1"),
    ("EXTRACTION", "MODE", "manual", "E006", "must be one of shadow, auto, not 'manual'"),
    ("EXTRACTION", "WINDOW_TOKENS", 10, "E004", "must be 100 or more, not 10"),
    ("EXTRACTION", "MAX_TOKENS", 0, "E004", "must be greater than 0, not 0"),
    (
        "EXTRACTION",
        "TIME_ZONE",
        "Mars/Base",
        "E006",
        "must be an IANA time zone name, not 'Mars/Base'",
    ),
    ("EXTRACTION", "DEBOUNCE_SECONDS", -1, "E004", "must be between 0 and 86400, not -1"),
    # LLM
    (
        "LLM",
        "PROVIDER",
        "",
        "E006",
        f"must be None, one of {LLM_PROVIDER_NAMES} or a dotted path, not ''",
    ),
    (
        "LLM",
        "PROVIDER",
        "claude",
        "E006",
        f"must be None, one of {LLM_PROVIDER_NAMES} or a dotted path, not 'claude'",
    ),
    ("LLM", "PROVIDER", 1, "E002", "must be None or a str, not int"),
    ("LLM", "MODEL", ["gpt"], "E002", "must be None or a str, not list"),
    ("LLM", "API_KEY", 12345, "E002", "must be None or a str, not int"),
    (
        "LLM",
        "BASE_URL",
        "api.openai.com/v1",
        "E007",
        "must be None or an http(s) URL, not 'api.openai.com/v1'",
    ),
    ("LLM", "BASE_URL", 8080, "E002", "must be None or a str, not int"),
    ("LLM", "TIMEOUT", 0, "E004", "must be greater than 0, not 0"),
    ("LLM", "TIMEOUT", "60", "E002", "must be a number, not str"),
    ("LLM", "TIMEOUT", True, "E002", "must be a number, not bool"),
    ("LLM", "TIMEOUT", None, "E002", "must be a number, not NoneType"),
    ("LLM", "MAX_RETRIES", -1, "E004", "must be 0 or more, not -1"),
    ("LLM", "MAX_RETRIES", "2", "E002", "must be an int, not str"),
    ("LLM", "MAX_TOKENS", 0, "E004", "must be greater than 0, not 0"),
    ("LLM", "MAX_TOKENS", 512.0, "E002", "must be an int, not float"),
    ("LLM", "MAX_TOKENS", None, "E002", "must be an int, not NoneType"),
    ("LLM", "SCRIPT", "", "E006", "must be None or a non-empty str, not ''"),
    ("LLM", "SCRIPT", 3, "E002", "must be None or a str, not int"),
    # EMBEDDINGS
    (
        "EMBEDDINGS",
        "PROVIDER",
        "opnai",
        "E006",
        f"must be None, one of {PROVIDER_NAMES} or a dotted path, not 'opnai'",
    ),
    ("EMBEDDINGS", "PROVIDER", 3, "E002", "must be None or a str, not int"),
    ("EMBEDDINGS", "MODEL", 3, "E002", "must be None or a str, not int"),
    ("EMBEDDINGS", "DIMENSIONS", -3, "E004", "must be between 1 and 16000, not -3"),
    ("EMBEDDINGS", "DIMENSIONS", 0, "E004", "must be between 1 and 16000, not 0"),
    ("EMBEDDINGS", "DIMENSIONS", 16_001, "E004", "must be between 1 and 16000, not 16001"),
    ("EMBEDDINGS", "DIMENSIONS", "384", "E002", "must be None or an int, not str"),
    ("EMBEDDINGS", "DIMENSIONS", 384.0, "E002", "must be None or an int, not float"),
    ("EMBEDDINGS", "DIMENSIONS", True, "E002", "must be None or an int, not bool"),
    ("EMBEDDINGS", "API_KEY", b"key", "E002", "must be None or a str, not bytes"),
    (
        "EMBEDDINGS",
        "BASE_URL",
        "localhost:11434",
        "E007",
        "must be None or an http(s) URL, not 'localhost:11434'",
    ),
    (
        "EMBEDDINGS",
        "BASE_URL",
        "ftp://files.example.com",
        "E007",
        "must be None or an http(s) URL, not 'ftp://files.example.com'",
    ),
    ("EMBEDDINGS", "BASE_URL", "http://", "E007", "must be None or an http(s) URL, not 'http://'"),
    (
        "EMBEDDINGS",
        "BASE_URL",
        "http://host:99999",
        "E007",
        "must be None or an http(s) URL, not 'http://host:99999'",
    ),
    (
        "EMBEDDINGS",
        "BASE_URL",
        "http://exa mple.com",
        "E007",
        "must be None or an http(s) URL, not 'http://exa mple.com'",
    ),
    ("EMBEDDINGS", "BASE_URL", "", "E007", "must be None or an http(s) URL, not ''"),
    ("EMBEDDINGS", "TIMEOUT", -1, "E004", "must be greater than 0, not -1"),
    ("EMBEDDINGS", "TIMEOUT", float("nan"), "E004", "must be greater than 0, not nan"),
    ("EMBEDDINGS", "TIMEOUT", float("inf"), "E004", "must be greater than 0, not inf"),
    ("EMBEDDINGS", "TIMEOUT", "30s", "E002", "must be a number, not str"),
    ("EMBEDDINGS", "BATCH_SIZE", 0, "E004", "must be greater than 0, not 0"),
    ("EMBEDDINGS", "BATCH_SIZE", 2.5, "E002", "must be an int, not float"),
    ("EMBEDDINGS", "MAX_RETRIES", -1, "E004", "must be 0 or more, not -1"),
    ("EMBEDDINGS", "MAX_RETRIES", None, "E002", "must be an int, not NoneType"),
    ("EMBEDDINGS", "MAX_RETRIES", False, "E002", "must be an int, not bool"),
    (
        "EMBEDDINGS",
        "STORE",
        "pgvectr",
        "E006",
        "must be one of auto, exact, pgvector, qdrant or a dotted path, not 'pgvectr'",
    ),
    ("EMBEDDINGS", "STORE", None, "E002", "must be a str, not NoneType"),
    (
        "EMBEDDINGS",
        "QDRANT_URL",
        "qdrant:6333",
        "E007",
        "must be None or an http(s) URL, not 'qdrant:6333'",
    ),
    ("EMBEDDINGS", "QDRANT_PATH", 1, "E002", "must be None or a str, not int"),
    ("EMBEDDINGS", "QDRANT_API_KEY", 1, "E002", "must be None or a str, not int"),
    ("EMBEDDINGS", "QDRANT_COLLECTION", ["a"], "E002", "must be None or a str, not list"),
    ("EMBEDDINGS", "HNSW_EF_SEARCH", "lots", "E002", "must be an int, not str"),
    ("EMBEDDINGS", "HNSW_EF_SEARCH", 0, "E004", "must be between 1 and 1000, not 0"),
    ("EMBEDDINGS", "HNSW_EF_SEARCH", 1001, "E004", "must be between 1 and 1000, not 1001"),
    ("EMBEDDINGS", "API_SEARCH_SHARED", "yes", "E002", "must be a bool, not str"),
    ("EMBEDDINGS", "API_SEARCH_SHARED", 1, "E002", "must be a bool, not int"),
    ("KEYWORDS", "CACHE_POSTINGS", -1, "E004", "must be 0 or more, not -1"),
    ("KEYWORDS", "CACHE_POSTINGS", 1.5, "E002", "must be an int, not float"),
    ("RECALL", "RERANKER_PATH", "", "E006", "must be None or a non-empty str, not ''"),
    ("JOBS", "MAX_ATTEMPTS", 0, "E004", "must be between 1 and 100, not 0"),
    ("JOBS", "LEASE_SECONDS", 0, "E004", "must be greater than 0, not 0"),
    ("JOBS", "RETRY_DELAY_SECONDS", -1, "E004", "must be 0 or more, not -1"),
    ("JOBS", "RETRY_FACTOR", 0, "E004", "must be greater than 0, not 0"),
    ("JOBS", "REPUBLISH_AFTER_SECONDS", "soon", "E002", "must be an int, not str"),
    ("QUOTAS", "MODEL_RUNS_PER_AGENT", 0, "E004", "must be greater than 0, not 0"),
    ("QUOTAS", "MODEL_RUNS_PER_USER", "5", "E002", "must be None or an int, not str"),
    ("QUOTAS", "PERIOD", 0, "E004", "must be between 1 and 86400, not 0"),
    ("UPKEEP", "PLAYBOOK_MODE", "auto", "E006", "must be one of shadow, apply, not 'auto'"),
    ("UPKEEP", "MAX_ENTITIES", 0, "E004", "must be between 1 and 100, not 0"),
    ("UPKEEP", "SCOPES_PER_PASS", "many", "E002", "must be an int, not str"),
    ("UPKEEP", "ENABLED", "yes", "E002", "must be a bool, not str"),
    ("UPKEEP", "OBSERVATIONS", 1, "E002", "must be a bool, not int"),
    ("UPKEEP", "CONSOLIDATION", None, "E002", "must be a bool, not NoneType"),
    ("UPKEEP", "MIN_ITEMS", 0, "E004", "must be greater than 0, not 0"),
    ("UPKEEP", "MAX_CHANGES", -1, "E004", "must be greater than 0, not -1"),
    ("UPKEEP", "MAX_SUBJECTS", 2.5, "E002", "must be an int, not float"),
    ("UPKEEP", "ITEMS_PER_BATCH", 0, "E004", "must be between 1 and 100000, not 0"),
]


@pytest.mark.parametrize(("section", "key", "value", "error_id", "problem"), BAD_VALUES)
def test_a_bad_value_of_a_section_is_reported_naming_section_and_key(
    settings: SettingsWrapper, section: str, key: str, value: Any, error_id: str, problem: str
) -> None:
    # when
    errors = reported(settings, {section: {key: value}})
    # then
    assert errors == [
        (f"cogitator_memory.{error_id}", f"COGITATOR_MEMORY[{section!r}][{key!r}] {problem}.")
    ]


def test_every_key_of_every_section_has_a_bad_value_tried() -> None:
    # then
    tried = {(section, key) for section, key, *_ in BAD_VALUES}
    assert tried == {(s, key) for s, keys in SECTION_VALIDATORS.items() for key in keys}


def test_a_misspelt_store_gets_a_hint_with_the_likely_name_and_every_name(
    settings: SettingsWrapper,
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": {"STORE": "pgvectr"}}
    # when
    [error] = check_memory_settings()
    # then
    assert error.hint == (
        "Did you mean 'pgvector'? Stores: auto, exact, pgvector, qdrant; or the dotted path "
        "of a class of your own."
    )


def test_a_misspelt_llm_provider_gets_a_hint_with_the_likely_name(
    settings: SettingsWrapper,
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "antropic", "MODEL": "m"}}
    # when
    [error] = check_memory_settings()
    # then
    assert error.hint == (
        f"Did you mean 'anthropic'? Providers: {LLM_PROVIDER_NAMES}; or the dotted path of a "
        "class of your own."
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
def test_an_sdk_llm_provider_without_a_model_is_e005(
    settings: SettingsWrapper, provider: str
) -> None:
    # when
    errors = reported(settings, {"LLM": {"PROVIDER": provider}})
    # then
    assert errors == [
        (
            "cogitator_memory.E005",
            f"COGITATOR_MEMORY['LLM'] with PROVIDER {provider!r} needs a MODEL.",
        )
    ]


@pytest.mark.parametrize("provider", [None, "openai"])
def test_a_script_without_the_scripted_provider_is_e005(
    settings: SettingsWrapper, provider: str | None
) -> None:
    # when
    errors = reported(
        settings, {"LLM": {"PROVIDER": provider, "MODEL": "m", "SCRIPT": "answers.json"}}
    )
    # then
    assert errors == [
        (
            "cogitator_memory.E005",
            "COGITATOR_MEMORY['LLM'] has a SCRIPT, which only PROVIDER 'scripted' reads, "
            f"with PROVIDER {provider!r}.",
        )
    ]


def test_the_scripted_provider_needs_no_model(settings: SettingsWrapper) -> None:
    # when
    errors = reported(settings, {"LLM": {"PROVIDER": "scripted", "SCRIPT": "answers.json"}})
    # then
    assert errors == []


def test_a_misspelt_provider_gets_a_hint_with_the_likely_name(settings: SettingsWrapper) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": {"PROVIDER": "olama"}}
    # when
    [error] = check_memory_settings()
    # then
    assert error.hint == (
        f"Did you mean 'ollama'? Providers: {PROVIDER_NAMES}; or the dotted path of a class "
        "of your own."
    )


@pytest.mark.parametrize(
    ("key", "path", "failure"),
    [
        (
            "STORE",
            "myproject.stores.VectorStore",
            "ModuleNotFoundError: No module named 'myproject'",
        ),
        (
            "PROVIDER",
            "cogitator_memory.embeddings.providers.openai.NoSuchEmbeddings",
            'ImportError: Module "cogitator_memory.embeddings.providers.openai" does not '
            'define a "NoSuchEmbeddings" attribute/class',
        ),
    ],
)
def test_a_dotted_path_that_does_not_import_is_e006_saying_why(
    settings: SettingsWrapper, key: str, path: str, failure: str
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": {key: path}}
    # when
    [error] = check_memory_settings()
    # then
    assert error.id == "cogitator_memory.E006"
    assert error.msg.startswith(f"COGITATOR_MEMORY['EMBEDDINGS'][{key!r}] must be ")
    assert error.msg.endswith(f", not {path!r}.")
    assert error.hint == f"Importing {path!r} failed: {failure}"


def test_an_api_key_of_the_wrong_type_is_reported_without_its_value(
    settings: SettingsWrapper,
) -> None:
    # when
    errors = reported(settings, {"LLM": {"API_KEY": 31415926}, "EMBEDDINGS": {"API_KEY": 2718}})
    # then
    assert [error_id for error_id, _ in errors] == ["cogitator_memory.E002"] * 2
    assert not any("31415926" in message or "2718" in message for _, message in errors)


def test_every_bad_value_of_a_section_is_reported_not_only_the_first(
    settings: SettingsWrapper,
) -> None:
    # when
    errors = reported(
        settings,
        {
            "LLM": {"TIMEOUT": -5, "BASE_URL": "nowhere"},
            "EMBEDDINGS": {"STORE": "pgvectr", "HNSW_EF_SEARCH": "lots", "DIMENSIONS": -3},
        },
    )
    # then
    assert sorted(error_id for error_id, _ in errors) == [
        "cogitator_memory.E002",
        "cogitator_memory.E004",
        "cogitator_memory.E004",
        "cogitator_memory.E006",
        "cogitator_memory.E007",
    ]


@pytest.mark.parametrize(
    ("embeddings", "which"),
    [
        ({"STORE": "qdrant"}, "neither"),
        (
            {"STORE": "qdrant", "QDRANT_URL": "http://localhost:6333", "QDRANT_PATH": ":memory:"},
            "both",
        ),
    ],
)
def test_the_qdrant_store_without_exactly_one_location_is_e005(
    settings: SettingsWrapper, embeddings: dict[str, Any], which: str
) -> None:
    # when
    errors = reported(settings, {"EMBEDDINGS": embeddings})
    # then
    assert errors == [
        (
            "cogitator_memory.E005",
            "COGITATOR_MEMORY['EMBEDDINGS'] with STORE 'qdrant' needs QDRANT_URL or QDRANT_PATH, "
            f"not {which}.",
        )
    ]


@pytest.mark.parametrize(
    "location", [{"QDRANT_URL": "http://localhost:6333"}, {"QDRANT_PATH": "/var/qdrant"}]
)
def test_the_qdrant_store_with_one_location_passes_the_checks(
    settings: SettingsWrapper, location: dict[str, str]
) -> None:
    # when
    errors = reported(settings, {"EMBEDDINGS": {"STORE": "qdrant", **location}})
    # then
    assert errors == []


@pytest.mark.parametrize(
    ("setting", "error_id"),
    [
        ({"EMBEDDINGS": {"STORE": "pgvectr"}}, "cogitator_memory.E006"),
        ({"EMBEDDINGS": {"HNSW_EF_SEARCH": "lots"}}, "cogitator_memory.E002"),
        ({"EMBEDDINGS": {"DIMENSIONS": -3}}, "cogitator_memory.E004"),
    ],
)
def test_manage_py_check_fails_on_a_bad_value_inside_a_section(
    settings: SettingsWrapper, setting: dict[str, Any], error_id: str
) -> None:
    # given
    settings.COGITATOR_MEMORY = setting
    # when / then
    with pytest.raises(SystemCheckError, match=re.escape(error_id)):
        call_command("check")


# The apps the app needs

# This module is also the URLconf of the tests that need one without the memory API.
urlpatterns: list[Any] = []


def installed_except(monkeypatch: pytest.MonkeyPatch, *missing: str) -> None:
    """Makes ``apps.is_installed`` answer as if ``missing`` were not in INSTALLED_APPS."""
    is_installed = apps.is_installed
    monkeypatch.setattr(
        apps, "is_installed", lambda name: name not in missing and is_installed(name)
    )


def test_the_test_project_has_every_app_and_passes_the_app_checks() -> None:
    # when
    messages = check_required_apps() + check_api_apps()
    # then
    assert messages == []


@pytest.mark.parametrize(
    ("app", "reason"),
    [
        ("rest_framework_api_key", "a grant may name an API key of a service"),
        ("django.contrib.auth", "a grant may name a Django user"),
        ("django.contrib.contenttypes", "django.contrib.auth stores its permissions with it"),
    ],
)
def test_a_missing_required_app_is_e008_naming_it(
    monkeypatch: pytest.MonkeyPatch, app: str, reason: str
) -> None:
    # given
    installed_except(monkeypatch, app)
    # when
    [error] = check_required_apps()
    # then
    assert error.id == "cogitator_memory.E008"
    assert error.msg == f"cogitator_memory needs {app!r} in INSTALLED_APPS: {reason}."
    assert error.hint == (
        f'Add "{app}" to INSTALLED_APPS (README, "Using it in a Django project"), then run '
        "manage.py migrate."
    )


@pytest.mark.parametrize("app", ["rest_framework", "rest_framework.authtoken", "django_filters"])
def test_an_app_the_mounted_api_needs_is_e009_naming_it(
    monkeypatch: pytest.MonkeyPatch, app: str
) -> None:
    # given: the test project's URLconf includes the API under api/memory/
    installed_except(monkeypatch, app)
    # when
    [error] = check_api_apps()
    # then
    assert error.id == "cogitator_memory.E009"
    assert error.msg.startswith(
        f"The URLconf serves cogitator_memory's REST API, which needs {app!r} in INSTALLED_APPS: "
    )


def test_without_the_api_in_the_urlconf_its_apps_are_not_needed(
    monkeypatch: pytest.MonkeyPatch, settings: SettingsWrapper
) -> None:
    # given
    settings.ROOT_URLCONF = __name__
    installed_except(monkeypatch, "rest_framework", "rest_framework.authtoken", "django_filters")
    # when
    messages = check_api_apps()
    # then
    assert messages == []


def test_the_api_mounted_without_its_exception_handler_is_w001(settings: SettingsWrapper) -> None:
    # given
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "EXCEPTION_HANDLER": "rest_framework.views.exception_handler",
    }
    # when
    [warning] = check_api_apps()
    # then
    assert (warning.id, warning.level) == ("cogitator_memory.W001", checks.WARNING)
    assert "REST_FRAMEWORK['EXCEPTION_HANDLER'] is not the API's" in warning.msg


def test_the_app_checks_are_registered_with_django(monkeypatch: pytest.MonkeyPatch) -> None:
    # given
    installed_except(monkeypatch, "rest_framework_api_key")
    # when
    ids = [message.id for message in checks.run_checks()]
    # then: E008 comes from the compatibility checks; the URL check waits for it
    assert "cogitator_memory.E008" in ids
    assert "cogitator_memory.E009" not in ids


# --- packages a provider or store needs (E010) -------------------------------------------


@pytest.mark.parametrize(
    ("provider", "module", "package"),
    [
        ("openai", "openai", "openai"),
        ("anthropic", "anthropic", "anthropic"),
        ("google", "google.genai", "google-genai"),
    ],
)
def test_an_sdk_llm_provider_whose_sdk_is_not_installed_is_e010(
    settings: SettingsWrapper,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    module: str,
    package: str,
) -> None:
    # given: the SDK cannot be imported, as when it is not installed
    monkeypatch.setitem(sys.modules, module, None)
    # when
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": provider, "MODEL": "m"}}
    [error] = check_memory_settings()
    # then
    assert (error.id, error.msg, error.hint) == (
        "cogitator_memory.E010",
        f"COGITATOR_MEMORY['LLM'] names PROVIDER {provider!r}, whose SDK {package!r} is not "
        "installed.",
        f"pip install 'cogitator-memory[{provider}]'",
    )


@pytest.mark.parametrize(
    ("embeddings", "module", "message", "extra"),
    [
        (
            {"PROVIDER": "local"},
            "sentence_transformers",
            "COGITATOR_MEMORY['EMBEDDINGS'] names PROVIDER 'local', whose package "
            "'sentence-transformers' is not installed.",
            "local",
        ),
        (
            {"STORE": "qdrant", "QDRANT_PATH": ":memory:"},
            "qdrant_client",
            "COGITATOR_MEMORY['EMBEDDINGS'] names STORE 'qdrant', whose client 'qdrant-client' "
            "is not installed.",
            "qdrant",
        ),
    ],
)
def test_local_embeddings_or_the_qdrant_store_without_their_package_is_e010(
    settings: SettingsWrapper,
    monkeypatch: pytest.MonkeyPatch,
    embeddings: dict[str, Any],
    module: str,
    message: str,
    extra: str,
) -> None:
    # given
    monkeypatch.setitem(sys.modules, module, None)
    # when
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": embeddings}
    [error] = check_memory_settings()
    # then
    assert (error.id, error.msg, error.hint) == (
        "cogitator_memory.E010",
        message,
        f"pip install 'cogitator-memory[{extra}]'",
    )


@pytest.mark.parametrize(
    "memory",
    [
        {"LLM": {"PROVIDER": "openai", "MODEL": "m"}},
        {"LLM": {"PROVIDER": "google", "MODEL": "m"}},
        {"EMBEDDINGS": {"PROVIDER": "local"}},
        {"EMBEDDINGS": {"STORE": "qdrant", "QDRANT_PATH": ":memory:"}},
    ],
)
def test_a_provider_or_store_whose_package_is_installed_passes(
    settings: SettingsWrapper, memory: dict[str, Any]
) -> None:
    # when: the suite installs every extra
    errors = reported(settings, memory)
    # then
    assert errors == []
