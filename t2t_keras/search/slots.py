"""Slots: a compiled search whose rows take the next sentence as soon as theirs is done.

A batch searched whole runs until its longest sentence ends: every sentence
done before rides along as wasted rows. Here the search holds N sentence
slots (each of K beam rows, 1 for greedy search), and `SlotSearch.run` takes
a block of up to M waiting sentences: it encodes them together, then steps
every slot, each at its own position; a slot whose sentence is done has its
result written out and takes the next waiting sentence at position 0, while
the others go on. A call returns once its block is all placed (the last
block: once every slot is done), and the slots, mid-sentence, carry into
the next call. `SlotSearch.finish` is the host's loop: sentences longest
first (the last to finish are then short ones), blocks of M = 2N, results
as they finish (`decode`: in input order); `search_tensor` is the same loop
in TensorFlow ops (a SavedModel's).

A sentence's search reads only its own rows (its encoder output, its beam
rows, its limits): its result does not depend on its slot or neighbours.
The shapes compiled are N slots x S source width (a `shapes` bucket for
the longest sentence): one per file, N about half its sentences (so that
slots are refilled) up to batch_size, and a second one when the file's
longest 5% are more than twice as wide as the rest, searched apart (each
step's attention costs the slots' width: width + extra_length positions).

Sampling searches greedily with a `sampling.Sampler` in every slot, and a
sentence's R samples are R rows, each in a slot of its own, sample r of the
sentence numbered i drawing from stream i * R + r: its samples are the same
whatever the slots, the neighbours and the batch size.

Shapes: N slots, M sentences per block, K beams, R hypotheses returned, S
source width, L output positions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from t2t_keras.data.ids import PAD_ID
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.models.decoding import DecodingMemory, StepFunction
from t2t_keras.models.transformer import Transformer
from t2t_keras.search import sampling, shapes
from t2t_keras.search.beam import BeamSearch
from t2t_keras.search.decoder import ModelSearch, decode_limits, minimum_lengths
from t2t_keras.search.greedy import GreedySearch
from t2t_keras.search.rules import NEG_INF
from t2t_keras.search.settings import SearchSettings

BLOCK_SLOTS = 2  # A block holds this many sentences per slot: M = 2N.
# The longest 1/LONG_TAIL of a file's rows are searched apart when the rest are
# at most half as wide, and the file has SPLIT_SLOTS rows a slot or more.
LONG_TAIL = 20
SPLIT_SLOTS = 4


class Slots(NamedTuple):
    """The N slots: their sentences' searches and what each step reads of them."""

    search: Any  # BeamState or GreedyState over the N slots
    memory: DecodingMemory  # each slot's encoder output (`Transformer.encode_for_decoding`)
    inputs: tf.Tensor  # [N, S] each slot's input ids
    max_lengths: tf.Tensor  # [N] most tokens before EOS
    min_lengths: tf.Tensor  # [N] fewest tokens before EOS
    sentence: tf.Tensor  # [N] int32: the sentence in the slot (the caller's number), -1 none


class Finished(NamedTuple):
    """The sentences a call finished, in the order they finished; rows past `count` unused."""

    count: tf.Tensor  # int32
    slot_steps: tf.Tensor  # int32: steps x N, and those that advanced a sentence not done
    busy_steps: tf.Tensor
    sentence: tf.Tensor  # [N + M] int32: the caller's numbers
    ids: tf.Tensor  # [N + M, R, L] int32
    scores: tf.Tensor  # [N + M, R] float32


