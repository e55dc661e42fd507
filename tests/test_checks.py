"""System checks of ``COGITATOR_MEMORY``: each bad value reported with its id, naming the key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from cogitator_memory.checks import check_memory_settings
from cogitator_memory.conf import DEFAULTS

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
