"""Decoding id batches with a Transformer: greedy or beam search, or sampling, compiled."""

from __future__ import annotations

import functools
from typing import Any

import tensorflow as tf
from absl import logging

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.models.product_step import ProductDecoding
from t2t_keras.models.transformer import Transformer
from t2t_keras.modes import DECODE_PRECISIONS
from t2t_keras.search.beam import BeamSearch
from t2t_keras.search.greedy import greedy_search
from t2t_keras.search.sampling import Sampler, best_first
from t2t_keras.search.settings import SearchSettings
from t2t_keras.search.tree_constraint import TreeConstraint


class ModelSearch(tf.Module):
    """What every search over a model holds: the model, the settings, the constraint.

    Args:
      model: a built Transformer.
      settings: the search's settings, resolved (`DecodeHParams.resolve`).
      tree_tokens: the tree symbols of the vocabularies (a parsing problem's
        `tree_constraint`), applied when settings.tree_constraint; None: no constraint.
      jit_compile: XLA-compile the search.
    """

    def __init__(
        self,
        model: Transformer,
        settings: SearchSettings,
        tree_tokens: TreeTokens | None = None,
        jit_compile: bool = True,
    ) -> None:
        super().__init__()
        self.model = model
        self.settings = settings
        self.max_length = model.hparams.max_length
        self.tree_tokens = tree_tokens if settings.tree_constraint else None
        self.jit_compile = jit_compile
        self.sampler = Sampler.of(settings)  # None unless settings.sampling.

    def constraint(self, inputs: tf.Tensor, max_lengths: tf.Tensor) -> TreeConstraint | None:
        """The tree constraint of sentences inputs [B, S] with max_lengths [B], or None."""
        if self.tree_tokens is None:
            return None
        vocab_size = self.model.hparams.targets_vocab_size()  # The logits' width.
        return TreeConstraint(self.tree_tokens, vocab_size, inputs, max_lengths)


