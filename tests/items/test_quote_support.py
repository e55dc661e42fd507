"""quote_supports: whether a quote, on its own, says an item's value (the words of the value
in the quote, its numbers whole, the same polarity)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cogitator_memory.items.support import quote_supports

# --- quotes that say the value ------------------------------------------------------------


@pytest.mark.parametrize(
    ("quote", "value"),
    [
        ("my dog is called Peanut", "Peanut"),
        ("I moved to Lisbon last May", "Lisbon"),
        ("I live in   Lisbon now", "lisbon"),  # case and spacing folded
        ("Book me an aisle seat, always.", "aisle seat"),
        ("Book me an aisle seat, always.", "always book an aisle seat"),  # order aside
        ("I love hiking in the hills", "hikes"),  # the same stem
        ("I live in The Hague", "The Hague"),  # stopwords of the value aside
        ("I have 3 kids", "3 kids"),
        ("I'm 3.5 years in", "3.5"),
        ("I'm allergic to peanuts", "peanuts"),
        ("I don't eat meat", "doesn't eat meat"),  # both negated
        ("I never eat meat", "no meat"),
        ("I do not eat meat", "never eats meat"),
        ("no, never", "no"),  # a value of stopwords only, among the quote's words
    ],
)
def test_a_quote_holding_the_values_words_supports_it(quote: str, value: str) -> None:
    assert quote_supports(quote, value)


# --- quotes that do not ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quote", "value"),
    [
        ("I", "admin"),  # a real word of the user's that says nothing of the value
        ("I like tea", "Always grant refunds"),
        ("Always grant discounts to premium customers", "Always grant refunds"),  # a word swapped
        ("Book me an aisle seat", "window seat"),  # one word of two
        ("I have 30 kids", "3 kids"),  # 3 is not in 30
        ("I have 3 or 5 kids", "3.5"),  # 3.5 is not 3 and 5
        ("I never drink coffee", "coffee"),  # negated in the quote only
        ("I do not like tea", "likes tea"),
        ("I don't like tea", "likes tea"),  # a contraction negates
        ("I dont like tea", "likes tea"),
        ("I don\u2019t like tea", "likes tea"),  # a typographic apostrophe too
        ("I like tea", "doesn't like tea"),  # negated in the value only
        ("", "tea"),
        ("tea", ""),  # a value without words has nothing to stand on
        ("tea", "!!!"),
    ],
)
def test_a_quote_missing_a_word_a_number_or_the_polarity_does_not(quote: str, value: str) -> None:
    assert not quote_supports(quote, value)


# --- properties -------------------------------------------------------------------------------

PLAIN = ["tea", "coffee", "Lisbon", "Porto", "dog", "Peanut", "likes", "seat", "aisle", "the"]
NUMBERS = ["3", "30", "3.5", "2019", "1,000"]
NEGATIONS = ["not", "never", "no", "don't", "cannot"]
plain_words = st.sampled_from(PLAIN + NUMBERS)
texts = st.lists(plain_words, min_size=1, max_size=6).map(" ".join)
fillers = st.lists(st.sampled_from(["I", "my", "really", "now", "so", "well"]), max_size=4).map(
    " ".join
)


@given(value=st.lists(st.sampled_from(PLAIN + NUMBERS + NEGATIONS), min_size=1).map(" ".join))
def test_a_value_supports_itself(value: str) -> None:
    assert quote_supports(value, value)


@given(value=texts, before=fillers, after=fillers)
def test_a_quote_that_holds_the_value_among_other_words_supports_it(
    value: str, before: str, after: str
) -> None:
    assert quote_supports(f"{before} {value}, {after}.", value)


@given(value=texts, before=fillers, negation=st.sampled_from(NEGATIONS))
def test_a_negation_only_the_quote_holds_undoes_the_support(
    value: str, before: str, negation: str
) -> None:
    assert not quote_supports(f"{before} {negation} {value}", value)


@given(
    value=st.lists(st.sampled_from(["tea", "coffee", "Lisbon", "3"]), min_size=1).map(" ".join),
    quote=st.lists(st.sampled_from(["Porto", "dog", "I", "like", "30", "the"])).map(" ".join),
)
def test_a_quote_sharing_no_word_with_the_value_never_supports_it(value: str, quote: str) -> None:
    assert not quote_supports(quote, value)
