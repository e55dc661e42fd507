"""``memory_settings``: defaults, sections merged one level deep, unknown names, overrides."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from django.test import override_settings

from cogitator_memory.conf import DEFAULTS, memory_settings

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper


def test_a_setting_the_project_does_not_give_falls_back_to_its_default(
    settings: SettingsWrapper,
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"CHARS_PER_TOKEN": 3}
    # when
    value = memory_settings.LIST_THREADS_DEFAULT_LIMIT
    # then
    assert value == DEFAULTS["LIST_THREADS_DEFAULT_LIMIT"] == 50


def test_every_setting_falls_back_to_its_default_without_a_cogitator_memory_setting(
    settings: SettingsWrapper,
) -> None:
    # given
    del settings.COGITATOR_MEMORY
    # when
    values = {name: getattr(memory_settings, name) for name in DEFAULTS}
    # then
    assert values == DEFAULTS


def test_a_setting_the_project_gives_wins_over_the_default(settings: SettingsWrapper) -> None:
    # given
    settings.COGITATOR_MEMORY = {"THREAD_ID_PREFIX": "conv_"}
    # when
    value = memory_settings.THREAD_ID_PREFIX
    # then
    assert value == "conv_"


def test_a_section_keeps_the_defaults_of_the_keys_the_project_does_not_give(
    settings: SettingsWrapper,
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "openai", "MODEL": "gpt-4o-mini"}}
    # when
    llm = memory_settings.LLM
    # then
    assert llm == {
        "PROVIDER": "openai",
        "MODEL": "gpt-4o-mini",
        "API_KEY": None,
        "BASE_URL": None,
        "TIMEOUT": 60.0,
        "MAX_RETRIES": 2,
        "MAX_TOKENS": 1024,
        "SCRIPT": None,
    }


def test_sections_merge_each_on_its_own_defaults(settings: SettingsWrapper) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": {"DIMENSIONS": 384}}
    # when
    embeddings, llm = memory_settings.EMBEDDINGS, memory_settings.LLM
    # then
    assert embeddings == {**DEFAULTS["EMBEDDINGS"], "DIMENSIONS": 384}
    assert llm == DEFAULTS["LLM"]


def test_a_section_merges_only_one_level_deep(settings: SettingsWrapper) -> None:
    # given: a nested value replaces the default whole instead of merging into it
    settings.COGITATOR_MEMORY = {"LLM": {"TIMEOUT": {"connect": 5}}}
    # when
    llm = memory_settings.LLM
    # then
    assert llm["TIMEOUT"] == {"connect": 5}
    assert llm["PROVIDER"] is None


def test_changing_a_section_read_from_the_settings_leaves_the_defaults_alone(
    settings: SettingsWrapper,
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "openai"}}
    llm = memory_settings.LLM
    # when
    llm["MODEL"] = "changed-by-the-caller"
    # then
    assert DEFAULTS["LLM"]["MODEL"] is None


def test_reading_an_unknown_setting_raises_attribute_error_naming_it() -> None:
    # when / then
    with pytest.raises(AttributeError, match=r"^Unknown COGITATOR_MEMORY setting: 'NO_SUCH_KEY'$"):
        memory_settings.NO_SUCH_KEY  # noqa: B018


def test_reading_a_private_name_raises_attribute_error() -> None:
    # when / then
    with pytest.raises(AttributeError, match=r"Unknown COGITATOR_MEMORY setting: '_secret'"):
        memory_settings._secret  # noqa: B018


def test_override_settings_changes_a_value_already_read_and_restores_it_after() -> None:
    # given: the value is read, so it is cached
    before = memory_settings.CHARS_PER_TOKEN
    # when
    with override_settings(COGITATOR_MEMORY={"CHARS_PER_TOKEN": 3}):
        inside = memory_settings.CHARS_PER_TOKEN
    after = memory_settings.CHARS_PER_TOKEN
    # then
    assert (before, inside, after) == (4, 3, 4)
