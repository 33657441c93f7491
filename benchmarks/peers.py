r"""Fixed shapes against the peers, in one run: our tokens/s beside theirs, and the ratios.

Marian and CTranslate2 (`peer_models.py`) against `t2t-benchmark`, at
--hparams_set's dimensions and the same shapes, in alternating rounds.
Figures: docs/benchmarks.md#fixed-shapes-against-the-peers.

    .venv/bin/python benchmarks/peers.py --rounds=3 --modes=train,decode
"""

from __future__ import annotations

import copy
import functools
import os
import random
import statistics
import tempfile
from collections.abc import Callable

import peer_models
from absl import app, flags
from rounds import markdown_table, median_ratio, median_seconds
from t2t_commands import describe, emit, machine_facts, t2t_benchmark

from t2t_keras.benchmark import with_vocabulary
from t2t_keras.models.transformer_hparams import TransformerHParams

MODES = ("train", "decode")
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

flags.DEFINE_list("modes", list(MODES), "What to time: train, decode or both.")
flags.DEFINE_string("hparams_set", "transformer_base", "Our hparams set; the peers copy its shape.")
flags.DEFINE_string("hparams", "", "Overrides of --hparams_set, as t2t-benchmark takes them.")
flags.DEFINE_integer("rounds", 3, "Rounds of ours then the peers; medians over rounds.", 1)
flags.DEFINE_integer("batch_sentences", 64, "Training: sentence pairs per step.", 1)
flags.DEFINE_integer("src_length", 30, "Tokens per source sentence, EOS included.", 2)
flags.DEFINE_integer("tgt_length", 30, "Training: tokens per target, EOS included.", 2)
flags.DEFINE_integer("steps", 5, "Timed repetitions per measurement; the median is taken.", 1)
flags.DEFINE_integer("warmup_steps", 2, "Untimed repetitions first.", 0)
flags.DEFINE_integer("beam_size", 4, "Decoding: hypotheses per sentence.", 1)
flags.DEFINE_integer("decode_batch", 32, "Decoding: sentences decoded together.", 1)
flags.DEFINE_integer("fixed_output_length", 30, "Decoding: tokens of every hypothesis.", 1)
flags.DEFINE_integer("threads", CORES, "Threads of torch, CTranslate2 and (given) ours.", 1)
flags.DEFINE_string("xla", None, "Passed to t2t-benchmark as --xla; its default if unset.")
flags.DEFINE_string("mixed_precision", None, "Passed to t2t-benchmark; its default if unset.")
flags.DEFINE_integer("seed", 1, "Seed of the peers' weights and ids.")
FLAGS = flags.FLAGS

# The peers' ids follow Marian's convention, which CTranslate2's converter
# expects: EOS 0, UNK 1, then words, PAD last (also the decoder's start symbol,
# a zero embedding).
EOS_ID, FIRST_WORD_ID = 0, 2
COLUMNS = ("t2t_keras", "marian", "ctranslate2 fp32", "ctranslate2 int8")
# Each mode's shape flags: the sentences of a step and their target length first.
SHAPES = {"train": ("batch_sentences", "tgt_length", "src_length"),
          "decode": ("decode_batch", "fixed_output_length", "beam_size", "src_length")}  # fmt: skip
Calls = dict[tuple[str, str], Callable[[], object]]


def random_rows(batch: int, length: int, vocab_size: int, seed: int) -> list[list[int]]:
    """`batch` rows of `length - 1` random word ids, then EOS."""
    rng = random.Random(seed)
    words = range(FIRST_WORD_ID, vocab_size - 1)
    return [[*rng.choices(words, k=length - 1), EOS_ID] for _ in range(batch)]


def shapes(mode: str) -> dict[str, int]:
    """The shape flags of `mode`: sentences, their length, and the rest."""
    return {name: FLAGS[name].value for name in SHAPES[mode]}


