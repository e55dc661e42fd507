"""The sleep-time pass and upkeep runs: which scopes a pass visits, that a pass stopped part of
the way goes on without asking for a scope twice, runs joined, grants, and the run's record.

The steps' own rules are tested beside them (observations, dedupe, the playbook); here a
run's steps are turned off unless a test is about them, so a run makes no model call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings

from cogitator_memory.exceptions import LLMUnavailable, NoGrant, UpkeepRunNotFound
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.jobs import RunStatus
from cogitator_memory.upkeep import passes
from cogitator_memory.upkeep.passes import get_visible_upkeep_run, request_upkeep
from cogitator_memory.upkeep.records import UpkeepCursor, UpkeepRun, UpkeepScopeState, UpkeepWork
from tests.upkeep.support import AGENT, write_fact

pytestmark = pytest.mark.django_db

QUIET: dict[str, Any] = {
    "LLM": {"PROVIDER": "scripted"},
    "UPKEEP": {"ENABLED": True, "OBSERVATIONS": False, "CONSOLIDATION": False},
}


@pytest.fixture(autouse=True)
def quiet_upkeep() -> Iterator[None]:
    """A model is configured (it is never asked: the steps are off)."""
    with override_settings(COGITATOR_MEMORY=QUIET):
        yield


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[[], Any]:
    """What runs inside it has its on-commit work done (runs published, and run eagerly)
    as if its transactions committed."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def sleep_pass(committed: Callable[[], Any]) -> Callable[..., passes.PassReport]:
    def run(**options: Any) -> passes.PassReport:
        with committed():
            return passes.sleep_time_pass(**options)

    return run


def users(count: int, facts: int = 2) -> list[MemoryScope]:
    scopes = [MemoryScope(AGENT, user_id=f"user-{n:03d}") for n in range(count)]
    for scope in scopes:
        for f in range(facts):
            write_fact(scope, "Ana", f"likes-{f}", f"thing {f}")
    return scopes


def passes_per_scope() -> dict[str, int]:
    counts: dict[str, int] = {}
    for user_id in UpkeepRun.objects.values_list("user_id", flat=True):
        counts[user_id] = counts.get(user_id, 0) + 1
    return counts


def test_a_pass_visits_each_scope_with_new_items_once_and_then_nothing(
    sleep_pass: Callable[..., passes.PassReport],
) -> None:
    scopes = users(4)
    report = sleep_pass()
    assert report.created == 4 and report.joined == 0
    assert report.items_read["recorded"] == 8
    # Run eagerly: each run is done, and its scope's state records the pass.
    assert set(UpkeepRun.objects.values_list("status", flat=True)) == {RunStatus.DONE}
    assert passes_per_scope() == {scope.user_id: 1 for scope in scopes}
    assert UpkeepScopeState.objects.filter(passes=1).count() == 4
    # Nothing changed since: the next pass asks for nothing.
    again = sleep_pass()
    assert (again.created, again.joined) == (0, 0)
    assert UpkeepRun.objects.count() == 4


def test_a_new_item_brings_only_its_scope_back(
    sleep_pass: Callable[..., passes.PassReport],
) -> None:
    scopes = users(3)
    sleep_pass()
    write_fact(scopes[1], "Ana", "drinks", "tea")
    report = sleep_pass()
    assert report.created == 1
    assert passes_per_scope() == {"user-000": 1, "user-001": 2, "user-002": 1}


def test_an_item_activated_later_brings_its_scope_back(
    sleep_pass: Callable[..., passes.PassReport],
) -> None:
    scopes = users(2)
    suggested = write_fact(scopes[0], "Ana", "lesson", "check the date", trust=Trust.MODEL)
    assert suggested.status == ItemStatus.SUGGESTED
    sleep_pass()
    MemoryItems().activate([suggested.pk])
    report = sleep_pass()
    assert report.created == 1 and report.items_read["activated"] >= 1
    assert passes_per_scope()["user-000"] == 2


def test_a_pass_cut_by_its_budget_goes_on_with_the_rest_and_never_asks_twice(
    sleep_pass: Callable[..., passes.PassReport],
) -> None:
    users(5)
    first = sleep_pass(max_scopes=2)
    assert first.created == 2
    second = sleep_pass(max_scopes=2)
    third = sleep_pass(max_scopes=2)
    assert (second.created, third.created) == (2, 1)
    assert sorted(passes_per_scope().values()) == [1, 1, 1, 1, 1]
    assert (sleep_pass().created, sleep_pass().joined) == (0, 0)


def test_a_pass_that_fails_in_a_batch_keeps_the_cursor_and_queues_nothing_twice(
    monkeypatch: pytest.MonkeyPatch, sleep_pass: Callable[..., passes.PassReport]
) -> None:
    users(4)
    asked: list[str | None] = []
    real = passes.request_upkeep

    def failing(scope: MemoryScope, **kwargs: Any) -> Any:
        asked.append(scope.user_id)
        if len(asked) == 3:
            raise RuntimeError("the worker was stopped")
        return real(scope, **kwargs)

    monkeypatch.setattr(passes, "request_upkeep", failing)
    with pytest.raises(RuntimeError):
        sleep_pass()
    # The batch was one transaction: its runs and the cursor's move were rolled back.
    assert UpkeepRun.objects.count() == 0
    cursor = UpkeepCursor.objects.filter(pk="recorded").first()
    assert cursor is None or cursor.at is None
    monkeypatch.setattr(passes, "request_upkeep", real)
    report = sleep_pass()
    assert report.created == 4
    assert sorted(passes_per_scope().values()) == [1, 1, 1, 1]


