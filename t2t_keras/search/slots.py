"""Slots: a compiled search whose rows take the next sentence as soon as theirs is done.

A batch searched whole runs until its longest sentence ends: every sentence
done before rides along as wasted rows. Here the search holds N sentence
slots (each of K beam rows, 1 for greedy search), and `SlotLoop.run` takes
a block of up to M waiting sentences: it encodes them together, then steps
every slot, each at its own position; a slot whose sentence is done has its
result written out and takes the next waiting sentence at position 0, while
the others go on. A call returns once its block is all placed (the last
block: once every slot is done), and the slots, mid-sentence, carry into
the next call (`slot_loop`). `SlotSearch.finish` is the host's loop: sentences longest
first (the last to finish are then short ones), blocks of M = 2N, results
as they finish (`decode`: in input order); `search_tensor` is the same loop
in TensorFlow ops (a SavedModel's), whose last sentences of a request go on
in halved slots.

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
from typing import Any

import numpy as np
import tensorflow as tf

from t2t_keras.data.ids import PAD_ID
from t2t_keras.search import sampling, shapes
from t2t_keras.search.decoder import output_positions
from t2t_keras.search.settings import SearchSettings
from t2t_keras.search.slot_loop import SlotLoop
from t2t_keras.search.slot_state import Finished, Slots

BLOCK_SLOTS = 2  # A block holds this many sentences per slot: M = 2N.
# The longest 1/LONG_TAIL of a file's rows are searched apart when the rest are
# at most half as wide. That, and a second pass for outputs longer than the
# first slots hold, compile a second shape: only for SPLIT_SLOTS rows a slot or more.
LONG_TAIL = 20
SPLIT_SLOTS = 4
# A SavedModel's request drains in halved slots down to this many (`_graph_pass`):
# its warmup compiled the search at 4, 8, 16 and 32 slots of every width.
DRAIN_SLOTS = 4
# Empty slots of at most this many bytes are kept for the next search of their shape.
KEPT_EMPTY_BYTES = 16 << 20


def _written(
    finished: Finished, found: tuple[tf.Tensor, tf.Tensor], evicted: tf.Tensor, missing: Any
) -> tuple[tuple[tf.Tensor, tf.Tensor], tf.Tensor]:
    """found (ids [B, R, L], scores [B, R]) and evicted [B] with a call's finished
    sentences written, their ids padded by `missing` positions (an evicted row's
    are overwritten by its second pass)."""
    done = finished.count
    at = finished.sentence[:done, tf.newaxis]
    ids = tf.pad(finished.ids[:done], [[0, 0], [0, 0], [0, missing]])
    found = (
        tf.tensor_scatter_nd_update(found[0], at, ids),
        tf.tensor_scatter_nd_update(found[1], at, finished.scores[:done]),
    )
    return found, tf.tensor_scatter_nd_update(evicted, at, finished.evicted[:done])


def first_positions(
    width: int | tf.Tensor, settings: SearchSettings, max_length: int
) -> int | tf.Tensor:
    """The output positions slots of source `width` first hold: width + E + 1, E the
    larger of slot_extra_length and a quarter of the width (an output is rarely
    longer than its input by more: a long one is searched again), never more
    than the width's longest output needs (then there is one pass)."""
    extra = tf.minimum(tf.maximum(settings.slot_extra_length, width // 4), settings.extra_length)
    return output_positions(width, extra, max_length)


class SlotSearch(SlotLoop):
    """Greedy or beam search over a Transformer, in slots refilled as sentences finish:
    the host's loop over `SlotLoop.run` (`finish`, `decode`) and the same loop in
    TensorFlow ops (`search_tensor`). Takes `SlotLoop`'s arguments.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shapes: set[tuple[int, int, int]] = set()  # Shapes of slots searched eagerly.
        self._kept_empty: tuple[tuple[int, int, int], Slots] | None = None  # `_empty_slots`
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
        evicted: list[int] = []
        for part in self._parts(rows, order):
            yield from self._search_part(rows, part, numbers, evicted)
        if evicted:  # Again, in slots holding every position their limits allow.
            again = sorted(evicted, key=lambda i: -len(rows[i]))
            yield from self._search_part(rows, again, numbers, None)

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
        self,
        rows: Sequence[Sequence[int]],
        order: list[int],
        numbers: list[int],
        evicted: list[int] | None,
    ) -> Iterator[list[tuple[int, np.ndarray, np.ndarray]]]:
        """Rows `order` (longest first), numbered `numbers`, through slots as wide as
        the first: a group of (row index, ids [R, L], scores) after each compiled call.

        With `evicted` given and SPLIT_SLOTS rows a slot or more, the slots
        hold `first_positions`, and the rows that need more are appended to
        `evicted`; else they hold all that the width's limits allow, and none
        is evicted (a typed line is never searched twice).
        """
        index_of = {numbers[index]: index for index in order}
        count = self.slots_for(len(order))
        width = shapes.bucket_width(len(rows[order[0]]), self.max_length, count)
        block = BLOCK_SLOTS * count
        full = int(output_positions(width, self.settings.extra_length, self.max_length))
        # A second pass would compile a second shape: only for rows enough to pay for it.
        two_passes = evicted is not None and len(order) >= SPLIT_SLOTS * count
        length = int(first_positions(width, self.settings, self.max_length)) if two_passes else full
        slots = self._empty_slots(count, width, length)
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
            self._shapes.add((count, width, length))
            self.slot_steps += int(finished.slot_steps)
            self.busy_steps += int(finished.busy_steps)
            done = int(finished.count)
            found = [index_of[number] for number in finished.sentence.numpy()[:done].tolist()]
            left = finished.evicted.numpy()[:done]
            ids = np.pad(finished.ids.numpy()[:done], [(0, 0), (0, 0), (0, full - length)])
            scores = finished.scores.numpy()[:done]
            if left.any():  # Only slots shorter than the full length evict.
                assert evicted is not None
                evicted.extend(index for index, out in zip(found, left, strict=True) if out)
            yield [(index, ids[at], scores[at]) for at, index in enumerate(found) if not left[at]]

    def _empty_slots(self, count: int, width: int, length: int) -> Slots:
        """`empty` slots of this shape. Small ones (a typed line's, a short
        request's) are kept and given again to the next search of the shape:
        made afresh, eagerly, they took 20 ms of a typed line's 133 (Zen 3
        EPYC). The compiled search reads its slots and returns new ones, so
        the kept ones stay empty; large ones (a file's) would hold their
        memory, and are made for each search."""
        shape = (count, width, length)
        if self._kept_empty is not None and self._kept_empty[0] == shape:
            return self._kept_empty[1]
        slots = self.empty(count, width, length)
        tensors = [t for t in tf.nest.flatten(slots) if isinstance(t, tf.Tensor)]
        size = sum(t.shape.num_elements() * t.dtype.size for t in tensors)
        if size <= KEPT_EMPTY_BYTES:
            self._kept_empty = (shape, slots)
        return slots

    def compilations(self) -> int:
        """How many shapes of slots (N x S x L) have been searched in this process: XLA
        compiles, or loads from its disk cache, the search once for each."""
        return len(self._shapes)

    def searched_shapes(self) -> list[tuple[int, int, int]]:
        """The shapes of slots (N, S, L) searched in this process, in order."""
        return sorted(self._shapes)

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
        """`search_tensor` of rows searched one slot each, row b numbered b: every row in
        slots of width + slot_extra_length positions, then those evicted in full ones."""
        rows, width = tf.shape(inputs)[0], tf.shape(inputs)[1]
        count = tf.minimum(shapes.padded_rows((rows + 1) // 2), self.slots)  # `slots_for`
        padded_width = shapes.padded_width(width, count, self.max_length)
        inputs = tf.pad(inputs, [[0, 0], [0, padded_width - width]])
        lengths = tf.reduce_sum(tf.cast(inputs != PAD_ID, tf.int32), axis=1)
        order = tf.argsort(lengths, direction="DESCENDING", stable=True)
        full = output_positions(padded_width, self.settings.extra_length, self.max_length)
        first = tf.where(  # As `_search_part`: two passes only for rows enough.
            rows >= SPLIT_SLOTS * count,
            first_positions(padded_width, self.settings, self.max_length),
            full,
        )
        found, evicted = self._graph_pass(inputs, order, count, first, full)
        again = tf.boolean_mask(order, tf.gather(evicted, order))  # Still longest first.
        count = tf.minimum(shapes.padded_rows((tf.size(again) + 1) // 2), self.slots)
        return self._graph_pass(inputs, again, count, full, full, found)[0]

    def _graph_pass(
        self,
        inputs: tf.Tensor,
        order: tf.Tensor,
        count: tf.Tensor,
        length: tf.Tensor,
        full: tf.Tensor,
        found: tuple[tf.Tensor, tf.Tensor] | None = None,
    ) -> tuple[tuple[tf.Tensor, tf.Tensor], tf.Tensor]:
        """Rows `order` of inputs [B, S] through `count` slots of `length` positions, in
        blocks: (their ids [B, R, full] and scores [B, R] written into `found` (None:
        none found yet), [B] bool the rows evicted, whose results are not).

        Slots holding all `full` positions drain in fewer: once the last block is
        placed and at most half are busy, they go on in half as many (`halved`),
        down to DRAIN_SLOTS (a request of 32 through 16 slots was 72% busy, its
        last sentences stepping every slot; a step costs about its slots)."""
        run = self.compiled()
        rows, width = tf.size(order), tf.shape(inputs)[1]
        slots = self.empty(count, width, length)
        if found is None:
            ids, scores = self._no_results(slots, tf.shape(inputs)[0])
            found = (tf.pad(ids, [[0, 0], [0, 0], [0, full - length]]), scores)
        evicted = tf.zeros([tf.shape(inputs)[0]], tf.bool)
        drains = tf.equal(length, full)  # Halved slots search no second pass.

        def until(count: tf.Tensor) -> tf.Tensor:
            return tf.where(drains & (count // 2 >= DRAIN_SLOTS), count // 2, 0)

        def body(first: tf.Tensor, slots: Slots, found: Any, evicted: tf.Tensor) -> tuple:
            block = BLOCK_SLOTS * count
            positions = first + tf.range(block)
            real = positions < rows
            numbers = tf.where(real, tf.gather(order, tf.minimum(positions, rows - 1)), -1)
            block_ids = tf.where(
                real[:, tf.newaxis], tf.gather(inputs, tf.maximum(numbers, 0)), PAD_ID
            )
            placed = tf.minimum(block, rows - first)
            last = first + block >= rows
            slots, finished = run(slots, block_ids, numbers, placed, last, until(count))
            return first + block, slots, *_written(finished, found, evicted, full - length)

        _, slots, found, evicted = tf.while_loop(
            lambda first, *_: first < rows, body, (tf.constant(0), slots, found, evicted)
        )

        def drain(count: tf.Tensor, slots: Slots, found: Any, evicted: tf.Tensor) -> tuple:
            half = count // 2
            none = tf.fill([BLOCK_SLOTS * half], -1)
            block_ids = tf.fill([BLOCK_SLOTS * half, width], PAD_ID)
            placed, last = tf.constant(0), tf.constant(True)  # Tensors: the blocks' trace.
            slots, finished = run(self.halved(slots), block_ids, none, placed, last, until(half))
            return half, slots, *_written(finished, found, evicted, 0)

        def draining(count: tf.Tensor, slots: Slots, *_: Any) -> tf.Tensor:
            return tf.reduce_any(slots.sentence >= 0)

        _, _, found, evicted = tf.while_loop(draining, drain, (count, slots, found, evicted))
        return found, evicted
