"""The PyTorch peer: Hugging Face Marian with an hparams set's shape, its CTranslate2
conversion, how the Multi30k peer trains and decodes (our recipe, or its own), and
the trained peer saved as OPUS-MT's Hugging Face folders are (`save_opus_mt`).

The recipes are described in docs/translation_on_a_cpu.md. torch and
transformers are imported when first used, so the scripts' --help runs
without them.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import random
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from absl import app

import t2t_keras.hparams  # noqa: F401  Registers the hparams sets, without TensorFlow.
from t2t_keras import registry
from t2t_keras.data.buckets import bucket_boundaries, bucket_rows
from t2t_keras.errors import UserError
from t2t_keras.models.transformer_hparams import TransformerHParams

if TYPE_CHECKING:
    import torch
    from transformers import MarianMTModel

Pairs = Sequence[tuple[list[int], list[int]]]
# Marian's config fields that copy one of our hparams.
FROM_HPARAMS = {
    "d_model": "d_model", "max_position_embeddings": "max_length",
    "encoder_layers": "num_encoder_layers", "decoder_layers": "num_decoder_layers",
    "encoder_attention_heads": "num_heads", "decoder_attention_heads": "num_heads",
    "encoder_ffn_dim": "d_ff", "decoder_ffn_dim": "d_ff", "dropout": "dropout",
    "attention_dropout": "attention_dropout", "activation_dropout": "relu_dropout",
}  # fmt: skip
# The feed-forward activations Marian's config names: swish is x * sigmoid(x), OPUS-MT's;
# Transformers' gelu is the exact (erf) form.
ACTIVATIONS = ("relu", "swish", "gelu")
# The tensors indexed by vocabulary id (rows; the bias's columns), tied or not.
VOCABULARY_TENSORS = {
    "model.shared.weight": 0, "model.encoder.embed_tokens.weight": 0,
    "model.decoder.embed_tokens.weight": 0, "lm_head.weight": 0, "final_logits_bias": 1,
}  # fmt: skip
# Our reserved pieces (t2t_keras.data.ids: PAD 0, EOS 1, UNK 2), as Marian names them.
RESERVED_PIECES = ("<pad>", "</s>", "<unk>")


def peer_hparams(hparams_set: str, overrides: str) -> TransformerHParams:
    """The set with its overrides; a UsageError says why if Marian cannot copy it."""
    try:
        hparams = registry.hparams(hparams_set).override(overrides)
    except UserError as error:
        raise app.UsageError(str(error)) from None
    if not isinstance(hparams, TransformerHParams):
        raise app.UsageError(f"--hparams_set={hparams_set} is not a Transformer's hparams set.")
    head_size = hparams.d_model // hparams.num_heads
    required = {
        "layer_norm_position": ("post", "Marian is post-norm"),
        "position_encoding": ("sinusoid", "Marian's positions are sinusoids"),
        "shared_embeddings": (True, "the peers share one embedding matrix"),
        "optimizer": ("adam", "the peers train with Adam"),
        "d_k": (head_size, "Marian's heads are d_model / num_heads"),
        "d_v": (head_size, "Marian's heads are d_model / num_heads"),
    }
    for name, (wanted, reason) in required.items():
        if getattr(hparams, name) != wanted:
            found = f"{name}={getattr(hparams, name)}"
            raise app.UsageError(f"--hparams_set={hparams_set}: {found}: {reason}; need {wanted}.")
    return hparams


def marian_version() -> str:
    import torch
    import transformers

    return f"transformers {transformers.__version__}, torch {torch.__version__}"


def marian_model(
    hparams: TransformerHParams,
    vocab_size: int,
    pad_id: int,
    eos_id: int,
    forced_eos: bool,
    seed: int,
    activation: str = "relu",
) -> MarianMTModel:
    """The set's shape as a Marian model, its weights drawn with torch seeded by `seed`.

    Args:
      hparams: the sizes, dropout and initializer copied.
      vocab_size: rows of the one embedding matrix.
      pad_id: PAD, also the decoder's start symbol (a zero embedding).
      eos_id: EOS.
      forced_eos: whether generation writes EOS at the length limit.
      activation: the feed-forward blocks', one of ACTIVATIONS.
    """
    import torch
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(seed)
    config = MarianConfig(
        **{theirs: getattr(hparams, ours) for theirs, ours in FROM_HPARAMS.items()},
        vocab_size=vocab_size, activation_function=activation, scale_embedding=True,
        init_std=hparams.initializer_stddev or 0.02, share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True, pad_token_id=pad_id, eos_token_id=eos_id,
        forced_eos_token_id=eos_id if forced_eos else None, decoder_start_token_id=pad_id,
    )  # fmt: skip
    model = MarianMTModel(config)
    shared = model.get_input_embeddings().weight
    for weight in (model.get_output_embeddings().weight, model.model.decoder.embed_tokens.weight):
        if weight.data_ptr() != shared.data_ptr():
            raise RuntimeError("Marian's embeddings are not shared as configured.")
    return model


def set_threads(threads: int) -> None:
    """torch's intra-op and inter-op threads."""
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)


