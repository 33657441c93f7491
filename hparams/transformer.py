"""The paper's Transformer hparams sets: base, big, every Table 3 row, parsing.

Each set is the paper's base model with a few fields replaced. `batch_size`
counts tokens per replica, so the paper's ~25k source + ~25k target tokens per
step come from 4096 (padding counted) times 8 GPUs; the `_single_gpu` sets get
the same step from one device by accumulating 8 micro-batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from t2t_keras import registry
from t2t_keras.models import TransformerHParams


@registry.register_hparams
def transformer_base() -> TransformerHParams:
    """The paper's base model: N=6, d_model=512, d_ff=2048, h=8, 65M params."""
    return TransformerHParams()


@registry.register_hparams
def transformer_big() -> TransformerHParams:
    """The paper's big model for En-De: d_model=1024, d_ff=4096, h=16, P_drop=0.3."""
    return replace(
        transformer_base(),
        d_model=1024,
        d_ff=4096,
        num_heads=16,
        dropout=0.3,
        embedding_dropout=0.3,
    )


@registry.register_hparams
def transformer_big_enfr() -> TransformerHParams:
    """The paper's big model for En-Fr: as big, with P_drop=0.1."""
    return replace(transformer_big(), dropout=0.1, embedding_dropout=0.1)


@registry.register_hparams
def transformer_base_single_gpu() -> TransformerHParams:
    """Base on one device: 8 accumulated micro-batches make the paper's 8-GPU step."""
    return replace(transformer_base(), gradient_accumulation_steps=8)


@registry.register_hparams
def transformer_big_single_gpu() -> TransformerHParams:
    """Big (En-De) on one device: 8 accumulated micro-batches make the paper's step."""
    return replace(transformer_big(), gradient_accumulation_steps=8)


@registry.register_hparams
def transformer_base_v3() -> TransformerHParams:
    """tensor2tensor's later base recipe: pre-norm, more dropout, its rsqrt schedule."""
    return replace(
        transformer_base(),
        layer_norm_position="pre",
        attention_dropout=0.1,
        relu_dropout=0.1,
        adam_beta2=0.997,
        learning_rate_schedule="t2t",
        learning_rate=2.0,
        warmup_steps=8000,
    )


@registry.register_hparams
def transformer_small() -> TransformerHParams:
    """A small model for CPU work: 3 layers, d_model=256, d_ff=1024, h=4."""
    return replace(
        transformer_base(),
        num_encoder_layers=3,
        num_decoder_layers=3,
        d_model=256,
        d_ff=1024,
        num_heads=4,
        warmup_steps=1000,
    )


@registry.register_hparams
def transformer_small_cpu() -> TransformerHParams:
    """transformer_small for short runs on small corpora (a few thousand updates on a CPU).

    The paper's schedule peaks after 4000 steps (1000 in transformer_small);
    a short run would end inside its warmup. This one warms up in 400 steps
    to a peak of 1.6e-3 and decays from there. Batches of 2048 tokens: in a
    fixed time, twice the updates of 4096-token batches at about the same
    tokens per second, which on Multi30k is worth +6 val BLEU after 10 minutes.
    Weights drawn from N(0, 0.02): the loss falls faster per update than from
    Glorot's wider draws (at step 500 on Multi30k, 3.82 against 4.28), worth
    +3.6 val BLEU after 10 minutes, with longer outputs (brevity penalty 0.985
    against 0.909). Dropout 0.3 on residuals and embeddings: 29,000 sentence
    pairs are learnt past their best within 30 minutes (val, averaged, beam
    4: 39.58 against 39.33 at 0.1; attention dropout 0.1 on top: 38.50).
    Decoded with beam 5 and alpha 1.6, the brevity penalty of the averaged
    model on val is 0.980 (0.958 at beam 4 and alpha 0.6) at about the same
    BLEU (39.92).
    """
    return replace(
        transformer_small(),
        warmup_steps=400,
        learning_rate=0.5,
        batch_size=2048,
        initializer_stddev=0.02,
        dropout=0.3,
        embedding_dropout=0.3,
        beam_size=5,
        alpha=1.6,
    )


@registry.register_hparams
def transformer_tiny() -> TransformerHParams:
    """A tiny model for tests and demos: 2 layers, d_model=64, d_ff=256, h=4."""
    return replace(
        transformer_base(),
        num_encoder_layers=2,
        num_decoder_layers=2,
        d_model=64,
        d_ff=256,
        num_heads=4,
        d_k=16,
        d_v=16,
        batch_size=2048,
        warmup_steps=400,
    )


# English constituency parsing (Section 6.3): 4 layers, d_model=1024, attention
# dropout on, wide beam and long outputs for linearized trees. The paper tuned
# dropout on WSJ section 22 without publishing it; these are tensor2tensor's.
# Words in, tree symbols out: the parsing problems have a vocabulary per side
# (~70 output symbols) and the sets embed each side apart, as tensor2tensor's
# parsing sets did. One matrix shared by input words and the softmax pulls
# every word's row the same way (no word is ever a target) until the encoder's
# output no longer depends on the sentence.


