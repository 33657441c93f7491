r"""Our speed beside the peers' at the same shapes, in one run: tokens/s and ratios.

The peers a user would pick instead of t2t_keras, built with the dimensions of
--hparams_set (default transformer_base: 6+6 post-norm layers, d_model 512,
d_ff 2048, 8 heads, ReLU, sinusoid positions, one embedding matrix for the
encoder, the decoder and the softmax, scaled by sqrt(d_model)), random
weights and ids, vocabulary 8,000 unless --hparams sets vocab_size:

- Hugging Face Marian (transformers' MarianMTModel, PyTorch, CPU, fp32):
  training steps (forward, label-smoothed cross-entropy, backward, Adam) and
  beam search;
- CTranslate2: that same Marian model converted, beam search in fp32 and int8;
- ours: the installed `t2t-benchmark` command, run as a subprocess with the
  same shapes (and --xla, --mixed_precision if given), its JSON line read back.

Threads: torch's and CTranslate2's `intra_threads` are --threads (default all
cores, as TensorFlow's); an explicit --threads also reaches ours through
TF_NUM_INTRAOP_THREADS and TF_NUM_INTEROP_THREADS.

Every decoder gives every hypothesis exactly --fixed_output_length tokens (EOS
barred before, no longer allowed); the peers' output lengths are checked. Ours
then writes the EOS it forces, one decoder step more than the peers take. Rounds
alternate ours and the peers, since the machine's speed drifts; each round
prints its ratios, and the table at the end gives the medians of the rates and
of the per-round ratios ours/peer.

Install the peers first (on a CPU-only machine a CPU build of torch before the
extra, or pip fetches a CUDA one): `pip install torch==2.13.0`, then
`pip install '.[peers]'`. Then, from any directory:

    python benchmarks/peers.py --rounds=3 --modes=train,decode

stdout: one JSON line per measurement and per round's ratios, then the table.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import tempfile
from collections.abc import Sequence
from typing import Any

import ctranslate2
import torch
from absl import app, flags
from peer_models import (
    MARIAN_VERSION,
    check_marian_can_copy,
    convert_to_ctranslate2,
    marian_model,
    set_threads,
    teacher_forced_logits,
)
from rounds import markdown_table, median_ratio, median_seconds
from t2t_commands import machine_facts, t2t_benchmark
from transformers import MarianMTModel

import t2t_keras.hparams  # noqa: F401  Registers the hparams sets, without TensorFlow.
from t2t_keras import registry
from t2t_keras.benchmark import with_vocabulary
from t2t_keras.errors import UserError
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
CT2_TYPES = ("float32", "int8")
PRECISIONS = {"float32": "fp32", "int8": "int8"}


def resolve_hparams(hparams_set: str, overrides: str) -> TransformerHParams:
    """The set with overrides and a vocabulary; refuses what Marian cannot copy."""
    try:
        hparams = registry.hparams(hparams_set).override(overrides)
    except UserError as error:
        raise app.UsageError(str(error)) from None
    if not isinstance(hparams, TransformerHParams):
        raise app.UsageError(f"--hparams_set={hparams_set} is not a Transformer's hparams set.")
    hparams = with_vocabulary(hparams)  # As t2t-benchmark's.
    try:
        check_marian_can_copy(hparams)
    except ValueError as error:
        raise app.UsageError(f"--hparams_set={hparams_set}: {error}") from None
    return hparams


def vocabulary(vocab_size: int) -> list[str]:
    """Token strings of the ids: EOS, UNK, words, PAD last."""
    words = [f"w{i}" for i in range(FIRST_WORD_ID, vocab_size - 1)]
    return ["</s>", "<unk>", *words, "<pad>"]


def random_ids(batch: int, length: int, vocab_size: int, seed: int) -> torch.Tensor:
    """[batch, length] word ids ending with EOS, no padding."""
    generator = torch.Generator().manual_seed(seed)
    words = torch.randint(FIRST_WORD_ID, vocab_size - 1, (batch, length - 1), generator=generator)
    return torch.nn.functional.pad(words, (0, 1), value=EOS_ID)


def shapes(mode: str) -> dict[str, int]:
    """The shape flags of `mode`."""
    names = ("batch_sentences", "src_length", "tgt_length")
    if mode == "decode":
        names = ("beam_size", "decode_batch", "src_length", "fixed_output_length")
    return {name: FLAGS[name].value for name in names}


def measurement(mode: str, seconds: float) -> dict:
    """The mode, its shapes and rates of a median step of `seconds`."""
    sentences, length = FLAGS.batch_sentences, FLAGS.tgt_length
    if mode == "decode":
        sentences, length = FLAGS.decode_batch, FLAGS.fixed_output_length
    return {
        "mode": mode,
        **shapes(mode),
        "steps": FLAGS.steps,
        "step_time_s": seconds,
        "tgt_tokens_per_s": sentences * length / seconds,
        "sentences_per_s": sentences / seconds,
    }


def marian_train(model: MarianMTModel, hparams: TransformerHParams) -> dict:
    """Training steps of a copy of `model` on one fixed random batch, as t2t-benchmark's."""
    model = copy.deepcopy(model).train()
    vocab_size, pad_id = hparams.vocab_size, model.config.pad_token_id
    sources = random_ids(FLAGS.batch_sentences, FLAGS.src_length, vocab_size, FLAGS.seed + 1)
    labels = random_ids(FLAGS.batch_sentences, FLAGS.tgt_length, vocab_size, FLAGS.seed + 2)
    optimizer = torch.optim.Adam(
        model.parameters(),
        lr=1e-4,
        betas=(hparams.adam_beta1, hparams.adam_beta2),
        eps=hparams.adam_epsilon,
    )
    loss_function = torch.nn.CrossEntropyLoss(label_smoothing=hparams.label_smoothing)

    def step() -> float:
        logits = teacher_forced_logits(model, sources, labels, pad_id)
        loss = loss_function(logits.flatten(0, 1), labels.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.item()

    seconds = median_seconds(step, FLAGS.warmup_steps, FLAGS.steps)
    return measurement("train", seconds)


def marian_decode(model: MarianMTModel, hparams: TransformerHParams) -> dict:
    """Beam search of the batch to exactly --fixed_output_length tokens per hypothesis."""
    model.eval()
    length, pad_id = FLAGS.fixed_output_length, model.config.pad_token_id
    sources = random_ids(FLAGS.decode_batch, FLAGS.src_length, hparams.vocab_size, FLAGS.seed + 3)

    @torch.inference_mode()
    def search() -> torch.Tensor:
        return model.generate(
            input_ids=sources,
            attention_mask=sources.ne(pad_id),
            num_beams=FLAGS.beam_size,
            early_stopping=True,
            do_sample=False,
            min_new_tokens=length,
            max_new_tokens=length,
        )

    outputs = search()[:, 1:]  # Without the start symbol.
    if outputs.shape[1] != length or bool(outputs.eq(EOS_ID).any() | outputs.eq(pad_id).any()):
        raise RuntimeError(f"Marian's outputs are not all {length} words: {outputs.tolist()}")
    seconds = median_seconds(search, FLAGS.warmup_steps, FLAGS.steps)
    return measurement("decode", seconds)


def ctranslate2_decode(translator: ctranslate2.Translator, hparams: TransformerHParams) -> dict:
    """The same search through CTranslate2; every output checked to be the fixed length."""
    length = FLAGS.fixed_output_length
    tokens = vocabulary(hparams.vocab_size)
    sources = random_ids(FLAGS.decode_batch, FLAGS.src_length, hparams.vocab_size, FLAGS.seed + 3)
    batch = [[tokens[i] for i in row] for row in sources.tolist()]

    def search() -> list[Any]:
        return translator.translate_batch(
            batch,
            beam_size=FLAGS.beam_size,
            min_decoding_length=length,
            max_decoding_length=length,
        )

    lengths = {len(result.hypotheses[0]) for result in search()}
    if lengths != {length}:
        raise RuntimeError(f"CTranslate2's outputs have {sorted(lengths)} tokens, not {length}.")
    seconds = median_seconds(search, FLAGS.warmup_steps, FLAGS.steps)
    return measurement("decode", seconds)


def ours_arguments(mode: str, hparams: TransformerHParams) -> list[str]:
    """t2t-benchmark's flags for the same shapes."""
    overrides = ",".join(
        part for part in (FLAGS.hparams, f"vocab_size={hparams.vocab_size}") if part
    )
    arguments = [
        f"--mode={mode}",
        f"--hparams_set={FLAGS.hparams_set}",
        f"--hparams={overrides}",
        *(f"--{name}={value}" for name, value in shapes(mode).items()),
        f"--steps={FLAGS.steps}",
        f"--warmup_steps={FLAGS.warmup_steps}",
    ]
    for name in ("xla", "mixed_precision"):
        if FLAGS[name].value is not None:
            arguments.append(f"--{name}={FLAGS[name].value}")
    return arguments


def ours_environment() -> dict[str, str]:
    """Our processes' environment: this one's, with --threads if given."""
    environment = dict(os.environ)
    if FLAGS["threads"].present:
        threads = str(FLAGS.threads)
        environment.update(TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads)
    return environment


def ours(mode: str, hparams: TransformerHParams) -> dict:
    """t2t-benchmark's JSON line for `mode`."""
    return t2t_benchmark(ours_arguments(mode, hparams), ours_environment())


class Peers:
    """The peers' models, built once: Marian, and for decoding CTranslate2 per compute type."""

    def __init__(self, hparams: TransformerHParams, modes: Sequence[str], work_dir: str) -> None:
        self.hparams = hparams
        torch.manual_seed(FLAGS.seed)
        pad_id = hparams.vocab_size - 1
        self.marian = marian_model(hparams, hparams.vocab_size, pad_id, EOS_ID, forced_eos=False)
        self.translators: dict[str, ctranslate2.Translator] = {}
        if "decode" in modes:
            tokens = vocabulary(hparams.vocab_size)
            ct2_dir = convert_to_ctranslate2(self.marian, tokens, work_dir)
            for compute_type in CT2_TYPES:
                self.translators[compute_type] = ctranslate2.Translator(
                    ct2_dir, compute_type=compute_type, intra_threads=FLAGS.threads
                )

    def measure(self, mode: str) -> list[dict]:
        """One measurement per peer that does `mode`, each with its system and precision."""
        marian = {"system": "marian", "version": MARIAN_VERSION, "precision": "fp32"}
        if mode == "train":
            return [{**marian, **marian_train(self.marian, self.hparams)}]
        results = [{**marian, **marian_decode(self.marian, self.hparams)}]
        for compute_type, translator in self.translators.items():
            ct2 = {"system": "ctranslate2", "version": ctranslate2.__version__}
            ct2["precision"] = PRECISIONS[compute_type]
            results.append({**ct2, **ctranslate2_decode(translator, self.hparams)})
        return results


def label(measurement: dict) -> str:
    """The table's name of a measurement's system."""
    if measurement["system"] == "ctranslate2":
        return f"ctranslate2 {measurement['precision']}"
    return measurement["system"]


def emit(measurement: dict, machine: dict) -> None:
    """One JSON line: the measurement, then the machine's fields (`machine_facts`)."""
    print(json.dumps({**measurement, **machine}), flush=True)


def run_round(number: int, mode: str, peers: Peers, machine: dict) -> dict[str, float]:
    """Ours then the peers; prints each, then the ratios. Returns {label: target tokens/s}."""
    common = {"round": number, "hparams_set": FLAGS.hparams_set, "threads": FLAGS.threads}
    ours_result = {"system": "t2t_keras", **common, **ours(mode, peers.hparams)}
    emit(ours_result, {})  # t2t-benchmark's line names the machine itself.
    rates = {"t2t_keras": ours_result["tgt_tokens_per_s"]}
    for result in peers.measure(mode):
        emit({**common, **result}, machine)
        rates[label(result)] = result["tgt_tokens_per_s"]
    ratios = {
        name: rates["t2t_keras"] / rate for name, rate in rates.items() if name != "t2t_keras"
    }
    emit({"round": number, "mode": mode, "ours_over_peer": ratios}, machine)
    return rates


COLUMNS = ("t2t_keras", "marian", "ctranslate2 fp32", "ctranslate2 int8")


def table(results: dict[str, list[dict[str, float]]]) -> str:
    """Medians over rounds of the target tokens/s and of the per-round ratios ours/peer."""
    header = ["mode", *(f"{name} tok/s" for name in COLUMNS)]
    header += [f"ours/{name}" for name in COLUMNS[1:]]
    rows = []
    for mode, rounds in results.items():
        rates = [[r[name] for r in rounds if name in r] for name in COLUMNS]
        ratios = [median_ratio(rounds, "t2t_keras", name) for name in COLUMNS[1:]]
        rows.append(
            [
                mode,
                *(f"{statistics.median(found):.1f}" if found else "-" for found in rates),
                *(f"{ratio:.3f}" if ratio is not None else "-" for ratio in ratios),
            ]
        )
    return markdown_table(header, rows)


def main(argv: list[str]) -> None:
    del argv
    modes = [mode for mode in MODES if mode in FLAGS.modes]
    if not modes or set(FLAGS.modes) - set(MODES):
        raise app.UsageError(f"--modes takes {', '.join(MODES)}, not {FLAGS.modes}.")
    set_threads(FLAGS.threads)
    hparams = resolve_hparams(FLAGS.hparams_set, FLAGS.hparams)
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    machine = machine_facts(ours_environment())
    with tempfile.TemporaryDirectory(prefix="t2t_peers_") as work_dir:
        peers = Peers(hparams, modes, work_dir)
        for number in range(1, FLAGS.rounds + 1):
            for mode in modes:
                results[mode].append(run_round(number, mode, peers, machine))
    print(
        f"\nOn {machine['cpu']} ({machine['cores']} cores; "
        f"{', '.join(name for name, on in machine['cpu_flags'].items() if on)}; "
        f"oneDNN {'on' if machine['onednn'] else 'off'}; "
        f"{machine['matmul_fp32_flops_per_s'] / 1e9:.0f} GFLOP/s fp32). "
        f"Medians of {FLAGS.rounds} round(s), target tokens/s, {FLAGS.hparams_set} "
        f"(vocabulary {hparams.vocab_size}), {FLAGS.threads} thread(s); "
        "ratios are medians of the per-round ours/peer:"
    )
    print(table(results), flush=True)


if __name__ == "__main__":
    app.run(main)
