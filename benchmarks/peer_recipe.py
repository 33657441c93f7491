"""How the PyTorch peer of the Multi30k benchmark trains and decodes: our recipe, or its own.

With `Recipe.ours(hparams)` the peer takes from an hparams set what our
trainer and decoder take from it, applied the same way, so that the two
toolkits differ in their code, not in their settings:

  - the schedule: `learning_rate * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)`;
  - batches: tensor2tensor's length buckets (`t2t_keras.data.buckets`), a
    bucket's batch holding `batch_size // boundary` pairs, a pair's length the
    longer of its two sides, pairs above `max_length` dropped;
  - label smoothing as ours: 1 - eps on the true token, eps / (V - 1) on each other;
  - residual, attention and ReLU dropout;
  - weights from N(0, initializer_stddev) (`peer_models.marian_model`);
  - decoding: the beam, up to input + `extra_length` tokens, and `alpha` as the
    exponent of the length penalty. Transformers divides a beam's log-probability
    by length^alpha (our `penalty=length` form); our default is GNMT's
    ((5 + length) / 6)^alpha: the one difference left.

`Recipe.own(...)` is the peer's usual setup: a linear warmup to a peak rate
then inverse square root decay, batches of at most N tokens (padding counted)
formed from pairs sorted by length, transformers' label smoothing (eps / V on
every token), no length penalty.

No TensorFlow: the hparams sets and the bucket rule are plain Python.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

import torch

from t2t_keras.data.buckets import bucket_boundaries, bucket_rows
from t2t_keras.models.transformer_hparams import TransformerHParams

Pairs = Sequence[tuple[list[int], list[int]]]


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Every setting of the peer's training and decoding that is not its code."""

    name: str  # "ours" or "own".
    hparams: TransformerHParams  # Model sizes; with "ours", everything else too.
    peak_learning_rate: float = 0.0  # own: the rate at the end of warmup.
    warmup_steps: int = 0
    batch_tokens: int = 0  # own: tokens per batch, padding counted.
    beam_size: int = 4
    extra_length: int = 50
    length_penalty: float = 1.0  # Transformers' exponent of the length.

    @classmethod
    def ours(cls, hparams: TransformerHParams) -> Recipe:
        if hparams.learning_rate_schedule != "paper":
            raise ValueError(
                f"--recipe=ours follows the paper's schedule; the set's is "
                f"{hparams.learning_rate_schedule!r}. Use a set with learning_rate_schedule=paper."
            )
        if hparams.layer_norm_position != "post":
            raise ValueError("Marian is post-norm: --recipe=ours needs layer_norm_position=post.")
        return cls(
            "ours",
            hparams,
            warmup_steps=hparams.warmup_steps,
            beam_size=hparams.beam_size,
            extra_length=hparams.extra_length,
            length_penalty=hparams.alpha,
        )

    @classmethod
    def own(
        cls,
        hparams: TransformerHParams,
        peak_learning_rate: float,
        warmup_steps: int,
        batch_tokens: int,
        beam_size: int,
        extra_length: int,
    ) -> Recipe:
        return cls(
            "own", hparams, peak_learning_rate, warmup_steps, batch_tokens, beam_size, extra_length
        )

    def learning_rate(self, step: int) -> float:
        """The rate of update `step`, counted from 1."""
        warmup = self.warmup_steps
        if self.name == "ours":
            scale = self.hparams.learning_rate * self.hparams.d_model**-0.5
            return scale * min(step**-0.5, step * warmup**-1.5)
        return self.peak_learning_rate * min(step / warmup, (warmup / step) ** 0.5)

    def epoch_batches(self, pairs: Pairs, rng: random.Random) -> list[list[int]]:
        """One epoch's batches of pair indices, in a shuffled order."""
        lengths = [max(len(source), len(target)) for source, target in pairs]
        if self.name == "own":
            return _sorted_batches(lengths, self.batch_tokens, rng)
        hparams = self.hparams
        boundaries = bucket_boundaries(
            hparams.min_length_bucket, hparams.max_length, hparams.length_bucket_step
        )
        buckets: dict[int, list[int]] = {}
        for index, length in enumerate(lengths):
            if length <= hparams.max_length:
                boundary = next(b for b in boundaries if b >= length)
                buckets.setdefault(boundary, []).append(index)
        batches = []
        for boundary, members in buckets.items():
            rng.shuffle(members)
            rows = bucket_rows(boundary, hparams.batch_size)
            batches += [members[i : i + rows] for i in range(0, len(members), rows)]
        rng.shuffle(batches)
        return batches

    def loss_sum(self, logits: torch.Tensor, labels: torch.Tensor, pad_id: int) -> torch.Tensor:
        """Label-smoothed cross-entropy summed over the non-PAD labels."""
        epsilon = self.hparams.label_smoothing
        if self.name == "own":
            return torch.nn.functional.cross_entropy(
                logits.flatten(0, 1),
                labels.flatten(),
                ignore_index=pad_id,
                label_smoothing=epsilon,
                reduction="sum",
            )
        log_probs = torch.log_softmax(logits.float(), dim=-1)
        true = log_probs.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        others = log_probs.sum(-1) - true
        loss = -(1.0 - epsilon) * true - epsilon / (logits.shape[-1] - 1) * others
        return (loss * labels.ne(pad_id)).sum()

    def settings(self) -> dict:
        """The recipe as the JSON line reports it."""
        hparams = self.hparams
        fields = {
            "recipe": self.name,
            "warmup_steps": self.warmup_steps,
            "beam_size": self.beam_size,
            "extra_length": self.extra_length,
            "length_penalty": self.length_penalty,
            "label_smoothing": hparams.label_smoothing,
            "dropout": hparams.dropout,
        }
        if self.name == "ours":
            return fields | {
                "hparams_learning_rate": hparams.learning_rate,
                "peak_learning_rate": self.learning_rate(self.warmup_steps),
                "batch_size": hparams.batch_size,
                "batching": "length buckets, batch_size // boundary pairs",
            }
        return fields | {
            "peak_learning_rate": self.peak_learning_rate,
            "batch_tokens": self.batch_tokens,
        }


def _sorted_batches(lengths: list[int], batch_tokens: int, rng: random.Random) -> list[list[int]]:
    """Pairs of about one length together; longest * count <= batch_tokens (a longer pair alone)."""
    order = sorted(range(len(lengths)), key=lambda index: (lengths[index], rng.random()))
    batches: list[list[int]] = [[]]
    for index in order:
        if batches[-1] and lengths[index] * (len(batches[-1]) + 1) > batch_tokens:
            batches.append([])
        batches[-1].append(index)
    rng.shuffle(batches)
    return batches