def test_a_queued_run_of_a_scope_is_joined_not_asked_again() -> None:
    scope = MemoryScope(AGENT, user_id="ana")
    with transaction.atomic():
        first, created = request_upkeep(scope, work=UpkeepWork.CONSOLIDATION)
        second, joined_created = request_upkeep(scope, work=UpkeepWork.CONSOLIDATION)
        other, other_created = request_upkeep(scope, work=UpkeepWork.OBSERVATIONS)
        assert (created, joined_created, other_created) == (True, False, True)
        assert second.pk == first.pk and other.pk != first.pk
        assert UpkeepRun.objects.filter(status=RunStatus.QUEUED).count() == 2


def test_upkeep_is_asked_for_only_within_grants() -> None:
    grants = Grants.for_agents([AGENT], {AGENT: ["ana"]})
    with pytest.raises(NoGrant):
        request_upkeep(MemoryScope(AGENT, user_id="bob"), grants=grants)
    with pytest.raises(NoGrant):
        request_upkeep(MemoryScope("other-agent", user_id="ana"), grants=grants)
    run, _ = request_upkeep(MemoryScope(AGENT, user_id="ana"), grants=grants)
    assert get_visible_upkeep_run(run.pk, grants=grants).pk == run.pk
    with pytest.raises(UpkeepRunNotFound):
        get_visible_upkeep_run(run.pk, grants=Grants.for_agents([AGENT], {AGENT: ["bob"]}))
    assert UpkeepRun.objects.count() == 1


def test_a_pass_does_nothing_while_upkeep_is_off_or_no_model_is_configured(
    sleep_pass: Callable[..., passes.PassReport],
) -> None:
    users(1)
    with override_settings(COGITATOR_MEMORY={**QUIET, "UPKEEP": {"ENABLED": False}}):
        assert sleep_pass().skipped is not None
    with override_settings(COGITATOR_MEMORY={"UPKEEP": {"ENABLED": True}}):
        report = sleep_pass()
        assert report.skipped is not None and "model" in report.skipped
    assert UpkeepRun.objects.count() == 0


def test_a_run_without_a_model_fails_saying_so(committed: Callable[[], Any]) -> None:
    with (
        override_settings(COGITATOR_MEMORY={"UPKEEP": {"ENABLED": True}}),
        committed(),
    ):
        run, _ = request_upkeep(MemoryScope(AGENT, user_id="ana"))
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert LLMUnavailable.code in run.error


def test_forgetting_a_user_takes_the_upkeep_of_their_scopes(
    sleep_pass: Callable[..., passes.PassReport],
) -> None:
    from cogitator_memory.cascade.services import MemoryCascade

    scopes = users(2)
    sleep_pass()
    MemoryCascade().delete_user("user-000")
    assert set(UpkeepRun.objects.values_list("user_id", flat=True)) == {"user-001"}
    assert set(UpkeepScopeState.objects.values_list("user_id", flat=True)) == {"user-001"}
    assert MemoryItem.objects.filter(user_id=scopes[0].user_id).count() == 0


# --- a pass's steps, with a model that answers by rules ----------------------------------

RULES: dict[str, Any] = {
    "LLM": {"PROVIDER": "project.demo.rule_model.RuleModel"},
    "UPKEEP": {"ENABLED": True, "PLAYBOOK_MODE": "shadow"},
}


def test_a_pass_refreshes_observations_dedupes_and_drafts_the_playbook_then_rests(
    committed: Callable[[], Any],
) -> None:
    scope = MemoryScope(AGENT, user_id="ana")
    for attribute, value in (("seat", "aisle"), ("diet", "vegetarian"), ("home", "Lisbon")):
        write_fact(scope, "Ana", attribute, value)
    # The same statement twice, said by a user and by a tool: the tool's goes.
    said = "The Rome trip stays at Hotel Aurora."
    told = write_fact(scope, "Rome trip", "hotel", "Aurora", trust=Trust.USER, content=said)
    echoed = write_fact(scope, "Rome trip", "stay", "Aurora", trust=Trust.TOOL, content=said)
    MemoryItems().activate([told.pk, echoed.pk])
    lesson = write_fact(
        scope, "flights", "lesson", "check the departure time before booking", kind="lesson"
    )
    with override_settings(COGITATOR_MEMORY=RULES), committed():
        run, _ = request_upkeep(scope, work=UpkeepWork.PASS)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    report = run.report
    assert report["observations"]["written"] >= 1
    assert report["playbook"]["path"] == "/memories/playbook.next.md"
    assert report["playbook"]["lessons"] == 1
    assert report["model_calls"] >= 3
    states = dict(
        MemoryItem.objects.filter(pk__in=[told.pk, echoed.pk]).values_list("pk", "status")
    )
    assert states == {told.pk: ItemStatus.ACTIVE, echoed.pk: ItemStatus.STALE}
    assert report["dedupe"]["stale"] == 1
    from cogitator_memory.upkeep.playbook import read_playbook_draft

    draft = read_playbook_draft(scope)
    assert draft is not None and f"[lesson:{lesson.pk}]" in draft.text
    state = UpkeepScopeState.objects.get(agent_id=AGENT, user_id="ana")
    assert state.passes == 1 and state.dedupe_through is not None
    # Nothing changed since: the next pass of the scope asks the model nothing.
    with override_settings(COGITATOR_MEMORY=RULES), committed():
        again, _ = request_upkeep(scope, work=UpkeepWork.PASS)
    again.refresh_from_db()
    assert again.status == RunStatus.DONE and again.report["model_calls"] == 0
