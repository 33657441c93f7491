"""Decoding id batches with a Transformer: greedy or beam search, compiled."""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from absl import logging

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.decoding.decode_hparams import DecodeHParams
from t2t_keras.decoding.search import beam_search, greedy_search
from t2t_keras.decoding.tree_constraint import TreeConstraint
from t2t_keras.models.transformer import Transformer


class Decoder(tf.Module):
    """Runs the cached decoder under greedy (beam_size 1) or beam search.

    The whole search, encoder included, is one `tf.function`, XLA-compiled
    when `jit_compile` (once per input shape).

    Args:
      model: a built Transformer.
      beam_size, alpha, extra_length: default to the model's hparams; the
        longest output is input length + extra_length tokens before EOS,
        and never more than max_length - 1.
      length_penalty: how alpha normalizes by length, "gnmt" or "length" (`search`).
      return_beams: return all beam_size hypotheses, best first, rather than
        the best one (the search then runs until all are final).
      min_length: fewest tokens before EOS for a non-empty input (an input of
        EOS alone may still give EOS alone); 0 lets EOS come first.
      stopping: beam search's stopping rule, "first_k" or "best_possible"
        (see `search`); beam_size 1 with "first_k" is greedy search.
      tree_constraint: constrain outputs to trees when tree_tokens are given.
      tree_tokens: the tree symbols of the vocabularies (a parsing problem's
        `tree_constraint`; `tree_constraint.TreeConstraint`); None: no constraint.
      jit_compile: XLA-compile the search.
    """

    def __init__(
        self,
        model: Transformer,
        beam_size: int | None = None,
        alpha: float | None = None,
        length_penalty: str = "gnmt",
        extra_length: int | None = None,
        return_beams: bool = False,
        min_length: int = 1,
        stopping: str = "first_k",
        tree_constraint: bool = True,
        tree_tokens: TreeTokens | None = None,
        jit_compile: bool = True,
    ) -> None:
        super().__init__()
        # Unset settings are filled where t2t-decoder fills them, and checked alike.
        settings = DecodeHParams(
            beam_size=beam_size,
            alpha=alpha,
            length_penalty=length_penalty,
            extra_length=extra_length,
            return_beams=return_beams,
            min_length=min_length,
            stopping=stopping,
            tree_constraint=tree_constraint,
        ).resolved(model.hparams)
        self.model = model
        self.beam_size, self.alpha, self.extra_length = settings.beam_alpha_extra_length()
        self.length_penalty = length_penalty
        self.max_length = model.hparams.max_length
        self.num_returned = self.beam_size if return_beams else 1
        self.min_length = min_length
        self.stopping = stopping
        self.tree_tokens = tree_tokens if tree_constraint else None
        # The compiled search itself, for rows already at most max_length long
        # (graphs of unknown shape, such as a SavedModel's, truncate beforehand).
        self.search = tf.function(self._search_ids, jit_compile=jit_compile)

    def __call__(self, inputs: Any) -> tuple[tf.Tensor, tf.Tensor]:
        """Decodes a batch.

        Args:
          inputs: [B, S] int ids, each row ending with EOS then PAD. Rows longer
            than max_length are cut to it (ending in EOS) with a logged warning.

        Returns:
          (ids [B, N, L] int32: EOS then PAD after each hypothesis, best first;
          scores [B, N] float32 length-normalized log-probabilities), N = 1, or
          beam_size with return_beams.
        """
        inputs = tf.convert_to_tensor(inputs, tf.int32)
        return self.search(self._truncate(inputs))

    def compilations(self) -> int:
        """How many search graphs have been traced (and, under XLA, compiled): one per
        distinct input shape, so `Translator` pads batches to a few bucket widths."""
        return int(self.search.experimental_get_tracing_count())

    def _truncate(self, inputs: tf.Tensor) -> tf.Tensor:
        if inputs.shape[1] <= self.max_length:
            return inputs
        lengths = tf.reduce_sum(tf.cast(inputs != PAD_ID, tf.int32), axis=1)
        count = int(tf.reduce_sum(tf.cast(lengths > self.max_length, tf.int32)))
        if count:
            logging.warning(
                "%d input(s) longer than max_length=%d tokens were truncated.",
                count,
                self.max_length,
            )
        kept = inputs[:, : self.max_length]
        last = kept[:, -1:]
        return tf.concat([kept[:, :-1], tf.where(last != PAD_ID, EOS_ID, last)], axis=1)

    def _search_ids(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        decode_length, max_lengths = decode_limits(inputs, self.extra_length, self.max_length)
        min_lengths = minimum_lengths(inputs, self.min_length, max_lengths)
        state, step = self.model.start_decoding(inputs, decode_length, self.beam_size)
        constraint = None
        if self.tree_tokens is not None:
            vocab_size = self.model.hparams.targets_vocab_size()  # The logits' width.
            constraint = TreeConstraint(self.tree_tokens, vocab_size, inputs, max_lengths)
        if self.beam_size == 1 and self.stopping == "first_k":  # The same search, cheaper.
            return greedy_search(
                step,
                state,
                decode_length,
                max_lengths,
                self.alpha,
                min_lengths,
                self.length_penalty,
                constraint,
            )
        return beam_search(
            step,
            state,
            self.beam_size,
            decode_length,
            max_lengths,
            self.alpha,
            self.num_returned,
            min_lengths,
            self.stopping,
            self.length_penalty,
            constraint,
        )


def decode_limits(inputs: tf.Tensor, extra_length: int, max_length: int) -> tuple[int, tf.Tensor]:
    """How long outputs may be.

    Args:
      inputs: [B, S] ids, S static.
      extra_length: sentence b may have its input length + extra_length tokens.
      max_length: the model's longest sequence.

    Returns:
      (L, the static number of output positions, EOS included; max_lengths
      [B], each sentence's most tokens before EOS, below L). At most
      max_length - 1 tokens come before EOS, so learned position tables are
      never read past their end; when S is unknown (a SavedModel signature),
      L is max_length.
    """
    most_tokens = max_length - 1
    if inputs.shape[1] is not None:
        most_tokens = min(inputs.shape[1] + extra_length, most_tokens)
    lengths = tf.reduce_sum(tf.cast(inputs != PAD_ID, tf.int32), axis=1)
    return most_tokens + 1, tf.minimum(lengths + extra_length, most_tokens)


def minimum_lengths(inputs: tf.Tensor, min_length: int, max_lengths: tf.Tensor) -> tf.Tensor:
    """[B] fewest tokens before EOS: min_length, but 0 for an empty input (EOS or PAD only).

    Args:
      inputs: [B, S] ids.
      min_length: the minimum for a non-empty input.
      max_lengths: [B] the most tokens before EOS, which the minimum never exceeds.
    """
    has_words = tf.reduce_any((inputs != PAD_ID) & (inputs != EOS_ID), axis=1)
    return tf.where(has_words, tf.minimum(min_length, max_lengths), 0)
