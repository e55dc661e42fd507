"""analyze_query: small talk, the kind of question, the time named in several zones, the
terms and the weights."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.items.intervals import TimePrecision
from cogitator_memory.recall.channels import CHANNEL_WEIGHTS
from cogitator_memory.recall.query_analysis import analyze_query, find_time

# Wednesday 21 October 2026, 15:00 UTC.
ANCHOR = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    ["hi", "Hello!", "thanks!", "Thank you so much", "ok", "okay, bye", "good morning",
     "obrigado", "gracias", "merci beaucoup", "danke schön", "ciao", "  ", "🙂"],
)  # fmt: skip
def test_small_talk_is_not_searched(text: str) -> None:
    # when
    analysis = analyze_query(text, ANCHOR)

    # then
    assert analysis.search is False
    assert analysis.terms == ()
    assert analysis.time is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("When did we go to Porto?", "temporal"),
        ("What date is the dentist appointment?", "temporal"),
        ("How long ago did I move?", "temporal"),
        ("What did I do before the wedding?", "temporal"),
        ("How many dogs do I have?", "aggregate"),
        ("List all the books I mentioned", "aggregate"),
        ("Which cities have we visited?", "aggregate"),
        ("Where do I live now?", "update"),
        ("Is Ana still at the bank?", "update"),
        ("What is my current phone number?", "update"),
        ("What changed with the car?", "update"),
        ("What is my favorite food?", "preference"),
        ("Do I prefer tea or coffee?", "preference"),
        ("What music do I enjoy?", "preference"),
        ("Where did Ana stay in Lisbon?", "general"),
        ("Tell me about the project", "general"),
    ],
)
def test_kind_of_question(text: str, kind: str) -> None:
    # when
    analysis = analyze_query(text, ANCHOR)

    # then
    assert analysis.search is True
    assert analysis.kind == kind
    assert analysis.weights == CHANNEL_WEIGHTS[kind]


def test_kinds_weigh_their_channels_differently() -> None:
    # then: a temporal question leans on time, the others less
    assert CHANNEL_WEIGHTS["temporal"]["entry_time"] > CHANNEL_WEIGHTS["general"]["entry_time"]
    assert CHANNEL_WEIGHTS["aggregate"]["item_graph"] > CHANNEL_WEIGHTS["general"]["item_graph"]
    assert CHANNEL_WEIGHTS["update"]["item_keyword"] > CHANNEL_WEIGHTS["general"]["item_keyword"]


def test_terms_are_the_tokenizer_query_terms() -> None:
    # when
    analysis = analyze_query("Which hiking trails did Ana hike?", ANCHOR)

    # then: stemmed, each once
    assert "hike" in analysis.terms
    assert analysis.terms.count("hike") == 1
    assert "ana" in analysis.terms


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "zone", "start", "end", "precision"),
    [
        # Lisbon is on summer time (UTC+1) until 25 October 2026.
        ("What did I say yesterday?", "UTC", utc(2026, 10, 20), utc(2026, 10, 21), "day"),
        (
            "What did I say yesterday?",
            "Europe/Lisbon",
            utc(2026, 10, 19, 23),
            utc(2026, 10, 20, 23),
            "day",
        ),
        (
            "Where did we stay last April?",
            "Europe/Lisbon",
            utc(2026, 3, 31, 23),
            utc(2026, 4, 30, 23),
            "month",
        ),
        (
            "What happened in May 2023?",
            "America/Los_Angeles",
            utc(2023, 5, 1, 7),
            utc(2023, 6, 1, 7),
            "month",
        ),
        ("What did we do two weeks ago?", "UTC", utc(2026, 10, 5), utc(2026, 10, 12), "week"),
        (
            "What did Ana say on Tuesday?",
            "Asia/Tokyo",
            utc(2026, 10, 19, 15),
            utc(2026, 10, 20, 15),
            "day",
        ),
    ],
)
def test_time_named_in_zones(
    text: str, zone: str, start: datetime, end: datetime, precision: str
) -> None:
    # when
    analysis = analyze_query(text, ANCHOR, zone)

    # then
    assert analysis.time is not None
    assert (analysis.time.start, analysis.time.end) == (start, end)
    assert analysis.time.precision == TimePrecision(precision)


def test_time_in_tokyo_is_its_own_calendar_day() -> None:
    # given: 15:00 UTC is already Thursday 00:00 in Tokyo
    anchor = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)

    # when
    analysis = analyze_query("What did we plan for today?", anchor, "Asia/Tokyo")

    # then
    assert analysis.time is not None
    assert analysis.time.start == utc(2026, 10, 21, 15)


def test_time_across_a_dst_change_is_a_23_hour_day() -> None:
    # given: Lisbon moves to summer time on 29 March 2026 at 01:00 UTC
    anchor = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)

    # when
    analysis = analyze_query("What did I book yesterday?", anchor, "Europe/Lisbon")

    # then: from midnight WET to midnight WEST
    assert analysis.time is not None
    assert analysis.time.start == utc(2026, 3, 29, 0)
    assert analysis.time.end == utc(2026, 3, 29, 23)
    assert (analysis.time.end - analysis.time.start).total_seconds() == 23 * 3600


def test_the_most_precise_time_wins() -> None:
    # when: the year and the month of the year are both named
    analysis = analyze_query("What did we buy in May 2023 for the house?", ANCHOR)

    # then: the month
    assert analysis.time is not None
    assert analysis.time.precision == TimePrecision.MONTH
    assert analysis.time.start == utc(2023, 5, 1)


@pytest.mark.parametrize(
    ("text", "start", "end", "precision"),
    [
        # ANCHOR is Wednesday 21 October 2026
        ("What did we do last weekend?", utc(2026, 10, 17), utc(2026, 10, 19), "weekend"),
        ("Any plans for this weekend?", utc(2026, 10, 24), utc(2026, 10, 26), "weekend"),
        ("Where did Ana go last summer?", utc(2026, 6, 1), utc(2026, 9, 1), "season"),
        ("What did we plant in the fall of 2025?", utc(2025, 9, 1), utc(2025, 12, 1), "season"),
        ("Did it snow this winter?", utc(2026, 12, 1), utc(2027, 3, 1), "season"),
        ("What did Jon read in spring 2024?", utc(2024, 3, 1), utc(2024, 6, 1), "season"),
    ],
)
def test_weekends_and_seasons_are_times(
    text: str, start: datetime, end: datetime, precision: str
) -> None:
    # when
    analysis = analyze_query(text, ANCHOR)

    # then
    assert analysis.time is not None
    assert (analysis.time.start, analysis.time.end) == (start, end)
    assert analysis.time.precision == TimePrecision(precision)


@pytest.mark.parametrize(
    "text",
    ["Did the price fall after the news?", "Which hot spring did Ana visit?", "Why did I fall?"],
)
def test_fall_and_spring_as_other_words_name_no_time(text: str) -> None:
    # when
    analysis = analyze_query(text, ANCHOR)

    # then
    assert analysis.time is None


def test_may_as_a_verb_names_no_time() -> None:
    # when
    analysis = analyze_query("May I ask where you moved?", ANCHOR)

    # then
    assert analysis.time is None


def test_no_time_named() -> None:
    # when
    analysis = analyze_query("Where does Ana work?", ANCHOR)

    # then
    assert analysis.time is None


def test_bad_zone_and_naive_anchor_are_refused() -> None:
    # then
    with pytest.raises(InvalidInput, match="time_zone"):
        analyze_query("hi", ANCHOR, "Mars/Olympus")
    with pytest.raises(InvalidInput, match="session_at"):
        analyze_query("When did we meet?", datetime(2026, 1, 1))


def test_ascii_text_is_read_in_english_and_other_text_in_every_language() -> None:
    anchor = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
    found = find_time("what did we book last week?", anchor, "UTC")
    assert found is not None and found.precision == "week"
    # no other language makes a time out of English words
    assert find_time("How long ago was Caroline's 18th birthday?", anchor, "UTC") is None
    # a month in Portuguese with its year: read whole, not as the bare year
    found = find_time("o que reservamos em março de 2025?", anchor, "Europe/Lisbon")
    assert found is not None and found.precision == "month"
    assert found.start == datetime(2025, 3, 1, tzinfo=UTC)
