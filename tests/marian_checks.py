"""What an imported Marian model must give: what transformers gave for the original,
recorded by `marian_reference.record_outputs` (tests/fixtures/marian, or live).

Importable from every test module: pyproject.toml puts tests/ on the path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from t2t_keras.run.loading import TrainedModel
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.translator import Translator

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "marian"
# Texts MarianTokenizer reads as its special tokens wherever they stand; ours as text.
SPECIAL_TEXTS = ("<unk>", "</s>", "<pad>")


def ours(marian_ids: list[int], size: int) -> list[int]:
    """Marian's ids as ours: (Marian's + 1) mod V."""
    return [(token + 1) % size for token in marian_ids]


def recorded_logits(reference: str | list, directory: Path = FIXTURE) -> np.ndarray:
    """The logits recorded: a "file.npz:key" reference into directory, or the values."""
    if not isinstance(reference, str):
        return np.asarray(reference, np.float32)
    name, key = reference.split(":")
    with np.load(directory / name) as arrays:
        return arrays[key]


def check_logits(trained: TrainedModel, expected: dict, directory: Path = FIXTURE) -> None:
    """Teacher-forced logits within 1e-4 of PyTorch's."""
    sources, targets = trained.hparams.vocab_size, trained.hparams.targets_vocab_size()
    marian_of_ours = (np.arange(targets) - 1) % targets  # Our column i is Marian's (i - 1) mod V.
    for pair in expected["teacher_forced"]:
        features = {
            "inputs": tf.constant([ours(pair["inputs"], sources)]),
            "targets": tf.constant([ours(pair["labels"], targets)]),  # Ours shifts right itself.
        }
        logits = trained.model(features).numpy()[0]
        wanted = recorded_logits(pair["logits"], directory)[:, marian_of_ours]
        np.testing.assert_allclose(logits, wanted, atol=1e-4, rtol=0)


def check_search(trained: TrainedModel, expected: dict, search: str) -> None:
    """generate(num_beams=1 or 4, length_penalty=1.0, early_stopping=True), under the
    decoding defaults the import stored (beam 4, length ** 1.0, generate's max_length)."""
    recorded, size = expected[search], trained.hparams.targets_vocab_size()
    beam_size = 1 if search == "greedy" else expected["settings"]["num_beams"]
    settings = DecodeHParams(beam_size=beam_size).resolve(trained.hparams)
    assert settings.search.length_penalty == "length" and settings.search.alpha == 1.0
    translator = Translator(trained.model, trained.vocabs, settings, jit_compile=False)
    kept = [i for i, line in enumerate(recorded["lines"]) if line.strip()]
    found = translator.translate([recorded["lines"][i] for i in kept])
    # Theirs start with the decoder's start; a blank line gets an empty one without a search.
    theirs = [ours(recorded["ids"][i][1:], size) for i in kept]
    # generate scores the EOS it forces at max_length 0, we its log-probability: a beam
    # that reaches it may end in another token (docs/pretrained_models.md).
    limit = expected["settings"]["max_length"] - 1
    full = [len(ids) == limit for ids in theirs]
    assert not all(full)
    for translation, ids, cut in zip(found, theirs, full, strict=True):
        assert translation.ids[0][: limit - 2 if cut else None] == ids[: limit - 2 if cut else None]
        assert len(translation.ids[0]) == len(ids)
    texts = [
        (t.text, recorded["texts"][i])
        for t, i, cut in zip(found, kept, full, strict=True)
        if not cut
    ]
    assert [ours for ours, _ in texts] == [theirs for _, theirs in texts]
    if search == "beam":
        scores = [
            (t.scores[0], recorded["sequences_scores"][i])
            for t, i, cut in zip(found, kept, full, strict=True)
            if not cut
        ]
        np.testing.assert_allclose(*zip(*scores, strict=True), atol=1e-4)


def check_tokens(trained: TrainedModel, expected: dict, side: str) -> None:
    """MarianTokenizer's ids, in Python and in the graph (the SavedModel's), hostile
    lines, language tags and pieces the vocabulary lacks included."""
    vocab = trained.vocabs[side]
    recorded = expected["source_ids" if side == "inputs" else "target_ids"]
    pairs = [
        (line, ours(ids, vocab.vocab_size))
        for line, ids in zip(expected["lines"], recorded, strict=True)
        if not any(text in line for text in SPECIAL_TEXTS)
    ]
    assert len(pairs) >= 50
    lines = [line for line, _ in pairs]
    wanted = [ids for _, ids in pairs]
    assert [[*vocab.encode(line), 1] for line in lines] == wanted
    graph = vocab.tf_encode(tf.constant(lines)).to_list()
    assert [[*ids, 1] for ids in graph] == wanted
