"""Reading a turn for recall without a model: search it or not, what kind of question it
is, the time it names and its terms.

- Small talk ("hi", "thanks!", "ok, bye", "obrigado", "danke schön") is not searched: a
  turn whose every word is a greeting, a thanks, an acknowledgement or a farewell, in
  English, Portuguese, Spanish, French, German or Italian, or that has no word at all.
- The kind of question, from its wording, first match wins: ``temporal`` ("when", "what
  date", "how long ago", "before", "after"), ``aggregate`` ("how many", "list all",
  "which ... have"), ``update`` ("current", "now", "still", "changed", "latest"),
  ``preference`` ("favorite", "prefer", "like", "enjoy", "want"), else ``general``. The
  kind sets the weight of each recall channel (``recall/channels.py``).
- The time named: every span of up to ``MAX_TIME_WORDS`` words that holds a time word is
  read by ``items.timing.resolve_time`` from the anchor in the turn's zone, and the most
  precise reading wins (a longer span on a tie: "May 2023" over "2023").
- The terms: ``keywords/tokenizer.py``'s query terms.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from cogitator_memory.items.intervals import ResolvedTime, TimePrecision
from cogitator_memory.items.timing import resolve_time
from cogitator_memory.keywords.tokenizer import query_terms
from cogitator_memory.recall.channels import CHANNEL_WEIGHTS
from cogitator_memory.recall.types import QueryAnalysis, QueryKind

__all__ = [
    "analyze_query",
    "find_time",
    "is_small_talk",
    "question_kind",
]

# --- small talk -------------------------------------------------------------------------

_SMALL_TALK_WORDS: Final = frozenset(
    [
        "hi",
        "hello",
        "hey",
        "heya",
        "hiya",
        "yo",
        "howdy",
        "greetings",
        "morning",
        "afternoon",
        "evening",
        "night",
        "good",
        "day",
        "thanks",
        "thank",
        "thx",
        "ty",
        "cheers",
        "ta",
        "you",
        "so",
        "much",
        "very",
        "many",
        "lot",
        "lots",
        "a",
        "great",
        "ok",
        "okay",
        "k",
        "kk",
        "okey",
        "alright",
        "right",
        "sure",
        "yes",
        "yeah",
        "yep",
        "yup",
        "no",
        "nope",
        "nah",
        "fine",
        "cool",
        "nice",
        "awesome",
        "perfect",
        "super",
        "got",
        "it",
        "understood",
        "noted",
        "sounds",
        "bye",
        "goodbye",
        "goodnight",
        "later",
        "see",
        "soon",
        "take",
        "care",
        "cya",
        "farewell",
        "lol",
        "haha",
        "hahaha",
        "hehe",
        "hmm",
        "mm",
        "oh",
        "ah",
        "wow",
        "welcome",
        "np",
        "please",
        "pls",
        "there",
        "all",
        "everyone",
        "guys",
        "folks",
        "friend",
        "mate",
        "buddy",
        "again",
        "too",
        "also",
        "ola",
        "olá",
        "oi",
        "obrigado",
        "obrigada",
        "valeu",
        "tchau",
        "adeus",
        "bom",
        "boa",
        "dia",
        "tarde",
        "noite",
        "tudo",
        "bem",
        "hola",
        "gracias",
        "adiós",
        "adios",
        "buenos",
        "buenas",
        "días",
        "dias",
        "muchas",
        "vale",
        "claro",
        "bonjour",
        "salut",
        "merci",
        "beaucoup",
        "revoir",
        "au",
        "bonsoir",
        "oui",
        "d",
        "accord",
        "hallo",
        "danke",
        "schön",
        "schon",
        "tschüss",
        "tschuss",
        "moin",
        "servus",
        "ja",
        "gut",
        "tag",
        "guten",
        "ciao",
        "grazie",
        "mille",
        "arrivederci",
        "buongiorno",
        "buonasera",
        "prego",
        "si",
        "sì",
    ]
)
_WORD: Final = re.compile(r"\w+")


def is_small_talk(text: str) -> bool:
    """Whether ``text`` is only a greeting, thanks, acknowledgement or farewell (or has no
    word at all), which recall does not search. A question is never small talk."""
    found = _WORD.findall(text.lower())
    if not found:
        return True
    if "?" in text and not all(word in {"ok", "okay", "right", "yes", "no"} for word in found):
        return False
    return all(word in _SMALL_TALK_WORDS for word in found)


# --- the kind of question -----------------------------------------------------------------

_KIND_PATTERNS: Final[tuple[tuple[QueryKind, re.Pattern[str]], ...]] = (
    (
        "temporal",
        re.compile(
            r"\bwhen\b|\bwhat (?:date|day|time|year|month|week)\b|\bwhich (?:date|day|year|month)\b"
            r"|\bhow long(?: ago)?\b|\bago\b|\bbefore\b|\bafter\b|\bsince\b|\buntil\b"
            r"|\bwhat period\b|\bfirst time\b|\blast time\b|\bquando\b|\bcuándo\b|\bwann\b"
        ),
    ),
    (
        "aggregate",
        re.compile(
            r"\bhow many\b|\bhow much\b|\bhow often\b|\bnumber of\b|\blist\b|\ball (?:the|of)\b"
            r"|\bevery\b|\bwhat are (?:all|some)\b|\bwhich \w+(?: \w+)? (?:have|has|did)\b"
            r"|\bwhat (?:kinds?|types?) of\b|\bquantos?\b|\bquantas?\b|\bcuántos?\b"
        ),
    ),
    (
        "update",
        re.compile(
            r"\bcurrent(?:ly)?\b|\bnow\b|\bstill\b|\bchanged?\b|\blatest\b|\bnewest\b"
            r"|\banymore\b|\bthese days\b|\bat the moment\b|\bswitched\b|\bmoved to\b|\bupdated?\b"
        ),
    ),
    (
        "preference",
        re.compile(
            r"\bfavou?rites?\b|\bprefer(?:s|red|ence|ences)?\b|\blikes?\b|\bliked\b|\blove[sd]?\b"
            r"|\benjoy(?:s|ed)?\b|\bwants?\b|\bwish(?:es)?\b|\bhates?\b|\bdislikes?\b|\binto\b"
        ),
    ),
)


def question_kind(text: str) -> QueryKind:
    """The kind of question ``text`` asks (the first kind whose words it holds)."""
    lowered = text.lower()
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(lowered):
            return kind
    return "general"


# --- the time named -------------------------------------------------------------------------

# The longest run of words read as one time expression ("the second week of May 2023").
MAX_TIME_WORDS: Final = 6
_MONTH_NAMES: Final = frozenset(
    [
        "january",
        "february",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)
_WEEKDAYS: Final = frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
)
_TIME_WORDS: Final = (
    _MONTH_NAMES
    | _WEEKDAYS
    | frozenset(
        [
            "today",
            "yesterday",
            "tomorrow",
            "tonight",
            "ago",
            "week",
            "weeks",
            "weekend",
            "summer",
            "winter",
            "autumn",
            "month",
            "months",
            "year",
            "years",
            "day",
            "days",
            "fortnight",
            "quarter",
            "morning",
            "afternoon",
            "evening",
            "night",
            "hour",
            "hours",
            "ontem",
            "hoje",
            "amanhã",
            "amanha",
            "semana",
            "mês",
            "mes",
            "ano",
            "ayer",
            "hoy",
            "mañana",
            "manana",
            "año",
            "hier",
            "aujourd",
            "demain",
            "semaine",
            "mois",
            "an",
            "gestern",
            "heute",
            "morgen",
            "woche",
            "monat",
            "jahr",
        ]
    )
)
# "May" and "March" are months only next to a number or a word that makes them one ("in
# May", "last March"): "May I ask..." or "march on" name no time.
_AMBIGUOUS_MONTHS: Final = frozenset({"may", "march"})
_MONTH_LEADS: Final = frozenset(
    {"in", "last", "next", "this", "since", "of", "early", "late", "mid", "during", "until"}
)
# "Fall" and "spring" are seasons only so led or next to a year ("in the fall", "spring
# 2024"): "did the price fall" or "a hot spring" name no time.
_AMBIGUOUS_SEASONS: Final = frozenset({"fall", "spring"})
_SEASON_LEADS: Final = _MONTH_LEADS | {"the", "over"}
_YEAR: Final = re.compile(r"(?:19|20)\d{2}")
_DATE_LIKE: Final = re.compile(r"\d{4}-\d{2}(?:-\d{2})?|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}")
_SPAN_WORD: Final = re.compile(r"\d{4}-\d{2}(?:-\d{2})?|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|[\w']+")
# Words that do not start or end a time expression: "when did we go in May" is read as
# "in May", not as "go in May".
_EDGE_STOPWORDS: Final = frozenset(
    [
        "when",
        "what",
        "which",
        "who",
        "where",
        "why",
        "how",
        "did",
        "do",
        "does",
        "was",
        "were",
        "is",
        "are",
        "am",
        "be",
        "been",
        "the",
        "a",
        "an",
        "and",
        "or",
        "to",
        "for",
        "we",
        "i",
        "you",
        "he",
        "she",
        "they",
        "it",
        "my",
        "our",
        "your",
        "their",
        "his",
        "her",
        "at",
        "with",
        "go",
        "went",
        "about",
    ]
)
_PRECISION_ORDER: Final = {precision: rank for rank, precision in enumerate(TimePrecision)}


def _is_time_word(words: list[str], index: int) -> bool:
    word = words[index]
    if word in _TIME_WORDS or _YEAR.fullmatch(word) or _DATE_LIKE.fullmatch(word):
        return True
    before = words[index - 1] if index > 0 else ""
    after = words[index + 1] if index + 1 < len(words) else ""
    if word in _AMBIGUOUS_MONTHS:
        return before in _MONTH_LEADS or before.isdigit() or after.isdigit()
    if word in _AMBIGUOUS_SEASONS:
        # "the fall" is a season when something leads it too ("in the fall").
        led = before in _SEASON_LEADS - {"the"} or (
            before == "the" and index > 1 and words[index - 2] in _SEASON_LEADS
        )
        return led or bool(_YEAR.fullmatch(after))
    return False


def find_time(text: str, anchor: datetime, time_zone: str) -> ResolvedTime | None:
    """The most precise time a span of ``text`` names, read from ``anchor`` in
    ``time_zone`` (a longer span on a tie); None when no span names one. The spans are
    read as English when the text is ASCII (the time words that pick them are English),
    else in any language.

    Raises ``InvalidInput`` for an anchor without a zone or an unknown zone.
    """
    words = _SPAN_WORD.findall(text.lower())
    anchors = [index for index in range(len(words)) if _is_time_word(words, index)]
    if not anchors:
        # Checks the arguments even when nothing is read.
        resolve_time("", anchor, time_zone)
        return None
    spans: list[tuple[int, int]] = []
    for at in anchors:
        first_start = max(0, at - MAX_TIME_WORDS + 1)
        for start in range(first_start, at + 1):
            for end in range(at + 1, min(len(words), start + MAX_TIME_WORDS) + 1):
                if words[start] in _EDGE_STOPWORDS or words[end - 1] in _EDGE_STOPWORDS:
                    continue
                spans.append((start, end))
    spans = list(dict.fromkeys(spans))
    # The anchors are English words, years and dates: ASCII text is read as English
    # (other languages read into its English words only make up times); text with
    # letters past ASCII in every language.
    english_only = text.isascii()
    best: tuple[int, int, ResolvedTime] | None = None
    for start, end in spans:
        resolved = resolve_time(
            " ".join(words[start:end]), anchor, time_zone, english_only=english_only
        )
        if resolved is None:
            continue
        rank = (_PRECISION_ORDER[TimePrecision(resolved.precision)], -(end - start))
        if best is None or rank < best[:2]:
            best = (*rank, resolved)
    return best[2] if best else None


def analyze_query(input: str, anchor: datetime, time_zone: str = "UTC") -> QueryAnalysis:
    """Read a turn for recall: whether to search it, its kind, the time it names (from
    ``anchor``, an aware datetime, in the IANA zone ``time_zone``), its terms and the
    weights of the channels for its kind.

    Raises ``InvalidInput`` for an anchor without a zone or an unknown zone.
    """
    if is_small_talk(input):
        resolve_time("", anchor, time_zone)
        return QueryAnalysis(search=False, kind="general", time=None, terms=())
    kind = question_kind(input)
    return QueryAnalysis(
        search=True,
        kind=kind,
        time=find_time(input, anchor, time_zone),
        terms=tuple(query_terms(input)),
        weights=dict(CHANNEL_WEIGHTS[kind]),
    )
