"""Words of a text, as keyword search compares them.

A token is a run of Unicode word characters, lower-cased; nothing is stemmed or
normalised further, so that the rows holding a token are among those the database finds
by a case-insensitive substring match, on any backend (``search/bm25.py``). Documents
keep every token (their length counts them all); queries drop English stopwords, which
match nearly every row and would only widen the candidates.
"""

from __future__ import annotations

import re

from bm25s.stopwords import STOPWORDS_EN  # type: ignore[import-untyped]

WORD = re.compile(r"\w+")
STOPWORDS = frozenset(STOPWORDS_EN)
# A query of more distinct words than this keeps its first ones: each word is one more
# condition of the candidate query.
MAX_QUERY_TERMS = 32


def tokenize(text: str) -> list[str]:
    """The tokens of a text, in order, repeats kept."""
    return WORD.findall(text.lower())


def query_terms(query: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct words of a query to look for, in order of first appearance.

    Stopwords are left out unless the query has nothing else ("to be or not to be").
    """
    words = list(dict.fromkeys(tokenize(query)))
    meaningful = [word for word in words if word not in STOPWORDS]
    return (meaningful or words)[:max_terms]
