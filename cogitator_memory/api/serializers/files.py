"""Memory files as the API reads and writes them: the scope a request names, the memory
tool's input, a file, a version, and the answers."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    JSONObjectField,
    StrictCharField,
)
from cogitator_memory.api.serializers.items import SCOPE_ID_MESSAGE
from cogitator_memory.api.serializers.threads import ENTRY_ID_MAX_LENGTH
from cogitator_memory.exceptions import InvalidMemoryPath
from cogitator_memory.files.models import Author, MemoryFileVersion
from cogitator_memory.files.paths import (
    MAX_PATH_CHARACTERS,
    PATH_MESSAGE,
    PATH_PATTERN,
    ROOT,
    normalize,
)
from cogitator_memory.files.services import MemoryFile
from cogitator_memory.grants import MAX_SCOPE_ID_LENGTH, SCOPE_FIELDS, MemoryScope
from cogitator_memory.jsondata import json_problem

SHA256_PATTERN = r"^[0-9a-f]{64}\Z"
SHA256_MESSAGE = "A sha256 is 64 lowercase hexadecimal digits."
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")


def scope_id_field(help_text: str, *, required: bool = False) -> StrictCharField:
    return StrictCharField(
        max_length=MAX_SCOPE_ID_LENGTH,
        required=required,
        pattern=NOT_BLANK_PATTERN,
        pattern_message=SCOPE_ID_MESSAGE,
        help_text=help_text,
    )


def path_field(help_text: str, **kwargs: Any) -> StrictCharField:
    """A memory path by the one rule of ``files.paths``: its length and pattern, which the
    schema publishes, here; ``normalize`` (in ``validate_<field>``) gives the canonical
    form and refuses what a pattern cannot say."""
    return StrictCharField(
        max_length=MAX_PATH_CHARACTERS,
        pattern=PATH_PATTERN,
        pattern_message=PATH_MESSAGE,
        help_text=help_text,
        **kwargs,
    )


class FileScopeSerializer(serializers.Serializer):
    """Whose files: the scope of a run (an agent, and optionally a user, a project and a
    thread), and the branch it stands on."""

    agent_id = scope_id_field("The agent whose files these are.", required=True)
    user_id = scope_id_field(
        "The user: the files of this user and those every user of the agent shares."
    )
    project_id = scope_id_field("The project: its files and those of no project.")
    thread_id = scope_id_field("The thread: its files and those of no thread.")
    place = StrictCharField(
        max_length=ENTRY_ID_MAX_LENGTH,
        required=False,
        help_text="The leaf entry of the branch the run stands on (an entry of `thread_id` "
        "when that is given): versions written in its thread are seen only on the branches "
        "holding the entry they were written after, and a change is written after it.",
    )

    def validate_path(self, value: str) -> str:
        try:
            return normalize(value)
        except InvalidMemoryPath as refusal:  # only a path NFC makes too long gets here
            raise serializers.ValidationError(refusal.message) from refusal

    def memory_scope(self) -> MemoryScope:
        data: dict[str, Any] = self.validated_data
        return MemoryScope(
            agent_id=data["agent_id"],
            user_id=data.get("user_id"),
            project_id=data.get("project_id"),
            thread_id=data.get("thread_id"),
        )


class FileListQuerySerializer(FileScopeSerializer):
    under = path_field("Only the files under this directory.", required=False, default=ROOT)

    def validate_under(self, value: str) -> str:
        return self.validate_path(value)


class FilePathQuerySerializer(FileScopeSerializer):
    path = path_field("The file's path, e.g. /memories/notes.md.")


class FilePutSerializer(FileScopeSerializer):
    path = path_field("The file's path, e.g. /memories/notes.md.")
    # Its schema is written in api/schema.py (FilePutScheme): the text pattern admits the
    # empty text, where drf-spectacular would add a second text without the pattern.
    text = StrictCharField(
        allow_blank=True, help_text="The whole content of the file (at most 1 MiB as UTF-8)."
    )
    expected_sha256 = StrictCharField(
        required=False,
        allow_null=True,
        pattern=SHA256_PATTERN,
        pattern_message=SHA256_MESSAGE,
        help_text="The sha256 of the version `text` was made from, null for a file that "
        "did not exist: the write is refused (409 memory_file_conflict) when the file stands "
        "otherwise. Absent: the file is written whatever stands.",
    )


class ToolInputField(JSONObjectField):
    """The ``input`` of a Claude ``memory`` tool call, as Claude sends it: an object with
    a ``command`` text and the command's parameters. What the parameters hold is the
    memory's to judge: a wrong one is answered as the memory tool answers it."""

    default_error_messages = {
        "not_a_tool_input": "A memory tool input is an object with a `command` text.",
        "not_storable": "{problem}",
    }

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value: dict[str, Any] = super().to_internal_value(data)
        if not isinstance(value.get("command"), str):
            self.fail("not_a_tool_input")
        problem = json_problem(value)
        if problem:
            self.fail("not_storable", problem=problem)
        return value


