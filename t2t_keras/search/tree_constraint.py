"""A search constrained to linearized trees over exactly the input's words.

Under the constraint, each step allows only the tokens that keep the output
a prefix of a well-formed tree (`t2t_keras.data.trees.linearize`) whose
leaves are exactly N XX, N the words of the input
(`t2t_keras.data.tree_tokens`):

  - the first token opens the root; after the root closes, only EOS, and
    EOS only then (N = 0, an empty input: EOS at once);
  - a closing bracket closes the innermost open constituent, with its
    label, and never right after its opening (no empty constituents);
  - XX only inside a constituent and only while fewer than N are written;
    the root closes only when all N are;
  - a constituent opens only while a word can still follow, below a nesting
    of `max_depth`, and only if the tree can still end by the sentence's
    length limit: the remaining words, a close for each open constituent and
    for the new one must fit before the EOS at max_lengths;
  - nothing else: no PAD, word pieces or UNK.

Every row can therefore always finish: it keeps at least one allowed token,
and its tree is complete by its length limit (an N too large to fit at all,
N + 2 > max_lengths, is cut to what fits; the repair rules then add the
words left out). The searches (`t2t_keras.search.beam`) mask the
log-probabilities with `allowed`, carry a `TreeState` per beam, reorder it by
the beams' parents and `advance` it with the chosen tokens; the constraint
decides where EOS goes, so the minimum length is not applied under it.

Shapes: B sentences, K beams, V the model's vocabulary, D = max_depth.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from t2t_keras.data.ids import EOS_ID
from t2t_keras.data.tree_tokens import TreeTokens

# Deepest nesting a search may write: the treebank's trees stay under 40.
MAX_DEPTH = 64


class TreeState(NamedTuple):
    """Where each beam's tree stands; every field is [B, K, ...]."""

    stack: tf.Tensor  # [B, K, D] int32: label index of each open constituent, outermost first
    depth: tf.Tensor  # [B, K] int32: constituents open
    leaves: tf.Tensor  # [B, K] int32: XX written
    just_opened: tf.Tensor  # [B, K] bool: the last token opened a constituent


