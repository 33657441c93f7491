"""What a translation model learns from its targets: every one ends with EOS, which
the loss counts and PAD it does not, and the trained model ends where its target
ends, from what its source says.

These guard the defects that make outputs short or source-blind: targets cut
without EOS, EOS or PAD weighted wrongly in the loss, a model whose predictions
do not depend on its input.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from t2t_keras import registry
from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.training.loss import smoothed_cross_entropy_sum

NUMBER_WORDS = "translate_number_words_en_de"


@pytest.fixture(scope="module")
def trained(trained_dir: Path) -> TrainedModel:
    return load_trained(str(trained_dir), use_xla=False)


def _batches(trained: TrainedModel, data_dir: Path, split: str) -> list[dict[str, np.ndarray]]:
    dataset = registry.problem(NUMBER_WORDS).dataset(
        split, trained.hparams.batching(), str(data_dir), repeat=False, deterministic=True
    )
    return [{name: tensor.numpy() for name, tensor in batch.items()} for batch in dataset]


def test_every_training_target_ends_with_one_eos_that_the_loss_counts(
    trained: TrainedModel, number_words_data: Path
) -> None:
    batches = _batches(trained, number_words_data, "train")
    assert sum(len(batch["targets"]) for batch in batches) > 1000
    for batch in batches:
        targets = batch["targets"]
        lengths = np.sum(targets != PAD_ID, axis=1)
        rows = np.arange(len(targets))
        assert np.all(targets[rows, lengths - 1] == EOS_ID)  # EOS last, PAD after it only.
        assert np.all(np.sum(targets == EOS_ID, axis=1) == 1)
        # The loss counts every real token, EOS included, and no PAD.
        logits = tf.zeros([*targets.shape, trained.vocabs["targets"].vocab_size])
        _, weight = smoothed_cross_entropy_sum(logits, tf.constant(targets), 0.1)
        assert weight.numpy() == lengths.sum()


def _teacher_forced(model: tf.keras.Model, batch: dict[str, np.ndarray]) -> np.ndarray:
    return tf.nn.log_softmax(model(batch, training=False)).numpy()


def test_the_trained_model_reads_its_source_and_ends_where_the_target_does(
    trained: TrainedModel, number_words_data: Path
) -> None:
    true_log_probs, other_source_log_probs, eos_inside, eos_at_end = [], [], [], []
    for batch in _batches(trained, number_words_data, "dev"):
        targets = batch["targets"]
        real = targets != PAD_ID
        log_probs = _teacher_forced(trained.model, batch)
        # The same targets, each with another example's source.
        swapped = {"inputs": np.roll(batch["inputs"], 1, axis=0), "targets": targets}
        swapped_log_probs = _teacher_forced(trained.model, swapped)
        true_log_probs.append(np.take_along_axis(log_probs, targets[..., None], -1)[..., 0][real])
        other_source_log_probs.append(
            np.take_along_axis(swapped_log_probs, targets[..., None], -1)[..., 0][real]
        )
        eos_probability = np.exp(log_probs[..., EOS_ID])
        eos_inside.append(eos_probability[real & (targets != EOS_ID)])
        eos_at_end.append(eos_probability[targets == EOS_ID])
    cross_entropy = -np.concatenate(true_log_probs).mean()
    other_source_cross_entropy = -np.concatenate(other_source_log_probs).mean()
    # A source-blind model scores both alike; this one needs its source.
    assert cross_entropy < 0.5 * other_source_cross_entropy, (
        cross_entropy,
        other_source_cross_entropy,
    )
    # EOS is predicted where targets end, not before: outputs are not cut short.
    assert np.concatenate(eos_inside).mean() < 0.05
    assert np.concatenate(eos_at_end).mean() > 0.5
