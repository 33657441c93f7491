"""A constrained parser's outputs as PTB trees, in the graph (for the exported SavedModel).

t2t-decoder writes `ParsingProblem.output_trees` of each output, in Python;
an exported parser must return the same bytes with TensorFlow ops alone. For
a source and an output of the tree-constrained search
(`t2t_keras.search.tree_constraint`) this module builds

    "(TOP (S (NP (XX The) (XX cat)) (VP (XX sat)) (. .)))"

over the words of `trees.escape_words(source)` (split on Python's
whitespace, brackets escaped), tagged as `trees.output_tags` tags them:
"(LABEL" stays, ")LABEL" becomes ")", the i-th XX becomes "(TAG word_i)".
Where the search's leaf count N' (it counts the SentencePiece word starts of
the cut input) differs from the W words, the repair rules of
`t2t_keras.data.tree_repair` are followed:

  N' < W   (missing_words) the words left over go, in order, at the end of the
           root constituent; with no tree at all (an empty output), under TOP.
  N' > W   (extra_words, empty_constituent) the XX past the W-th are dropped,
           with every constituent that then holds no word.

An empty source gives "". Outputs that are not one well-formed tree (which
the constraint never writes) are not repaired as tree_repair would: tokens
other than brackets and XX are dropped, and the result need not be a tree
(t2t_keras.export.saved_model therefore refuses a parser without the constraint).

Shapes: B sentences, T output tokens, W words (ragged where written (T)).
"""

from __future__ import annotations

import tensorflow as tf

from t2t_keras.data.tree_repair import ROOT_LABEL
from t2t_keras.data.trees import POS_PLACEHOLDER, PTB_ESCAPES, PUNCTUATION_TAGS

# What Python's str.split() splits on: every character whose isspace() is true.
PYTHON_WHITESPACE = (
    "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_SPACES = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE) + "]+"


def escaped_words(texts: tf.Tensor) -> tf.RaggedTensor:
    """`trees.escape_words` in the graph: [B] tf.string -> [B, (W)] tf.string words."""
    # tf.strings.split splits on ASCII whitespace only: the rest becomes a space first.
    words = tf.strings.split(tf.strings.regex_replace(texts, _SPACES, " "))
    flat = words.flat_values
    inner = tf.strings.regex_replace(tf.strings.regex_replace(flat, r"\(", "-LRB-"), r"\)", "-RRB-")
    for bracket, name in PTB_ESCAPES.items():
        inner = tf.where(flat == bracket, name, inner)
    return words.with_flat_values(inner)


def model_inputs(texts: tf.Tensor) -> tf.Tensor:
    """`ParsingProblem.model_input` in the graph: [B] tf.string -> [B] escaped words joined by " "."""
    return tf.strings.reduce_join(escaped_words(texts), axis=1, separator=" ")


def output_tags(words: tf.RaggedTensor) -> tf.RaggedTensor:
    """`trees.output_tags` in the graph: [B, (W)] words -> [B, (W)] their tags.

    "'" is '' while a quote opened by "`" is open, else POS; the count of open
    quotes is carried word by word (a scan over W, all rows at once).
    """
    flat_tags = tf.fill(tf.shape(words.flat_values), POS_PLACEHOLDER)
    for word, tag in PUNCTUATION_TAGS.items():
        flat_tags = tf.where(words.flat_values == word, tag, flat_tags)
    dense = words.to_tensor(default_value="")  # [B, W]
    opens = tf.cast(dense == "`", tf.int32)
    closes = tf.cast(dense == "'", tf.int32)

    def step(open_quotes: tf.Tensor, opens_closes: tuple[tf.Tensor, tf.Tensor]) -> tf.Tensor:
        opened, closed = opens_closes
        return tf.maximum(open_quotes + opened - closed, 0)

    after = tf.scan(
        step,
        (tf.transpose(opens), tf.transpose(closes)),
        initializer=tf.zeros([tf.shape(dense)[0]], tf.int32),
    )  # [W, B]: open quotes after each word.
    before = tf.concat([tf.zeros_like(after[:1]), after[:-1]], axis=0)
    quote_open = tf.RaggedTensor.from_tensor(tf.transpose(before) > 0, lengths=words.row_lengths())
    apostrophe = words.flat_values == "'"
    quote_tags = tf.where(quote_open.flat_values, "''", "POS")
    return words.with_flat_values(tf.where(apostrophe, quote_tags, flat_tags))


