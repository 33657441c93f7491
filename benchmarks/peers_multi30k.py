"""PyTorch peer of the Multi30k benchmark: Hugging Face Marian trained from scratch.

Trains transformers' MarianMTModel (PyTorch, fp32, CPU) with the sizes of
--hparams_set (transformer_small_cpu: d_model 256, d_ff 1024, 4 heads, 3+3
post-norm layers, sinusoid positions, shared embeddings) on the same data and
the same 8k SentencePiece vocabulary as `train_multi30k.py`, within the same
budget (`training_budget.py`: --steps, --minutes, or by default 30
--reference_minutes, scaled by the float32 matmul rate TensorFlow measures
here, as ours), then decodes the raw test files with beam search and scores them with
`multi30k.score`, so its JSON line compares with ours, its "loss_curve"
included (`loss_curves.py` draws both).

By default (--recipe=ours) the peer also takes the set's recipe as our trainer
and decoder apply it: schedule, length-bucketed batches, label smoothing,
dropout, beam, alpha and output length (`peer_recipe.py` lists each, and the
one difference left, the length penalty's form): the comparison is then of
the toolkits, not of their settings. --recipe=own trains with the peer's own
settings (warmup, peak rate and batch tokens from its flags).

Install the peers into the venv first: on a CPU-only machine like ours
`pip install torch==2.13.0` (or any CPU build of torch), then
`pip install -e '.[peers]'`. Run from the repository root:

    .venv/bin/python benchmarks/peers_multi30k.py --reference_minutes=30 --work_dir=/tmp/m30k

A work_dir that already holds data/vocab.text2text_tmpdir.model from our
benchmark is reused. The JSON line goes to stdout, logs to stderr, and the
hypotheses to work_dir/peer/<test set>.decodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence

import sentencepiece as spm
import torch
import training_budget
from absl import app, flags, logging
from loss_curves import curve_point
from multi30k import PROBLEM, corpus_path, prepare_data, read_lines, score
from peer_models import (
    MARIAN_VERSION,
    check_marian_can_copy,
    marian_model,
    set_threads,
    teacher_forced_logits,
)
from peer_recipe import Recipe
from quality_curve import LATE_SECONDS
from transformers import MarianMTModel

import t2t_keras.hparams  # noqa: F401  Registers the hparams sets, without TensorFlow.
from t2t_keras import registry
from t2t_keras.benchmark.budget import Budget

# The project's id convention (t2t_keras.data.ids), without importing TensorFlow.
PAD_ID, EOS_ID = 0, 1

flags.DEFINE_string("work_dir", None, "Where data and decodes go; a temporary folder if unset.")
flags.DEFINE_integer("threads", 2, "torch intra-op and inter-op threads.")
flags.DEFINE_integer("seed", 1, "Seed of the initialization, dropout and batch order.")
flags.DEFINE_enum(
    "recipe",
    "ours",
    ["ours", "own"],
    "ours: the schedule, batching, label smoothing, dropout, beam, alpha and length rule of "
    "--hparams_set, as our trainer and decoder apply them (a comparison of toolkits); own: "
    "the peer's settings below (--batch_tokens, --peak_learning_rate, --warmup_steps, "
    "--beam_size, --extra_length).",
)
flags.DEFINE_string(
    "hparams_set", "transformer_small_cpu", "The recipe and sizes of --recipe=ours."
)
flags.DEFINE_string("hparams", "", "Overrides of --hparams_set, as t2t-trainer's.")
flags.DEFINE_integer("batch_tokens", 4096, "own: tokens per batch, padding counted.")
flags.DEFINE_float("peak_learning_rate", 1e-3, "own: learning rate at the end of warmup.")
flags.DEFINE_integer("warmup_steps", 1000, "own: linear warmup, then inverse square root decay.")
flags.DEFINE_integer("beam_size", 4, "own: beam width of decoding.")
flags.DEFINE_integer("extra_length", 50, "own: output tokens allowed beyond the longest input.")
flags.DEFINE_integer("decode_batch", 32, "Sentences per decoding batch.")
flags.DEFINE_list(
    "curve_minutes",
    [],
    "Also score the weights as they were at each of these minutes of the budget "
    "(quality_curve.py).",
)
FLAGS = flags.FLAGS


def encode(processor: spm.SentencePieceProcessor, text: str) -> list[int]:
    return [*processor.encode(text), EOS_ID]


def training_pairs(
    processor: spm.SentencePieceProcessor, max_length: int
) -> list[tuple[list[int], list[int]]]:
    """train.en/train.de as ids with EOS; blank sides and pairs over max_length dropped."""
    pairs = []
    sources, targets = (read_lines(corpus_path("train", side)) for side in ("en", "de"))
    for source, target in zip(sources, targets, strict=True):
        if source.strip() and target.strip():
            pair = encode(processor, source), encode(processor, target)
            if max(map(len, pair)) <= max_length:
                pairs.append(pair)
    logging.info("%d training pairs of %d.", len(pairs), len(sources))
    return pairs


def padded(rows: Sequence[list[int]]) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [PAD_ID] * (width - len(row)) for row in rows])


def batches_forever(
    pairs: Sequence[tuple[list[int], list[int]]], recipe: Recipe, rng: random.Random
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(source ids, target ids) batches, epoch after epoch, padded with PAD."""
    while True:
        for batch in recipe.epoch_batches(pairs, rng):
            yield padded([pairs[i][0] for i in batch]), padded([pairs[i][1] for i in batch])