class FileCommandSerializer(FileScopeSerializer):
    input = ToolInputField(
        help_text="The tool call's `input`, as Claude sent it: `command` (one of "
        f"{', '.join(COMMANDS)}) and its parameters (`path`, `view_range`, `file_text`, "
        "`old_str`, `new_str`, `insert_line`, `insert_text`, `old_path`, `new_path`)."
    )
    expected_sha256 = StrictCharField(
        required=False,
        allow_null=True,
        pattern=SHA256_PATTERN,
        pattern_message=SHA256_MESSAGE,
        help_text="For str_replace, insert, delete and rename: the sha256 of the file "
        "(for rename, of `old_path`) as the caller last read it, null for none; the command "
        "is refused when the file stands otherwise. For create: null, or absent.",
    )


class ToolAnswerSerializer(serializers.Serializer):
    text = serializers.CharField(
        allow_blank=True,
        help_text="The tool result's content: what the model reads, a refusal included.",
    )
    is_error = serializers.BooleanField(
        help_text="The tool result's is_error: true when the command was refused and "
        "nothing was changed."
    )


class FileScopeOutSerializer(serializers.Serializer):
    """A scope; limits it does not have are absent, not null."""

    agent_id = serializers.CharField()
    user_id = serializers.CharField(required=False)
    project_id = serializers.CharField(required=False)
    thread_id = serializers.CharField(required=False)

    def to_representation(self, instance: MemoryScope) -> dict[str, Any]:
        return {
            field: value
            for field in SCOPE_FIELDS
            if (value := getattr(instance, field)) is not None
        }


_DATETIME = serializers.DateTimeField()


class MemoryFileSerializer(serializers.Serializer):
    """A file that stands, as the scope asked about sees it."""

    path = serializers.CharField()
    sha256 = serializers.CharField(help_text="Of the content: pass it as expected_sha256.")
    size = serializers.IntegerField(min_value=0, help_text="Bytes, as UTF-8.")
    version = serializers.IntegerField(
        min_value=1, help_text="The sequence of its version in its scope."
    )
    version_id = serializers.CharField()
    scope = FileScopeOutSerializer(
        help_text="The scope of the version in front: the one asked about, or one it "
        "shares files with (no user, project or thread)."
    )
    author = serializers.ChoiceField(choices=Author.choices)
    updated_at = serializers.DateTimeField()

    def to_representation(self, instance: MemoryFile) -> dict[str, Any]:
        return {
            "path": instance.path,
            "sha256": instance.sha256,
            "size": instance.size,
            "version": instance.version,
            "version_id": instance.version_id,
            "scope": FileScopeOutSerializer(instance.scope).data,
            "author": instance.author,
            "updated_at": _DATETIME.to_representation(instance.updated_at),
        }


class MemoryFileContentSerializer(MemoryFileSerializer):
    content = serializers.CharField(allow_blank=True)

    def to_representation(self, instance: MemoryFile) -> dict[str, Any]:
        return {**super().to_representation(instance), "content": instance.content or ""}


class MemoryFileListSerializer(serializers.Serializer):
    results = MemoryFileSerializer(many=True, help_text="By path.")


class FileVersionSerializer(serializers.Serializer):
    """One version of a file: its content, or a deletion (content and sha256 null)."""

    id = serializers.CharField()
    path = serializers.CharField()
    sequence = serializers.IntegerField(min_value=1)
    content = serializers.CharField(allow_null=True, allow_blank=True)
    sha256 = serializers.CharField(allow_null=True)
    deleted = serializers.BooleanField()
    renamed_from = serializers.CharField(
        required=False, help_text="The path it was moved from, for a version a rename wrote."
    )
    scope = FileScopeOutSerializer()
    author = serializers.ChoiceField(choices=Author.choices)
    created_at = serializers.DateTimeField()
    redacted = serializers.BooleanField(
        help_text="Whether its content was redacted (then [redacted]); the sha256 is of "
        "what was written."
    )

    def to_representation(self, instance: MemoryFileVersion) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": instance.pk,
            "path": instance.path,
            "sequence": instance.sequence,
            "content": instance.content,
            "sha256": instance.sha256,
            "deleted": instance.is_deletion,
            "scope": FileScopeOutSerializer(MemoryScope.of(instance)).data,
            "author": instance.author,
            "created_at": _DATETIME.to_representation(instance.created_at),
            "redacted": instance.is_redacted,
        }
        if instance.renamed_from is not None:
            data["renamed_from"] = instance.renamed_from
        return data


class FileHistorySerializer(serializers.Serializer):
    path = serializers.CharField()
    results = FileVersionSerializer(
        many=True, help_text="Oldest first, back through renames: the versions it was made from."
    )
