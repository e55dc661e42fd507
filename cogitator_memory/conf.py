"""The app's settings: one ``COGITATOR_MEMORY`` dict in the project's settings.

``memory_settings.NAME`` reads ``settings.COGITATOR_MEMORY["NAME"]`` lazily, falling back
to ``DEFAULTS``. Sections (dict values in ``DEFAULTS``, such as ``LLM``) merge one level
deep: a project that sets ``{"LLM": {"PROVIDER": "openai"}}`` keeps the other ``LLM``
defaults. Unknown names raise ``AttributeError`` here; unknown names and bad values of the
setting are reported at start-up by the system checks of ``checks.py``, which hold one
validator per key of ``DEFAULTS``. The cache is dropped when ``override_settings``
changes ``COGITATOR_MEMORY``, so tests can change settings per test.
"""

from __future__ import annotations

import copy
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

SETTINGS_NAME = "COGITATOR_MEMORY"

DEFAULTS: dict[str, Any] = {
    # Prefix of generated thread ids. Change it only before the first thread is written:
    # ids already stored keep their old prefix.
    "THREAD_ID_PREFIX": "thread_",
    # Prefix of generated entry ids.
    "ENTRY_ID_PREFIX": "entry_",
    # Page size of list_threads when the caller gives no limit.
    "LIST_THREADS_DEFAULT_LIMIT": 50,
    # Largest page list_threads returns; a larger limit is refused, so one call cannot
    # read a whole tenant's threads at once.
    "LIST_THREADS_MAX_LIMIT": 500,
    # Characters per token of the token estimate (tokens.py). 4 fits English text; lower
    # it for languages whose words are short in characters but long in tokens.
    "CHARS_PER_TOKEN": 4,
    # Entries read per step when get_path walks a branch toward its root. A bigger step
    # makes fewer queries on branches full of event entries; each step costs one query.
    "PATH_WALK_STEP": 256,
    # The model the between-runs work uses (extraction, compaction, upkeep). None turns
    # model-backed work off; it then reports that it is off instead of failing.
    "LLM": {
        # None, "openai" (also Ollama, vLLM, llama.cpp and other servers speaking OpenAI's
        # chat completions, by BASE_URL), "anthropic", "google", "scripted" (replays recorded
        # answers: tests and the demo), or the dotted path of a class taking the other keys
        # as keyword arguments. The SDK providers need their extra installed.
        "PROVIDER": None,
        # The model asked when a call names none; the SDK providers need one.
        "MODEL": None,
        # Needed for the provider's own endpoint; a server at BASE_URL may need none.
        "API_KEY": None,
        # Another endpoint than the provider's own: a proxy, or an OpenAI-compatible
        # server such as Ollama's "http://localhost:11434/v1".
        "BASE_URL": None,
        # Seconds one request may take; a long answer from a slow local model needs more.
        "TIMEOUT": 60.0,
        # Retries of a request answered 429 or 5xx, or timed out, with the SDK's backoff.
        # Each retry of a timed-out request can take TIMEOUT again.
        "MAX_RETRIES": 2,
        # Tokens an answer may have when a call gives no max_tokens; an answer cut there
        # comes back with truncated=True.
        "MAX_TOKENS": 1024,
        # The scripted provider only: the path of a JSON file of recorded answers.
        "SCRIPT": None,
    },
    # Memory items: what conversations established.
    "ITEMS": {
        # The confidence at which a user's item whose quotes hold and say its value
        # becomes active on its own.
        "ACTIVATION_CONFIDENCE": 0.7,
    },
    # Extraction of memory items from conversations, by the model of LLM, in Celery.
    "EXTRACTION": {
        # Extract after entries are added (debounced per thread). Off by default.
        "ENABLED": False,
        # "shadow": every new item is suggested, for review; "auto": the rules decide
        # (system words, or the user's with quotes that hold and say the value, are
        # active at once).
        "MODE": "shadow",
        # Tokens of conversation per model call.
        "WINDOW_TOKENS": 4000,
        # Tokens an answer may take; a cut answer is continued.
        "MAX_TOKENS": 8000,
        # The zone time words are read in, unless the thread's metadata.timeZone says.
        "TIME_ZONE": "UTC",
        # Seconds to wait after a new entry before extracting, so a burst of entries is
        # read in one run.
        "DEBOUNCE_SECONDS": 30,
    },
    # Compaction of long threads (compaction/), by the model of LLM, in Celery.
    "COMPACTION": {
        # Compact a thread in the background once it crosses a threshold. Off by default.
        "ENABLED": False,
        # "summary" (one summary) or "hierarchical" (chapters, arcs and a saga of atoms).
        "STRATEGY": "summary",
        # Tokens of conversation (as read through the last compaction) that trigger one;
        # None for no token threshold. At least one of the two thresholds is needed.
        "THRESHOLD": 8000,
        # Conversation entries that trigger one; None for no entry threshold.
        "MESSAGE_THRESHOLD": None,
        # The newest conversation entries kept verbatim.
        "KEEP_RECENT": 10,
        # Instead, the newest whole turns within this many tokens; None uses KEEP_RECENT.
        "KEEP_RECENT_TOKENS": None,
        # The model and the prompt of the summary; None for the LLM's model and the default.
        "SUMMARY_MODEL": None,
        "SUMMARY_PROMPT": None,
        # The hierarchical strategy: tokens per chapter, chapters read at once, chapters
        # folded into an arc, arcs folded into the saga.
        "CHAPTER_TOKENS": 4000,
        "CHAPTER_CONCURRENCY": 1,
        "CHAPTERS_PER_ARC": 4,
        "ARCS_PER_SAGA": 4,
    },
    # Jobs of record (jobs.py): every piece of background work is a row, claimed by one
    # worker at a time under a lease, tried again with backoff, dead after MAX_ATTEMPTS.
    "JOBS": {
        # Tries of a job (each claim by a worker counts, also one whose worker was lost)
        # before it is dead: shown in the admin, with its error and a retry action.
        "MAX_ATTEMPTS": 3,
        # Seconds a claimed job is left to its worker; each step of it renews the lease.
        # A job past its lease is published again by the sweeper (its worker was lost).
        # Longer than the longest single step (one model call: LLM["TIMEOUT"] and its
        # retries).
        "LEASE_SECONDS": 600,
        # Seconds before the first new try after an error; each later wait is
        # RETRY_FACTOR times longer (60 s, then 15 minutes).
        "RETRY_DELAY_SECONDS": 60,
        "RETRY_FACTOR": 15,
        # Seconds after which a queued job not yet claimed is published again (its
        # message was lost, or the broker was down when it was written).
        "REPUBLISH_AFTER_SECONDS": 120,
    },
    # Between runs (upkeep/): observations of entities and consolidation, by the model of
    # LLM, in Celery. The sleep-time pass (beat) visits the scopes whose items were recorded
    # or activated since it last looked.
    "UPKEEP": {
        # Run the sleep-time pass on beat. Off by default; the API and the admin can still
        # ask for upkeep of a scope.
        "ENABLED": False,
        # What a pass does: refresh observations, consolidate (dedupe, fold lessons).
        "OBSERVATIONS": True,
        "CONSOLIDATION": True,
        # "shadow": folded lessons go to the playbook's draft, for a person to promote in
        # the admin; "apply": into the playbook (one every user of the agent shares still
        # takes only system lessons, and drafts the rest).
        "PLAYBOOK_MODE": "shadow",
        # Observations: entities rewritten per refresh, and the facts an entity needs to
        # keep its observation.
        "MAX_ENTITIES": 3,
        "MIN_ITEMS": 3,
        # Dedupe: items marked stale per run, and entities asked about per run.
        "MAX_CHANGES": 10,
        "MAX_SUBJECTS": 10,
        # The pass: items read per batch (one transaction), scopes queued per pass.
        "ITEMS_PER_BATCH": 1000,
        "SCOPES_PER_PASS": 1000,
    },
    # The embedding service and the vector store of recall and search. PROVIDER None
    # means recall searches without vectors, as the specification allows.
    "EMBEDDINGS": {
        # None, "openai", "ollama", "google", "local" (sentence-transformers, an optional
        # extra), or the dotted path of a class taking the other keys as keyword arguments.
        "PROVIDER": None,
        "MODEL": None,
        # The vector size; None takes the model's own. A store that finds vectors of
        # another size stored reports the mismatch in vector_status(). On pgvector, migrate
        # builds the HNSW index of the size set here; a size set (or first stored) later
        # needs manage.py vector_indexes --create.
        "DIMENSIONS": None,
        "API_KEY": None,
        "BASE_URL": None,
        # Seconds per HTTP request to the provider.
        "TIMEOUT": 30.0,
        # Texts per provider request; providers cap it lower where their API does.
        "BATCH_SIZE": 64,
        # Retries of a request answered 429 or 5xx (or timed out), with backoff.
        "MAX_RETRIES": 4,
        # "auto" (pgvector on PostgreSQL with the extension, else the exact in-process
        # store), "pgvector", "exact", "qdrant", or a dotted path.
        "STORE": "auto",
        # Qdrant: a server URL, or a local path (or ":memory:") for the embedded mode.
        "QDRANT_URL": None,
        "QDRANT_PATH": None,
        "QDRANT_API_KEY": None,
        "QDRANT_COLLECTION": "cogitator_memory",
        # pgvector: the fewest candidates an HNSW search keeps (hnsw.ef_search; raised to
        # the limit when that is larger). Higher finds more true neighbours and costs time:
        # 100 adds about 4 ms per search at 100k vectors (bench/RESULTS.md).
        "HNSW_EF_SEARCH": 40,
        # Whether the search API shows shared embeddings (of no agent, user or thread) to
        # every principal. Off: a principal sees only rows of its granted agents.
        "API_SEARCH_SHARED": False,
    },
    # The keyword index (keywords/).
    "KEYWORDS": {
        # Postings a process keeps in memory at most (least recently searched corpora go
        # first), so a search of a corpus read before costs one query; 0 turns it off.
        # About 25 bytes a posting (100 MB at the default); an entry of a sentence has a
        # dozen, so the default holds a thread of up to about 150,000 entries.
        "CACHE_POSTINGS": 4_000_000,
    },
    # How much model-backed work the API may start: extraction and compaction runs asked
    # for through it (POST .../extract/, .../compact/), counted together from the runs'
    # rows, so the count holds across processes. A request answered with a run already
    # open for the thread costs nothing. Over a quota: 429 with Retry-After.
    "QUOTAS": {
        # Runs per agent (of all its users' threads) within PERIOD; None for no limit.
        "MODEL_RUNS_PER_AGENT": None,
        # Runs per user of an agent (the threads of that agent and user) within PERIOD;
        # None for no limit. Threads of no user count only toward the agent's quota.
        "MODEL_RUNS_PER_USER": None,
        # The window the runs are counted in, in seconds.
        "PERIOD": 3600,
    },
    # Recall (recall/retriever.py).
    "RECALL": {
        # The local directory of a sentence-transformers cross-encoder that reorders the
        # best hits of recall (recall/rerank.py); None for no reranker. Models are only read
        # from disk, never downloaded: save one there first. Needs the "local" extra.
        "RERANKER_PATH": None,
    },
}


def user_settings() -> dict[str, Any]:
    """The project's ``COGITATOR_MEMORY`` dict as written, or an empty dict."""
    value = getattr(settings, SETTINGS_NAME, None)
    return value if isinstance(value, dict) else {}


class MemorySettings:
    """Lazy, cached view of ``COGITATOR_MEMORY`` over ``DEFAULTS``."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in DEFAULTS:
            raise AttributeError(f"Unknown COGITATOR_MEMORY setting: {name!r}")
        if name not in self._cache:
            self._cache[name] = self._resolve(name)
        return self._cache[name]

    def _resolve(self, name: str) -> Any:
        default = DEFAULTS[name]
        given = user_settings().get(name, default)
        if isinstance(default, dict) and isinstance(given, dict):
            merged = copy.deepcopy(default)
            merged.update(given)
            return merged
        return copy.deepcopy(given)

    def reload(self) -> None:
        self._cache.clear()


memory_settings = MemorySettings()


@receiver(setting_changed, dispatch_uid="cogitator_memory.conf.reload")
def _reload_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTINGS_NAME:
        memory_settings.reload()
