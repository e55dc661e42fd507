"""Entities a text names: ``EntityMatcher`` answers as ``entities_named`` does, for many
texts against one set of entities."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cogitator_memory.recall.named_entities import EntityMatcher, entities_named

ENTITIES = [
    ("e1", "Ana", ["Annie"]),
    ("e2", "Ana Silva", []),
    ("e3", "Porto", ["Oporto", "  "]),
    ("e4", "C++", []),
    ("e5", "", []),
    ("e6", "Zoë", ["zoe"]),
]
WORDS = ["Ana", "ana silva", "Annie", "porto", "Oporto", "c++", "Zoë", "ZOE", "hello", "anas"]


def test_the_matcher_names_whole_words_case_aside_in_the_order_given() -> None:
    matcher = EntityMatcher(ENTITIES)
    found = matcher.named_in("Did ana silva move to OPORTO, and does she code C++?")
    assert [entity.id for entity in found] == ["e1", "e2", "e3", "e4"]
    assert matcher.named_in("Anastasia went to Portobello.") == []
    assert matcher.named_in("nothing here") == []
    assert EntityMatcher([]).named_in("Ana") == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*WORDS, ",", ".", "x"]), max_size=8))
def test_the_matcher_answers_as_entities_named(words: list[str]) -> None:
    text = " ".join(words)
    expected = [(entity.id, entity.name) for entity in entities_named(text, ENTITIES)]
    found = [(entity.id, entity.name) for entity in EntityMatcher(ENTITIES).named_in(text)]
    assert found == expected
