"""Exporting a trained model as a SavedModel that translates strings.

The SavedModel is self-contained: the tokenizers (their model protos held in
the graph), the trained weights and the XLA-compiled beam search. Its
`serving_default` signature takes `inputs` [B] tf.string and returns
`outputs` [B] tf.string and `scores` [B] float32 (with return_beams,
[B, K] each, best first). Loading it needs only TensorFlow and, for
SentencePiece vocabularies, `import tensorflow_text` to register the
tokenizer ops.

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
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.decoding.decode_hparams import SEARCH_SETTINGS, DecodeHParams
from t2t_keras.decoding.decoder import Decoder
from t2t_keras.decoding.translate import encode_texts
from t2t_keras.errors import UserError
from t2t_keras.files import remove_abandoned, temporary_path_for
from t2t_keras.run.loading import TrainedModel

SIGNATURE = "serving_default"
# The hidden name a version has while it is written (files.temporary_path_for).
_WRITING = "export"


def export_translator(
    trained: TrainedModel,
    export_dir: str,
    settings: DecodeHParams | None = None,
    jit_compile: bool = True,
) -> str:
    """Writes a SavedModel that translates strings into a new version of export_dir.

    Args:
      trained: the model with its weights and vocabularies.
      export_dir: the directory of versions; created if missing.
      settings: the search (beam_size, alpha, extra_length, min_length,
        stopping, return_beams: all K hypotheses per input, best first),
        resolved; unset ones are filled in from the model's hparams by
        `DecodeHParams.resolved`. Settings of file decoding are refused.
      jit_compile: XLA-compile the beam search inside the SavedModel.

    Returns:
      The version directory written, export_dir/<version>.

    Raises:
      UserError: settings an exported model does not have, or an export_dir
        that cannot be created or written.
    """
    settings = (settings or DecodeHParams()).resolved(trained.model.hparams)
    check_exportable(settings)
    export_dir = os.path.abspath(os.path.expanduser(export_dir))
    temporary_dir = _make_temporary_dir(export_dir)
    try:
        decoder = Decoder(trained.model, **settings.search_settings(), jit_compile=jit_compile)
        translator = ServingModule(decoder, trained.vocabs["inputs"], trained.vocabs["targets"])
        tf.saved_model.save(translator, temporary_dir, signatures={SIGNATURE: translator.translate})
        return _move_into_place(temporary_dir, export_dir)
    finally:
        if tf.io.gfile.exists(temporary_dir):
            tf.io.gfile.rmtree(temporary_dir)


def check_exportable(settings: DecodeHParams) -> None:
    """Refuses settings of file decoding (batching, writing), which an exported model lacks."""
    others = [name for name in settings.changed() if name not in SEARCH_SETTINGS]
    if others:
        raise UserError(
            f"--decode_hparams sets {', '.join(others)}, which an exported model does not "
            f"have; it takes {', '.join(SEARCH_SETTINGS)}."
        )


class ServingModule(tf.Module):
    """What the SavedModel holds: vocabularies, weights and the `translate` function.

    Keras 3 layer lists are invisible to TensorFlow's object tracking, so the
    model's variables are attached here as a plain list of tf.Variables; the
    Decoder itself is only captured by the traced function, which keeps the
    Keras objects out of the SavedModel's object graph.

    Args:
      decoder: the search, over a model with trained weights.
      inputs_vocab: encodes the inputs.
      targets_vocab: decodes the outputs.
    """

    def __init__(
        self, decoder: Decoder, inputs_vocab: Vocabulary, targets_vocab: Vocabulary
    ) -> None:
        super().__init__(name="translator")
        self.inputs_vocab = inputs_vocab
        self.targets_vocab = targets_vocab
        self.model_variables = [variable.value for variable in decoder.model.variables]
        self.translate = tf.function(
            _translate_function(decoder, inputs_vocab, targets_vocab),
            input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
        )


def _translate_function(
    decoder: Decoder, inputs_vocab: Vocabulary, targets_vocab: Vocabulary
) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
    """The serving computation: strings in, strings and scores out."""
    # The compiled search itself: encode_texts has cut the rows to max_length.
    search = decoder.search

    def searched(ids: tf.Tensor) -> dict[str, tf.Tensor]:
        output_ids, scores = search(ids)  # [B, N, L], [B, N]
        if decoder.num_returned == 1:
            return {"outputs": targets_vocab.tf_decode(output_ids[:, 0]), "scores": scores[:, 0]}
        flat_ids = tf.reshape(output_ids, [-1, tf.shape(output_ids)[-1]])
        outputs = tf.reshape(targets_vocab.tf_decode(flat_ids), tf.shape(scores))
        return {"outputs": outputs, "scores": scores}

    def translate(inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        """[B] strings -> {"outputs": [B] strings, "scores": [B] float32} ([B, K] with beams).

        Any bytes are taken (invalid UTF-8 too), and B may be 0.
        """
        rows, _ = encode_texts(inputs_vocab, inputs, decoder.max_length)
        ids = rows.to_tensor(default_value=PAD_ID)  # [B, S]: S the longest row.
        # The XLA-compiled search fails on an empty batch, which gets empty outputs.
        empty_shape = [0] if decoder.num_returned == 1 else [0, decoder.num_returned]
        return tf.cond(
            tf.shape(ids)[0] > 0,
            lambda: searched(ids),
            lambda: {"outputs": tf.fill(empty_shape, ""), "scores": tf.zeros(empty_shape)},
        )

    return translate


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
