"""Whether a quote says what an item claims (``quote_supports``).

A quote that holds (``lineage.verify_evidence``: its words are in the entry) proves only
that someone said those words. Before a statement may act on its own, one of its quotes
must also say the statement's value, or a model could attach any real words of the user
("I", "I like tea") to a claim of its own and have it count as the user's.
"""

from __future__ import annotations

import re

# The one import of the keyword tokenizer in items: if it moves, change it here.
from cogitator_memory.keywords.tokenizer import STOPWORDS, stem, words

__all__ = ["NEGATIONS", "quote_supports"]

# Words that turn a statement around. The tokenizer splits a contraction ("don't", and
# the same with a typographic apostrophe) into "don" + "t": a "t" after a word ending in
# "n" counts as "n't".
NEGATIONS = frozenset(
    {
        "no",
        "not",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "nowhere",
        "without",
        "cannot",
        "nope",
        "aint",
        "arent",
        "cant",
        "couldnt",
        "didnt",
        "doesnt",
        "dont",
        "hadnt",
        "hasnt",
        "havent",
        "isnt",
        "mustnt",
        "neednt",
        "shouldnt",
        "wasnt",
        "werent",
        "wont",
        "wouldnt",
    }
)
# A number as written: digits, with the decimal or group separators between them.
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _negations(found: list[str]) -> set[int]:
    """The places of the words that negate: a word of ``NEGATIONS``, or both pieces of an
    "n't" ("don", "t")."""
    places = set()
    for index, word in enumerate(found):
        if word in NEGATIONS:
            places.add(index)
        elif word == "t" and index > 0 and found[index - 1].endswith("n"):
            places |= {index - 1, index}
    return places


def _content(found: list[str], negations: set[int]) -> list[str]:
    """The words the value's content is compared by: not stopwords, not negations (those
    are compared as the polarity)."""
    return [
        word for index, word in enumerate(found) if index not in negations and word not in STOPWORDS
    ]


def quote_supports(quote: str, value: str) -> bool:
    """Whether ``quote``, on its own, says ``value``. All three must hold:

    - every content word of the value is a word of the quote, as the keyword search's
      tokenizer compares words: lower-cased, stemmed ("Hikes" is in "I love hiking"),
      stopwords and negations left out; a value of stopwords only ("no") needs each of
      its words among the quote's words. Every one, not a share: a value is short (the
      extraction prompt asks for it so), and the word a share would let go is as likely
      to be the one that matters ("grant refunds" is not said by "grant discounts"). A
      value said in other words waits for a reviewer, which is the safe way to fail;
    - every number of the value is a number of the quote, whole: "3" is not in "30" or
      in "3.5", and "3.5" is not in "3 or 5";
    - the quote is negated exactly when the value is (a word of ``NEGATIONS``, or an
      "n't"): "coffee" is not said by "I never drink coffee", "doesn't eat meat" is said
      by "I never eat meat". The whole quote counts, so "Lisbon, not Porto" does not say
      "Lisbon" either.

    A value without any word says nothing, and nothing supports it. Only the value is
    looked at, not the subject or the attribute: the rule catches words put in the
    user's mouth, not a quote of hers that is about someone else."""
    value_words = words(value)
    if not value_words:
        return False
    quote_words = words(quote)
    value_negations, quote_negations = _negations(value_words), _negations(quote_words)
    if bool(value_negations) != bool(quote_negations):
        return False
    if not set(NUMBER.findall(value)) <= set(NUMBER.findall(quote)):
        return False
    content = _content(value_words, value_negations)
    if not content:
        return set(value_words) <= set(quote_words)
    return set(stem(content)) <= set(stem(_content(quote_words, quote_negations)))
