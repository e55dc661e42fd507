"""``manage.py export_user``: the export written to a file or standard output, a progress
bar on standard error, a clear refusal of bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from cogitator_memory.export import services as export_services
from tests.export.conftest import AGENT, CANARY, OTHER_AGENT, USER, Memory, remember

pytestmark = pytest.mark.django_db


def export(*args: str, verbosity: int = 1) -> tuple[str, str]:
    """Run the command; its standard output and standard error."""
    out, err = io.StringIO(), io.StringIO()
    call_command("export_user", *args, stdout=out, stderr=err, verbosity=verbosity)
    return out.getvalue(), err.getvalue()


def test_the_command_writes_the_document_to_the_file_and_shows_progress(
    memory: Memory, others: list[Memory], tmp_path: Path
):
    # given
    target = tmp_path / "u1.json"
    # when
    out, err = export(USER, "--output", str(target))
    # then: the document, nothing else, in the file
    exported: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
    assert exported["user_id"] == USER
    assert {t["id"] for t in exported["threads"]} == {memory.first.pk, memory.second.pk}
    assert CANARY not in target.read_text(encoding="utf-8")
    records = 2 + 8 + 2 + 2 + 2 + 1 + 1 + 1
    # then: a bar on standard error, up to every record, and what was done
    assert f"{records}/{records}" in err and "100%" in err and "record" in err
    assert f"Exported {records} records of user 'u1' to {target}." in err
    assert out == ""
    assert list(tmp_path.iterdir()) == [target]


def test_without_output_the_document_goes_to_standard_output(memory: Memory):
    # when
    out, err = export(USER, verbosity=0)
    # then: standard output is the document alone
    assert json.loads(out)["counts"]["threads"] == 2
    assert "%" not in err
    assert "Exported 19 records of user 'u1'." in err


def test_agents_given_limit_the_export(memory: Memory):
    # given
    remember(OTHER_AGENT, USER, tag=CANARY)
    # when
    out, _err = export(USER, "--agent", AGENT, verbosity=0)
    # then
    assert json.loads(out)["agents"] == [AGENT]
    assert CANARY not in out
    # when: both
    out, _err = export(USER, "--agent", AGENT, "--agent", OTHER_AGENT, verbosity=0)
    # then
    assert json.loads(out)["agents"] == [OTHER_AGENT, AGENT]


def test_a_user_memory_keeps_nothing_of_is_said_so(db: None):
    # when
    out, err = export("nobody", verbosity=0)
    # then
    assert json.loads(out)["threads"] == []
    assert "Nothing is kept of user 'nobody': the document is empty. Check the user id." in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["a\x00b"],
            "Cannot export user 'a\\x00b': user_id: A user id is a non-empty text of at "
            "most 255 characters, without NUL.",
        ),
        (
            ["x" * 256],
            f"Cannot export user '{'x' * 256}': user_id: A user id is a non-empty text of "
            "at most 255 characters, without NUL.",
        ),
        (
            [USER, "--agent", " "],
            "Cannot export user 'u1': agent_id: An agent id is a text of 1 to 255 "
            "characters, not only spaces, without NUL.",
        ),
    ],
)
def test_bad_input_stops_the_command_with_a_clear_message(args: list[str], message: str):
    # when
    with pytest.raises(CommandError) as stopped:
        export(*args)
    # then
    assert str(stopped.value) == message


def test_an_output_in_no_directory_is_refused_before_anything_is_read(
    memory: Memory, tmp_path: Path, django_assert_num_queries: Any
):
    # given
    target = tmp_path / "missing" / "u1.json"
    # when
    with django_assert_num_queries(0), pytest.raises(CommandError) as stopped:
        export(USER, "--output", str(target))
    # then
    assert str(stopped.value) == f"Cannot write {target}: {target.parent} is not a directory."


def test_an_output_that_is_a_directory_is_refused(memory: Memory, tmp_path: Path):
    # when
    with pytest.raises(CommandError) as stopped:
        export(USER, "--output", str(tmp_path))
    # then
    assert str(stopped.value) == f"Cannot write {tmp_path}: it is a directory."


def test_an_export_that_fails_part_way_leaves_no_file(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # given: the database fails once the threads are written
    def broken(*args: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(export_services.UserExport, "_item_elements", broken)
    target = tmp_path / "u1.json"
    # when
    with pytest.raises(RuntimeError):
        export(USER, "--output", str(target))
    # then
    assert list(tmp_path.iterdir()) == []
