"""Exporting a trained model as a SavedModel that translates strings.

The SavedModel is self-contained: the tokenizers (their model protos held in
the graph), the trained weights and the XLA-compiled beam search. Its
`serving_default` signature takes `inputs` [B] tf.string and returns
`outputs` [B] tf.string and `scores` [B] float32 (with return_beams,
[B, K] each, best first; sampling R = samples_per_input > 1 samples, [B, R]
each, best first). A sampling export draws with the seed it was exported
with, sample r of the request's input b from stream b * R + r
(`search.sampling`): the same request gives the same samples; export
again with another seed for others. Loading it needs only TensorFlow and, for
SentencePiece vocabularies, `import tensorflow_text` to register the
tokenizer ops. Any bytes are taken, invalid UTF-8 too; a Python client
whose string holds lone surrogates, of which TensorFlow makes no tf.string,
encodes it first (errors="surrogatepass", say, or "replace").

A parser's SavedModel (a problem with tree tokens, `Problem.tree_constraint`)
searches under the tree constraint and returns in `outputs` the PTB trees
t2t-decoder writes, "(TOP (S (NP (XX The) (XX cat)) (VP (XX sat)) (. .)))",
over the words of each input (brackets escaped as -LRB- ...; "" for an
input without words), built in the graph (`tree_strings`). A beam of
return_beams that found no hypothesis (score -inf) is "", as t2t-decoder's
empty column. Unconstrained outputs need the Python repair rules of
`t2t_keras.data.tree_repair`, so tree_constraint=false is refused for a parser.

A request is searched at a few shapes, all known at export (`RequestBuckets`):
its rows in calls of a few row counts (padded with empty inputs, whose
results are dropped), each call's width padded to a few widths, so that XLA
compiles a few searches, which TF Serving compiles at load by replaying the
requests of `assets.extra/tf_serving_warmup_requests` (`warmup`), one a shape.

Versions follow TF Serving's layout: `export_dir/<version>`, an integer that
grows with every export (the Unix time in seconds, as tf.estimator's
exporters wrote). A version is written under a hidden temporary name and
renamed into place, so an interrupted export leaves no partial SavedModel
where TF Serving looks, and the next export removes what it left.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import tensorflow as tf

from t2t_keras.data.ids import PAD_ID
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.export import warmup
from t2t_keras.export.warmup import RequestBuckets
from t2t_keras.files import remove_abandoned, temporary_path_for
from t2t_keras.run.loading import TrainedModel
from t2t_keras.search.settings import SearchSettings
from t2t_keras.search.slots import SlotSearch
from t2t_keras.serving.translator import encode_texts
from t2t_keras.serving.tree_strings import model_inputs, output_trees

SIGNATURE = warmup.SIGNATURE
# The hidden name a version has while it is written (files.temporary_path_for).
_WRITING = "export"
# Scores at or below this are the search's -inf: hypotheses that never ended
# (the bound Translator drops them by).
_NOT_ENDED = -1e30


def export_translator(
    trained: TrainedModel,
    export_dir: str,
    settings: SearchSettings,
    jit_compile: bool = True,
    tree_tokens: TreeTokens | None = None,
) -> str:
    """Writes a SavedModel that translates strings into a new version of export_dir.

    Args:
      trained: the model with its weights and vocabularies.
      export_dir: the directory of versions; created if missing.
      settings: the search, resolved (`DecodeHParams.resolve`); with
        return_beams, all K hypotheses per input come back, best first, and
        with sampling, its samples_per_input samples.
      jit_compile: XLA-compile the beam search inside the SavedModel.
      tree_tokens: the tree symbols of the vocabularies (a parsing problem's
        `tree_constraint`): with settings.tree_constraint, the search writes
        only well-formed trees over the input's words, and the SavedModel
        returns PTB trees. None: no constraint, outputs as decoded.

    Returns:
      The version directory written, export_dir/<version>, with TF Serving's
      warmup requests (`warmup`), one for each shape the search compiles.

    Raises:
      UserError: a parser without the tree constraint, or an export_dir that cannot be created or written.
    """
    check_tree_constraint(settings, tree_tokens)
    export_dir = os.path.abspath(os.path.expanduser(export_dir))
    temporary_dir = _make_temporary_dir(export_dir)
    try:
        search = SlotSearch(trained.model, settings, tree_tokens, jit_compile)
        buckets = RequestBuckets.of(search)
        inputs_vocab = trained.vocabs["inputs"]
        translator = ServingModule(search, buckets, inputs_vocab, trained.vocabs["targets"])
        tf.saved_model.save(translator, temporary_dir, signatures={SIGNATURE: translator.translate})
        warmup.write_requests(temporary_dir, warmup.requests(buckets, inputs_vocab))
        return _move_into_place(temporary_dir, export_dir)
    finally:
        if tf.io.gfile.exists(temporary_dir):
            tf.io.gfile.rmtree(temporary_dir)


def check_tree_constraint(settings: SearchSettings, tree_tokens: TreeTokens | None) -> None:
    """Refuses a parser (tree_tokens given) exported with tree_constraint=false."""
    if tree_tokens is not None and not settings.tree_constraint:
        raise UserError(
            "--decode_hparams sets tree_constraint=false, but this model is a parser: its "
            "SavedModel returns PTB trees, which it builds in the graph only from the "
            "well-formed trees of the constrained search (outputs of an unconstrained search "
            "need t2t-decoder's Python repair rules). Drop tree_constraint=false; "
            "t2t-decoder decodes without the constraint."
        )


class ServingModule(tf.Module):
    """What the SavedModel holds: vocabularies, weights and the `translate` function.

    Keras 3 layer lists are invisible to TensorFlow's object tracking, so the
    model's variables are attached here as a plain list of tf.Variables; the
    Decoder itself is only captured by the traced function, which keeps the
    Keras objects out of the SavedModel's object graph.

    Args:
      search: the search, over a model with trained weights; under the tree
        constraint (its tree_tokens set) outputs are PTB trees.
      buckets: the shapes a request is searched at (`RequestBuckets.of(search)`).
      inputs_vocab: encodes the inputs.
      targets_vocab: decodes the outputs.
    """

    def __init__(
        self,
        search: SlotSearch,
        buckets: RequestBuckets,
        inputs_vocab: Vocabulary,
        targets_vocab: Vocabulary,
    ) -> None:
        super().__init__(name="translator")
        self.inputs_vocab = inputs_vocab
        self.targets_vocab = targets_vocab
        self.model_variables = [variable.value for variable in search.model.variables]
        # Written in TensorFlow's own control flow: autograph's conversion of the
        # search's Python would only double the export's time.
        self.translate = tf.function(
            _translate_function(search, buckets, inputs_vocab, targets_vocab),
            input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
            autograph=False,
        )


def _translate_function(
    search: SlotSearch,
    buckets: RequestBuckets,
    inputs_vocab: Vocabulary,
    targets_vocab: Vocabulary,
) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
    """The serving computation: strings in, strings (or a parser's trees) and scores out."""
    parses = search.tree_tokens is not None

    def searched(inputs: tf.Tensor, ids: tf.Tensor) -> dict[str, tf.Tensor]:
        # encode_texts has cut the rows to max_length.
        output_ids, scores = bucketed_search(search, buckets, ids)  # [B, N, L], [B, N]
        if search.settings.num_returned == 1:
            outputs, scores = targets_vocab.tf_decode(output_ids[:, 0]), scores[:, 0]
        else:
            flat_ids = tf.reshape(output_ids, [-1, tf.shape(output_ids)[-1]])
            outputs = tf.reshape(targets_vocab.tf_decode(flat_ids), tf.shape(scores))
        if parses:
            outputs = _trees(inputs, outputs, scores)
        return {"outputs": outputs, "scores": scores}

    def translate(inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        """[B] strings -> {"outputs": [B] strings (a parser's: trees), "scores": [B] float32}
        ([B, K] each with beams, [B, R] with R samples).

        Any bytes are taken (invalid UTF-8 too), and B may be 0.
        """
        # A parser reads its input's words with brackets escaped, as t2t-decoder's does.
        texts = model_inputs(inputs) if parses else inputs
        rows, _ = encode_texts(inputs_vocab, texts, search.max_length)
        ids = rows.to_tensor(default_value=PAD_ID)  # [B, S]: S the longest row.
        # The XLA-compiled search fails on an empty batch, which gets empty outputs.
        returned = search.settings.num_returned
        empty_shape = [0] if returned == 1 else [0, returned]
        return tf.cond(
            tf.shape(ids)[0] > 0,
            lambda: searched(inputs, ids),
            lambda: {"outputs": tf.fill(empty_shape, ""), "scores": tf.zeros(empty_shape)},
        )

    return translate


def _trees(inputs: tf.Tensor, outputs: tf.Tensor, scores: tf.Tensor) -> tf.Tensor:
    """The PTB trees t2t-decoder writes: inputs [B], outputs and scores [B] or [B, K].

    A hypothesis that never ended (score -inf) is dropped by t2t-decoder: the
    best one is then read as an empty output (the words under TOP), others as "".
    """
    ended = scores > _NOT_ENDED
    trees = output_trees(inputs, tf.where(ended, outputs, ""))
    if trees.shape.rank == 2:
        best = tf.range(tf.shape(trees)[1]) == 0  # [K]
        trees = tf.where(ended | best, trees, "")
    return trees


def bucketed_search(
    search: SlotSearch, buckets: RequestBuckets, ids: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """`search.search_tensor` of a request's rows in calls of `buckets`' shapes: the
    same hypotheses, as a row's search reads only its own rows.

    Args:
      search: the search.
      buckets: `RequestBuckets.of(search)`.
      ids: [B, S] int32, B > 0, each row ending with EOS then PAD, S <= max_length.

    Returns:
      (ids [B, R, max_length] int32, PAD after each hypothesis's EOS; scores
      [B, R] float32), in the rows' order.
    """
    rows = tf.shape(ids)[0]
    lengths = tf.reduce_sum(tf.cast(ids != PAD_ID, tf.int32), axis=1)
    size = buckets.call_rows(rows)
    if buckets.splits:  # Longest first: a call's rows alike in length (its width, its steps).
        order = tf.argsort(lengths, direction="DESCENDING", stable=True)
    else:  # Sampling: a row's number in its one call is its stream's.
        order = tf.range(rows)
    returned = search.settings.num_returned
    found = tf.zeros([rows, returned, buckets.max_length], tf.int32), tf.zeros([rows, returned])

    def call(first: tf.Tensor, found: tuple[tf.Tensor, tf.Tensor]) -> tuple:
        chosen = order[first : tf.minimum(first + size, rows)]
        output_ids, scores = search.search_tensor(
            buckets.pad(tf.gather(ids, chosen), tf.gather(lengths, chosen))
        )  # [B', R, L], [B', R]: the padding rows' last.
        output_ids = output_ids[: tf.size(chosen)]
        positions = buckets.max_length - tf.shape(output_ids)[2]
        output_ids = tf.pad(output_ids, [[0, 0], [0, 0], [0, positions]], constant_values=PAD_ID)
        at = chosen[:, tf.newaxis]
        return first + size, (
            tf.tensor_scatter_nd_update(found[0], at, output_ids),
            tf.tensor_scatter_nd_update(found[1], at, scores[: tf.size(chosen)]),
        )

    _, found = tf.while_loop(lambda first, _: first < rows, call, (tf.constant(0), found))
    return found


def _make_temporary_dir(export_dir: str) -> str:
    """Creates a hidden directory inside export_dir for the SavedModel being written.

    What an interrupted export left there is removed first.
    """
    remove_abandoned(os.path.join(export_dir, _WRITING))
    temporary_dir = temporary_path_for(os.path.join(export_dir, _WRITING))
    try:
        tf.io.gfile.makedirs(temporary_dir)
    except (OSError, tf.errors.OpError) as error:
        raise UserError(
            f"cannot write the export directory {export_dir} ({_first_line(error)}); give "
            "--export_dir a directory you may write to (it is created if missing)."
        ) from None
    return temporary_dir


def _move_into_place(temporary_dir: str, export_dir: str) -> str:
    """Renames the written SavedModel to a new version: now, or past the newest one."""
    while True:
        existing = [int(name) for name in tf.io.gfile.listdir(export_dir) if name.isdecimal()]
        version = max([int(time.time()), *(number + 1 for number in existing)])
        version_dir = os.path.join(export_dir, str(version))
        try:
            # Renaming onto a path that exists fails, so no version is ever replaced.
            tf.io.gfile.rename(temporary_dir, version_dir, overwrite=False)
            return version_dir
        except tf.errors.AlreadyExistsError:
            continue  # Another export took this version in the meantime.


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
