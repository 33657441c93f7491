r"""Our decoder beside CTranslate2 on our own exported model: speed, and BLEU per runtime.

Speed (--speed_vocab_sizes): transformer_base shapes with random weights (one
model per vocabulary size), exported through `t2t_keras.export.ctranslate2_spec`
(the converter of t2t-exporter); a batch of --batch sentences of --length
random ids, beam --beam_size, every hypothesis exactly --length tokens (EOS
barred before, nothing after; ours then writes the EOS it forces, one step
more). Ours is the XLA-compiled search (`Decoder`, jit_compile); CTranslate2
runs float32, int16 and int8 (int16 only where the CPU backend has it:
`ctranslate2.get_supported_compute_types`). Rounds alternate the runtimes;
the table gives median sentences/s and the median per-round ratio to ours.

Quality (--trained_dir, e.g. the work_dir/train_* of train_multi30k.py): the
trained model decodes the raw --test_set source of ../shared/data/multi30k
with t2t-decoder's defaults, through our runtime and through CTranslate2
exports in float32, int16 and int8 (t2t-exporter's code), each scored with
sacreBLEU against the raw reference.

    .venv/bin/python benchmarks/ct2_runtimes.py --rounds=3 \
        [--trained_dir=/tmp/m30k/train_1795575493]

stdout: one JSON line per measurement, then the tables (markdown).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Sequence
from typing import Any

import ctranslate2
import numpy as np
from absl import app, flags
from multi30k import corpus_path, read_lines, score

from t2t_keras import catalog
from t2t_keras.export.ctranslate2_export import export_ctranslate2
from t2t_keras.export.ctranslate2_runtime import CTranslate2Translator
from t2t_keras.export.ctranslate2_spec import PAD_PIECE, model_spec
from t2t_keras.hparams.transformer import transformer_base
from t2t_keras.run.loading import load_trained
from t2t_keras.run.weights import build_model
from t2t_keras.search.decoder import Decoder
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.translator import SentenceTranslator, Translator

flags.DEFINE_list("speed_vocab_sizes", ["8000", "37000"], "Vocabulary sizes of the speed runs.")
flags.DEFINE_integer("batch", 32, "Sentences per batch.")
flags.DEFINE_integer("length", 30, "Source length and output length, in tokens.")
flags.DEFINE_integer("beam_size", 4, "Beam width.")
flags.DEFINE_integer("rounds", 3, "Rounds; each times every runtime once.")
flags.DEFINE_integer("steps", 3, "Timed batches per runtime and round (their median is kept).")
flags.DEFINE_integer("threads", 0, "CTranslate2's intra_threads (0: all cores, as TensorFlow).")
flags.DEFINE_string("trained_dir", None, "A trained Multi30k model for the BLEU table.")
flags.DEFINE_string("test_set", "test_2016_flickr", "The Multi30k set decoded for BLEU.")
FLAGS = flags.FLAGS

QUANTIZATIONS = ("float32", "int16", "int8")


class _Pieces:
    """A vocabulary of made-up pieces for random weights: PAD, EOS, UNK, then w3, w4, ..."""

    def __init__(self, size: int) -> None:
        self.vocab_size = size

    def pieces(self, ids: Sequence[int]) -> list[str]:
        reserved = {0: PAD_PIECE, 1: "</s>", 2: "<unk>"}
        return [reserved.get(i, f"w{i}") for i in ids]


def median_seconds(run: Callable[[], Any], steps: int) -> float:
    run()  # Warm-up: compilation, caches.
    return statistics.median(timeit.repeat(run, repeat=steps, number=1))


def supported(compute_type: str) -> bool:
    return compute_type in ctranslate2.get_supported_compute_types("cpu")


def speed_runtimes(vocab_size: int, work_dir: str) -> dict[str, Callable[[], Any]]:
    """{runtime name: one timed batch} for a random transformer_base of vocab_size."""
    hparams = dataclasses.replace(transformer_base(), vocab_size=vocab_size)
    model = build_model("transformer", hparams, use_xla=True)
    rng = np.random.default_rng(vocab_size)
    ids = rng.integers(3, vocab_size, size=(FLAGS.batch, FLAGS.length), dtype=np.int32)
    ids[:, -1] = 1  # EOS
    length = FLAGS.length
    # Exactly `length` tokens before EOS: at least that many, and input + 0 at most.
    settings = DecodeHParams(
        beam_size=FLAGS.beam_size, alpha=0.6, extra_length=0, min_length=length
    )
    decoder = Decoder(model, settings.resolve(hparams).search)
    runtimes: dict[str, Callable[[], Any]] = {"ours (XLA)": lambda: decoder(ids)}
    vocab = _Pieces(vocab_size)
    spec = model_spec(model, {"inputs": vocab, "targets": vocab}, hparams.max_length)
    spec.validate()
    spec.optimize(quantization=None)
    model_dir = os.path.join(work_dir, f"random_{vocab_size}")
    os.makedirs(model_dir)
    spec.save(model_dir)
    tokens = [vocab.pieces(row) for row in ids.tolist()]
    for compute_type in QUANTIZATIONS:
        if not supported(compute_type):
            continue
        translator = ctranslate2.Translator(
            model_dir, compute_type=compute_type, intra_threads=FLAGS.threads
        )

        def search(translator: Any = translator) -> Any:
            return translator.translate_batch(
                tokens,
                beam_size=FLAGS.beam_size,
                num_hypotheses=FLAGS.beam_size,
                length_penalty=1e-9,
                min_decoding_length=length,
                max_decoding_length=length,
                max_input_length=0,
                suppress_sequences=[[PAD_PIECE]],
            )

        lengths = {len(result.hypotheses[0]) for result in search()}
        assert lengths == {length}, f"CTranslate2 gave {lengths} tokens, not {length}"
        runtimes[f"ctranslate2 {compute_type}"] = search
    return runtimes


def speed_table(work_dir: str) -> str:
    rows = []
    for vocab_size in map(int, FLAGS.speed_vocab_sizes):
        runtimes = speed_runtimes(vocab_size, work_dir)
        rates: dict[str, list[float]] = {name: [] for name in runtimes}
        ratios: dict[str, list[float]] = {name: [] for name in runtimes}
        for number in range(FLAGS.rounds):
            measured = {}
            for name, run in runtimes.items():
                measured[name] = FLAGS.batch / median_seconds(run, FLAGS.steps)
                rates[name].append(measured[name])
            for name, rate in measured.items():
                ratios[name].append(rate / measured["ours (XLA)"])
            print(
                json.dumps({"vocab_size": vocab_size, "round": number, "sentences_per_s": measured})
            )
        for name in runtimes:
            rows.append(
                f"| {vocab_size} | {name} | {statistics.median(rates[name]):.2f} | "
                f"{statistics.median(ratios[name]):.2f} |"
            )
        for compute_type in QUANTIZATIONS:
            if not supported(compute_type):
                rows.append(f"| {vocab_size} | ctranslate2 {compute_type} | not on this CPU | |")
    header = (
        f"beam {FLAGS.beam_size}, batch {FLAGS.batch}, {FLAGS.length} -> {FLAGS.length} tokens, "
        f"{FLAGS.rounds} rounds\n\n| vocab | runtime | sentences/s | x ours |\n| --- | --- | --- | --- |"
    )
    return header + "\n" + "\n".join(rows)


def bleu_table(trained_dir: str, work_dir: str) -> str:
    catalog.load()
    trained = load_trained(trained_dir)
    sources = read_lines(corpus_path(FLAGS.test_set, "en"))
    references = read_lines(corpus_path(FLAGS.test_set, "de"))
    settings = DecodeHParams().resolve(trained.hparams)
    runtimes: dict[str, SentenceTranslator] = {
        "ours (XLA)": Translator(trained.model, trained.vocabs, settings)
    }
    for quantization in QUANTIZATIONS:
        model_dir = export_ctranslate2(
            trained,
            os.path.join(work_dir, f"trained_{quantization}"),
            settings.search,
            quantization,
        )
        name = f"ctranslate2 {quantization}"
        if not supported(quantization):
            name += " (runs as int8_float32 here)"
        runtimes[name] = CTranslate2Translator(model_dir, settings, FLAGS.threads)
    rows = []
    for name, translator in runtimes.items():
        translator.translate(sources[:64])  # Warm-up: compilation.
        start = time.monotonic()
        outputs = [t.text for t in translator.translate(sources)]
        seconds = time.monotonic() - start
        scores = score(sources, outputs, references)
        print(json.dumps({"runtime": name, "seconds": seconds, **scores}))
        rows.append(
            f"| {name} | {scores['bleu']:.2f} | {len(sources) / seconds:.1f} | "
            f"{scores['empty_outputs']} |"
        )
    header = (
        f"{FLAGS.test_set}, {len(sources)} sentences, beam {settings.beam_size}, alpha "
        f"{settings.alpha}, batch {settings.batch_size}\n\n"
        "| runtime | BLEU | sentences/s | empty outputs |\n| --- | --- | --- | --- |"
    )
    return header + "\n" + "\n".join(rows)


def main(argv: list[str]) -> None:
    del argv
    with tempfile.TemporaryDirectory() as work_dir:
        tables = [speed_table(work_dir)]
        if FLAGS.trained_dir:
            tables.append(bleu_table(FLAGS.trained_dir, work_dir))
    print("\n\n".join(tables))
    sys.stdout.flush()


if __name__ == "__main__":
    app.run(main)
