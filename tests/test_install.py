"""The README's "Using it in a Django project" works as written, in a new project.

The package is built as a wheel from the repository's sources and installed into a folder
of its own; ``django-admin startproject`` makes a project; the section's code blocks are
applied to it and its commands run, in interpreters whose path holds the installed package
and the project but not the repository. Each project keeps its own SQLite file, whichever
database the suite runs on.

The section is read from the README, so the test fails when the README and the package
part ways: a ``python`` block whose first line is ``# <file>`` is appended to that file of
the project, and each line of an ``sh`` block is a step this module knows how to take.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent
SECTION_HEADING = "## Using it in a Django project"
API_HEADING = "### Serving the REST API (optional)"
# The sources a wheel is built from: what pyproject.toml packages, and what it reads.
PACKAGE_SOURCES = ("pyproject.toml", "README.md", "cogitator_memory")
# Variables of this process that would decide the scratch project's settings instead of it.
LEAKING_VARIABLES = (
    "DJANGO_SETTINGS_MODULE",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "COGITATOR_TEST_DATABASE",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
)
COMMAND_TIMEOUT_SECONDS = 120

WRITE_THREAD = """
import json
import cogitator_memory
from cogitator_memory.threads import services

thread = services.create_thread("concierge", {"userId": "ana"})
entry = services.add_entry(thread.id, role="user", content="Plan a day in Rome")
print(json.dumps({"package": cogitator_memory.__file__, "thread": thread.id, "entry": entry.id}))
"""

READ_THREAD = """
import json
from cogitator_memory.threads import selectors

thread = selectors.get_thread({thread!r})
print(json.dumps({{
    "agent": thread.agent_id,
    "metadata": thread.metadata,
    "path": [(entry.id, entry.role, entry.content) for entry in selectors.get_path(thread.id)],
}}))
"""

CALL_API = """
import json
from django.contrib.auth.models import User
from django.test import Client
from django.test.utils import setup_test_environment
from cogitator_memory.models import Grant
from cogitator_memory.threads import services