class Decoder(ModelSearch):
    """Runs the cached decoder under greedy (beam_size 1) or beam search, or samples.

    The whole search, encoder included, is one `tf.function` traced once, for
    inputs of any shape, and XLA-compiled when `jit_compile`: XLA compiles it
    once per input shape it meets, but the Python tracing and graph
    building, which cost about as much again, are paid once, and a
    compilation kept on disk (`compilation_cache`) is only loaded.

    Args:
      model: a built Transformer.
      settings: the search's settings, resolved (`DecodeHParams.resolve`). The
        longest output is input length + extra_length tokens before EOS, and
        never more than max_length - 1; with return_beams all beam_size
        hypotheses come back, best first (the search then runs until all are
        final); an input of EOS alone may still give EOS alone whatever
        min_length; beam_size 1 with stopping "first_k" is greedy search.
        With sampling, row b * R + r of the search draws sample r of input b,
        its stream (`sampling`), and the R = samples_per_input samples come
        back best first.
      tree_tokens: the tree symbols of the vocabularies (a parsing problem's
        `tree_constraint`; `tree_constraint.TreeConstraint`), applied when
        settings.tree_constraint; None: no constraint.
      jit_compile: XLA-compile the search.
      precision: "float32", or "bfloat16": the step's dense products in bfloat16
        by TensorFlow's kernels, the rest compiled in segments around them
        (`models.product_step`; jit_compile is then moot). A model without leaf
        inputs only.
    """

    def __init__(
        self,
        model: Transformer,
        settings: SearchSettings,
        tree_tokens: TreeTokens | None = None,
        jit_compile: bool = True,
        precision: str = "float32",
    ) -> None:
        if precision not in DECODE_PRECISIONS:
            raise ValueError(f"precision: one of {', '.join(DECODE_PRECISIONS)}, not {precision!r}")
        products = precision == "bfloat16"
        super().__init__(model, settings, tree_tokens, jit_compile and not products)
        self.precision = precision
        # What the search calls to encode and step: the model, or its product step.
        self.decoding: Any = ProductDecoding(model) if products else model

    @functools.cached_property
    def _compiled(self) -> Any:
        """The compiled search itself, for rows already at most max_length long
        (graphs of unknown shape, such as a SavedModel's, truncate beforehand)."""
        return tf.function(
            self._search_ids,
            jit_compile=self.jit_compile,
            input_signature=[tf.TensorSpec([None, None], tf.int32, name="ids")],
            # The search is written with TensorFlow's control flow: converting its
            # Python (autograph) would only triple the tracing time.
            autograph=False,
        )

    @functools.cached_property
    def _shapes(self) -> set[tuple[int, ...]]:
        """The shapes searched eagerly."""
        return set()

    def __call__(self, inputs: Any) -> tuple[tf.Tensor, tf.Tensor]:
        """Decodes a batch.

        Args:
          inputs: [B, S] int ids, each row ending with EOS then PAD. Rows longer
            than max_length are cut to it (ending in EOS) with a logged warning.

        Returns:
          (ids [B, N, L] int32: EOS then PAD after each hypothesis, best first;
          scores [B, N] float32 length-normalized log-probabilities), N = 1, or
          beam_size with return_beams, or samples_per_input with sampling.
        """
        inputs = tf.convert_to_tensor(inputs, tf.int32)
        return self.search(self._truncate(inputs))

    def search(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The compiled search of int32 ids [B, S] already at most max_length wide."""
        if tf.executing_eagerly():
            self._shapes.add(tuple(inputs.shape))
        return self._compiled(inputs)

    def compilations(self) -> int:
        """How many input shapes the search has been compiled for (eagerly, in this
        process): XLA compiles, or loads from its disk cache, one search per shape,
        so `Translator` pads batches to a few shapes (`search.shapes`)."""
        return len(self._shapes)

    def tracings(self) -> int:
        """How many search graphs have been traced: one, whatever the shapes searched."""
        return int(self._compiled.experimental_get_tracing_count())

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
        settings = self.settings
        if settings.sampling and settings.samples_per_input > 1:
            # A row per sample: row b * R + r draws sample r of input b.
            samples = settings.samples_per_input
            ids, scores = self._search_rows(tf.repeat(inputs, samples, axis=0))
            return best_first(ids, scores, samples)
        return self._search_rows(inputs)

    def _search_rows(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        settings = self.settings
        decode_length, max_lengths = decode_limits(inputs, settings.extra_length, self.max_length)
        min_lengths = minimum_lengths(inputs, settings.min_length, max_lengths)
        constraint = self.constraint(inputs, max_lengths)
        if not settings.is_greedy:
            return self._beam_search(inputs, decode_length, max_lengths, min_lengths, constraint)
        state, step = self.decoding.start_decoding(inputs, decode_length, 1)
        return greedy_search(
            step,
            state,
            decode_length,
            max_lengths,
            settings.alpha,
            min_lengths,
            settings.length_penalty,
            constraint,
            self.sampler,
        )

    def _beam_search(
        self,
        inputs: tf.Tensor,
        decode_length: int | tf.Tensor,
        max_lengths: tf.Tensor,
        min_lengths: tf.Tensor,
        constraint: TreeConstraint | None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Beam search of inputs [B, S], its first position on one row a sentence
        (`BeamSearch.after_first_position`), then the K beams of each."""
        settings, model = self.settings, self.decoding
        beams = settings.beam_size
        memory = model.encode_for_decoding(inputs, beams)
        search = BeamSearch(
            model.decoding_step(memory, decode_length, beams), beams, decode_length,
            max_lengths, min_lengths, settings.alpha, settings.length_penalty,
            settings.stopping, settings.num_returned, constraint,
        )  # fmt: skip
        one_row_state, one_row = model.start_one_row(memory, beams)
        first = search.after_first_position(one_row, one_row_state)
        batch = search.batch
        everyone = tf.ones([batch], tf.bool)
        state = model.first_positions(
            model.empty_decoding_state(batch, decode_length, beams),
            first.model_state,
            everyone,
            tf.range(batch),
        )
        first = first._replace(model_state=state, parents=tf.repeat(tf.range(batch) * beams, beams))
        (final,) = tf.while_loop(
            search.keep_going, lambda beams: (search.advance(beams),), (first,)
        )
        return search.results(final)


def decode_limits(
    inputs: tf.Tensor, extra_length: int, max_length: int
) -> tuple[int | tf.Tensor, tf.Tensor]:
    """How long outputs may be.

    Args:
      inputs: [B, S] ids.
      extra_length: sentence b may have its input length + extra_length tokens.
      max_length: the model's longest sequence.

    Returns:
      (L, the number of output positions, EOS included: S + extra_length + 1;
      max_lengths [B], each sentence's most tokens before EOS, below L). At
      most max_length - 1 tokens come before EOS, so learned position tables
      are never read past their end. L is static when S is; when S is unknown
      (a SavedModel's signature), L is a tensor that XLA, which compiles each
      input shape, still knows as a constant.
    """
    lengths = tf.reduce_sum(tf.cast(inputs != PAD_ID, tf.int32), axis=1)
    max_lengths = tf.minimum(lengths + extra_length, max_length - 1)
    width = inputs.shape[1] if inputs.shape[1] is not None else tf.shape(inputs)[1]
    return output_positions(width, extra_length, max_length), max_lengths


def output_positions(
    width: int | tf.Tensor, extra_length: int | tf.Tensor, max_length: int
) -> int | tf.Tensor:
    """L, the output positions of inputs `width` wide (`decode_limits`): width +
    extra_length + 1, at most max_length; a Python int when both are."""
    if isinstance(width, int) and isinstance(extra_length, int):
        return min(width + extra_length, max_length - 1) + 1
    return tf.minimum(width + extra_length, max_length - 1) + 1


def minimum_lengths(inputs: tf.Tensor, min_length: int, max_lengths: tf.Tensor) -> tf.Tensor:
    """[B] fewest tokens before EOS: min_length, but 0 for an empty input (EOS or PAD only).

    Args:
      inputs: [B, S] ids.
      min_length: the minimum for a non-empty input.
      max_lengths: [B] the most tokens before EOS, which the minimum never exceeds.
    """
    has_words = tf.reduce_any((inputs != PAD_ID) & (inputs != EOS_ID), axis=1)
    return tf.where(has_words, tf.minimum(min_length, max_lengths), 0)