class TreeConstraint:
    """The tree constraint of one batch: the vocabulary's tables and each sentence's needs.

    Built inside the traced search (its tables become graph constants).

    Args:
      tokens: the tree symbols and word starts (`tree_tokens`).
      vocab_size: V, the model's logits; ids at or above it are never produced.
      inputs: [B, S] the input ids: sentence b needs as many leaves as its
        ids that start a word.
      max_lengths: [B] int32 the most tokens before EOS (`decoder.decode_limits`).
      max_depth: D, the deepest nesting allowed (a static stack size).
    """

    def __init__(
        self,
        tokens: TreeTokens,
        vocab_size: int,
        inputs: tf.Tensor,
        max_lengths: tf.Tensor,
        max_depth: int = MAX_DEPTH,
    ) -> None:
        pairs = [(o, c) for o, c in zip(tokens.open_ids, tokens.close_ids, strict=True)]
        pairs = [(o, c) for o, c in pairs if o < vocab_size and c < vocab_size]
        if not pairs or tokens.leaf_id >= vocab_size:
            raise ValueError(f"the tree symbols {tokens} lie outside the {vocab_size} logits.")
        open_labels, close_labels = [-1] * vocab_size, [-1] * vocab_size
        for label, (open_id, close_id) in enumerate(pairs):
            open_labels[open_id], close_labels[close_id] = label, label
        self.vocab_size, self.max_depth, self.leaf_id = vocab_size, max_depth, tokens.leaf_id
        self.open_labels = tf.constant(open_labels, tf.int32)  # [V]: label index, or -1
        self.close_labels = tf.constant(close_labels, tf.int32)  # [V]
        self.close_ids = tf.constant([close_id for _, close_id in pairs], tf.int32)  # [labels]
        self.max_lengths = tf.cast(max_lengths, tf.int32)
        # A tree of N leaves takes N + 2 tokens at least: N is cut to what fits.
        self.needed = tf.minimum(words(tokens, inputs), tf.maximum(self.max_lengths - 2, 0))

    def start(self, beams: int) -> TreeState:
        """The state before the first token: nothing open, nothing written ([B, K])."""
        zeros = tf.zeros_like(self.needed)[:, tf.newaxis] + tf.zeros([beams], tf.int32)
        return TreeState(
            stack=tf.zeros_like(zeros)[:, :, tf.newaxis] + tf.zeros([self.max_depth], tf.int32),
            depth=zeros,
            leaves=zeros,
            just_opened=tf.zeros_like(zeros, tf.bool),
        )

    def allowed(self, state: TreeState, index: tf.Tensor) -> tf.Tensor:
        """[B, K, V] bool: the tokens each beam may write at position `index`
        (one for all sentences, or [B], each sentence's own)."""
        needed = self.needed[:, tf.newaxis]  # [B, 1]
        remaining = needed - state.leaves  # [B, K] words still to write
        finished = (state.depth == 0) & (remaining == 0)
        # Opening takes this token, and its close joins those still needed.
        own_index = tf.reshape(index, [-1, 1])  # [B|1, 1]
        fits = own_index + 2 + remaining + state.depth <= self.max_lengths[:, tf.newaxis]
        may_open = ~finished & (state.depth < self.max_depth) & (remaining > 0) & fits
        may_leaf = (state.depth > 0) & (remaining > 0)
        may_close = (state.depth > 0) & ~state.just_opened & ((state.depth > 1) | (remaining == 0))
        innermost = tf.gather(state.stack, tf.maximum(state.depth - 1, 0), batch_dims=2)
        closing_id = tf.gather(self.close_ids, innermost)  # [B, K]
        tokens = tf.range(self.vocab_size)  # [V]
        return (
            ((self.open_labels >= 0) & may_open[..., tf.newaxis])
            | ((tokens == self.leaf_id) & may_leaf[..., tf.newaxis])
            | ((tokens == closing_id[..., tf.newaxis]) & may_close[..., tf.newaxis])
            | ((tokens == EOS_ID) & finished[..., tf.newaxis])
        )

    def advance(self, state: TreeState, tokens: tf.Tensor) -> TreeState:
        """The state after each beam writes tokens [B, K] (any ids in [0, V): a beam
        already at -inf may write a disallowed one, which must not break the shapes)."""
        label = tf.gather(self.open_labels, tokens)
        opens, closes = label >= 0, tf.gather(self.close_labels, tokens) >= 0
        at_top = tf.one_hot(state.depth, self.max_depth, on_value=True, off_value=False)
        stack = tf.where(opens[..., tf.newaxis] & at_top, label[..., tf.newaxis], state.stack)
        depth = state.depth + tf.cast(opens, tf.int32) - tf.cast(closes, tf.int32)
        return TreeState(
            stack=stack,
            depth=tf.clip_by_value(depth, 0, self.max_depth),
            leaves=state.leaves + tf.cast(tokens == self.leaf_id, tf.int32),
            just_opened=opens,
        )


def reorder(state: TreeState, parents: tf.Tensor) -> TreeState:
    """Each beam's state taken from its parent beam: parents [B, K] int32 in [0, K)."""
    return TreeState(*(tf.gather(field, parents, batch_dims=1) for field in state))


def words(tokens: TreeTokens, inputs: tf.Tensor) -> tf.Tensor:
    """[B, S] input ids -> [B] int32 how many of them start a word."""
    is_start = [False] * tokens.inputs_vocab_size
    for token in tokens.word_start_ids:
        is_start[token] = True
    inputs = tf.cast(inputs, tf.int32)
    in_range = (inputs >= 0) & (inputs < tokens.inputs_vocab_size)
    starts = tf.gather(tf.constant(is_start), tf.where(in_range, inputs, 0)) & in_range
    return tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)