def _parsing(dropout: float) -> TransformerHParams:
    return replace(
        transformer_base(),
        num_encoder_layers=4,
        num_decoder_layers=4,
        d_model=1024,
        d_k=128,
        d_v=128,
        dropout=dropout,
        embedding_dropout=dropout,
        attention_dropout=dropout,
        max_length=512,
        shared_embeddings=False,
        beam_size=21,
        alpha=0.3,
        extra_length=300,
    )


@registry.register_hparams
def transformer_parsing_wsj() -> TransformerHParams:
    """Parsing, WSJ only (~40K trees, 16K vocab): 4 layers, d_model=1024, beam 21."""
    return _parsing(dropout=0.2)


@registry.register_hparams
def transformer_parsing_semisup() -> TransformerHParams:
    """Parsing, semi-supervised (~17M trees, 32K vocab): as WSJ with less dropout."""
    return _parsing(dropout=0.1)


@registry.register_hparams
def transformer_parsing_small() -> TransformerHParams:
    """Parsing on a CPU in minutes: transformer_parsing_wsj at d_model=256, d_ff=1024, h=4.

    Pre-norm: its residual path keeps each word's embedding in the encoder's
    output, where post-norm at this learning rate can wash it out in a short
    run; the schedule peaks at 1.6e-3 after 400 steps, as transformer_small_cpu's.
    leaf_words: each decoder input also carries the encoder's output at the word
    the tree writes next, so the decoder need not learn through attention which
    word each XX stands for (WSJ sample, dev split, 10 minutes, greedy: F1
    12.5 with leaf_positions, 65.3 with leaf_words; synthetic treebank:
    F1 80 after 300 steps with leaf_positions, 97 after 200 with leaf_words);
    the encoder's positions count words, not pieces.
    """
    return replace(
        transformer_parsing_wsj(),
        d_model=256,
        d_ff=1024,
        num_heads=4,
        d_k=64,
        d_v=64,
        layer_norm_position="pre",
        leaf_words=True,
        warmup_steps=400,
        learning_rate=0.5,
    )


# Table 3: variations on base, measured on newstest2013 (row "big" is
# transformer_big). Each row is a set transformer_base_table3_<row>:
# (row, the paper's label for it, overrides of base, dev BLEU, params in millions).
TABLE3: tuple[tuple[str, str, dict[str, Any], float, int | None], ...] = (
    ("a1", "(A): h=1, d_k=d_v=512", {"num_heads": 1, "d_k": 512, "d_v": 512}, 24.9, None),
    ("a2", "(A): h=4, d_k=d_v=128", {"num_heads": 4, "d_k": 128, "d_v": 128}, 25.5, None),
    ("a3", "(A): h=16, d_k=d_v=32", {"num_heads": 16, "d_k": 32, "d_v": 32}, 25.8, None),
    ("a4", "(A): h=32, d_k=d_v=16", {"num_heads": 32, "d_k": 16, "d_v": 16}, 25.4, None),
    ("b1", "(B): d_k=16", {"d_k": 16}, 25.1, 58),
    ("b2", "(B): d_k=32", {"d_k": 32}, 25.4, 60),
    ("c1", "(C): N=2", {"num_encoder_layers": 2, "num_decoder_layers": 2}, 23.7, 36),
    ("c2", "(C): N=4", {"num_encoder_layers": 4, "num_decoder_layers": 4}, 25.3, 50),
    ("c3", "(C): N=8", {"num_encoder_layers": 8, "num_decoder_layers": 8}, 25.5, 80),
    ("c4", "(C): d_model=256, d_k=d_v=32", {"d_model": 256, "d_k": 32, "d_v": 32}, 24.5, 28),
    ("c5", "(C): d_model=1024, d_k=d_v=128", {"d_model": 1024, "d_k": 128, "d_v": 128}, 26.0, 168),
    ("c6", "(C): d_ff=1024", {"d_ff": 1024}, 25.4, 53),
    ("c7", "(C): d_ff=4096", {"d_ff": 4096}, 26.2, 90),
    ("d1", "(D): P_drop=0.0", {"dropout": 0.0, "embedding_dropout": 0.0}, 24.6, None),
    ("d2", "(D): P_drop=0.2", {"dropout": 0.2, "embedding_dropout": 0.2}, 25.5, None),
    ("d3", "(D): label smoothing 0.0", {"label_smoothing": 0.0}, 25.3, None),
    ("d4", "(D): label smoothing 0.2", {"label_smoothing": 0.2}, 25.7, None),
    (
        "e",
        "(E): learned positional embeddings instead of sinusoids",
        {"position_encoding": "learned"},
        25.7,
        None,
    ),
)


def _table3_set(
    row: str, label: str, overrides: dict[str, Any], bleu: float, params: int | None
) -> Callable[[], TransformerHParams]:
    """The hparams set of one Table 3 row, named and documented as the row."""

    def table3_set() -> TransformerHParams:
        return replace(transformer_base(), **overrides)

    size = f", {params}M params" if params else ""
    table3_set.__doc__ = f"Table 3 {label} (dev BLEU {bleu}{size})."
    table3_set.__name__ = table3_set.__qualname__ = f"transformer_base_table3_{row}"
    return table3_set


for _row in TABLE3:
    registry.register_hparams(_table3_set(*_row))
