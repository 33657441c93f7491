"""The Transformer's hyperparameters; the defaults are the paper's base model."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar, Literal

from t2t_keras.hparam import HParams
from t2t_keras.modes import DECODER_STARTS, LENGTH_PENALTIES

if TYPE_CHECKING:
    from t2t_keras.data.batching import BatchingConfig


@dataclasses.dataclass(frozen=True)
class TransformerHParams(HParams):
    """Model shape, regularization, optimization, batching and decoding.

    Defaults are "Attention Is All You Need", base model, WMT14 En-De.
    """

    # The fields that set the weights' shapes: a checkpoint resumes only with the same.
    shape_fields: ClassVar[tuple[str, ...]] = (
        "vocab_size",
        "target_vocab_size",
        "num_encoder_layers",
        "num_decoder_layers",
        "d_model",
        "d_ff",
        "num_heads",
        "d_k",
        "d_v",
        "layer_norm_position",
        "position_encoding",
        "shared_embeddings",
        "tie_target_embeddings",
        "leaf_positions",
        "leaf_words",
        "attention_bias",
        "logits_bias",
    )

    # Model shape.

    # Subword vocabulary size; 0 = take the problem's vocabulary size.
    vocab_size: int = 0
    # Target vocabulary size when embeddings are not shared; 0 = vocab_size.
    target_vocab_size: int = 0
    # N, the number of identical layers in the encoder stack.
    num_encoder_layers: int = 6
    # N, the number of identical layers in the decoder stack.
    num_decoder_layers: int = 6
    # Width of the embeddings and of every sub-layer's output.
    d_model: int = 512
    # Inner width of the position-wise feed-forward block.
    d_ff: int = 2048
    # h, the number of attention heads in each attention layer.
    num_heads: int = 8
    # Query and key depth of one head.
    d_k: int = 64
    # Value depth of one head.
    d_v: int = 64
    # "post": LayerNorm(x + Dropout(Sublayer(x))), the paper's;
    # "pre": x + Dropout(Sublayer(LayerNorm(x))), with a final layer norm per stack.
    layer_norm_position: Literal["post", "pre"] = "post"
    # Epsilon added to the variance in layer norm.
    layer_norm_epsilon: float = 1e-6
    # "sinusoid": the paper's fixed signal; "learned": a trained table per stack (Table 3 E).
    position_encoding: Literal["sinusoid", "learned"] = "sinusoid"
    # One matrix for encoder input, decoder input and the pre-softmax projection
    # (needs one vocabulary for inputs and targets).
    shared_embeddings: bool = True
    # Without shared embeddings: the decoder's input embedding is also the softmax projection.
    tie_target_embeddings: bool = True
    # The feed-forward block's activation: "relu" (the paper's), "swish" (x * sigmoid(x),
    # OPUS-MT's) or "gelu" (the exact, erf form).
    ffn_activation: Literal["relu", "swish", "gelu"] = "relu"
    # Biases on every attention's query and output projections (a pretrained model's:
    # a key bias cancels in the softmax, a value bias folds into the output's).
    attention_bias: bool = False
    # A bias added to the logits (Marian's final_logits_bias).
    logits_bias: bool = False
    # The sinusoids' layout: "interleaved" (sin, cos, sin, ...: the paper's) or "halves"
    # (every sine, then every cosine: Marian's and fairseq's).
    position_layout: Literal["interleaved", "halves"] = "interleaved"
    # The position of each sequence's first token (fairseq's models start at 2).
    position_start: int = 0
    # The decoder's first input: the first position's signal plus "pad", the PAD row's
    # embedding (ours, Hugging Face's), or "zero", nothing (CTranslate2's Marian models).
    decoder_start: str = "pad"
    # Parsing: each decoder input also carries the position of the word its tree
    # writes next (the sinusoid of the leaves already written, projected), which
    # the model would otherwise have to count; the trainer sets leaf_id.
    leaf_positions: bool = False
    # Parsing: each decoder input also carries the encoder's output at the word its
    # tree writes next (projected), a hard alignment of leaves to words that the
    # model would otherwise have to learn through attention; EOS's once all are written.
    leaf_words: bool = False
    # The target id of a leaf (a parser's XX), read with leaf_positions or leaf_words; 0 = unset.
    leaf_id: int = 0
    # Longest sequence in tokens: longer training examples are dropped;
    # also the size of learned position tables.
    max_length: int = 256

    # Initialization.

    # 0: tensor2tensor's, Glorot-uniform projections and N(0, d_model^-0.5) token
    # embeddings; above 0: projections and token embeddings all N(0, this), as BERT
    # and Marian (0.02). Learned position tables keep N(0, d_model^-0.5).
    initializer_stddev: float = 0.0

    # Regularization.

    # P_drop, the residual dropout on each sub-layer's output before the add.
    dropout: float = 0.1
    # Dropout on embeddings plus positions (the paper uses P_drop).
    embedding_dropout: float = 0.1
    # Dropout on attention weights (off in the paper's translation models).
    attention_dropout: float = 0.0
    # Dropout on the feed-forward block's ReLU output (off in the paper).
    relu_dropout: float = 0.0
    # epsilon_ls, the probability mass spread uniformly over the vocabulary.
    label_smoothing: float = 0.1

    # Optimization.

    # "adam": the paper's; "adafactor": less optimizer memory.
    optimizer: Literal["adam", "adafactor"] = "adam"
    # Adam's first-moment decay.
    adam_beta1: float = 0.9
    # Adam's second-moment decay.
    adam_beta2: float = 0.98
    # Adam's epsilon in the denominator.
    adam_epsilon: float = 1e-9
    # "paper": d_model^-0.5 * min(step^-0.5, step * warmup^-1.5); "t2t": tensor2tensor's
    # constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size; "constant": no schedule.
    learning_rate_schedule: Literal["paper", "t2t", "constant"] = "paper"
    # Multiplier of the schedule (with "constant", the learning rate itself).
    learning_rate: float = 1.0
    # Steps of linear learning-rate warmup.
    warmup_steps: int = 4000
    # Clip gradients to this global norm; 0 = no clipping (the paper).
    clip_gradient_norm: float = 0.0

    # Batching.

    # Tokens per replica and step, padding counted: sentences * max(input, target length).
    batch_size: int = 4096
    # Micro-batches summed into one update; global batch = batch_size * replicas * this.
    gradient_accumulation_steps: int = 1
    # Shortest length bucket, in tokens.
    min_length_bucket: int = 8
    # Each length bucket's boundary is this factor above the one before.
    length_bucket_step: float = 1.1

    # Decoding.

    # Beam width; 1 = greedy decoding.
    beam_size: int = 4
    # Length penalty exponent: scores are divided by ((5 + length) / 6) ** alpha.
    alpha: float = 0.6
    # The length penalty's form (`modes.LENGTH_PENALTIES`): "gnmt" as above, or "length":
    # divided by length ** alpha, the form a pretrained model may have been made with.
    length_penalty: str = "gnmt"
    # Longest output = input length + this.
    extra_length: int = 50
    # None: the search's slots hold every position extra_length allows. A number:
    # they first hold input width + this many (a quarter of the width if more),
    # and an output that needs more is searched again in slots of all of them,
    # to the same result (each step's attention costs every position held: for
    # long files and servers, whose search runs ~10% faster; a process pays
    # once for the second pass's compilation).
    slot_extra_length: int | None = None

    def batching(self) -> BatchingConfig:
        """What `Problem.dataset` needs of these hparams."""
        # Imported here: the hparams (and every --help that prints them) need no TensorFlow.
        from t2t_keras.data.batching import BatchingConfig

        return BatchingConfig(
            batch_size=self.batch_size,
            max_length=self.max_length,
            min_length_bucket=self.min_length_bucket,
            length_bucket_step=self.length_bucket_step,
        )

    def targets_vocab_size(self) -> int:
        """The target embedding's and the softmax's rows: the width of the logits."""
        return self.target_vocab_size or self.vocab_size

    def reads_leaves(self) -> bool:
        """Whether the decoder is told where its tree is among the input's words."""
        return self.leaf_positions or self.leaf_words

    def ignored_fields(self) -> dict[str, str]:
        """Adam's settings under Adafactor, warmup under a constant learning rate."""
        ignored = {}
        if self.optimizer != "adam":
            reason = f"optimizer={self.optimizer} does not read Adam's settings"
            ignored.update(dict.fromkeys(("adam_beta1", "adam_beta2", "adam_epsilon"), reason))
        if self.learning_rate_schedule == "constant":
            ignored["warmup_steps"] = "learning_rate_schedule=constant has no warmup"
        return ignored

    def validate(self) -> None:
        """Ranges that every field must respect."""
        for name in _AT_LEAST_ONE:
            self.require(getattr(self, name) >= 1, name, "at least 1")
        for name in _NON_NEGATIVE:
            self.require(getattr(self, name) >= 0, name, "0 or more")
        extra = self.slot_extra_length
        self.require(extra is None or extra >= 0, "slot_extra_length", "None or 0 or more")
        for name in _PROBABILITIES:
            self.require(0.0 <= getattr(self, name) < 1.0, name, "in [0, 1)")
        for name in ("adam_epsilon", "learning_rate", "layer_norm_epsilon"):
            self.require(getattr(self, name) > 0.0, name, "above 0")
        self.require(self.length_bucket_step > 1.0, "length_bucket_step", "above 1")
        self.require(
            self.length_penalty in LENGTH_PENALTIES, "length_penalty", " or ".join(LENGTH_PENALTIES)
        )
        self.require(
            self.decoder_start in DECODER_STARTS, "decoder_start", " or ".join(DECODER_STARTS)
        )
        self.require(
            self.tie_target_embeddings or not self.shared_embeddings,
            "tie_target_embeddings",
            "true when shared_embeddings=true (one matrix serves all three uses)",
        )
        self.require(
            not self.shared_embeddings or self.target_vocab_size in (0, self.vocab_size),
            "target_vocab_size",
            "0 or vocab_size when shared_embeddings=true (one matrix serves both "
            "vocabularies); set shared_embeddings=false for a target vocabulary of its own size",
        )
        self.require(
            self.learning_rate_schedule == "constant" or self.warmup_steps >= 1,
            "warmup_steps",
            "at least 1 unless learning_rate_schedule=constant",
        )


_AT_LEAST_ONE = (
    "num_encoder_layers",
    "num_decoder_layers",
    "d_model",
    "d_ff",
    "num_heads",
    "d_k",
    "d_v",
    "max_length",
    "batch_size",
    "gradient_accumulation_steps",
    "min_length_bucket",
    "beam_size",
)
_NON_NEGATIVE = (
    "leaf_id",
    "initializer_stddev",
    "vocab_size",
    "target_vocab_size",
    "warmup_steps",
    "clip_gradient_norm",
    "alpha",
    "extra_length",
    "position_start",
)
_PROBABILITIES = (
    "dropout",
    "embedding_dropout",
    "attention_dropout",
    "relu_dropout",
    "label_smoothing",
    "adam_beta1",
    "adam_beta2",
)
