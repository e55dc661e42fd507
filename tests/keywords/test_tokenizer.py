"""The tokenizer of keyword search: stems, stopwords, the same tokens for documents and
queries, and fragments the database finds every row of a stem by. (Searches by inflected
and stop words are in ``tests/search/test_bm25.py``.)"""

from __future__ import annotations

import pytest

from cogitator_memory.keywords.tokenizer import fragments, query_terms, tokenize


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