class SlotSearch(ModelSearch):
    """Greedy or beam search over a Transformer, in slots refilled as sentences finish.

    Args:
      model: a built Transformer.
      settings: the search's settings, resolved (`DecodeHParams.resolve`);
        as `Decoder`'s.
      tree_tokens: the tree symbols, for the tree constraint (as `Decoder`'s).
      jit_compile: XLA-compile `run`.
      slots: N, the most sentences searched at once.
    """

    def __init__(
        self,
        model: Transformer,
        settings: SearchSettings,
        tree_tokens: TreeTokens | None = None,
        jit_compile: bool = True,
        slots: int = 64,
    ) -> None:
        super().__init__(model, settings, tree_tokens, jit_compile)
        self.slots = slots
        self.beams = 1 if settings.is_greedy else settings.beam_size
        self._run: Any = None  # `run` compiled (`compiled`).
        self._shapes: set[tuple[int, int]] = set()  # The shapes of slots searched eagerly.
        # Slot-steps run by `finish`, and those that advanced a sentence not yet done.
        self.slot_steps = self.busy_steps = 0

    def decode(
        self, rows: Sequence[Sequence[int]], numbers: Sequence[int] | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each row's hypotheses, in the rows' order (see `finish`)."""
        results: list[Any] = [None] * len(rows)
        for group in self.finish(rows, numbers):
            for index, ids, scores in group:
                results[index] = (ids, scores)
        return results

    def finish(
        self, rows: Sequence[Sequence[int]], numbers: Sequence[int] | None = None
    ) -> Iterator[list[tuple[int, np.ndarray, np.ndarray]]]:
        """The rows' hypotheses, a group after each call of the compiled search.

        Args:
          rows: ids, each ending with EOS, none longer than max_length.
          numbers: each row's number, distinct and 0 or more (default: its
            index), which sampling draws its samples by.

        Yields:
          lists of (row index, ids [R, L] int32 with EOS then PAD after each
          hypothesis, best first, scores [R] float32, -inf for hypotheses not
          found), every row once in all.
        """
        if not rows:
            return
        numbers = list(range(len(rows))) if numbers is None else list(numbers)
        samples = self.settings.samples_per_input
        if samples > 1:  # A row per sample (`sampling`).
            groups = self._finish_rows(*sampling.repeat_rows(rows, numbers, samples))
            yield from sampling.gather_samples(groups, samples)
        else:
            yield from self._finish_rows(rows, numbers)

    def _finish_rows(
        self, rows: Sequence[Sequence[int]], numbers: list[int]
    ) -> Iterator[list[tuple[int, np.ndarray, np.ndarray]]]:
        """`finish` of rows searched one slot each, numbered `numbers`."""
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
        for part in self._parts(rows, order):
            yield from self._search_part(rows, part, numbers)

    def slots_for(self, rows: int) -> int:
        """The slots that search `rows` sentences: half as many, in a `shapes` bucket,
        so that slots are refilled, up to `slots` (32 sentences of a request
        through 16 slots: 35% faster than through 32)."""
        return min(self.slots, shapes.bucket_rows(max(1, (rows + 1) // 2)))

    def _parts(self, rows: Sequence[Sequence[int]], order: list[int]) -> list[list[int]]:
        """The rows, longest first, in one part, or two when the longest few are
        more than twice as wide as the rest: each part is searched in slots of
        its own width, and a step's attention costs the slots' width (their
        cache holds width + extra_length positions), so a long tail would make
        every sentence pay for it."""
        count = self.slots_for(len(rows))
        if len(order) < SPLIT_SLOTS * count:  # Too few for a second compilation to pay.
            return [order]
        longest = shapes.bucket_width(len(rows[order[0]]), self.max_length, count)
        cut = len(order) // LONG_TAIL  # The rows past the tail's shortest.
        narrow = shapes.bucket_width(len(rows[order[cut]]), self.max_length, count)
        if 2 * narrow > longest:
            return [order]
        wide = [index for index in order if len(rows[index]) > narrow]
        return [wide, order[len(wide) :]]

    def _search_part(
        self, rows: Sequence[Sequence[int]], order: list[int], numbers: list[int]
    ) -> Iterator[list[tuple[int, np.ndarray, np.ndarray]]]:
        """Rows `order` (longest first), numbered `numbers`, through slots as wide as
        the first: a group of (row index, ids, scores) after each compiled call."""
        index_of = {numbers[index]: index for index in order}
        count = self.slots_for(len(order))
        width = shapes.bucket_width(len(rows[order[0]]), self.max_length, count)
        block = BLOCK_SLOTS * count
        slots = self.empty(count, width)
        for first in range(0, len(order), block):
            chosen = order[first : first + block]
            ids = np.full([block, width], PAD_ID, np.int32)
            for position, index in enumerate(chosen):
                ids[position, : len(rows[index])] = rows[index]
            block_numbers = np.full([block], -1, np.int32)
            block_numbers[: len(chosen)] = [numbers[index] for index in chosen]
            last = first + block >= len(order)
            slots, finished = self.compiled()(
                slots, tf.constant(ids), tf.constant(block_numbers), tf.constant(len(chosen)),
                tf.constant(last),
            )  # fmt: skip
            self._shapes.add((count, width))
            self.slot_steps += int(finished.slot_steps)
            self.busy_steps += int(finished.busy_steps)
            done = int(finished.count)
            yield list(
                zip(
                    [index_of[number] for number in finished.sentence.numpy()[:done].tolist()],
                    finished.ids.numpy()[:done],
                    finished.scores.numpy()[:done],
                    strict=True,
                )
            )

    def compilations(self) -> int:
        """How many shapes of slots (N x S) have been searched in this process: XLA
        compiles, or loads from its disk cache, the search once for each."""
        return len(self._shapes)

    def searched_shapes(self) -> list[tuple[int, int]]:
        """The shapes of slots (N, S) searched in this process, in order."""
        return sorted(self._shapes)

    def tracings(self) -> int:
        """How many graphs of the search have been traced: one, whatever the shapes."""
        return 0 if self._run is None else int(self._run.experimental_get_tracing_count())

    def compiled(self) -> Any:
        """`run` compiled: traced once, for slots of any count and width, on first use."""
        if self._run is None:
            # Slots of two counts and widths show which dimensions vary.
            relaxed = tf.nest.map_structure(_relaxed_spec, self.empty(1, 8), self.empty(2, 16))
            self._run = tf.function(
                self.run,
                jit_compile=self.jit_compile,
                autograph=False,
                input_signature=[
                    relaxed,
                    tf.TensorSpec([None, None], tf.int32, name="block"),
                    tf.TensorSpec([None], tf.int32, name="numbers"),
                    tf.TensorSpec([], tf.int32, name="count"),
                    tf.TensorSpec([], tf.bool, name="last"),
                ],
            )
        return self._run

    def search_tensor(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The hypotheses of each row of inputs [B, S] (B > 0), in a graph or eagerly.

        What `finish` does, in TensorFlow ops (a SavedModel's serving
        function): the rows longest first, blocks of M through the slots;
        sampling draws sample r of row b from stream b * R + r.

        Args:
          inputs: [B, S] int32 ids, each row ending with EOS then PAD, S <= max_length.

        Returns:
          (ids [B, R, L] int32, scores [B, R] float32), in the rows' order.
        """
        samples = self.settings.samples_per_input
        if samples > 1:  # A row per sample: row b * R + r is sample r of row b.
            ids, scores = self._search_each_row(tf.repeat(inputs, samples, axis=0))
            return sampling.best_first(ids, scores, samples)
        return self._search_each_row(inputs)

    def _search_each_row(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """`search_tensor` of rows searched one slot each, row b numbered b."""
        run = self.compiled()
        rows, width = tf.shape(inputs)[0], tf.shape(inputs)[1]
        count = tf.minimum(shapes.padded_rows((rows + 1) // 2), self.slots)  # `slots_for`
        padded_width = shapes.padded_width(width, count, self.max_length)
        lengths = tf.reduce_sum(tf.cast(inputs != PAD_ID, tf.int32), axis=1)
        order = tf.argsort(lengths, direction="DESCENDING", stable=True)
        ordered = tf.pad(tf.gather(inputs, order), [[0, 0], [0, padded_width - width]])
        block = BLOCK_SLOTS * count
        slots = self.empty(count, padded_width)
        found = self._no_results(slots, rows)

        def body(first: tf.Tensor, slots: Slots, found: Any) -> tuple[tf.Tensor, Slots, Any]:
            positions = first + tf.range(block)
            real = positions < rows
            within = tf.minimum(positions, rows - 1)
            block_ids = tf.where(real[:, tf.newaxis], tf.gather(ordered, within), PAD_ID)
            numbers = tf.where(real, tf.gather(order, within), -1)
            placed = tf.minimum(block, rows - first)
            slots, finished = run(slots, block_ids, numbers, placed, first + block >= rows)
            at = finished.sentence[: finished.count, tf.newaxis]
            found = (
                tf.tensor_scatter_nd_update(found[0], at, finished.ids[: finished.count]),
                tf.tensor_scatter_nd_update(found[1], at, finished.scores[: finished.count]),
            )
            return first + block, slots, found

        _, _, found = tf.while_loop(
            lambda first, *_: first < rows, body, (tf.constant(0), slots, found)
        )
        return found

    def empty(self, count: int, width: int) -> Slots:
        """N = count slots of source width S, all empty."""
        inputs = tf.zeros([count, width], tf.int32)
        length, max_lengths = decode_limits(inputs, self.settings.extra_length, self.max_length)
        memory = self.model.empty_decoding_memory(count, width, self.beams)
        empty_state = self.model.empty_decoding_state(count, length, self.beams)
        slots = Slots(
            search=None,
            memory=memory,
            inputs=inputs,
            max_lengths=max_lengths,
            min_lengths=tf.zeros_like(max_lengths),
            sentence=tf.fill([count], -1),
        )
        search = self.search(slots, None).start(empty_state)
        return slots._replace(search=search._replace(done=tf.ones([count], tf.bool)))

    def run(
        self,
        slots: Slots,
        block: tf.Tensor,
        numbers: tf.Tensor,
        count: tf.Tensor,
        last: tf.Tensor,
    ) -> tuple[Slots, Finished]:
        """Places the block's sentences in slots as they free, stepping all slots.

        Args:
          slots: the slots as the last call left them (`empty` at first).
          block: [M, S] ids of the waiting sentences, the first `count` real.
          numbers: [M] int32 the caller's number of each.
          count: how many of the block are real.
          last: no block follows: go on until every slot is done.

        Returns:
          (the slots, the sentences finished).
        """
        pending = self._pending(block, numbers)
        total = _rows(slots.sentence) + _rows(numbers)
        ids, scores = self._no_results(slots, total + 1)
        finished = Finished(
            count=tf.constant(0),
            slot_steps=tf.constant(0),
            busy_steps=tf.constant(0),
            sentence=tf.fill([total + 1], -1),  # One row more, where the unfinished go.
            ids=ids,
            scores=scores,
        )

        def keep_going(slots: Slots, placed: tf.Tensor, finished: Finished) -> tf.Tensor:
            return (placed < count) | (last & tf.reduce_any(slots.sentence >= 0))

        def body(
            slots: Slots, placed: tf.Tensor, finished: Finished
        ) -> tuple[Slots, tf.Tensor, Finished]:
            slots, placed = self._refill(slots, pending, placed, count)
            step = self.model.decoding_step(slots.memory, self._length(slots), self.beams)
            search = self.search(slots, step)
            busy = tf.reduce_sum(tf.cast(~slots.search.done & (slots.sentence >= 0), tf.int32))
            finished = finished._replace(
                slot_steps=finished.slot_steps + _rows(slots.sentence),
                busy_steps=finished.busy_steps + busy,
            )
            slots, finished = self._collect(
                slots._replace(search=search.advance(slots.search)), search, finished
            )
            return slots, placed, finished

        slots, _, finished = tf.while_loop(keep_going, body, (slots, tf.constant(0), finished))
        return slots, finished._replace(
            sentence=finished.sentence[:-1], ids=finished.ids[:-1], scores=finished.scores[:-1]
        )

    def _no_results(self, slots: Slots, rows: int | tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """`rows` rows shaped as the slots' results, none found: (ids [rows, R, L]
        zeros, scores [rows, R] -inf)."""
        ids, scores = self.search(slots, None).results(slots.search)
        return (
            tf.zeros(tf.concat([[rows], tf.shape(ids)[1:]], 0), tf.int32),
            tf.fill(tf.concat([[rows], tf.shape(scores)[1:]], 0), NEG_INF),
        )

    def _pending(self, block: tf.Tensor, numbers: tf.Tensor) -> Slots:
        """The block's sentences as slots of their own, to be copied from."""
        _, max_lengths = decode_limits(block, self.settings.extra_length, self.max_length)
        return Slots(
            search=None,
            memory=self.model.encode_for_decoding(block, self.beams),
            inputs=block,
            max_lengths=max_lengths,
            min_lengths=minimum_lengths(block, self.settings.min_length, max_lengths),
            sentence=numbers,
        )

    def _refill(
        self, slots: Slots, pending: Slots, placed: tf.Tensor, count: tf.Tensor
    ) -> tuple[Slots, tf.Tensor]:
        """Each empty slot takes the next waiting sentence, in order, while any wait."""
        empty = slots.sentence < 0
        source = placed + tf.cumsum(tf.cast(empty, tf.int32)) - 1
        taken = empty & (source < count)
        source = tf.clip_by_value(source, 0, _rows(pending.sentence) - 1)

        def refill() -> Slots:
            def take(old: tf.Tensor, new: tf.Tensor) -> tf.Tensor:
                return _take_rows(taken, source, new, old)

            refilled = slots._replace(
                **{
                    name: tf.nest.map_structure(take, getattr(slots, name), getattr(pending, name))
                    for name in ("memory", "inputs", "max_lengths", "min_lengths", "sentence")
                }
            )
            model_state = {
                **slots.search.model_state,
                **self.model.fresh_decoding_rows(_rows(taken), self._length(slots), self.beams),
            }
            fresh = self.search(refilled, None).start(model_state)
            search = tf.nest.map_structure(
                lambda old, new: old if new is old else _where_rows(taken, new, old),
                slots.search,
                fresh,
            )
            return refilled._replace(search=search)

        slots = tf.cond(tf.reduce_any(taken), refill, lambda: slots)
        return slots, placed + tf.reduce_sum(tf.cast(taken, tf.int32))

    def _collect(
        self, slots: Slots, search: BeamSearch | GreedySearch, finished: Finished
    ) -> tuple[Slots, Finished]:
        """Writes out the slots whose sentences are done, and empties them."""
        done = slots.search.done & (slots.sentence >= 0)
        ids, scores = search.results(slots.search)
        unused = _rows(finished.sentence) - 1
        at = tf.where(done, finished.count + tf.cumsum(tf.cast(done, tf.int32)) - 1, unused)
        at = at[:, tf.newaxis]
        finished = finished._replace(
            count=finished.count + tf.reduce_sum(tf.cast(done, tf.int32)),
            sentence=tf.tensor_scatter_nd_update(finished.sentence, at, slots.sentence),
            ids=tf.tensor_scatter_nd_update(finished.ids, at, ids),
            scores=tf.tensor_scatter_nd_update(finished.scores, at, scores),
        )
        return slots._replace(sentence=tf.where(done, -1, slots.sentence)), finished

    def _length(self, slots: Slots) -> int | tf.Tensor:
        """L, the output positions of the slots' width (static when it is)."""
        return decode_limits(slots.inputs, self.settings.extra_length, self.max_length)[0]

    def search(self, slots: Slots, step: StepFunction | None) -> BeamSearch | GreedySearch:
        """The search over the slots' sentences (`step` None: not to be advanced)."""
        settings = self.settings
        constraint = self.constraint(slots.inputs, slots.max_lengths)
        step = step or _no_step
        if settings.is_greedy:
            return GreedySearch(
                step, self._length(slots), slots.max_lengths, slots.min_lengths, constraint,
                settings.alpha, settings.length_penalty, self.sampler, slots.sentence,
            )  # fmt: skip
        return BeamSearch(
            step, settings.beam_size, self._length(slots), slots.max_lengths, slots.min_lengths,
            settings.alpha, settings.length_penalty, settings.stopping, settings.num_returned,
            constraint,
        )  # fmt: skip


def _relaxed_spec(one: tf.Tensor, other: tf.Tensor) -> tf.TensorSpec:
    """A spec of both tensors' shapes: None where they differ."""
    dims = [a if a == b else None for a, b in zip(one.shape, other.shape, strict=True)]
    return tf.TensorSpec(dims, one.dtype)


def _no_step(*_: Any) -> Any:
    raise AssertionError("a search built to start or read results was advanced")


def _rows(tensor: tf.Tensor) -> int | tf.Tensor:
    """The first dimension, static when known."""
    return tensor.shape[0] if tensor.shape[0] is not None else tf.shape(tensor)[0]


def _where_rows(taken: tf.Tensor, new: tf.Tensor, old: tf.Tensor) -> tf.Tensor:
    """old with the rows of the slots taken [N] from new (each N or N * K rows, slot-major)."""
    slots = _rows(taken)
    merged = tf.where(
        taken[:, tf.newaxis], tf.reshape(new, [slots, -1]), tf.reshape(old, [slots, -1])
    )
    return tf.ensure_shape(tf.reshape(merged, _shape(old)), old.shape)


def _take_rows(taken: tf.Tensor, source: tf.Tensor, new: tf.Tensor, old: tf.Tensor) -> tf.Tensor:
    """old [N or N * K, ...] with the slots taken [N] holding sentence source [N] of new
    [M or M * K, ...] (its rows sentence-major)."""
    sentences = tf.reshape(
        new, [-1, tf.reduce_prod(tf.shape(old)[1:]) * (_rows(old) // _rows(taken))]
    )
    return _where_rows(taken, tf.gather(sentences, source), old)


def _shape(tensor: tf.Tensor) -> list[Any]:
    """The shape, static where known, else dynamic."""
    dynamic = tf.shape(tensor)
    return [dim if dim is not None else dynamic[i] for i, dim in enumerate(tensor.shape)]
