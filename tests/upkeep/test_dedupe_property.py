"""Whatever groups a model answers, ``dedupe`` never marks an item stale for a less
trusted one (nor, in a contradiction, for one said earlier), changes nothing outside the
scope it was given, marks no more than ``max_changes`` items, and deletes nothing.

Each example writes items of random trust about two subjects in one scope and about the
same subjects in wider, narrower and neighbouring scopes; the model's answers are drawn
from every id in the database and a made-up one, with any reason, in any shape, cut or
not. Each example runs in a savepoint rolled back at its end."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import TRUST_RANK, ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem
from cogitator_memory.llm.protocol import Completion, Message
from cogitator_memory.upkeep import MemoryConsolidator
from tests.examples import examples

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
OTHERS = [
    MemoryScope("concierge"),
    MemoryScope("concierge", user_id="ana", thread_id="chat"),
    MemoryScope("concierge", user_id="bo"),
]
TRUSTS = ["system", "user", "model", "tool", "web"]
SUBJECTS = ["Ana", "Rome"]
WATCHED = ("status", "stale_because", "expired_at", "valid_to", "trust", "value")

trusts = st.lists(st.sampled_from(TRUSTS), min_size=2, max_size=5)


def write_items(draw_trusts: list[list[str]]) -> list[MemoryItem]:
    """Active items: for each subject of ANA one per trust drawn, then one of each other
    scope about the same subject."""
    items = MemoryItems()
    written = []
    for subject, subject_trusts in zip(SUBJECTS, draw_trusts, strict=True):
        places = [(ANA, trust) for trust in subject_trusts]
        places += [(scope, "system") for scope in OTHERS]
        for number, (scope, trust) in enumerate(places):
            new = NewItem("fact", subject, f"attribute {number}", f"value {number}", trust)
            item = items.write(scope, new).item
            if item.status != ItemStatus.ACTIVE:
                items.activate([item.pk])
            written.append(MemoryItem.objects.get(pk=item.pk))
    return written


def snapshot() -> dict[str, tuple[Any, ...]]:
    return {
        row.pk: tuple(getattr(row, name) for name in WATCHED) for row in MemoryItem.objects.all()
    }


def answer_groups(shown: list[str], ids: list[str]) -> st.SearchStrategy[list[Any]]:
    """Groups mostly of the ids the call showed, as a model answers, sometimes of any id
    in the database or of none."""
    shown_id = st.sampled_from(shown)
    anything = st.sampled_from([*ids, "item_made_up"])
    some_id = st.one_of(shown_id, shown_id, shown_id, shown_id, shown_id, anything)
    well_shaped = st.fixed_dictionaries(
        {
            "keep": some_id,
            "drop": st.lists(some_id, min_size=1, max_size=3),
            "reason": st.sampled_from(["duplicate", "contradiction", "same"]),
        },
        optional={"note": st.text(max_size=300)},
    )
    odd = st.one_of(
        st.none(),
        st.integers(),
        st.fixed_dictionaries({"keep": some_id, "drop": some_id, "reason": st.text()}),
    )
    # What a model that follows the prompt answers: one shown item kept, others dropped.
    plausible = st.tuples(
        st.permutations(shown),
        st.integers(min_value=1, max_value=len(shown) - 1),
        st.sampled_from(["duplicate", "contradiction"]),
    ).map(
        lambda drawn: {"keep": drawn[0][0], "drop": drawn[0][1 : 1 + drawn[1]], "reason": drawn[2]}
    )
    return st.lists(st.one_of(plausible, plausible, well_shaped, odd), min_size=1, max_size=4)


@settings(
    max_examples=examples(full=150, ci=40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    subject_trusts=st.lists(trusts, min_size=2, max_size=2),
    max_changes=st.integers(min_value=1, max_value=6),
    max_subjects=st.integers(min_value=1, max_value=3),
    data=st.data(),
)
def test_whatever_the_model_answers_dedupe_keeps_its_rules(
    subject_trusts: list[list[str]], max_changes: int, max_subjects: int, data: st.DataObject
) -> None:
    with transaction.atomic():
        # given
        written = write_items(subject_trusts)
        ids = [item.pk for item in written]
        before = snapshot()
        by_id = {item.pk: item for item in written}

        def summarize(messages: list[Message], **options: Any) -> Completion:
            shown = [item["id"] for item in json.loads(messages[-1]["content"])["items"]]
            groups = data.draw(answer_groups(shown, ids), label="groups")
            truncated = data.draw(st.sampled_from([False, False, False, True]), label="cut")
            return Completion(json.dumps(groups), truncated, "drawn")

        # when
        result = MemoryConsolidator().dedupe(
            ANA, summarize=summarize, max_changes=max_changes, max_subjects=max_subjects
        )

        # then: nothing deleted, at most max_changes marked
        after = snapshot()
        assert set(after) == set(before)
        assert len(result.stale) <= max_changes
        marked = {mark.item_id for mark in result.stale}
        assert len(marked) == len(result.stale)
        for item_id, fields in after.items():
            item = by_id[item_id]
            if item_id not in marked:
                # nothing outside the scope, nor any item not reported, changed
                assert fields == before[item_id], item_id
                continue
            assert MemoryScope.of(item) == ANA
            assert fields[0] == ItemStatus.STALE
        for mark in result.stale:
            dropped, kept = by_id[mark.item_id], by_id[mark.kept_id]
            assert MemoryScope.of(kept) == ANA
            assert kept.subject_id == dropped.subject_id
            assert after[kept.pk][0] == ItemStatus.ACTIVE
            assert TRUST_RANK[dropped.trust] <= TRUST_RANK[kept.trust]
            if mark.reason == "contradiction":
                assert dropped.recorded_at < kept.recorded_at
            because = after[mark.item_id][1]
            assert because["reason"] == mark.reason
            assert because["kept"] == kept.pk
        transaction.set_rollback(True)