setup_test_environment()
user = User.objects.create_user("ana", password="not-used")
Grant.objects.create(user=user, agent_id="concierge")
thread = services.create_thread("concierge")
client = Client()
anonymous = client.get("/api/memory/threads/")
client.force_login(user)
listed = client.get("/api/memory/threads/")
missing = client.get("/api/memory/threads/thread_missing/")
schema = client.get("/api/schema/")
swagger = client.get("/api/schema/swagger/").content.decode()
print(json.dumps({
    "thread": thread.id,
    "anonymous": [anonymous.status_code, anonymous.json()["code"]],
    "listed": [listed.status_code, [row["id"] for row in listed.json()["results"]]],
    "missing": [missing.status_code, missing.json()["code"]],
    "schema": schema.status_code,
    "swagger": "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in swagger,
}))
"""


@dataclass(frozen=True)
class Block:
    language: str
    text: str


@dataclass
class Scratch:
    """Where the steps run: the folder they start in, the folder the package is installed
    into, and the current folder (``cd`` moves it)."""

    root: Path
    site: Path
    wheel: Path
    cwd: Path


def readme_section() -> str:
    readme = (BASE_DIR / "README.md").read_text()
    assert f"\n{SECTION_HEADING}\n" in readme, f"The README has no {SECTION_HEADING!r}."
    after = readme.split(f"\n{SECTION_HEADING}\n", 1)[1]
    return after.split("\n## ", 1)[0]


def code_blocks(text: str) -> list[Block]:
    return [
        Block(language, body) for language, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S)
    ]


def setup_blocks() -> list[Block]:
    """The blocks of the section before its first subsection: the steps every project takes."""
    return code_blocks(readme_section().split("\n### ", 1)[0])


def api_blocks() -> list[Block]:
    """The blocks of the subsection that serves the REST API."""
    section = readme_section()
    assert f"\n{API_HEADING}\n" in section, f"The README's section has no {API_HEADING!r}."
    return code_blocks(section.split(f"\n{API_HEADING}\n", 1)[1].split("\n### ", 1)[0])


def project_environment(scratch: Scratch) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in LEAKING_VARIABLES}
    # The installed package and the project, never the repository.
    env["PYTHONPATH"] = os.pathsep.join([str(scratch.site), str(scratch.cwd)])
    # The project has no Celery app; Celery's default app reads its broker from this
    # variable, so no task of the app can reach a broker of the machine running the suite.
    env["CELERY_BROKER_URL"] = "memory://"
    return env


def run(scratch: Scratch, *arguments: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(argument) for argument in arguments],
        cwd=scratch.cwd,
        env=project_environment(scratch),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
    )


def run_ok(scratch: Scratch, *arguments: str | Path) -> str:
    completed = run(scratch, *arguments)
    assert completed.returncode == 0, (
        f"{' '.join(map(str, arguments))} failed:\n{completed.stdout}\n{completed.stderr}"
    )
    return completed.stdout


def take_step(scratch: Scratch, command: str) -> str:
    """Runs one line of an ``sh`` block the way the README means it; returns its output."""
    words = shlex.split(command)
    match words:
        case ["pip", "install", source] if source.startswith(("./", "/")):
            # The source is a checkout of the repository: the wheel built from it is
            # installed, without dependencies (they are this interpreter's) or the network.
            return run_ok(
                scratch,
                *(sys.executable, "-m", "pip", "install", "--no-deps", "--no-index"),
                *("--disable-pip-version-check", "--target", scratch.site, scratch.wheel),
            )
        case ["django-admin", "startproject", name]:
            return run_ok(scratch, sys.executable, "-m", "django", "startproject", name)
        case ["cd", folder]:
            scratch.cwd = scratch.cwd / folder
            assert scratch.cwd.is_dir(), f"cd {folder}: no such folder"
            return ""
        case ["python", "manage.py", *arguments]:
            return run_ok(scratch, sys.executable, "manage.py", *arguments)
    pytest.fail(f"The README has a step this test does not know how to take: {command!r}")


def apply_block(scratch: Scratch, block: Block) -> list[str]:
    """Applies one code block of the README; returns the output of each step it ran."""
    if block.language == "python":
        first_line, _, code = block.text.partition("\n")
        target = re.fullmatch(r"# (\S+\.py)", first_line.strip())
        assert target, f"A python block must start with '# <file>', not {first_line!r}"
        path = scratch.cwd / target.group(1)
        assert path.is_file(), f"The README adds to {target.group(1)}, which the project lacks"
        path.write_text(f"{path.read_text()}\n{code}")
        return []
    assert block.language == "sh", f"A block in {block.language!r} is not a step"
    outputs = []
    for line in block.text.splitlines():
        command = line.split(" #", 1)[0].strip()
        if command and not command.startswith("#"):
            outputs.append(take_step(scratch, command))
    return outputs


def run_python(scratch: Scratch, code: str) -> dict[str, Any]:
    """Runs ``code`` with ``manage.py shell``; returns the JSON it printed last."""
    output = run_ok(scratch, sys.executable, "manage.py", "shell", "-c", code)
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built as a wheel from a copy of the repository's sources, so the build
    leaves no ``build/`` or ``*.egg-info`` in the repository for runs side by side to share."""
    sources = tmp_path_factory.mktemp("sources")
    for name in PACKAGE_SOURCES:
        source = BASE_DIR / name
        if source.is_dir():
            shutil.copytree(source, sources / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, sources / name)
    out = tmp_path_factory.mktemp("wheel")
    completed = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index"),
            *("--no-build-isolation", "--disable-pip-version-check", "-w", str(out)),
            str(sources),
        ],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    [built] = out.glob("cogitator_memory-*.whl")
    return built


