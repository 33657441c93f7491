"""The few shapes a SavedModel searches a request at, and TF Serving's warmup
requests, one for each, that have XLA compile them all before the first request.

XLA compiles the search once for each shape of slots (count x width), seconds
each on a CPU. `RequestBuckets` keeps those shapes few and known at export:
a request's rows are searched in calls of a few row counts and widths. TF
Serving, loading a version, replays the `tensorflow.serving.PredictionLog`
records of `assets.extra/tf_serving_warmup_requests` before it serves: each a
PredictRequest of the serving_default signature with `inputs`, a [B] string
tensor. t2t-exporter writes one record a shape (`requests`, `write_requests`);
`replay_warmup` replays them for a client that loads the SavedModel itself.

The records are written in protobuf's wire format here, the fields of
tensorflow_serving's PredictionLog that a request needs, so exporting needs
no tensorflow-serving-api; the tensors are TensorFlow's own TensorProto.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.search import shapes
from t2t_keras.search.slots import SPLIT_SLOTS, SlotSearch

# Where TF Serving looks for them, inside the version directory.
WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY  # "serving_default"
INPUTS = "inputs"  # The signature's argument.
# The slot counts a request's search runs at: a call's rows are padded with empty
# inputs up to the fewest that take the next of these (3 or 4 rows: to 5, in 4 slots,
# as fast as in 2). Each count is a compiled search a width: without 8 and 32, 9 rows
# took 70% longer in 16 slots than in 8, 33 and 64 rows twice as long in 64 as in 32.
SERVED_SLOTS = (1, 4, 8, 16, 32, 64)
# The widths a call's rows are padded to where most sentences are; past 64, doubling.
# Multi30k's test lines in batches of 32 are 16 to 34 ids wide (27.3 on average),
# padded to 31.5 here, 30.3 in the search's own finer buckets (the file decoded
# 4% slower than with those), 36.5 by powers of two alone (8% slower).
NARROW_WIDTHS = (16, 24, 32, 48, 64)
# Field numbers of tensorflow_serving's protos (apis/prediction_log.proto,
# predict.proto, model.proto): PredictionLog.predict_log, PredictLog.request,
# PredictRequest.model_spec and .inputs (a map: entries of key and value),
# ModelSpec.signature_name.
_PREDICT_LOG, _REQUEST, _MODEL_SPEC, _INPUTS, _SIGNATURE_NAME = 6, 1, 1, 2, 3
_KEY, _VALUE = 1, 2
_LENGTH_DELIMITED = 2  # The wire type of messages, strings and bytes.


@dataclasses.dataclass(frozen=True)
class RequestBuckets:
    """The few shapes a request is searched at (`search_tensor`'s slots x width).

    A request's rows are searched longest first in calls of equal size, each of
    at most `most_rows[-1]` rows (more would take a second pass, of a count of
    slots that depends on the outputs); under sampling, in one call, in order
    (a sample's stream is its row's number in the call, `search.sampling`), so
    that a sampling request of more rows meets shapes the warmup missed. A
    class of calls takes the row counts `most_rows` bounds, padded with empty
    inputs (EOS alone) up to its `fewest_rows`, where `search.slots_for` gives
    its count of slots. A call's width, its longest row, is padded with PAD up
    to the next of `widths` (columns no search reads). `call_rows`,
    `padded_rows` and `padded_width` are the graph's; `request_shapes` says, in
    Python, the shapes they lead to.

    Attributes:
      most_rows: the most rows of each class, ascending.
      fewest_rows: the rows each class is padded up to.
      slots: the count of slots each class is searched by.
      widths: the widths, ascending, the last max_length.
      max_length: the model's longest sequence.
      splits: a request may take several calls (not under sampling).
    """

    most_rows: tuple[int, ...]
    fewest_rows: tuple[int, ...]
    slots: tuple[int, ...]
    widths: tuple[int, ...]
    max_length: int
    splits: bool

    @classmethod
    def of(cls, search: SlotSearch) -> RequestBuckets:
        """The classes of `search`'s counts of slots in SERVED_SLOTS, its fewest (a
        single row's) and its most."""
        samples = search.settings.samples_per_input  # The search takes R rows a row.
        counts = [search.slots_for(samples)]  # counts[r - 1]: the slots of r rows, ascending.
        while samples * (len(counts) + 1) < SPLIT_SLOTS * search.slots:  # One pass.
            counts.append(search.slots_for(samples * (len(counts) + 1)))
        ends = {counts[0], counts[-1]}  # A single row is never padded.
        served = sorted({count for count in counts if count in SERVED_SLOTS} | ends)
        max_length = search.max_length
        widths = [width for width in NARROW_WIDTHS if width < max_length]
        while widths and 2 * widths[-1] < max_length:
            widths.append(2 * widths[-1])
        return cls(
            most_rows=tuple(bisect.bisect_right(counts, count) for count in served),
            fewest_rows=tuple(bisect.bisect_left(counts, count) + 1 for count in served),
            slots=tuple(served),
            widths=(*widths, max_length),
            max_length=max_length,
            splits=search.sampler is None,
        )

    def call_rows(self, rows: tf.Tensor) -> tf.Tensor:
        """The rows of each call searching a request of `rows` rows (the last: the rest)."""
        if not self.splits:
            return rows
        calls = -(-rows // self.most_rows[-1])
        return -(-rows // calls)  # Of equal size, so that the last is no small one.

    def padded_rows(self, rows: tf.Tensor) -> tf.Tensor:
        """The rows a call of `rows` rows is padded to (more than most_rows[-1]: none)."""
        index = tf.searchsorted(tf.constant(self.most_rows), rows[tf.newaxis])[0]
        fewest = tf.gather(self.fewest_rows, tf.minimum(index, len(self.most_rows) - 1))
        return tf.maximum(rows, fewest)

    def padded_width(self, width: tf.Tensor) -> tf.Tensor:
        """The width a call whose longest row has `width` ids is padded to."""
        index = tf.searchsorted(tf.constant(self.widths), width[tf.newaxis])[0]
        return tf.maximum(width, tf.gather(self.widths, tf.minimum(index, len(self.widths) - 1)))

    def pad(self, ids: tf.Tensor, lengths: tf.Tensor) -> tf.Tensor:
        """A call's rows ids [B, S] with `lengths` [B] ids each, padded: [B', W]."""
        longest = tf.reduce_max(lengths)
        width = self.padded_width(longest)
        ids = tf.pad(ids[:, :longest], [[0, 0], [0, width - longest]], constant_values=PAD_ID)
        empty = tf.fill([self.padded_rows(tf.shape(ids)[0]) - tf.shape(ids)[0], 1], EOS_ID)
        return tf.concat([ids, tf.pad(empty, [[0, 0], [0, width - 1]])], axis=0)

    def compiled_shape(self, rows: int, width: int) -> tuple[int, int]:
        """(slots, width) searched for a call of `rows` rows (at most most_rows[-1])
        whose longest has `width` ids (`search_tensor` widens one slot's rows to
        shapes.ONE_ROW_WIDTH)."""
        padded = int(self.padded_rows(tf.constant(rows)))
        slots = self.slots[min(bisect.bisect_left(self.most_rows, padded), len(self.slots) - 1)]
        padded_width = int(self.padded_width(tf.constant(width)))
        return slots, shapes.bucket_width(padded_width, self.max_length, slots)

    def request_shapes(self, lengths: Sequence[int]) -> list[tuple[int, int]]:
        """(slots, width) of each call searching a request whose rows have `lengths`
        ids, EOS included (at most max_length)."""
        ordered = sorted(lengths, reverse=True)
        size = int(self.call_rows(tf.constant(len(ordered))))
        calls = [ordered[first : first + size] for first in range(0, len(ordered), size)]
        return [self.compiled_shape(len(call), max(call)) for call in calls]

    def compiled_shapes(self) -> list[tuple[int, int]]:
        """Every (slots, width) a call is searched at, ascending."""
        return sorted(
            {self.compiled_shape(rows, width) for rows in self.fewest_rows for width in self.widths}
        )


def requests(buckets: RequestBuckets, vocab: Vocabulary) -> list[list[str]]:
    """A request for each of `buckets.compiled_shapes()`, of real text.

    Each request has a class's fewest rows: one row a word repeated to a
    width's length, the others the word alone (short to search).

    Raises:
      RuntimeError: the vocabulary has no word that encodes, repeated, as one id
        a time, or the requests miss a shape (a bug).
    """
    word, joiner = _repeatable_word(vocab)
    found: dict[tuple[int, int], list[str]] = {}
    for rows in buckets.fewest_rows:
        for width in buckets.widths:
            text = joiner.join([word] * (width - 1))  # width - 1 ids, then EOS.
            ids = min(len(vocab.encode(text)) + 1, buckets.max_length)
            found.setdefault(buckets.compiled_shape(rows, ids), [text] + [word] * (rows - 1))
    missing = sorted(set(buckets.compiled_shapes()) - set(found))
    if missing:
        raise RuntimeError(f"no warmup request searched at the shapes {missing}")
    return [found[shape] for shape in sorted(found)]


def _repeatable_word(vocab: Vocabulary) -> tuple[str, str]:
    """(a word, a joiner): the word encodes as one id, repeated as many."""
    for token in range(EOS_ID + 1, vocab.vocab_size):
        word = vocab.decode([token]).strip()
        if not word.isalpha():
            continue
        for joiner in (" ", ""):  # Words, or characters (a byte vocabulary).
            ids = vocab.encode(joiner.join([word] * 3))
            if len(ids) == 3 and len(set(ids)) == 1:
                return word, joiner
    raise RuntimeError("the inputs vocabulary has no word that encodes as one id when repeated")


def write_requests(version_dir: str, texts: list[list[str]]) -> str:
    """Writes each of `texts`, a request's inputs, as TF Serving's warmup record.

    Returns:
      The file written: version_dir/assets.extra/tf_serving_warmup_requests.
    """
    path = os.path.join(version_dir, WARMUP_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for inputs in texts:
            tensor = tf.make_tensor_proto(np.array(inputs, dtype=object), dtype=tf.string)
            spec = _field(_SIGNATURE_NAME, SIGNATURE.encode())
            entry = _field(_KEY, INPUTS.encode()) + _field(_VALUE, tensor.SerializeToString())
            request = _field(_MODEL_SPEC, spec) + _field(_INPUTS, entry)
            writer.write(_field(_PREDICT_LOG, _field(_REQUEST, request)))
    return path


def read_requests(version_dir: str) -> list[tuple[str, dict[str, np.ndarray]]]:
    """The warmup requests of a SavedModel's version directory, in order.

    Returns:
      (signature name, {input name: array}) for each PredictionLog's request.

    Raises:
      UserError: the directory has no warmup file.
    """
    path = os.path.join(version_dir, WARMUP_FILE)
    if not tf.io.gfile.exists(path):
        raise UserError(
            f"{version_dir} has no warmup requests ({WARMUP_FILE}): give the version "
            "directory of a SavedModel t2t-exporter wrote, or export it again."
        )
    records = tf.data.TFRecordDataset(path).as_numpy_iterator()
    return [
        _request(request)
        for record in records
        for log in _messages(record, _PREDICT_LOG)
        for request in _messages(log, _REQUEST)
    ]


def _request(request: bytes) -> tuple[str, dict[str, np.ndarray]]:
    """(signature name, {input name: array}) of a serialized PredictRequest."""
    specs = _messages(request, _MODEL_SPEC)
    names = [name.decode() for spec in specs for name in _messages(spec, _SIGNATURE_NAME)]
    inputs = {}
    for entry in _messages(request, _INPUTS):
        key, value = next(_messages(entry, _KEY)), next(_messages(entry, _VALUE))
        inputs[key.decode()] = tf.make_ndarray(tensor_pb2.TensorProto.FromString(value))
    return (names[-1] if names else SIGNATURE), inputs


def replay_warmup(version_dir: str, signature: Callable[..., Any]) -> int:
    """Calls `signature` with each warmup request of the SavedModel in `version_dir`,
    as TF Serving does when it loads it: XLA then compiles every shape the
    search runs at, and later requests run at their steady speed.

    Args:
      version_dir: the SavedModel's directory (export_dir/<version>).
      signature: its serving_default signature, loaded
        (`tf.saved_model.load(version_dir).signatures["serving_default"]`).

    Returns:
      The number of requests replayed.

    Raises:
      UserError: the directory has no warmup file.
    """
    replayed = read_requests(version_dir)
    for _, inputs in replayed:
        signature(**{name: tf.constant(value) for name, value in inputs.items()})
    return len(replayed)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field: key, length, payload."""
    return _varint(number << 3 | _LENGTH_DELIMITED) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    encoded = bytearray()
    while value > 0x7F:
        encoded.append(value & 0x7F | 0x80)
        value >>= 7
    encoded.append(value)
    return bytes(encoded)


def _messages(data: bytes, number: int) -> Iterator[bytes]:
    """The payloads of the length-delimited fields `number` of a message."""
    position = 0
    while position < len(data):
        key, position = _read_varint(data, position)
        wire_type = key & 7
        if wire_type == 0:
            _, position = _read_varint(data, position)
        elif wire_type in (1, 5):  # 64 and 32 bits.
            position += 8 if wire_type == 1 else 4
        elif wire_type == _LENGTH_DELIMITED:
            length, position = _read_varint(data, position)
            if key >> 3 == number:
                yield data[position : position + length]
            position += length
        else:
            raise ValueError(f"a protobuf field of wire type {wire_type}, which is not read")


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position
