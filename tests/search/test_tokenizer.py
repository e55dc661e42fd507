"""The tokenizer of keyword search: stems, stopwords, the same tokens for documents and
queries, and fragments the database finds every row of a stem by."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cogitator_memory.embeddings.types import SearchHit
from cogitator_memory.search.bm25 import keyword_search
from cogitator_memory.search.tokenizer import fragments, query_terms, tokenize
from tests.search.conftest import IndexText


def sources(hits: Sequence[SearchHit]) -> list[str]:
    return [hit.embedding.source_id for hit in hits]


def test_words_are_stemmed():
    assert tokenize("Hiking, hiked, hikes") == ["hike", "hike", "hike"]
    assert tokenize("She studies; they study") == ["she", "studi", "studi"]


def test_documents_drop_stopwords():
    assert tokenize("The parcel is in the harbor") == ["parcel", "harbor"]


def test_stopwords_are_kept_unstemmed_when_asked():
    assert tokenize("To be adopting", keep_stopwords=True) == ["to", "be", "adopt"]


def test_a_query_and_a_document_of_the_same_words_have_the_same_tokens():
    text = "Melanie was painting sunsets with her kids at the lake"
    assert query_terms(text) == list(dict.fromkeys(tokenize(text)))


def test_a_query_of_stopwords_only_keeps_them():
    assert query_terms("to be or not to be") == ["to", "be", "or", "not"]


@pytest.mark.parametrize(
    "word",
    [
        "happily",
        "hoping",
        "possibility",
        "relational",
        "dying",
        "lying",
        "vying",
        "skies",
        "agreed",
        "generously",
        "Café",
        "aring",
        "ugly",
        "only",
    ],
)
def test_every_word_holds_a_fragment_of_its_stem(word: str):
    (token,) = tokenize(word)
    assert any(fragment in word.lower() for fragment in fragments(token))


@pytest.mark.django_db
def test_a_document_is_found_by_an_inflected_query_word(index_text: IndexText):
    # given
    index_text("hike", "We hiked up the mountain last summer.")
    index_text("study", "She studies pottery on Sundays.")
    index_text("other", "The parcel left the depot.")
    # when
    hiking = keyword_search("Who goes hiking?", limit=10)
    studying = keyword_search("what does she study", limit=10)
    # then
    assert sources(hiking) == ["hike"]
    assert sources(studying) == ["study"]


@pytest.mark.django_db
def test_a_document_holding_only_stopwords_of_the_query_is_not_found(index_text: IndexText):
    # given
    index_text("parcel", "The parcel is at the harbor.")
    index_text("stops", "It is what it is, and that is all.")
    # when
    hits = keyword_search("where is the parcel", limit=10)
    # then
    assert sources(hits) == ["parcel"]