def measurement(mode: str, seconds: float) -> dict:
    """The mode, its shapes and rates of a median step of `seconds`."""
    sentences, length, *_ = shapes(mode).values()
    rates = {
        "tgt_tokens_per_s": sentences * length / seconds,
        "sentences_per_s": sentences / seconds,
    }
    return {"mode": mode, **shapes(mode), "steps": FLAGS.steps, "step_time_s": seconds, **rates}


def peer_calls(hparams: TransformerHParams, modes: list[str], work_dir: str) -> Calls:
    """{(mode, peer): one timed call}: Marian's training step on one fixed batch, as
    t2t-benchmark's; Marian's and CTranslate2's (fp32, int8) searches of one batch,
    each checked to give exactly --fixed_output_length tokens per output."""
    import ctranslate2

    vocab_size, pad_id = hparams.vocab_size, hparams.vocab_size - 1
    marian = peer_models.marian_model(
        hparams, vocab_size, pad_id, EOS_ID, False, FLAGS.seed, hparams.ffn_activation
    )
    calls: Calls = {}
    if "train" in modes:
        model, recipe = copy.deepcopy(marian).train(), peer_models.Recipe("own", hparams)
        optimizer = recipe.optimizer(model)
        batch = tuple(
            peer_models.padded(random_rows(FLAGS.batch_sentences, n, vocab_size, seed), pad_id)
            for n, seed in ((FLAGS.src_length, FLAGS.seed + 1), (FLAGS.tgt_length, FLAGS.seed + 2))
        )
        step = peer_models.train_step
        calls["train", "marian"] = functools.partial(step, model, optimizer, recipe, batch, pad_id)
    if "decode" not in modes:
        return calls
    length, tokens = FLAGS.fixed_output_length, vocabulary(vocab_size)
    rows = random_rows(FLAGS.decode_batch, FLAGS.src_length, vocab_size, FLAGS.seed + 3)
    marian.eval()
    calls["decode", "marian"] = functools.partial(
        peer_models.beam_search, marian, peer_models.padded(rows, pad_id), pad_id,
        FLAGS.beam_size, min_new_tokens=length, max_new_tokens=length,
    )  # fmt: skip
    outputs = calls["decode", "marian"]()
    if any(len(row) != length or EOS_ID in row or pad_id in row for row in outputs):
        raise RuntimeError(f"Marian's outputs are not all {length} words: {outputs}")
    ct2_dir = peer_models.convert_to_ctranslate2(marian, tokens, work_dir)
    for precision, compute_type in (("fp32", "float32"), ("int8", "int8")):
        translator = ctranslate2.Translator(
            ct2_dir, compute_type=compute_type, intra_threads=FLAGS.threads
        )
        call = calls["decode", f"ctranslate2 {precision}"] = functools.partial(
            translator.translate_batch, [[tokens[i] for i in row] for row in rows],
            beam_size=FLAGS.beam_size, min_decoding_length=length, max_decoding_length=length,
        )  # fmt: skip
        lengths = {len(result.hypotheses[0]) for result in call()}
        if lengths != {length}:
            raise RuntimeError(
                f"CTranslate2's outputs have {sorted(lengths)} tokens, not {length}."
            )
    return calls


def vocabulary(vocab_size: int) -> list[str]:
    """Token strings of the ids: EOS, UNK, words, PAD last."""
    words = [f"w{i}" for i in range(FIRST_WORD_ID, vocab_size - 1)]
    return ["</s>", "<unk>", *words, "<pad>"]


def peer_fields(label: str) -> dict[str, str]:
    """The system, version and precision of the peer `label` names."""
    import ctranslate2

    system, _, precision = label.partition(" ")
    version = peer_models.marian_version() if system == "marian" else ctranslate2.__version__
    return {"system": system, "version": version, "precision": precision or "fp32"}


