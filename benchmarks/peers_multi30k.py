"""The Multi30k peer's quality per minute: Hugging Face Marian trained from scratch.

Trains Marian (`peer_models.py`, --recipe=ours or own) on the data, budget
and test files of `train_multi30k.py` (a work_dir holding them is reused);
its JSON line compares with ours. Figures: docs/benchmarks.md#quality-per-training-minute.

    .venv/bin/python benchmarks/peers_multi30k.py --reference_minutes=30 --work_dir=/tmp/m30k

--activation=swish trains the feed-forward blocks with OPUS-MT's activation instead of
relu (the paper's, and the default).

--save_marian_dir=DIR also saves the trained model as OPUS-MT's Hugging Face folders
are (`huggingface-cli download Helsinki-NLP/opus-mt-en-de`): config.json,
generation_config.json, model.safetensors, source.spm, target.spm, vocab.json,
tokenizer_config.json, for MarianMTModel and MarianTokenizer.from_pretrained. The
peer trains in our ids (PAD 0, EOS 1, UNK 2, pieces: the vocabulary ours trains
with); the folder has Marian's (EOS 0, UNK 1, pieces, PAD last, PAD the decoder's
start), each of our ids i becoming (i - 1) mod V: the embedding rows and
final_logits_bias are reordered so when saved, which changes no output. source.spm
and target.spm are both the one joint SentencePiece model; vocab.json maps its
pieces to Marian's ids. generation_config.json holds the decoding's settings:
num_beams, length_penalty, early stopping, PAD never an output (bad_words_ids), and
max_length = the hparams set's max_length + 1 (Transformers counts the start
symbol); the script also stops each batch at its longest input + extra_length,
which a fixed max_length cannot say. The script then translates the first
ROUND_TRIP_LINES lines of the first --test_sets from the folder as its users do
(the tokenizer, generate, batch_decode(skip_special_tokens=True)) and reports in its
JSON line ("marian_dir") how many of their ids and translations equal its own.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import peer_models
import sentencepiece as spm
import training_budget
from absl import app, flags, logging
from loss_curves import curve_point
from multi30k import PROBLEM, corpus_path, prepare_data, score_test_sets
from peer_models import Pairs, Recipe
from quality_curve import LATE_SECONDS

from t2t_keras.benchmark.budget import Budget
from t2t_keras.files import read_text_lines

if TYPE_CHECKING:
    from transformers import MarianMTModel

# The project's id convention (t2t_keras.data.ids), without importing TensorFlow.
PAD_ID, EOS_ID = 0, 1
# Lines of the first test set the saved Marian folder translates to check itself.
ROUND_TRIP_LINES = 20

flags.DEFINE_string("work_dir", None, "Where data and decodes go; a temporary folder if unset.")
flags.DEFINE_integer("threads", 2, "torch intra-op and inter-op threads.")
flags.DEFINE_integer("seed", 1, "Seed of the initialization, dropout and batch order.")
flags.DEFINE_enum("recipe", "ours", ["ours", "own"], "ours: --hparams_set's, as our trainer "
                  "and decoder apply it; own: the peer's, from the flags marked own.")  # fmt: skip
flags.DEFINE_string("hparams_set", "transformer_small_cpu", "The sizes; with ours, the recipe.")
flags.DEFINE_string("hparams", "", "Overrides of --hparams_set, as t2t-trainer's.")
flags.DEFINE_integer("batch_tokens", 4096, "own: tokens per batch, padding counted.")
flags.DEFINE_float("peak_learning_rate", 1e-3, "own: learning rate at the end of warmup.")
flags.DEFINE_integer("warmup_steps", 1000, "own: linear warmup, then inverse square root decay.")
flags.DEFINE_integer("beam_size", 4, "own: beam width of decoding.")
flags.DEFINE_integer("extra_length", 50, "own: output tokens allowed beyond the longest input.")
flags.DEFINE_integer("decode_batch", 32, "Sentences per decoding batch.")
flags.DEFINE_enum("activation", "relu", list(peer_models.ACTIVATIONS), "The feed-forward "
                  "blocks' activation; swish (x * sigmoid(x)) is OPUS-MT's.")  # fmt: skip
flags.DEFINE_string("save_marian_dir", None, "Also save the trained model there as "
                    "OPUS-MT's Hugging Face folders are, in Marian's ids (see the docstring).")  # fmt: skip
flags.DEFINE_list("curve_minutes", [], "Also score the weights as they were at each of these "
                  "minutes of the budget (quality_curve.py).")  # fmt: skip
FLAGS = flags.FLAGS
# (curve minute's wall seconds, step, the weights then) of each --curve_minutes mark.
Snapshot = tuple[float, int, dict[str, Any]]


def encode(processor: spm.SentencePieceProcessor, text: str) -> list[int]:
    return [*processor.encode(text), EOS_ID]


def training_pairs(processor: spm.SentencePieceProcessor, max_length: int) -> Pairs:
    """train.en/train.de as ids with EOS; blank sides and pairs over max_length dropped."""
    pairs = []
    sources, targets = (read_text_lines(corpus_path("train", side)) for side in ("en", "de"))
    for source, target in zip(sources, targets, strict=True):
        if source.strip() and target.strip():
            pair = encode(processor, source), encode(processor, target)
            if max(map(len, pair)) <= max_length:
                pairs.append(pair)
    logging.info("%d training pairs of %d.", len(pairs), len(sources))
    return pairs


def batches_forever(pairs: Pairs, recipe: Recipe, rng: random.Random) -> Iterator[tuple]:
    """(source ids, target ids) batches, epoch after epoch, padded with PAD."""
    while True:
        for batch in recipe.epoch_batches(pairs, rng):
            sides = ([pairs[i][side] for i in batch] for side in (0, 1))
            yield tuple(peer_models.padded(rows, PAD_ID) for rows in sides)


def weights(model: MarianMTModel) -> dict[str, Any]:
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def train(
    model: MarianMTModel, pairs: Pairs, recipe: Recipe, budget: Budget, marks: Sequence[float]
) -> tuple[dict, list[Snapshot]]:
    """Trains until the budget's steps are done or its wall time is spent.

    Returns the run's fields of the JSON line, its loss curve (per 100 steps, the loss
    per target token over them, as our trainer's `TrainResult.loss_curve`) among them,
    and the weights as they were at each of `marks` (wall seconds).
    """
    optimizer = recipe.optimizer(model)
    batches = batches_forever(pairs, recipe, random.Random(FLAGS.seed))
    pending, snapshots, curve = sorted(marks), [], []
    step, tokens, interval_loss, interval_tokens = 0, 0, 0.0, 0
    model.train()
    start = time.monotonic()
    while budget.allows(step, time.monotonic() - start):
        while pending and time.monotonic() - start >= pending[0]:
            snapshots.append((pending.pop(0), step, weights(model)))
        step += 1
        for group in optimizer.param_groups:
            group["lr"] = recipe.learning_rate(step)
        loss_sum, count = peer_models.train_step(model, optimizer, recipe, next(batches), PAD_ID)
        tokens, interval_loss, interval_tokens = (
            tokens + count, interval_loss + loss_sum, interval_tokens + count
        )  # fmt: skip
        if step % 100 == 0:
            seconds = time.monotonic() - start
            curve.append(curve_point(step, seconds, tokens, interval_loss / interval_tokens))
            logging.info("step %d loss %.3f lr %.2e %.0f target tokens/s", step,
                         curve[-1]["loss"], recipe.learning_rate(step), tokens / seconds)  # fmt: skip
            interval_loss, interval_tokens = 0.0, 0
    seconds = time.monotonic() - start
    # A minute that ends with the budget is the final model.
    snapshots += [
        (mark, step, weights(model)) for mark in pending if mark <= seconds + LATE_SECONDS
    ]
    rate = round(tokens / seconds, 1)
    fields = {"steps": step, "train_seconds": round(seconds, 1), "target_tokens_per_second": rate}
    return {**fields, "loss_curve": curve}, snapshots


class Peer(NamedTuple):
    """The model trained, its tokenizer and its recipe."""

    model: MarianMTModel
    processor: spm.SentencePieceProcessor
    recipe: Recipe


def translate(peer: Peer, sources: Sequence[str]) -> list[str]:
    """Beam search over sources in batches sorted by length; outputs in input order."""
    peer.model.eval()
    encoded = {i: encode(peer.processor, text) for i, text in enumerate(sources) if text.strip()}
    order = sorted(encoded, key=lambda index: len(encoded[index]))
    outputs, recipe = [""] * len(sources), peer.recipe
    for start in range(0, len(order), FLAGS.decode_batch):
        chunk = order[start : start + FLAGS.decode_batch]
        inputs = peer_models.padded([encoded[index] for index in chunk], PAD_ID)
        rows = peer_models.beam_search(
            peer.model, inputs, PAD_ID, recipe.beam_size, length_penalty=recipe.length_penalty,
            max_new_tokens=min(inputs.shape[1] + recipe.extra_length, recipe.hparams.max_length),
            bad_words_ids=[[PAD_ID]],  # As in Marian's configs: PAD is never an output.
        )  # fmt: skip
        for index, row in zip(chunk, rows, strict=True):
            row = row[: row.index(EOS_ID)] if EOS_ID in row else row
            outputs[index] = peer.processor.decode(row)
    return outputs


def evaluate(peer: Peer, out_dir: str) -> dict[str, dict]:
    """Decodes the raw --test_sets, writes their decodes into out_dir, and scores them."""
    os.makedirs(out_dir, exist_ok=True)

    def decode(source: str, to_file: str) -> tuple[list[str], list[str]]:
        sources = read_text_lines(source)
        outputs = translate(peer, sources)
        Path(to_file).write_text("".join(f"{line}\n" for line in outputs), encoding="utf-8")
        return sources, outputs

    return score_test_sets(decode, os.path.join(out_dir, ""))


def quality_curve(peer: Peer, snapshots: list[Snapshot], minute_seconds: float) -> list[dict]:
    """Each snapshot's weights scored on the test sets; the final weights are left in the model."""
    final, points = weights(peer.model), []
    for seconds, step, snapshot in snapshots:
        peer.model.load_state_dict(snapshot)
        name = f"curve-{seconds / minute_seconds:g}"
        scores = evaluate(peer, os.path.join(FLAGS.work_dir, "peer", name))
        points.append({"minutes": round(seconds / minute_seconds, 2), "step": step, **scores})
    peer.model.load_state_dict(final)
    return points


