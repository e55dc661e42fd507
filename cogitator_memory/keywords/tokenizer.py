"""Words of a text, as keyword search compares them.

A token is a run of Unicode word characters, lower-cased, that is not an English stopword
(bm25s's list), stemmed by Snowball's English stemmer (PyStemmer): "hiking", "hiked" and
"hikes" are all "hike". Documents and queries go through the same steps, so a query word
finds the documents holding any word of its stem, and a document's length counts the
tokens BM25 compares, as bm25s with a stemmer and stopwords does.

The database never sees stems: ``fragments`` gives, for a stem, the pieces of text one of
which every word with that stem holds, so a case-insensitive substring match on them finds
a superset of the rows holding the stem, on any backend (``search/bm25.py``), and
tokenizing those rows tells which really hold it.

A query of stopwords only ("to be or not to be") would have no word left; it is searched
by its stopwords, unstemmed, over documents tokenized with their stopwords kept
(``tokenize(text, keep_stopwords=True)``).
"""

from __future__ import annotations

import re
import threading

import Stemmer  # type: ignore[import-not-found]
from bm25s.stopwords import STOPWORDS_EN  # type: ignore[import-untyped]

WORD = re.compile(r"\w+")
STOPWORDS = frozenset(STOPWORDS_EN)
LANGUAGE = "english"
# A query of more distinct words than this keeps its first ones: each word is one more
# condition of the candidate query.
MAX_QUERY_TERMS = 32
# Snowball's English stemmer rewrites at most the last letter of a word's stem (happy ->
# happi, hoping -> hope, possibility -> possibl), but for a stem of three letters ending
# in "ie", which may come of a "y" (dying -> die, vying -> vie).
SHORT_IE = re.compile(r"\wie")

# A PyStemmer stemmer is not safe to share between threads: one per thread.
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer(LANGUAGE)
    return stemmer


def words(text: str) -> list[str]:
    """The words of a text, lower-cased, in order, repeats and stopwords kept."""
    return WORD.findall(text.lower())


def stem(words: list[str]) -> list[str]:
    """The stems of ``words``, in the same order."""
    stems: list[str] = _stemmer().stemWords(words)
    return stems


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """The tokens of a text, in order, repeats kept: the stems of its words but its
    stopwords; with ``keep_stopwords``, its stopwords too, unstemmed."""
    found = words(text)
    if keep_stopwords:
        return [
            word if word in STOPWORDS else stemmed
            for word, stemmed in zip(found, stem(found), strict=True)
        ]
    return stem([word for word in found if word not in STOPWORDS])


def query_terms(query: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct tokens of a query to look for, in order of first appearance.

    Stopwords are left out unless the query has nothing else (``stopwords_only``).
    """
    terms = list(dict.fromkeys(tokenize(query)))
    if not terms:
        terms = list(dict.fromkeys(words(query)))
    return terms[:max_terms]


def stopwords_only(terms: list[str]) -> bool:
    """Whether the terms of a query are stopwords only: documents are then tokenized with
    their stopwords kept."""
    return bool(terms) and all(term in STOPWORDS for term in terms)


def fragments(term: str) -> tuple[str, ...]:
    """Pieces of text one of which every word whose token is ``term`` holds: the term but
    its last letter (both "ie" and "y" for a short stem in "ie"); a term of one letter is
    itself."""
    if SHORT_IE.fullmatch(term):
        return (term[:2], term[0] + "y")
    if len(term) < 2:
        return (term,)
    return (term[:-1],)