def padded(rows: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """[B, T] ids: each row filled with PAD up to the longest."""
    import torch

    width = max(map(len, rows))
    return torch.tensor([[*row, *[pad_id] * (width - len(row))] for row in rows])


def train_step(
    model: MarianMTModel, optimizer: Any, recipe: Recipe, batch: tuple, pad_id: int
) -> tuple[float, int]:
    """One update on (sources [B, S], labels [B, T]), teacher-forced: the decoder reads the
    labels shifted right behind PAD. Returns the loss summed over the non-PAD labels and
    their count."""
    import torch

    sources, labels = batch
    decoder_inputs = torch.nn.functional.pad(labels[:, :-1], (1, 0), value=pad_id)
    logits = model(
        input_ids=sources, attention_mask=sources.ne(pad_id), decoder_input_ids=decoder_inputs
    ).logits
    count = int(labels.ne(pad_id).sum())
    loss_sum = recipe.loss_sum(logits, labels, pad_id)
    optimizer.zero_grad(set_to_none=True)
    (loss_sum / count).backward()
    optimizer.step()
    return loss_sum.item(), count


def beam_search(
    model: MarianMTModel, inputs: torch.Tensor, pad_id: int, beam_size: int, **settings: Any
) -> list[list[int]]:
    """Marian's beam search of inputs [B, S]: each output's ids, without the start symbol."""
    import torch

    with torch.inference_mode():
        generated = model.generate(
            input_ids=inputs, attention_mask=inputs.ne(pad_id), num_beams=beam_size,
            early_stopping=True, do_sample=False, **settings,
        )  # fmt: skip
    return [row[1:] for row in generated.tolist()]


def convert_to_ctranslate2(model: MarianMTModel, tokens: Sequence[str], work_dir: str) -> str:
    """The Marian model saved, then converted; returns the CTranslate2 model's folder.

    `tokens` are the strings of the ids, in Marian's order (EOS 0, UNK 1, PAD
    last); the converter drops PAD, as for every Marian model.
    """
    from ctranslate2.converters import TransformersConverter

    class Converter(TransformersConverter):
        """Marian's converter, reading `tokens` instead of SentencePiece files."""

        def load_tokenizer(self, *args: Any, **kwargs: Any) -> Any:
            vocab = {token: index for index, token in enumerate(tokens)}
            return SimpleNamespace(eos_token="</s>", unk_token="<unk>", get_vocab=lambda: vocab)

    model_dir, output_dir = os.path.join(work_dir, "marian"), os.path.join(work_dir, "ct2")
    model.save_pretrained(model_dir)
    return Converter(model_dir).convert(output_dir)


def to_marian_ids(ids: Sequence[int], vocab_size: int) -> list[int]:
    """Our ids (PAD 0, EOS 1, UNK 2, pieces) as Marian's (EOS 0, UNK 1, pieces, PAD last)."""
    return [(index - 1) % vocab_size for index in ids]


def save_opus_mt(
    model: MarianMTModel,
    spm_path: str,
    out_dir: str,
    languages: tuple[str, str],
    **generation: Any,
) -> None:
    """Saves `model`, trained in our ids with the SentencePiece model `spm_path`, as
    OPUS-MT's Hugging Face folders are, in Marian's ids: config.json (every field),
    generation_config.json, model.safetensors, source.spm and target.spm (both
    `spm_path`), vocab.json (each piece's Marian id), tokenizer_config.json.

    Marian's id of our id i is (i - 1) mod V (`to_marian_ids`), so every tensor indexed
    by id is reordered so, and nothing else changes: MarianMTModel.from_pretrained and
    MarianTokenizer.from_pretrained on out_dir give the outputs `model` gives on our ids.

    Args:
      model: the trained model, with our PAD (0), EOS (1) and PAD as the decoder's start.
      spm_path: its SentencePiece model, with PAD 0, EOS 1, UNK 2.
      out_dir: the folder written (made if missing).
      languages: (source, target) language codes, for tokenizer_config.json.
      **generation: generation_config.json's decoding settings (num_beams, length_penalty,
        max_length, ...); the ids in it are Marian's and set here.
    """
    import sentencepiece as spm
    import torch
    from transformers import GenerationConfig, MarianMTModel, MarianTokenizer

    size, theirs = model.config.vocab_size, model.config
    processor = spm.SentencePieceProcessor(model_file=spm_path)
    pieces = [processor.id_to_piece(index) for index in range(processor.get_piece_size())]
    if len(pieces) != size or tuple(pieces[:3]) != RESERVED_PIECES:
        raise ValueError(f"{spm_path}: not {size} pieces starting {RESERVED_PIECES}.")
    if (theirs.pad_token_id, theirs.eos_token_id, theirs.decoder_start_token_id) != (0, 1, 0):
        raise ValueError("The model does not use our ids (PAD 0, EOS 1, PAD as the start).")
    # Marian's id m is our m + 1; our PAD (0) goes last.
    rows = torch.arange(1, size + 1) % size
    state = {}
    for name, tensor in model.state_dict().items():
        if name in VOCABULARY_TENSORS:
            tensor = tensor.index_select(VOCABULARY_TENSORS[name], rows)
        elif size in tensor.shape:
            raise ValueError(f"{name} {tuple(tensor.shape)} has a side of the vocabulary's size.")
        state[name] = tensor.detach().clone()
    eos, pad = 0, size - 1
    config = copy.deepcopy(theirs)
    config.pad_token_id, config.eos_token_id, config.decoder_start_token_id = pad, eos, pad
    config.forced_eos_token_id = None if theirs.forced_eos_token_id is None else eos
    config.architectures = ["MarianMTModel"]
    marian = MarianMTModel(config)
    marian.load_state_dict(state)
    marian.generation_config = GenerationConfig(
        decoder_start_token_id=pad, eos_token_id=eos, pad_token_id=pad,
        forced_eos_token_id=config.forced_eos_token_id, bad_words_ids=[[pad]], **generation,
    )  # fmt: skip
    os.makedirs(out_dir, exist_ok=True)
    marian.save_pretrained(out_dir)
    # Every field, as OPUS-MT's config.json has them, not only those off Transformers' defaults.
    config.to_json_file(os.path.join(out_dir, "config.json"), use_diff=False)
    vocab_path = os.path.join(out_dir, "vocab.json")
    vocab = {pieces[(index + 1) % size]: index for index in range(size)}  # Marian's id order.
    with open(vocab_path, "w", encoding="utf-8") as file:
        json.dump(vocab, file, indent=2)
    spm_paths = [os.path.join(out_dir, name) for name in ("source.spm", "target.spm")]
    for path in spm_paths:
        with open(spm_path, "rb") as source, open(path, "wb") as copied:
            copied.write(source.read())
    source_lang, target_lang = languages
    MarianTokenizer(
        *spm_paths, vocab_path, source_lang=source_lang, target_lang=target_lang,
        clean_up_tokenization_spaces=False,  # As SentencePiece decodes: " ." stays.
    ).save_pretrained(out_dir)  # fmt: skip


def opus_mt_translate(marian_dir: str, sources: Sequence[str]) -> tuple[list[list[int]], list[str]]:
    """`sources` translated as a user of an OPUS-MT folder does, in one batch with its
    generation_config.json: the tokenizer's ids of each source, and the outputs."""
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    tokenizer = MarianTokenizer.from_pretrained(marian_dir)
    model = MarianMTModel.from_pretrained(marian_dir).eval()
    inputs = tokenizer(list(sources), return_tensors="pt", padding=True)
    with torch.inference_mode():
        generated = model.generate(**inputs)
    ids = [tokenizer(source).input_ids for source in sources]
    return ids, tokenizer.batch_decode(generated, skip_special_tokens=True)


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Every setting of the peer's training and decoding that is not its code."""

    name: str  # "ours" or "own".
    hparams: TransformerHParams  # Model sizes and Adam's; with "ours", everything else too.
    peak_learning_rate: float = 0.0  # own: the rate at the end of warmup.
    warmup_steps: int = 0
    batch_tokens: int = 0  # own: tokens per batch, padding counted.
    beam_size: int = 4
    extra_length: int = 50
    length_penalty: float = 1.0  # Transformers' exponent of the length.

    @classmethod
    def ours(cls, hparams: TransformerHParams) -> Recipe:
        if hparams.learning_rate_schedule != "paper":
            raise app.UsageError(
                f"--recipe=ours follows the paper's schedule; the set's is "
                f"{hparams.learning_rate_schedule!r}. Use a set with learning_rate_schedule=paper."
            )
        return cls(
            "ours", hparams, warmup_steps=hparams.warmup_steps, beam_size=hparams.beam_size,
            extra_length=hparams.extra_length, length_penalty=hparams.alpha,
        )  # fmt: skip

    def optimizer(self, model: MarianMTModel) -> torch.optim.Adam:
        """Adam with the set's betas and epsilon; the rate is set per step."""
        import torch

        betas = (self.hparams.adam_beta1, self.hparams.adam_beta2)
        return torch.optim.Adam(model.parameters(), betas=betas, eps=self.hparams.adam_epsilon)

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
        import torch

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
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        del fields["hparams"]
        fields["recipe"] = fields.pop("name")
        fields.update(label_smoothing=hparams.label_smoothing, dropout=hparams.dropout)
        if self.name == "ours":  # The rate and the batches come from the set.
            fields["peak_learning_rate"] = self.learning_rate(self.warmup_steps)
            fields.update(
                hparams_learning_rate=hparams.learning_rate, batch_size=hparams.batch_size
            )
        return fields


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