def save_marian(peer: Peer, spm_path: str) -> None:
    """The trained model into --save_marian_dir, decoding as `translate` does."""
    recipe = peer.recipe
    peer_models.save_opus_mt(
        peer.model, spm_path, FLAGS.save_marian_dir, ("en", "de"), num_beams=recipe.beam_size,
        length_penalty=recipe.length_penalty, early_stopping=True, do_sample=False,
        max_length=recipe.hparams.max_length + 1,  # The start symbol, then max_length tokens.
    )  # fmt: skip
    logging.info("Saved the model as OPUS-MT's folders are in %s.", FLAGS.save_marian_dir)


def round_trip(peer: Peer) -> dict:
    """The saved folder's ids and translations of the first lines of the first --test_sets,
    as its users get them, against the ids the model trained on and the scored decodes."""
    name = FLAGS.test_sets[0]
    sources = read_text_lines(corpus_path(name, "en"))
    decodes = read_text_lines(os.path.join(FLAGS.work_dir, "peer", f"{name}.decodes"))
    lines = [index for index, text in enumerate(sources) if text.strip()][:ROUND_TRIP_LINES]
    ids, outputs = peer_models.opus_mt_translate(FLAGS.save_marian_dir, [sources[i] for i in lines])
    vocab_size = peer.processor.get_piece_size()
    same_ids = same_outputs = 0
    for index, marian_ids, output in zip(lines, ids, outputs, strict=True):
        trained = peer_models.to_marian_ids(encode(peer.processor, sources[index]), vocab_size)
        same_ids += marian_ids == trained
        same_outputs += output == decodes[index]
        if marian_ids != trained or output != decodes[index]:
            logging.warning("%s line %d: the saved folder gives ids %s, %r; trained on %s, "
                            "scored %r.", name, index + 1, marian_ids, output, trained,
                            decodes[index])  # fmt: skip
    logging.info("The saved folder, on %d lines of %s: %d same ids, %d same translations.",
                 len(lines), name, same_ids, same_outputs)  # fmt: skip
    fields = {"test_set": name, "lines": len(lines), "same_ids": same_ids}
    return {"path": FLAGS.save_marian_dir, **fields, "same_translations": same_outputs}


