"""The Transformer of "Attention Is All You Need" as a Keras 3 model.

Ids follow the fixed conventions: 0 = PAD, 1 = EOS. The decoder input is the
targets shifted right with 0 in front. Inputs longer than `max_length` raise
a UserError here; `t2t_keras.search.Decoder` truncates them with a warning instead.
Incremental decoding (inputs encoded once, one output position a step) is
`t2t_keras.models.decoding`'s, a part of the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from t2t_keras import registry
from t2t_keras.data.ids import EOS_ID
from t2t_keras.errors import UserError
from t2t_keras.layers import (
    DecoderLayer,
    EncoderLayer,
    LearnedPositions,
    ScaledEmbedding,
    initializers,
)
from t2t_keras.layers.attention import uncompiled_cores
from t2t_keras.layers.dropout import Dropout
from t2t_keras.layers.masks import causal_bias, padding_bias
from t2t_keras.layers.position import sinusoid
from t2t_keras.models.decoding import (
    IncrementalDecoding,
)
from t2t_keras.models.transformer_hparams import TransformerHParams


@registry.register_model
@keras.saving.register_keras_serializable(package="t2t_keras")
class Transformer(IncrementalDecoding, keras.Model):
    """Encoder-decoder Transformer built from a TransformerHParams.

    Args:
      hparams: the model's hparams (or their dict, as in `get_config`);
        `vocab_size` must be set.
      use_xla: run every attention core as one XLA-compiled function.
    """

    hparams_class = TransformerHParams  # What hparams.json of a trained model holds.

    def __init__(
        self, hparams: TransformerHParams | dict[str, Any], use_xla: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(hparams, dict):
            hparams = TransformerHParams(**hparams)
        if hparams.vocab_size < 1:
            raise UserError(
                "The Transformer needs hparams.vocab_size: set it to the size of the "
                "problem's vocabulary (the trainer does this from the problem)."
            )
        if hparams.reads_leaves() and hparams.leaf_id <= EOS_ID:
            raise UserError(
                "leaf_positions=true and leaf_words=true need hparams.leaf_id, the target id "
                "of a parse tree's leaf (XX): the trainer sets it from a parsing problem's "
                "vocabulary."
            )
        self.hparams = hparams
        self.use_xla = use_xla

    def build(self, input_shape: Any = None) -> None:
        """Creates the sublayers, then every weight by running the model once on a tiny batch."""
        self._build_embeddings()
        self._build_stacks()
        # A softmax-only matrix is used through `project`, never called: build it here.
        if not self.softmax_weights.built:
            self.softmax_weights.build()
        self.logits_bias = None
        if self.hparams.logits_bias:  # Marian's final_logits_bias.
            self.logits_bias = self.add_weight(
                shape=(self.hparams.targets_vocab_size(),),
                initializer="zeros",
                dtype="float32",
                name="logits_bias",
            )
        ids = tf.ones([1, 1], tf.int32)
        with uncompiled_cores():
            self.call({"inputs": ids, "targets": ids})

    def _build_embeddings(self) -> None:
        """Token embeddings (one matrix, two or three), position tables, embedding dropout."""
        hparams, policy = self.hparams, self.dtype_policy
        d_model = hparams.d_model
        stddev = hparams.initializer_stddev
        self.source_embedding = ScaledEmbedding(
            hparams.vocab_size, d_model, stddev, dtype=policy, name="embedding"
        )
        self.target_embedding = self.source_embedding
        self.softmax_weights = self.source_embedding
        if not hparams.shared_embeddings:
            # The target side has its own size: a parser's ~70 symbols need no 16k-way softmax.
            target_vocab = hparams.targets_vocab_size()
            self.target_embedding = ScaledEmbedding(
                target_vocab, d_model, stddev, dtype=policy, name="target_embedding"
            )
            self.softmax_weights = self.target_embedding
            if not hparams.tie_target_embeddings:
                self.softmax_weights = ScaledEmbedding(
                    target_vocab, d_model, stddev, dtype=policy, name="softmax_weights"
                )
        self.position_tables = None
        if hparams.position_encoding == "learned":
            self.position_tables = [
                LearnedPositions(hparams.max_length, d_model, dtype=policy, name=name)
                for name in ("encoder_positions", "decoder_positions")
            ]
        self._build_leaf_inputs()
        self.embedding_dropout = Dropout(hparams.embedding_dropout, dtype=policy)

    def _build_leaf_inputs(self) -> None:
        """A parser's projections of leaf positions and leaf words, and its word-start table."""
        hparams, d_model = self.hparams, self.hparams.d_model

        def projection(name: str) -> keras.layers.Dense:
            # One initializer per matrix: an initializer's draws repeat with its seed.
            kernel = initializers.projection(hparams.initializer_stddev, d_model, d_model)
            return keras.layers.Dense(
                d_model,
                use_bias=False,
                kernel_initializer=kernel,
                dtype=self.dtype_policy,
                name=name,
            )

        self.word_starts = None
        self.leaf_projection = projection("leaf_positions") if hparams.leaf_positions else None
        self.leaf_word_projection = projection("leaf_words") if hparams.leaf_words else None
        if hparams.reads_leaves():
            # Per input id, 1 if its piece begins an encoder position (a word's
            # first piece, EOS): the encoder counts words, the decoder leaves,
            # and an unseen word split into pieces shifts neither. All ones
            # (a position per piece) until `set_word_starts`; checkpoints keep it.
            self.word_starts = self.add_weight(
                shape=(hparams.vocab_size,),
                initializer="ones",
                trainable=False,
                dtype="float32",
                name="word_starts",
            )

    def set_word_starts(self, word_start_ids: Sequence[int]) -> None:
        """Makes the encoder's positions count words: word_start_ids are the input
        ids whose piece starts a word (`TreeTokens.word_start_ids`); EOS is one too."""
        self._build_if_needed()
        if self.word_starts is None:
            raise ValueError("word starts are read only with leaf_positions or leaf_words.")
        table = np.zeros([self.hparams.vocab_size], np.float32)
        table[list(word_start_ids)] = 1.0
        table[EOS_ID] = 1.0
        self.word_starts.assign(table)

    def _build_stacks(self) -> None:
        """The encoder and decoder layers, and the final norms of pre-norm stacks."""
        hparams = self.hparams
        layer_args: dict[str, Any] = {
            "num_heads": hparams.num_heads,
            "key_depth": hparams.d_k,
            "value_depth": hparams.d_v,
            "d_ff": hparams.d_ff,
            "dropout": hparams.dropout,
            "attention_dropout": hparams.attention_dropout,
            "relu_dropout": hparams.relu_dropout,
            "norm_position": hparams.layer_norm_position,
            "norm_epsilon": hparams.layer_norm_epsilon,
            "use_xla": self.use_xla,
            "initializer_stddev": hparams.initializer_stddev,
            "activation": hparams.ffn_activation,
            "attention_bias": hparams.attention_bias,
            "dtype": self.dtype_policy,
        }
        self.encoder_layers = [
            EncoderLayer(**layer_args, name=f"encoder_{i}")
            for i in range(hparams.num_encoder_layers)
        ]
        self.decoder_layers = [
            DecoderLayer(**layer_args, name=f"decoder_{i}")
            for i in range(hparams.num_decoder_layers)
        ]
        self.final_norms = None
        if hparams.layer_norm_position == "pre":  # Pre-norm stacks end unnormalized.
            self.final_norms = [
                keras.layers.LayerNormalization(
                    epsilon=hparams.layer_norm_epsilon, dtype=self.dtype_policy, name=name
                )
                for name in ("encoder_norm", "decoder_norm")
            ]

    # Training and scoring.

    def call(self, features: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        """{"inputs": [B, S], "targets": [B, T]} ids -> [B, T, V] float32 logits, V the targets' size."""
        inputs = features["inputs"]
        memory, memory_bias = self.encode(inputs, training=training)
        return self.decode(features["targets"], memory, memory_bias, training, inputs)

    def encode(self, inputs: tf.Tensor, training: bool = False) -> tuple[tf.Tensor, tf.Tensor]:
        """[B, S] ids -> (encoder output [B, S, D], padding bias [B, 1, 1, S])."""
        memory, bias, _ = self._encoder_stack(inputs, training, with_weights=False)
        return memory, bias

    def decode(
        self,
        targets: tf.Tensor,
        memory: tf.Tensor,
        memory_bias: tf.Tensor,
        training: bool = False,
        inputs: tf.Tensor | None = None,
    ) -> tf.Tensor:
        """Teacher-forced decoder: targets [B, T] -> logits [B, T, V] float32.

        inputs: the [B, S] ids memory encodes; needed with leaf_words.
        """
        x, _ = self._decoder_stack(
            targets, memory, memory_bias, training, with_weights=False, inputs=inputs
        )
        return self._logits(x)

    def attention_weights(
        self, inputs: tf.Tensor, targets: tf.Tensor
    ) -> dict[str, list[tf.Tensor]]:
        """Attention probabilities of every layer and head in one teacher-forced pass.

        Runs the same encoder and decoder as `call` (training=False) and
        changes nothing in the model.

        Args:
          inputs: [B, S] int ids, each row ending with EOS then PAD.
          targets: [B, T] int ids, each row ending with EOS then PAD.

        Returns:
          float32 weights, one tensor per layer, bottom layer first:
          {"encoder": [B, H, S, S], "decoder": [B, H, T, T],
           "encoder_decoder": [B, H, T, S]}; rows are queries, columns keys.
        """
        self._build_if_needed()
        inputs = tf.convert_to_tensor(inputs, tf.int32)
        targets = tf.convert_to_tensor(targets, tf.int32)
        memory, memory_bias, encoder = self._encoder_stack(inputs, False, with_weights=True)
        _, (decoder, encoder_decoder) = self._decoder_stack(
            targets, memory, memory_bias, False, with_weights=True, inputs=inputs
        )
        kinds = {"encoder": encoder, "decoder": decoder, "encoder_decoder": encoder_decoder}
        return {kind: [tf.cast(w, tf.float32) for w in weights] for kind, weights in kinds.items()}

    def _encoder_stack(
        self, inputs: tf.Tensor, training: bool, with_weights: bool
    ) -> tuple[tf.Tensor, tf.Tensor, list[tf.Tensor]]:
        """[B, S] ids -> (output [B, S, D], bias [B, 1, 1, S], per-layer weights [B, H, S, S]).

        The weights list is empty unless with_weights.
        """
        self._check_length(inputs, "inputs")
        bias = padding_bias(inputs)
        x = self._embed(self.source_embedding, inputs, 0, 0, training)
        weights = []
        for layer in self.encoder_layers:
            if with_weights:
                x, layer_weights = layer.call_with_weights(x, bias, training=training)
                weights.append(layer_weights)
            else:
                x = layer(x, bias, training=training)
        if self.final_norms:
            x = self.final_norms[0](x)
        return x, bias, weights

    def _decoder_stack(
        self,
        targets: tf.Tensor,
        memory: tf.Tensor,
        memory_bias: tf.Tensor,
        training: bool,
        with_weights: bool,
        inputs: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, tuple[list[tf.Tensor], list[tf.Tensor]]]:
        """Teacher-forced decoder stack: targets [B, T] -> top layer output [B, T, D].

        Returns:
          (output, (self-attention weights [B, H, T, T] per layer,
          encoder-decoder weights [B, H, T, S] per layer)); the lists are
          empty unless with_weights.
        """
        self._check_length(targets, "targets")
        decoder_input = tf.pad(targets, [[0, 0], [1, 0]])[:, :-1]  # Shift right.
        leaves = leaf_words = None
        if self.word_starts is not None:  # Leaves among the inputs so far, this one included.
            is_leaf = tf.cast(decoder_input == self.hparams.leaf_id, tf.int32)
            leaves = tf.cumsum(is_leaf, axis=1)
        if self.leaf_word_projection is not None:
            if inputs is None:
                raise ValueError("leaf_words=true decodes with the inputs' ids.")
            words = self._word_memory(inputs, memory)
            leaf_words = tf.gather(words, tf.minimum(leaves, tf.shape(words)[1] - 1), batch_dims=1)
        x = self._embed(self.target_embedding, decoder_input, 1, 0, training, leaves, leaf_words)
        self_bias = causal_bias(tf.shape(targets)[1])
        self_weights, memory_weights = [], []
        for layer in self.decoder_layers:
            if with_weights:
                x, (layer_self, layer_memory) = layer.call_with_weights(
                    x, memory, self_bias, memory_bias, training=training
                )
                self_weights.append(layer_self)
                memory_weights.append(layer_memory)
            else:
                x = layer(x, memory, self_bias, memory_bias, training=training)
        return x, (self_weights, memory_weights)

    # Shared pieces.

    def _embed(
        self,
        embedding: ScaledEmbedding,
        ids: tf.Tensor,
        stack: int,
        start: tf.Tensor | int,
        training: bool,
        leaves: tf.Tensor | None = None,
        leaf_words: tf.Tensor | None = None,
    ) -> tf.Tensor:
        """Scaled embeddings plus positions start.., then dropout: [B, T] -> [B, T, D].

        leaves: [B, T] int, the leaves written before each position's word
        (`leaf_positions`): their projected sinusoid is added too.
        leaf_words: [B, T, D], the encoding of each position's next word
        (`leaf_words`), added projected.
        """
        x = embedding(ids)
        positions = tf.range(tf.shape(ids)[1]) + start + self.hparams.position_start
        if stack == 0 and self.word_starts is not None:  # The word each piece belongs to.
            starts = tf.cast(tf.gather(self.word_starts, ids), tf.int32)
            positions = tf.maximum(tf.cumsum(starts, axis=1) - 1, 0)
        if stack == 1 and self.hparams.decoder_start == "zero":  # No token at the first.
            started = tf.cast(positions != self.hparams.position_start, x.dtype)
            x *= (
                started[tf.newaxis, :, tf.newaxis]
                if positions.shape.rank == 1
                else started[..., None]
            )
        x = x + tf.cast(self._position_signal(positions, stack), x.dtype)
        if leaves is not None and self.leaf_projection is not None:
            leaf_signal = self._position_signal(leaves, None)
            x = x + self.leaf_projection(tf.cast(leaf_signal, x.dtype))
        if leaf_words is not None and self.leaf_word_projection is not None:
            x = x + self.leaf_word_projection(tf.cast(leaf_words, x.dtype))
        return self.embedding_dropout(x, training=training)

    def _word_memory(self, inputs: tf.Tensor, memory: tf.Tensor) -> tf.Tensor:
        """[B, S] ids, [B, S, D] encodings -> [B, S, D]: row w holds the encoding of
        word w's first piece (EOS's at the word count), zeros past the last word."""
        assert self.word_starts is not None
        starts = tf.gather(self.word_starts, inputs)  # [B, S], 1.0 where a word begins.
        word = tf.cast(tf.cumsum(starts, axis=1), tf.int32) - 1
        first = tf.one_hot(word, tf.shape(inputs)[1], dtype=memory.dtype)
        first *= tf.cast(starts, memory.dtype)[..., tf.newaxis]  # [B, piece, word]
        return tf.einsum("bpw,bpd->bwd", first, memory)

    def _position_signal(self, positions: tf.Tensor, stack: int | None) -> tf.Tensor:
        """[T] or [B, T] positions -> [1, T, D] or [B, T, D]: the stack's table, or the
        sinusoid (always for stack None)."""
        if self.position_tables and stack is not None:
            signal = self.position_tables[stack](tf.reshape(positions, [-1]))
        else:
            signal = sinusoid(
                tf.reshape(positions, [-1]), self.hparams.d_model, self.hparams.position_layout
            )
        shape = tf.concat([tf.shape(positions), [-1]], axis=0)
        if positions.shape.rank == 1:
            shape = tf.concat([[1], shape], axis=0)
        return tf.reshape(signal, shape)

    def _build_if_needed(self) -> None:
        # `build` runs `call`, so only the methods `call` does not use may build.
        if not self.built:
            self.build()

    def _logits(self, x: tf.Tensor) -> tf.Tensor:
        if self.final_norms:
            x = self.final_norms[1](x)
        logits = self.softmax_weights.project(x)
        return logits if self.logits_bias is None else logits + self.logits_bias

    def _check_length(self, ids: tf.Tensor, name: str) -> None:
        length = ids.shape[1]
        if length is not None and length > self.hparams.max_length:
            raise UserError(
                f"{name} of length {length} exceed the model's max_length of "
                f"{self.hparams.max_length} tokens; truncate them, or train with a larger "
                "max_length (decoding truncates with a warning)."
            )

    def get_config(self) -> dict[str, Any]:
        # use_xla is how this process runs the model, not part of it: not saved. A
        # config saved with it (before) still loads, taking it as the argument it is.
        return {**super().get_config(), "hparams": self.hparams.values()}