@pytest.fixture
def scratch(tmp_path: Path, wheel: Path) -> Scratch:
    return Scratch(root=tmp_path, site=tmp_path / "site", wheel=wheel, cwd=tmp_path)


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    # given: modules, migrations, templates and static files
    expected = {
        path.relative_to(BASE_DIR).as_posix()
        for path in (BASE_DIR / "cogitator_memory").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    # when
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    # then
    assert "cogitator_memory/migrations/0001_threads_and_entries.py" in expected
    assert "cogitator_memory/templates/admin/cogitator_memory/thread/change_form.html" in expected
    assert expected - names == set()
    assert not any(name.startswith(("project/", "tests/", "bench/")) for name in names)


def test_the_readme_steps_make_a_project_that_migrates_checks_and_keeps_a_thread(
    scratch: Scratch,
) -> None:
    # given: the section's steps, in order
    outputs = [output for block in setup_blocks() for output in apply_block(scratch, block)]
    # when
    written = run_python(scratch, WRITE_THREAD)
    read = run_python(scratch, READ_THREAD.format(thread=written["thread"]))
    # then: the steps migrated and checked the project with the installed package
    assert any("Applying cogitator_memory.0001_threads_and_entries... OK" in o for o in outputs)
    assert any("System check identified no issues" in o for o in outputs)
    assert Path(written["package"]).is_relative_to(scratch.site)
    assert read == {
        "agent": "concierge",
        "metadata": {"userId": "ana"},
        "path": [[written["entry"], "user", "Plan a day in Rome"]],
    }


def test_the_readme_api_steps_serve_the_api_with_its_errors_and_schema(
    scratch: Scratch,
) -> None:
    # given: the section's steps, then those that serve the API
    for block in setup_blocks():
        apply_block(scratch, block)
    outputs = [output for block in api_blocks() for output in apply_block(scratch, block)]
    # when
    answers = run_python(scratch, CALL_API)
    # then
    assert any("Applying authtoken.0001_initial... OK" in output for output in outputs)
    assert any("System check identified no issues" in output for output in outputs)
    # and the schema step wrote a schema with no warning (--fail-on-warn), enums named
    schema = (scratch.cwd / "schema.yml").read_text()
    assert "ItemStatusEnum:" in schema and "RunStatusEnum:" in schema
    assert answers == {
        "thread": answers["thread"],
        "anonymous": [401, "not_authenticated"],
        "listed": [200, [answers["thread"]]],
        "missing": [404, "thread_not_found"],
        "schema": 200,
        "swagger": True,
    }


@pytest.mark.parametrize("command", ["check", "migrate"])
def test_a_project_without_the_api_key_app_gets_e008_not_a_traceback(
    scratch: Scratch, command: str
) -> None:
    # given: a project that adds the app alone
    take_step(scratch, f"pip install {BASE_DIR}")
    take_step(scratch, "django-admin startproject mysite")
    take_step(scratch, "cd mysite")
    settings = scratch.cwd / "mysite" / "settings.py"
    settings.write_text(f'{settings.read_text()}\nINSTALLED_APPS += ["cogitator_memory"]\n')
    # when
    completed = run(scratch, sys.executable, "manage.py", command)
    # then
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr, completed.stderr
    assert (
        "(cogitator_memory.E008) cogitator_memory needs 'rest_framework_api_key' in "
        "INSTALLED_APPS: a grant may name an API key of a service." in completed.stderr
    )


def test_a_project_serving_the_api_without_the_api_key_app_gets_e008_not_a_traceback(
    scratch: Scratch,
) -> None:
    # given: the README's project and its code that serves the API, without the API key app
    first, *others = [*setup_blocks(), *api_blocks()]
    apply_block(scratch, first)
    for block in others:
        if block.language == "python":
            apply_block(scratch, block)
    settings = scratch.cwd / "mysite" / "settings.py"
    without = settings.read_text().replace('"rest_framework_api_key",', "")
    assert without != settings.read_text()
    settings.write_text(without)
    # when
    completed = run(scratch, sys.executable, "manage.py", "check")
    # then
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr, completed.stderr
    assert "(cogitator_memory.E008) cogitator_memory needs 'rest_framework_api_key'" in (
        completed.stderr
    )


# Runs manage.py check in an interpreter where the modules named are not importable.
CHECK_WITHOUT = """
import runpy, sys
for name in {modules!r}:
    sys.modules[name] = None
sys.argv = ["manage.py", "check"]
runpy.run_path("manage.py", run_name="__main__")
"""


# A setting naming a provider, the module it needs, and the extra that installs it.
PROVIDER_PACKAGES = [
    ({"LLM": {"PROVIDER": "openai", "MODEL": "gpt-4o-mini"}}, "openai", "openai"),
    ({"LLM": {"PROVIDER": "anthropic", "MODEL": "m"}}, "anthropic", "anthropic"),
    ({"LLM": {"PROVIDER": "google", "MODEL": "m"}}, "google.genai", "google"),
    ({"EMBEDDINGS": {"PROVIDER": "local"}}, "sentence_transformers", "local"),
]


def test_a_project_naming_a_provider_whose_package_is_missing_fails_check(
    scratch: Scratch,
) -> None:
    # given: the README's project and its settings
    first, *others = setup_blocks()
    apply_block(scratch, first)
    for block in others:
        if block.language == "python":
            apply_block(scratch, block)
    settings = scratch.cwd / "mysite" / "settings.py"
    readme_settings = settings.read_text()
    for memory, missing, extra in PROVIDER_PACKAGES:
        settings.write_text(f"{readme_settings}\nCOGITATOR_MEMORY = {memory!r}\n")
        # when: the package is there, then it is not
        installed = run(scratch, sys.executable, "manage.py", "check")
        completed = run(scratch, sys.executable, "-c", CHECK_WITHOUT.format(modules=(missing,)))
        # then
        assert installed.returncode == 0, installed.stderr
        assert completed.returncode == 1, (memory, completed.stderr)
        assert "Traceback" not in completed.stderr, completed.stderr
        assert "(cogitator_memory.E010)" in completed.stderr
        assert f"HINT: pip install 'cogitator-memory[{extra}]'" in completed.stderr