def resolve_recipe() -> Recipe:
    """--recipe resolved once: the hparams set's settings, or the peer's own flags."""
    hparams = peer_models.peer_hparams(FLAGS.hparams_set, FLAGS.hparams)
    if FLAGS.recipe == "ours":
        return Recipe.ours(hparams)
    return Recipe(
        "own", hparams, FLAGS.peak_learning_rate, FLAGS.warmup_steps,
        FLAGS.batch_tokens, FLAGS.beam_size, FLAGS.extra_length,
    )  # fmt: skip


def main(argv: list[str]) -> None:
    del argv
    recipe = resolve_recipe()
    peer_models.set_threads(FLAGS.threads)
    budget, machine_facts = training_budget.resolve()
    logging.info("Budget: %s.", budget.description)
    FLAGS.work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="multi30k_peer_")
    with contextlib.redirect_stdout(sys.stderr):  # Data generation prints; stdout is the JSON.
        data_dir = prepare_data(FLAGS.work_dir)
    model_path = os.path.join(data_dir, f"vocab.{PROBLEM}.model")
    processor = spm.SentencePieceProcessor(model_file=model_path)
    if (processor.pad_id(), processor.eos_id()) != (PAD_ID, EOS_ID):
        raise ValueError(f"{model_path} does not have PAD={PAD_ID} and EOS={EOS_ID}.")
    pairs = training_pairs(processor, recipe.hparams.max_length)
    vocab_size = processor.get_piece_size()
    model = peer_models.marian_model(
        recipe.hparams, vocab_size, PAD_ID, EOS_ID, True, FLAGS.seed, FLAGS.activation
    )
    minute_seconds = training_budget.minute_seconds(machine_facts)
    marks = [float(minute) * minute_seconds for minute in FLAGS.curve_minutes]
    trained, snapshots = train(model, pairs, recipe, budget, marks)
    peer = Peer(model, processor, recipe)
    if FLAGS.save_marian_dir:
        save_marian(peer, model_path)
    summary = {
        "system": f"marian ({peer_models.marian_version()})",
        **training_budget.summary(budget),
        **machine_facts,
        "hparams_set": FLAGS.hparams_set,
        **recipe.settings(),
        "activation": FLAGS.activation,
        **trained,
        "checkpoints": {"last": evaluate(peer, os.path.join(FLAGS.work_dir, "peer"))},
    }
    if FLAGS.save_marian_dir:
        summary["marian_dir"] = round_trip(peer)
    if FLAGS.curve_minutes:
        summary["curve"] = quality_curve(peer, snapshots, minute_seconds)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    app.run(main)
