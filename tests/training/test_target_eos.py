"""What a translation model learns from its targets: every one ends with EOS, which
the loss counts, and PAD it does not. Targets cut without EOS, or EOS and PAD
weighted wrongly, would teach outputs of the wrong length (tests/metrics/
test_output_lengths.py checks that a trained model reads its source and puts
EOS where targets end).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from t2t_keras import registry
from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.training.loss import smoothed_cross_entropy_sum

NUMBER_WORDS = "translate_number_words_en_de"
HPARAMS = transformer_tiny()


def _batches(data_dir: Path) -> list[dict[str, np.ndarray]]:
    dataset = registry.problem(NUMBER_WORDS).dataset(
        "train", HPARAMS.batching(), str(data_dir), repeat=False, deterministic=True
    )
    return [{name: tensor.numpy() for name, tensor in batch.items()} for batch in dataset]


def test_every_training_target_ends_with_one_eos_that_the_loss_counts(
    number_words_data: Path,
) -> None:
    batches = _batches(number_words_data)
    vocab_size = (
        registry.problem(NUMBER_WORDS)
        .feature_encoders(str(number_words_data))["targets"]
        .vocab_size
    )
    assert sum(len(batch["targets"]) for batch in batches) > 1000
    for batch in batches:
        targets = batch["targets"]
        lengths = np.sum(targets != PAD_ID, axis=1)
        rows = np.arange(len(targets))
        assert np.all(targets[rows, lengths - 1] == EOS_ID)  # EOS last, PAD after it only.
        assert np.all(np.sum(targets == EOS_ID, axis=1) == 1)
        # The loss counts every real token, EOS included, and no PAD.
        logits = tf.zeros([*targets.shape, vocab_size])
        _, weight = smoothed_cross_entropy_sum(logits, tf.constant(targets), 0.1)
        assert weight.numpy() == lengths.sum()
