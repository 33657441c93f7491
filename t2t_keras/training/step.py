"""One training update under any tf.distribute strategy, with gradient accumulation.

The step draws `gradient_accumulation_steps` micro-batches per replica, sums
the gradients of the *summed* token losses, all-reduces them once, and divides
by the number of target tokens in the global batch. So the update is the same
for one replica with a batch of N tokens, two replicas with N / 2 each, or one
replica accumulating two micro-batches of N / 2 (up to float rounding).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from t2t_keras.data.ids import PAD_ID
from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.training.loss import smoothed_cross_entropy_sum

SUM = tf.distribute.ReduceOp.SUM


class TrainStep:
    """Callable `step(distributed_iterator) -> metrics` running one optimizer update.

    Args:
      model: a built Transformer (created under `strategy.scope()`).
      optimizer: from `optimizer_from_hparams` (gradients arrive reduced), or a
        keras LossScaleOptimizer around one for float16.
      hparams: label_smoothing, gradient_accumulation_steps, clip_gradient_norm,
        batch_size.
      strategy: the strategy the model's variables belong to.
      jit_compile: XLA-compile each replica's forward and backward pass.
      compile_loss: XLA-compile the loss and its gradient (`--xla=attention`),
        1.6x as fast on a CPU as TensorFlow's kernels alone.

    The metrics, reduced over replicas: "loss" (label-smoothed cross-entropy
    per target token), "grad_norm" (of the global gradient, before clipping),
    "source_tokens" and "target_tokens" (non-PAD tokens in the global batch).
    """

    def __init__(
        self,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        hparams: TransformerHParams,
        strategy: tf.distribute.Strategy,
        jit_compile: bool = False,
        compile_loss: bool = False,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.strategy = strategy
        self.label_smoothing = hparams.label_smoothing
        self.accumulation = hparams.gradient_accumulation_steps
        self.clip_norm = hparams.clip_gradient_norm
        self.token_budget = float(hparams.batch_size)
        self.compile_loss = compile_loss
        self.loss_scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        if not optimizer.built:  # Its variables cannot be created inside the step's graph.
            with strategy.scope():
                optimizer.build(model.trainable_variables)
        self._micro_batch = tf.function(self._gradients, jit_compile=jit_compile, autograph=False)
        self._function = tf.function(self._step, autograph=False)

    def __call__(self, iterator: Any) -> dict[str, tf.Tensor]:
        return self._function(iterator)

    def tracing_count(self) -> int:
        """How often the step's Python has been traced: once per run.

        The iterator's batches have unknown lengths, so one graph serves every
        bucket shape; under `jit_compile` XLA compiles the replica step once
        per shape it meets, which tracing does not repeat.
        """
        return int(self._function.experimental_get_tracing_count())

    def _step(self, iterator: Any) -> dict[str, tf.Tensor]:
        sums = self.strategy.run(self._micro_batch, args=(next(iterator),))
        for _ in range(self.accumulation - 1):
            sums = self.strategy.run(self._accumulate, args=(next(iterator), sums))
        metrics = self.strategy.run(self._apply, args=(sums,))
        # Every replica holds the same reduced values: take the first.
        return {
            name: self.strategy.experimental_local_results(value)[0]
            for name, value in metrics.items()
        }

    def _gradients(self, batch: dict[str, tf.Tensor]) -> dict[str, Any]:
        """One micro-batch on one replica: gradients of the summed loss, and counts."""
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            logits = self.model(batch, training=True)
            loss_sum, target_tokens = smoothed_cross_entropy_sum(
                logits, batch["targets"], self.label_smoothing, self.compile_loss
            )
            # Divided by a constant about the tokens per micro-batch, so gradients have
            # a per-token size (float16 would overflow on sums); _apply undoes it.
            scaled = loss_sum / self.token_budget
            if self.loss_scaled:
                scaled = self.optimizer.scale_loss(scaled)
        gradients = [tf.convert_to_tensor(g) for g in tape.gradient(scaled, variables)]
        source_tokens = tf.reduce_sum(tf.cast(batch["inputs"] != PAD_ID, tf.float32))
        return {
            "gradients": gradients,
            "loss": loss_sum,
            "target_tokens": target_tokens,
            "source_tokens": source_tokens,
        }

    def _accumulate(self, batch: dict[str, tf.Tensor], sums: dict[str, Any]) -> dict[str, Any]:
        return tf.nest.map_structure(tf.add, sums, self._micro_batch(batch))

    def _apply(self, sums: dict[str, Any]) -> dict[str, tf.Tensor]:
        """All-reduces the sums, normalizes by global target tokens, clips, applies."""
        context = tf.distribute.get_replica_context()
        sums = context.all_reduce(SUM, sums)
        tokens = tf.maximum(sums["target_tokens"], 1.0)
        gradients = [g * (self.token_budget / tokens) for g in sums["gradients"]]
        # With float16 the gradients are still multiplied by the loss scale.
        scale = tf.cast(self.optimizer.dynamic_scale, tf.float32) if self.loss_scaled else 1.0
        norm = tf.linalg.global_norm(gradients)
        if self.clip_norm > 0.0:
            gradients, _ = tf.clip_by_global_norm(gradients, self.clip_norm * scale, use_norm=norm)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables, strict=True))
        return {
            "loss": sums["loss"] / tokens,
            "grad_norm": norm / scale,
            "source_tokens": sums["source_tokens"],
            "target_tokens": sums["target_tokens"],
        }