def output_trees(sources: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
    """`ParsingProblem.output_trees` of constrained outputs, in the graph.

    Args:
      sources: [B] tf.string, the inputs as given (before `model_inputs`).
      outputs: [B] or [B, K] tf.string, linearized trees (K hypotheses each).

    Returns:
      The PTB trees, shaped as outputs; "" where the source has no words.
    """
    outputs = tf.convert_to_tensor(outputs, tf.string)
    if outputs.shape.rank == 2:
        beams = tf.shape(outputs)[1]
        flat = _trees(tf.repeat(sources, beams), tf.reshape(outputs, [-1]))
        return tf.reshape(flat, tf.shape(outputs))
    return _trees(sources, outputs)


def _trees(sources: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
    """[B] sources, [B] outputs -> [B] trees."""
    words = escaped_words(sources)  # [B, (W)]
    leaves = tf.strings.join([" (", output_tags(words).flat_values, " ", words.flat_values, ")"])
    leaves = words.with_flat_values(leaves)  # [B, (W)] " (TAG word)"
    tokens = tf.strings.split(outputs)  # [B, (T)]
    flat = tokens.flat_values
    is_leaf = flat == POS_PLACEHOLDER
    is_open = tf.strings.regex_full_match(flat, r"\(.+")
    is_close = tf.strings.regex_full_match(flat, r"\).*")

    def per_token(values: tf.Tensor) -> tf.RaggedTensor:
        return tokens.with_flat_values(tf.cast(values, tf.int64))

    # Leaves before each token; the depth after it.
    leaves_before = tf.math.cumsum(per_token(is_leaf), axis=1, exclusive=True)
    depth = tf.math.cumsum(per_token(is_open) - per_token(is_close), axis=1)
    words_per_row = words.row_lengths()  # [B]
    word_count = tf.gather(words_per_row, tokens.value_rowids())  # [T total]
    # Each leaf's piece; other tokens point past the pieces, at an appended "".
    leaf_index = tf.where(
        is_leaf & (leaves_before.flat_values < word_count),
        tf.gather(words.row_starts(), tokens.value_rowids()) + leaves_before.flat_values,
        tf.size(leaves.flat_values, out_type=tf.int64),
    )
    leaf_pieces = tf.gather(tf.concat([leaves.flat_values, [""]], axis=0), leaf_index)
    pieces = tf.where(is_open, tf.strings.join([" ", flat]), tf.where(is_close, ")", leaf_pieces))
    # The root's close (depth 0 after it) and everything after the last word are left
    # out; what is still open is closed at the end, after the words no XX took.
    kept = (is_open | is_leaf | is_close) & (leaves_before.flat_values < word_count)
    kept &= ~(is_close & (depth.flat_values == 0))
    body = tf.strings.reduce_join(
        tf.ragged.boolean_mask(tokens.with_flat_values(pieces), tokens.with_flat_values(kept)),
        axis=1,
    )
    opened = tf.reduce_sum(per_token(is_open & kept) - per_token(is_close & kept), axis=1)
    unclosed = tf.maximum(opened, 0)
    written = tf.minimum(tf.reduce_sum(per_token(is_leaf), axis=1), words_per_row)
    left_over = tf.ragged.boolean_mask(
        leaves, tf.ragged.range(words_per_row) >= written[:, tf.newaxis]
    )
    closing = tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(unclosed)], ")"), unclosed)
    trees = tf.strings.join(
        [
            f"({ROOT_LABEL}",
            body,
            tf.strings.reduce_join(left_over, axis=1),
            tf.strings.reduce_join(closing, axis=1),
            ")",
        ]
    )
    return tf.where(words_per_row > 0, trees, "")