class Snapshots:
    """The model's weights as they were at given wall seconds of training."""

    def __init__(self, seconds: Sequence[float]) -> None:
        self.pending = sorted(seconds)
        self.taken: list[tuple[float, int, dict[str, torch.Tensor]]] = []

    def take(self, model: MarianMTModel, step: int, seconds: float) -> None:
        """Keeps a copy of the weights for each mark `seconds` has passed."""
        while self.pending and seconds >= self.pending[0]:
            weights = {name: value.detach().clone() for name, value in model.state_dict().items()}
            self.taken.append((self.pending.pop(0), step, weights))


def train(
    model: MarianMTModel,
    pairs: Sequence[tuple[list[int], list[int]]],
    recipe: Recipe,
    budget: Budget,
    snapshots: Snapshots | None = None,
) -> dict:
    """Trains until the budget's steps are done or its wall time is spent.

    Returns steps, seconds, target tokens and the loss curve: per 100 steps, the
    loss per target token over them, as our trainer's `TrainResult.loss_curve`.
    """
    optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
    batches = batches_forever(pairs, recipe, random.Random(FLAGS.seed))
    step, tokens, curve = 0, 0, []
    interval_loss, interval_tokens = 0.0, 0
    model.train()
    start = time.monotonic()
    while budget.allows(step, time.monotonic() - start):
        if snapshots is not None:
            snapshots.take(model, step, time.monotonic() - start)
        step += 1
        sources, labels = next(batches)
        for group in optimizer.param_groups:
            group["lr"] = recipe.learning_rate(step)
        logits = teacher_forced_logits(model, sources, labels, PAD_ID)
        count = int(labels.ne(PAD_ID).sum())
        loss_sum = recipe.loss_sum(logits, labels, PAD_ID)
        optimizer.zero_grad(set_to_none=True)
        (loss_sum / count).backward()
        optimizer.step()
        tokens += count
        interval_loss += loss_sum.item()
        interval_tokens += count
        if step % 100 == 0:
            seconds = time.monotonic() - start
            curve.append(curve_point(step, seconds, tokens, interval_loss / interval_tokens))
            logging.info(
                "step %d loss %.3f lr %.2e %.0f target tokens/s",
                step,
                curve[-1]["loss"],
                recipe.learning_rate(step),
                tokens / seconds,
            )
            interval_loss, interval_tokens = 0.0, 0
    if snapshots is not None:  # A minute that ends with the budget is the final model.
        snapshots.take(model, step, time.monotonic() - start + LATE_SECONDS)
    return {
        "steps": step,
        "seconds": time.monotonic() - start,
        "tokens": tokens,
        "loss_curve": curve,
    }


def output_ids(row: Sequence[int]) -> list[int]:
    """A generated row without its start symbol, cut at its first EOS."""
    ids = list(row[1:])
    return ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids


@torch.inference_mode()
def translate(
    model: MarianMTModel,
    processor: spm.SentencePieceProcessor,
    sources: Sequence[str],
    recipe: Recipe,
) -> list[str]:
    """Beam search over sources in batches sorted by length; outputs in input order."""
    model.eval()
    encoded = {i: encode(processor, text) for i, text in enumerate(sources) if text.strip()}
    order = sorted(encoded, key=lambda index: len(encoded[index]))
    outputs = [""] * len(sources)
    for start in range(0, len(order), FLAGS.decode_batch):
        chunk = order[start : start + FLAGS.decode_batch]
        inputs = padded([encoded[index] for index in chunk])
        generated = model.generate(
            input_ids=inputs,
            attention_mask=inputs.ne(PAD_ID),
            num_beams=recipe.beam_size,
            early_stopping=True,
            length_penalty=recipe.length_penalty,
            max_new_tokens=min(inputs.shape[1] + recipe.extra_length, recipe.hparams.max_length),
            bad_words_ids=[[PAD_ID]],  # As in Marian's configs: PAD is never an output.
        )
        for index, row in zip(chunk, generated.tolist(), strict=True):
            outputs[index] = processor.decode(output_ids(row))
    return outputs