def ours(mode: str, hparams: TransformerHParams) -> dict:
    """t2t-benchmark's JSON line for the same shapes."""
    # The vocabulary the peers were given, unless --hparams gives it already.
    size = "" if "vocab_size=" in FLAGS.hparams else f"vocab_size={hparams.vocab_size}"
    overrides = ",".join(filter(None, (FLAGS.hparams, size)))
    given = {name: FLAGS[name].value for name in ("xla", "mixed_precision")}
    arguments = {
        "mode": mode, "hparams_set": FLAGS.hparams_set, "hparams": overrides, **shapes(mode),
        "steps": FLAGS.steps, "warmup_steps": FLAGS.warmup_steps,
        **{name: value for name, value in given.items() if value is not None},
    }  # fmt: skip
    return t2t_benchmark(
        [f"--{name}={value}" for name, value in arguments.items()], ours_environment()
    )


def ours_environment() -> dict[str, str]:
    """Our processes' environment: this one's, with --threads if given."""
    environment = dict(os.environ)
    if FLAGS["threads"].present:
        threads = str(FLAGS.threads)
        environment.update(TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads)
    return environment


def run_round(
    number: int, mode: str, hparams: TransformerHParams, calls: Calls, machine: dict
) -> dict[str, float]:
    """Ours then the peers; prints each, then the ratios. Returns {label: target tokens/s}."""
    common = {"round": number, "hparams_set": FLAGS.hparams_set, "threads": FLAGS.threads}
    ours_result = {"system": "t2t_keras", **common, **ours(mode, hparams)}
    emit(ours_result)  # t2t-benchmark's line names the machine itself.
    rates = {"t2t_keras": ours_result["tgt_tokens_per_s"]}
    for (call_mode, label), call in calls.items():
        if call_mode == mode:
            seconds = median_seconds(call, FLAGS.warmup_steps, FLAGS.steps)
            result = {**common, **peer_fields(label), **measurement(mode, seconds)}
            emit(result, machine)
            rates[label] = result["tgt_tokens_per_s"]
    ratios = {name: rates["t2t_keras"] / rate for name, rate in list(rates.items())[1:]}
    emit({"round": number, "mode": mode, "ours_over_peer": ratios}, machine)
    return rates


def table(results: dict[str, list[dict[str, float]]]) -> str:
    """Medians over rounds of the target tokens/s and of the per-round ratios ours/peer."""
    header = ["mode", *(f"{name} tok/s" for name in COLUMNS)]
    header += [f"ours/{name}" for name in COLUMNS[1:]]
    rows = []
    for mode, rounds in results.items():
        rates = [[r[name] for r in rounds if name in r] for name in COLUMNS]
        ratios = [median_ratio(rounds, "t2t_keras", name) for name in COLUMNS[1:]]
        rows.append([mode, *(f"{statistics.median(found):.1f}" if found else "-" for found in rates),
                     *(f"{ratio:.3f}" if ratio is not None else "-" for ratio in ratios)])  # fmt: skip
    return markdown_table(header, rows)


def main(argv: list[str]) -> None:
    del argv
    modes = [mode for mode in MODES if mode in FLAGS.modes]
    if not modes or set(FLAGS.modes) - set(MODES):
        raise app.UsageError(f"--modes takes {', '.join(MODES)}, not {FLAGS.modes}.")
    peer_models.set_threads(FLAGS.threads)
    # The vocabulary of t2t-benchmark's random ids.
    hparams = with_vocabulary(peer_models.peer_hparams(FLAGS.hparams_set, FLAGS.hparams))
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    machine = machine_facts(ours_environment())
    with tempfile.TemporaryDirectory(prefix="t2t_peers_") as work_dir:
        calls = peer_calls(hparams, modes, work_dir)
        for number in range(1, FLAGS.rounds + 1):
            for mode in modes:
                results[mode].append(run_round(number, mode, hparams, calls, machine))
    print(f"\nOn {describe(machine)}. Medians of {FLAGS.rounds} round(s), target tokens/s, "
          f"{FLAGS.hparams_set} (vocabulary {hparams.vocab_size}), {FLAGS.threads} thread(s); "
          "ratios are medians of the per-round ours/peer:")  # fmt: skip
    print(table(results), flush=True)


if __name__ == "__main__":
    app.run(main)
