"""Evaluation while training: dev loss, per-token accuracy, perplexity, and real BLEU.

BLEU here is what a user would report: a fixed subset of dev sentences decoded
with the cached beam search, detokenized by the vocabulary, scored by
sacreBLEU against the references (not tensor2tensor's approx_bleu on
teacher-forced argmax).
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from t2t_keras.data import damage
from t2t_keras.data.batching import BatchingConfig
from t2t_keras.data.problem import Problem
from t2t_keras.metrics.output_metrics import OUTPUT_METRICS, score
from t2t_keras.search.settings import DecodeSettings
from t2t_keras.serving.file_decoding import translate_lines
from t2t_keras.serving.translator import Translator
from t2t_keras.training.loss import correct_tokens, smoothed_cross_entropy_sum


class Evaluator:
    """Scores a model on a problem's dev split; reuses its compiled functions.

    Args:
      model: a built Transformer.
      problem: the problem trained on.
      data_dir: where the dev shards are.
      batching_config: how dev batches are made (the training's, `hparams.batching()`).
      decode_settings: how the BLEU subset is decoded (`DecodeHParams.resolve`).
      max_batches: dev batches for loss and accuracy; 0 = the whole split.
      bleu_examples: dev sentences decoded for the problem's output metrics
        (`t2t_keras.metrics.output_metrics`); 0 = none.
      jit_compile: XLA-compile the beam search.
      skip_corrupt: read damaged dev shards up to their first bad record.

    An empty dev split is no error: evaluation is skipped, with a warning.
    """

    def __init__(
        self,
        model: keras.Model,
        problem: Problem,
        data_dir: str,
        batching_config: BatchingConfig,
        decode_settings: DecodeSettings,
        max_batches: int = 0,
        bleu_examples: int = 0,
        jit_compile: bool = True,
        skip_corrupt: bool = False,
    ) -> None:
        self.model = model
        self.problem = problem
        self.batching_config = batching_config
        self.decode_settings = decode_settings
        self.data_dir = data_dir
        self.max_batches = max_batches
        self.output_metrics = [m for m in problem.eval_metrics() if m in OUTPUT_METRICS]
        self.bleu_examples = bleu_examples if self.output_metrics else 0
        self.jit_compile = jit_compile
        self.skip_corrupt = skip_corrupt
        self._sums = tf.function(self._batch_sums, reduce_retracing=True, autograph=False)
        self._dataset: tf.data.Dataset | None = None
        self._translator: Translator | None = None
        self._sources: list[str] = []
        self._references: list[str] = []

    def __call__(self) -> dict[str, float]:
        """{"loss", "accuracy", "perplexity"} and the problem's output metrics; {}: no dev data."""
        what = f"{self.problem.name} dev"
        with damage.naming_damaged_shards(self.problem.data_files(self.data_dir, "dev"), what):
            return self._evaluate()

    def _evaluate(self) -> dict[str, float]:
        metrics = self.token_metrics()
        if not metrics:
            logging.warning(
                "The dev split of %s in %s has no examples: nothing to evaluate on.",
                self.problem.name,
                self.data_dir,
            )
            return {}
        if self.bleu_examples:
            hypotheses = self.decode_subset()
            for name in self.output_metrics:
                metrics[name], _ = score(name, hypotheses, self._references)
        return metrics

    def token_metrics(self) -> dict[str, float]:
        """Cross-entropy per target token (no smoothing), its exp, and argmax accuracy.

        {} when the dev split has no target tokens.
        """
        if self._dataset is None:
            self._dataset = self.problem.dataset(
                "dev", self.batching_config, self.data_dir, skip_corrupt=self.skip_corrupt
            )
        dataset = self._dataset.take(self.max_batches) if self.max_batches else self._dataset
        totals = np.zeros(3)
        for batch in dataset:
            totals += [float(value) for value in self._sums(batch)]
        loss_sum, correct, tokens = (float(total) for total in totals)
        if not tokens:
            return {}
        loss = loss_sum / tokens
        return {
            "loss": loss,
            "accuracy": correct / tokens,
            "perplexity": math.exp(min(loss, 700.0)),
        }

    def _batch_sums(self, batch: dict[str, tf.Tensor]) -> tuple[tf.Tensor, ...]:
        logits = self.model(batch, training=False)
        loss_sum, tokens = smoothed_cross_entropy_sum(logits, batch["targets"], 0.0)
        return loss_sum, correct_tokens(logits, batch["targets"]), tokens

    def decode_subset(self) -> list[str]:
        """The first bleu_examples dev sentences decoded with decode_settings."""
        if self._translator is None:  # Read the subset and build the search once.
            pairs = self.problem.text_examples(self.data_dir, "dev", self.bleu_examples)
            self._sources = [source for source, _ in pairs]
            self._references = [target for _, target in pairs]
            encoders = self.problem.feature_encoders(self.data_dir)
            self._translator = Translator(
                self.model,
                encoders,
                self.decode_settings,
                self.jit_compile,
                self.problem.tree_constraint(encoders),
            )
        translations = translate_lines(self._translator, self._sources, self.problem)
        return [translation.text for translation in translations]