def evaluate(
    model: MarianMTModel,
    processor: spm.SentencePieceProcessor,
    recipe: Recipe,
    name: str,
    out_dir: str,
) -> dict:
    """Decodes the raw test set `name`, writes its decodes, and scores them."""
    sources, references = (read_lines(corpus_path(name, side)) for side in ("en", "de"))
    start = time.monotonic()
    hypotheses = translate(model, processor, sources, recipe)
    seconds = time.monotonic() - start
    with open(os.path.join(out_dir, f"{name}.decodes"), "w", encoding="utf-8") as file:
        file.writelines(f"{line}\n" for line in hypotheses)
    result = score(sources, hypotheses, references)
    result["decode_seconds"] = round(seconds, 1)
    result["sentences_per_second"] = round(len(sources) / seconds, 2)
    logging.info("%s: %s", name, result["sacrebleu"])
    return result


def resolve_recipe() -> Recipe:
    """--recipe resolved once: the hparams set's settings, or the peer's own flags."""
    hparams = registry.hparams(FLAGS.hparams_set).override(FLAGS.hparams)
    check_marian_can_copy(hparams)
    if FLAGS.recipe == "ours":
        return Recipe.ours(hparams)
    return Recipe.own(
        hparams,
        FLAGS.peak_learning_rate,
        FLAGS.warmup_steps,
        FLAGS.batch_tokens,
        FLAGS.beam_size,
        FLAGS.extra_length,
    )


def main(argv: list[str]) -> None:
    del argv
    set_threads(FLAGS.threads)
    budget, machine_facts = training_budget.resolve()
    logging.info("Budget: %s.", budget.description)
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="multi30k_peer_")
    out_dir = os.path.join(work_dir, "peer")
    os.makedirs(out_dir, exist_ok=True)
    with contextlib.redirect_stdout(sys.stderr):  # Data generation prints; stdout is the JSON.
        data_dir = prepare_data(work_dir)
    model_path = os.path.join(data_dir, f"vocab.{PROBLEM}.model")
    processor = spm.SentencePieceProcessor(model_file=model_path)
    if (processor.pad_id(), processor.eos_id()) != (PAD_ID, EOS_ID):
        raise ValueError(f"{model_path} does not have PAD={PAD_ID} and EOS={EOS_ID}.")
    recipe = resolve_recipe()
    pairs = training_pairs(processor, recipe.hparams.max_length)
    torch.manual_seed(FLAGS.seed)
    model = marian_model(
        recipe.hparams, processor.get_piece_size(), PAD_ID, EOS_ID, forced_eos=True
    )
    minute_seconds = training_budget.minute_seconds(machine_facts)
    snapshots = Snapshots([float(minute) * minute_seconds for minute in FLAGS.curve_minutes])
    trained = train(model, pairs, recipe, budget, snapshots)
    summary = {
        "system": f"marian ({MARIAN_VERSION})",
        **training_budget.summary(budget),
        **machine_facts,
        "hparams_set": FLAGS.hparams_set,
        **recipe.settings(),
        "steps": trained["steps"],
        "train_seconds": round(trained["seconds"], 1),
        "target_tokens_per_second": round(trained["tokens"] / trained["seconds"], 1),
        "loss_curve": trained["loss_curve"],
        "checkpoints": {
            "last": {
                name: evaluate(model, processor, recipe, name, out_dir) for name in FLAGS.test_sets
            }
        },
    }
    if FLAGS.curve_minutes:
        summary["curve"] = quality_curve(
            model, processor, recipe, snapshots, minute_seconds, out_dir
        )
    print(json.dumps(summary), flush=True)


def quality_curve(
    model: MarianMTModel,
    processor: spm.SentencePieceProcessor,
    recipe: Recipe,
    snapshots: Snapshots,
    minute_seconds: float,
    out_dir: str,
) -> list[dict]:
    """Each snapshot's weights scored on the test sets; the final weights are left
    in the model."""
    final = {name: value.clone() for name, value in model.state_dict().items()}
    points = []
    for seconds, step, weights in snapshots.taken:
        model.load_state_dict(weights)
        name = f"curve-{seconds / minute_seconds:g}"
        os.makedirs(os.path.join(out_dir, name), exist_ok=True)
        scores = {
            test_set: evaluate(model, processor, recipe, test_set, os.path.join(out_dir, name))
            for test_set in FLAGS.test_sets
        }
        points.append({"minutes": round(seconds / minute_seconds, 2), "step": step, **scores})
    model.load_state_dict(final)
    return points


if __name__ == "__main__":
    app.run(main)
