"""A problem's data as training needs it: present, its vocabularies, and the
model's vocabulary sizes and tree tokens fitted to them."""

from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from t2t_keras.data import damage
from t2t_keras.data.problem import Problem
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.models.transformer_hparams import TransformerHParams


def checked_vocabularies(
    problem: Problem, data_dir: str, skip_corrupt: bool
) -> dict[str, Vocabulary]:
    """The problem's vocabularies; clear errors when its data is missing.

    With skip_corrupt, the shards are read through once first, to report what
    their damaged records lose.
    """
    if not data_dir or not tf.io.gfile.isdir(data_dir):
        raise UserError(
            f"data_dir {data_dir!r} does not exist; generate the data with `t2t-datagen "
            f"--problem={problem.data_name} --data_dir=DATA_DIR --tmp_dir=TMP_DIR` "
            "(or add --generate_data to t2t-trainer)."
        )
    for split in ("train", "dev"):
        files = problem.data_files(data_dir, split)
        if skip_corrupt:
            damage.report_losses(files, f"{problem.name} {split}")
    return problem.feature_encoders(data_dir)


def with_vocab_size(
    hparams: TransformerHParams, encoders: dict[str, Vocabulary], trained: dict[str, Any]
) -> TransformerHParams:
    """Fills the vocabulary sizes left at 0 from the problem's; refuses sizes too small.

    Args:
      hparams: as given; vocab_size and target_vocab_size 0 take the problem's.
      encoders: the problem's {"inputs", "targets"} vocabularies.
      trained: hparams.json of the checkpoints being resumed; {} for a fresh run.
    """
    sources, targets = encoders["inputs"].vocab_size, encoders["targets"].vocab_size
    if hparams.vocab_size == 0:
        vocab_size, target_vocab_size = _problem_sizes(hparams, sources, targets, trained)
        hparams = dataclasses.replace(
            hparams, vocab_size=vocab_size, target_vocab_size=target_vocab_size
        )
    # target_vocab_size 0 gives the targets vocab_size: name the field that set the size.
    target_field = "target_vocab_size" if hparams.target_vocab_size else "vocab_size"
    for name, model_size, side, size in (
        ("vocab_size", hparams.vocab_size, "inputs", sources),
        (target_field, hparams.targets_vocab_size(), "targets", targets),
    ):
        if model_size < size:
            raise UserError(
                f"hparams {name}={model_size} is smaller than the problem's {side} "
                f"vocabulary of {size} ids; leave vocab_size and target_vocab_size at 0 "
                "to take the problem's."
            )
    return hparams


def _problem_sizes(
    hparams: TransformerHParams, sources: int, targets: int, trained: dict[str, Any]
) -> tuple[int, int]:
    """(vocab_size, target_vocab_size) for hparams that leave vocab_size at 0."""
    larger = max(sources, targets)
    if hparams.shared_embeddings:  # One matrix: the larger vocabulary.
        return larger, 0
    if hparams.target_vocab_size:
        return sources, hparams.target_vocab_size
    if "target_vocab_size" not in trained and trained.get("vocab_size") == larger:
        # Checkpoints from before target_vocab_size padded the targets to the larger
        # vocabulary: resuming them keeps that shape.
        return larger, 0
    return sources, 0 if targets == sources else targets


def leaf_tokens(
    hparams: TransformerHParams, problem: Problem, encoders: dict[str, Vocabulary]
) -> TreeTokens | None:
    """A parsing problem's leaf id and word starts, if leaf_positions or leaf_words ask."""
    if not hparams.reads_leaves():
        return None
    tokens = problem.tree_constraint(encoders)
    if tokens is None:
        raise UserError(
            f"leaf_positions=true and leaf_words=true tell the decoder the next word of a "
            f"parse tree, but problem {problem.name!r} writes no trees (its target vocabulary "
            "has no leaf XX and brackets); train it with both false."
        )
    return tokens
