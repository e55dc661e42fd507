"""Memory files: the memory tool's calls as Claude sends them, the files of a scope, one
file, its history, and a whole-file write.

Every request names the scope of a run (``agent_id``, and optionally ``user_id``,
``project_id``, ``thread_id``) and may name its place (the leaf entry of the branch it
stands on). The principal's grants must reach the scope's agent and user: a read of a
scope they do not reach answers as a scope without files (an empty list, 404 for a file
or its history), and a change there is refused with 403 ``permission_denied`` before
anything is looked up. A place must be an entry of a thread the principal sees.

Versions written through the memory tool are the model's (author ``model``); a whole
file written with PUT is the principal's (author ``user``). The files memory writes
itself (the playbook, its draft and the observations, ``MEMORY_RESERVED_PATHS``) are
read-only here: a change of them is refused with 409 ``memory_file_reserved`` (a memory
tool command answers it as an error), as the memory tool refuses it to a model.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory import policy
from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.files import (
    FileCommandSerializer,
    FileHistorySerializer,
    FileListQuerySerializer,
    FilePathQuerySerializer,
    FilePutSerializer,
    FileScopeSerializer,
    FileVersionSerializer,
    MemoryFileContentSerializer,
    MemoryFileListSerializer,
    MemoryFileSerializer,
    ToolAnswerSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, MemoryAPIView
from cogitator_memory.exceptions import (
    EntryNotInThread,
    MemoryFileNotFound,
)
from cogitator_memory.files.access import FileAccess, Place
from cogitator_memory.files.limits import check_text_parameters
from cogitator_memory.files.models import Author
from cogitator_memory.files.paths import MEMORY_RESERVED_PATHS
from cogitator_memory.files.services import UNSET, MemoryFiles
from cogitator_memory.grants import MemoryScope

ERROR_404_FILE = OpenApiResponse(
    ErrorSerializer,
    description="No file there for this scope, or a scope your grants do not reach "
    "(memory_file_not_found); a place that is not an entry you may see (entry_not_found, "
    "entry_not_in_thread).",
)
ERROR_404_PLACE = OpenApiResponse(
    ErrorSerializer,
    description="A place that is not an entry you may see (entry_not_found), or not an "
    "entry of thread_id (entry_not_in_thread).",
)
ERROR_403_SCOPE = OpenApiResponse(
    ErrorSerializer,
    description="Your grants do not reach the scope's agent and user (permission_denied).",
)
ERROR_409_PUT = OpenApiResponse(
    ErrorSerializer,
    description="The file stands otherwise than expected_sha256 says, or other writers "
    "kept changing it (memory_file_conflict); the memory refuses the write: a directory "
    "there, a file above it (memory_file_refused), a file memory writes itself: the "
    "playbook, its draft or an observation (memory_file_reserved).",
)
ERROR_400_TOO_LARGE = OpenApiResponse(
    ErrorSerializer,
    description="Invalid input; errors per field. A text over 1 MiB (UTF-8), which no file "
    "can hold, is memory_file_too_large, naming the field (text; for a tool call "
    "input.file_text, input.old_str, input.new_str or input.insert_text).",
)


class FileAPIView(MemoryAPIView):
    """A view of one scope's files (see the module docstring)."""

    def read_params(self, serializer_class: type[FileScopeSerializer]) -> FileScopeSerializer:
        query = serializer_class(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return query

    def write_params(self, serializer_class: type[FileScopeSerializer]) -> FileScopeSerializer:
        payload = serializer_class(data=self.request.data)
        payload.is_valid(raise_exception=True)
        return payload

    def require_grant(self, scope: MemoryScope) -> None:
        """``NoGrant`` (403) for a change in a scope the grants do not reach."""
        # A file's scope names its user as user_id (a thread's as metadata.userId).
        policy.require_write(self.grants, scope.agent_id, scope.user_id, user_field="user_id")

    def access(self, params: FileScopeSerializer, *, author: str = Author.MODEL) -> FileAccess:
        """The access of a request whose scope the grants reach: its scope, its place
        (checked: an entry the principal sees, of ``thread_id`` when given) and the
        principal's grants, which narrow what it reads to rows they reach."""
        data: dict[str, Any] = params.validated_data
        scope = params.memory_scope()
        place = None
        if "place" in data:
            entry = self.visible_entry(data["place"])
            thread_id = scope.thread_id
            if thread_id is not None and entry.thread_id != thread_id:
                raise EntryNotInThread(data["place"], thread_id, field="place")
            place = Place(thread_id=entry.thread_id, leaf_id=entry.pk)
        # The playbook, its draft and the observations are memory's own: read-only here.
        return FileAccess(
            scope=scope,
            place=place,
            grants=self.grants,
            author=author,
            reserved=MEMORY_RESERVED_PATHS,
        )


_SCOPE_DESCRIPTION = (
    "The scope is that of a run: `agent_id`, and optionally `user_id`, `project_id` and "
    "`thread_id`; it sees its own files and those shared wider in its agent (of no user, "
    "project or thread), each path from the narrowest scope holding it. `place` is the "
    "leaf entry of the branch the run stands on."
)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_files_list",
        summary="List the files of a scope",
        description="The files that stand for the scope, by path, without their content. "
        f"{_SCOPE_DESCRIPTION} A scope your grants do not reach lists no files.",
        parameters=[FileListQuerySerializer],
        responses={
            200: MemoryFileListSerializer,
            400: ERROR_400,
            404: ERROR_404_PLACE,
            **COMMON_ERRORS,
        },
    ),
)
class FileListView(FileAPIView):
    serializer_class = MemoryFileSerializer

    def get(self, request: Request) -> Response:
        params = self.read_params(FileListQuerySerializer)
        if not self.reaches(params.memory_scope()):
            return Response({"results": []})
        access = self.access(params)
        files = MemoryFiles().list(access, under=params.validated_data["under"], with_content=False)
        return Response({"results": MemoryFileSerializer(files, many=True).data})


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_files_retrieve",
        summary="Read a file",
        description="The file at `path` as the scope sees it, with its content and sha256 "
        f"(pass it as expected_sha256 to change it). {_SCOPE_DESCRIPTION}",
        parameters=[FilePathQuerySerializer],
        responses={
            200: MemoryFileContentSerializer,
            400: ERROR_400,
            404: ERROR_404_FILE,
            **COMMON_ERRORS,
        },
    ),
    put=extend_schema(
        operation_id="memory_files_put",
        summary="Write a whole file",
        description="Write `text` as the whole file at `path`, creating it when it does not "
        "exist, as a new version written by you (author user). With `expected_sha256` the "
        "write is made only when the file stands as that sha256 says (null: no file). "
        f"{_SCOPE_DESCRIPTION}",
        request=FilePutSerializer,
        responses={
            200: MemoryFileSerializer,
            400: ERROR_400_TOO_LARGE,
            404: ERROR_404_PLACE,
            409: ERROR_409_PUT,
            **COMMON_ERRORS,
            403: ERROR_403_SCOPE,
        },
    ),
)
class FileContentView(FileAPIView):
    serializer_class = MemoryFileContentSerializer

    def get_serializer_class(self) -> type[serializers.Serializer]:
        # What OPTIONS describes for PUT: the body it takes.
        if self.request is not None and self.request.method == "PUT":
            return FilePutSerializer
        return MemoryFileContentSerializer

    def get_object(self) -> None:
        """Nothing to look up before a write: the body names the file (OPTIONS asks)."""
        return None

    def get(self, request: Request) -> Response:
        params = self.read_params(FilePathQuerySerializer)
        path = params.validated_data["path"]
        if not self.reaches(params.memory_scope()):
            raise MemoryFileNotFound(path)
        found = MemoryFiles().read(self.access(params), path)
        if found is None:
            raise MemoryFileNotFound(path)
        return Response(MemoryFileContentSerializer(found).data)

    def put(self, request: Request) -> Response:
        params = self.write_params(FilePutSerializer)
        data: dict[str, Any] = params.validated_data
        self.require_grant(params.memory_scope())
        access = self.access(params, author=Author.USER)
        written = MemoryFiles().put(
            access, data["path"], data["text"], data.get("expected_sha256", UNSET)
        )
        return Response(MemoryFileSerializer(written).data)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_files_history",
        summary="The history of a file",
        description="Every version of the file at `path` as the scope sees it, oldest first: "
        "the versions it was made from, back through renames, deletions included. "
        f"{_SCOPE_DESCRIPTION} Versions of scopes your grants do not reach are left out, "
        "with those before them.",
        parameters=[FilePathQuerySerializer],
        responses={
            200: FileHistorySerializer,
            400: ERROR_400,
            404: ERROR_404_FILE,
            **COMMON_ERRORS,
        },
    ),
)
class FileHistoryView(FileAPIView):
    serializer_class = FileVersionSerializer

    def get(self, request: Request) -> Response:
        params = self.read_params(FilePathQuerySerializer)
        path = params.validated_data["path"]
        if not self.reaches(params.memory_scope()):
            raise MemoryFileNotFound(path)
        versions = MemoryFiles().history(self.access(params), path)
        # A chain may run back into a version of a wider scope (a file of no user, changed
        # for one user): under a grant that names users, that is not the principal's to read.
        kept: list[Any] = []
        for version in reversed(versions):
            if not self.grants.allows(version.agent_id, version.user_id):
                break
            kept.append(version)
        if not kept:
            raise MemoryFileNotFound(path)
        kept.reverse()
        return Response({"path": path, "results": FileVersionSerializer(kept, many=True).data})


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_files_command",
        summary="Run a memory tool call",
        description="Run a call of Claude's `memory` tool (memory_20250818) for the scope: "
        "`input` is the tool call's input as Claude sent it. The answer is the tool "
        "result to pass back to the model: its text and whether it is an error (a refused "
        "command, a file changed since `expected_sha256`, changes nothing and is answered "
        "200 with is_error true, in the words of Anthropic's memory tool; so is a change "
        "that would make a file over 1 MiB). A text parameter over 1 MiB, which no file can "
        "hold, is refused as invalid input (400 memory_file_too_large) before anything is "
        f"read. {_SCOPE_DESCRIPTION} A scope your grants do not reach is refused (403), "
        "whatever the command.",
        request=FileCommandSerializer,
        responses={
            200: ToolAnswerSerializer,
            400: ERROR_400_TOO_LARGE,
            404: ERROR_404_PLACE,
            **COMMON_ERRORS,
            403: ERROR_403_SCOPE,
        },
    ),
)
class FileCommandView(FileAPIView):
    serializer_class = ToolAnswerSerializer

    def post(self, request: Request) -> Response:
        params = self.write_params(FileCommandSerializer)
        data: dict[str, Any] = params.validated_data
        self.require_grant(params.memory_scope())
        command = dict(data["input"])
        # A text no file can hold is refused as the request's fault (400), before anything
        # is read; what the command finds on what stands is the tool's answer (200).
        check_text_parameters(command, prefix="input.")
        if "expected_sha256" in data:
            command["expected_sha256"] = data["expected_sha256"]
        answer = MemoryFiles().answer_tool_call(self.access(params), command)
        return Response({"text": answer.text, "is_error": answer.is_error})
