"""End to end: a real Celery worker of the project (on the local Redis broker and the test's
own database) claims the upkeep runs the sleep-time pass queues and does them with the
model of its settings (the rule-based stand-in): observations written, a playbook draft
waiting for review, each scope's run done once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemKind
from cogitator_memory.jobs import RunStatus
from cogitator_memory.upkeep.observations import MemoryObservations
from cogitator_memory.upkeep.passes import sleep_time_pass
from cogitator_memory.upkeep.playbook import read_playbook_draft
from cogitator_memory.upkeep.records import UpkeepRun
from tests.tasks.workers import Worker, running_worker, sending_to, wait_until
from tests.upkeep.support import AGENT, write_fact

pytestmark = pytest.mark.django_db(transaction=True)

RULE_MODEL = "project.demo.rule_model.RuleModel"


@pytest.fixture(scope="module")
def upkeep_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    settings = {
        "COGITATOR_MEMORY_LLM_PROVIDER": RULE_MODEL,
        "COGITATOR_MEMORY_UPKEEP_PLAYBOOK_MODE": "shadow",
    }
    with running_worker(tmp_path_factory.mktemp("upkeep-worker"), "upkeep", settings) as worker:
        yield worker


def test_the_worker_does_the_runs_a_sleep_time_pass_queues(upkeep_worker: Worker) -> None:
    scopes = [MemoryScope(AGENT, user_id=user) for user in ("ana", "bea")]
    for scope in scopes:
        for attribute, value in (("seat", "aisle"), ("diet", "vegetarian"), ("home", "Lisbon")):
            write_fact(scope, "Traveller", attribute, value)
        write_fact(scope, "flights", "lesson", "check the departure time", kind=ItemKind.LESSON)
    this_process = {"LLM": {"PROVIDER": RULE_MODEL}, "UPKEEP": {"ENABLED": True}}
    with sending_to(upkeep_worker), override_settings(COGITATOR_MEMORY=this_process):
        report = sleep_time_pass()
    assert report.created == 2
    wait_until(
        upkeep_worker,
        lambda: set(UpkeepRun.objects.values_list("status", flat=True)) == {RunStatus.DONE},
        "both runs done",
    )
    for scope in scopes:
        run = UpkeepRun.objects.get(user_id=scope.user_id)
        assert run.attempts == 1 and run.report is not None
        assert run.report["observations"]["written"] == 1
        observations = MemoryObservations().read(scope)
        assert [observation.name for observation in observations] == ["Traveller"]
        draft = read_playbook_draft(scope)
        assert draft is not None and "check the departure time" in draft.text
