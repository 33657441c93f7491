"""The compiled loop of the slot search: N slots stepped together, each taking the
next waiting sentence when its own is done (`slots` runs it over files).

`SlotLoop.run` takes a block of up to M waiting sentences: it encodes them
together, then repeats refill (each empty slot takes the next waiting
sentence, at position 0), advance (one beam or greedy step of every slot,
each at its own position) and collect (each slot whose sentence is done has
its result written out and is emptied). It returns once its block is all
placed (the last block: once every slot is done); the slots, mid-sentence,
carry into the next call. Slots may hold fewer output positions than a
sentence's limit allows (`empty`'s length): a sentence that reaches their end
unfinished leaves its slot marked evicted, to be searched again in slots
holding them all. A sentence's search reads only its own rows (its
encoder output, its beam rows, its limits): its result does not depend on
its slot or neighbours.

Shapes: N slots, M sentences per block, K beams, R hypotheses returned, S
source width, L output positions.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.layers.shape_list import shape_list
from t2t_keras.models.decoding import StepFunction
from t2t_keras.models.transformer import Transformer
from t2t_keras.search.beam import BeamSearch, BeamState
from t2t_keras.search.decoder import ModelSearch, decode_limits, minimum_lengths
from t2t_keras.search.greedy import GreedySearch
from t2t_keras.search.rules import NEG_INF
from t2t_keras.search.settings import SearchSettings
from t2t_keras.search.slot_state import (
    Finished,
    Slots,
    row_count,
    take_rows,
    where_rows,
    without_spare_row,
)

# What a slot takes of the sentence it is given, besides its search.
_CARRIED = ("memory", "inputs", "max_lengths", "min_lengths", "sentence", "streams", "seeds")
# What a beam search taken from `SlotLoop._first_step` holds of its sentence's first
# position; its parents and its model state are the slots' own.
_SEARCHED_FIRST = (
    "index",
    "alive_ids",
    "alive_log_probs",
    "finished_ids",
    "finished_scores",
    "done",
    "tree",
)


class SlotLoop(ModelSearch):
    """The slots' compiled call over a Transformer: `empty` slots, then `run` a block.

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

    def tracings(self) -> int:
        """How many graphs of the search have been traced: one per shape of slots."""
        return 0 if self._run is None else int(self._run.experimental_get_tracing_count())

    def compiled(self) -> Any:
        """`run` compiled: traced once for each shape of slots (N x S) and block it meets.

        Each trace has every dimension static, so its graph holds no shape
        arithmetic: a third fewer operations than one graph traced for any
        count and width (2,600 against 3,900 for transformer_small), which
        TensorFlow builds in 0.62 s against 0.76 s and, in every process, lowers
        to XLA and loads from the kept cache in 0.42 s against 0.63 s. A file
        meets one or two shapes. In a graph (the SavedModel's serving
        function) the shapes are unknown and one trace serves them all.
        """
        if self._run is None:
            self._run = tf.function(self.run, jit_compile=self.jit_compile, autograph=False)
        return self._run

    def empty(
        self, count: int | tf.Tensor, width: int | tf.Tensor, length: int | tf.Tensor | None = None
    ) -> Slots:
        """N = count slots of source width S, all empty, each holding L output positions:
        `length`, at most what the width's longest output needs (that, when None)."""
        inputs = tf.zeros([count, width], tf.int32)
        full, max_lengths = decode_limits(inputs, self.settings.extra_length, self.max_length)
        length = full if length is None else length
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
        search = self.search(slots, None, length).start(empty_state)
        return slots._replace(search=search._replace(done=tf.ones([count], tf.bool)))

    def run(
        self,
        slots: Slots,
        block: tf.Tensor,
        numbers: tf.Tensor,
        count: tf.Tensor,
        last: tf.Tensor,
        until: tf.Tensor | int = 0,
    ) -> tuple[Slots, Finished]:
        """Places the block's sentences in slots as they free, stepping all slots.

        Args:
          slots: the slots as the last call left them (`empty` at first).
          block: [M, S] ids of the waiting sentences, the first `count` real.
          numbers: [M] int32 the caller's number of each.
          count: how many of the block are real.
          last: no block follows: go on until every slot is done, or until at most
            `until` slots are busy (to go on in fewer slots: `halved`).

        Returns:
          (the slots, the sentences finished).
        """
        pending = self._pending(block, numbers, self._length(slots))
        finished = self._none_finished(slots, row_count(slots.sentence) + row_count(numbers))

        def keep_going(slots: Slots, placed: tf.Tensor, finished: Finished) -> tf.Tensor:
            busy = tf.reduce_sum(tf.cast(slots.sentence >= 0, tf.int32))
            return (placed < count) | (last & (busy > until))

        def body(
            slots: Slots, placed: tf.Tensor, finished: Finished
        ) -> tuple[Slots, tf.Tensor, Finished]:
            return self._step(slots, pending, placed, count, finished)

        slots, _, finished = tf.while_loop(keep_going, body, (slots, tf.constant(0), finished))
        return slots, without_spare_row(finished)

    def halved(self, slots: Slots) -> Slots:
        """The slots in half as many, holding their sentences mid-search (at most
        half the slots busy): the k-th busy slot becomes slot k, each of its rows'
        parents, a row number, moved with it."""
        count = row_count(slots.sentence)
        half = count // 2
        kept = tf.argsort(tf.cast(slots.sentence < 0, tf.int32), stable=True)[:half]

        def take(tensor: tf.Tensor | None) -> tf.Tensor | None:
            if tensor is None:
                return None
            rows = tf.gather(tf.reshape(tensor, [count, -1]), kept)
            shape = [-1, *shape_list(tensor)[1:]]
            return tf.ensure_shape(tf.reshape(rows, shape), [None, *tensor.shape[1:]])

        halved = tf.nest.map_structure(take, slots)
        if self.settings.is_greedy:  # Beam search's parents are rows, even of beam 1.
            return halved
        moved = tf.repeat((tf.range(half) - kept) * self.beams, self.beams)
        search = halved.search
        return halved._replace(search=search._replace(parents=search.parents + moved))

    def _none_finished(self, slots: Slots, rows: int | tf.Tensor) -> Finished:
        """Room for `rows` sentences to finish, none yet, and one row more, where the
        unfinished go (`_collect`; `_without_spare_row` drops it)."""
        ids, scores = self._no_results(slots, rows + 1)
        return Finished(
            count=tf.constant(0),
            slot_steps=tf.constant(0),
            busy_steps=tf.constant(0),
            sentence=tf.fill([rows + 1], -1),
            ids=ids,
            scores=scores,
            evicted=tf.zeros([rows + 1], tf.bool),
        )

    def _step(
        self, slots: Slots, pending: Slots, placed: tf.Tensor, count: tf.Tensor, finished: Finished
    ) -> tuple[Slots, tf.Tensor, Finished]:
        """One step of every slot: refill the empty ones from the `count` pending
        sentences (`placed` of them placed before), advance all, collect the done."""
        slots, placed = self._refill(slots, pending, placed, count)
        step = self.model.decoding_step(slots.memory, self._length(slots), self.beams)
        search = self.search(slots, step)
        busy = tf.reduce_sum(tf.cast(~slots.search.done & (slots.sentence >= 0), tf.int32))
        finished = finished._replace(
            slot_steps=finished.slot_steps + row_count(slots.sentence),
            busy_steps=finished.busy_steps + busy,
        )
        slots, finished = self._collect(
            slots._replace(search=search.advance(slots.search)), search, finished
        )
        return slots, placed, finished

    def _no_results(self, slots: Slots, rows: int | tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """`rows` rows shaped as the slots' results, none found: (ids [rows, R, L]
        zeros, scores [rows, R] -inf)."""
        ids, scores = self.search(slots, None).results(slots.search)
        return (
            tf.zeros(tf.concat([[rows], tf.shape(ids)[1:]], 0), tf.int32),
            tf.fill(tf.concat([[rows], tf.shape(scores)[1:]], 0), NEG_INF),
        )

    def _pending(self, block: tf.Tensor, numbers: tf.Tensor, length: int | tf.Tensor) -> Slots:
        """The block's sentences as slots of their own, to be copied from; under beam
        search, with their first position searched (`_first_step`)."""
        _, max_lengths = decode_limits(block, self.settings.extra_length, self.max_length)
        pending = Slots(
            search=None,
            memory=self.model.encode_for_decoding(block, self.beams),
            inputs=block,
            max_lengths=max_lengths,
            min_lengths=minimum_lengths(block, self.settings.min_length, max_lengths),
            sentence=numbers,
        )
        if self.beams == 1:  # Greedy search has nothing to gain: it starts at position 0.
            return pending
        return pending._replace(search=self._first_step(pending, length))

    def _first_step(self, pending: Slots, length: int | tf.Tensor) -> BeamState:
        """The waiting sentences' beam searches after their first position, run on one
        row a sentence (`BeamSearch.after_first_position`): a slot taking one
        starts at position 1, saving a step of K rows for one of one row here."""
        state, one_row = self.model.start_one_row(pending.memory, self.beams)
        search = self.search(pending, None, length)
        assert isinstance(search, BeamSearch)
        return search.after_first_position(one_row, state)

    def _refill(
        self, slots: Slots, pending: Slots, placed: tf.Tensor, count: tf.Tensor
    ) -> tuple[Slots, tf.Tensor]:
        """Each empty slot takes the next waiting sentence, in order, while any wait."""
        empty = slots.sentence < 0
        source = placed + tf.cumsum(tf.cast(empty, tf.int32)) - 1
        taken = empty & (source < count)
        source = tf.clip_by_value(source, 0, row_count(pending.sentence) - 1)

        def refill() -> Slots:
            def take(old: tf.Tensor, new: tf.Tensor) -> tf.Tensor:
                return take_rows(taken, source, new, old)

            refilled = slots._replace(
                **{
                    name: tf.nest.map_structure(take, getattr(slots, name), getattr(pending, name))
                    for name in _CARRIED
                }
            )
            return refilled._replace(search=self._started(slots, refilled, pending, taken, source))

        slots = tf.cond(tf.reduce_any(taken), refill, lambda: slots)
        if pending.search is not None:  # Outside the cond: XLA writes the caches in place.
            search = slots.search
            model_state = self.model.first_positions(
                search.model_state, pending.search.model_state, taken, source
            )
            slots = slots._replace(search=search._replace(model_state=model_state))
        return slots, placed + tf.reduce_sum(tf.cast(taken, tf.int32))

    def _started(
        self, slots: Slots, refilled: Slots, pending: Slots, taken: tf.Tensor, source: tf.Tensor
    ) -> Any:
        """The slots' search with each slot taken [N] starting sentence source [N] of
        pending: at position 0 (greedy search), or after it (`_first_step`)."""
        old = slots.search
        fresh_rows = self.model.fresh_decoding_rows(
            row_count(taken), self._length(slots), self.beams
        )
        first = pending.search
        if first is None:  # Each row taken from a search started afresh.
            fresh = self.search(refilled, None).start({**old.model_state, **fresh_rows})
            return tf.nest.map_structure(
                lambda old, new: old if new is old else where_rows(taken, new, old), old, fresh
            )
        model_state = {
            **old.model_state,
            **{
                name: where_rows(taken, rows, old.model_state[name])
                for name, rows in fresh_rows.items()
            },
        }

        def take(old: tf.Tensor, new: tf.Tensor) -> tf.Tensor:
            return take_rows(taken, source, new, old)

        beams = self.beams
        own_first_rows = tf.repeat(tf.range(row_count(taken)) * beams, beams)  # Beam 0 of each.
        return old._replace(
            **{
                name: tf.nest.map_structure(take, getattr(old, name), getattr(first, name))
                for name in _SEARCHED_FIRST
            },
            parents=where_rows(taken, own_first_rows, old.parents),
            model_state=model_state,  # Position 0 is written after the cond (`_refill`).
        )

    def _collect(
        self, slots: Slots, search: BeamSearch | GreedySearch, finished: Finished
    ) -> tuple[Slots, Finished]:
        """Writes out the slots whose sentences are done, and those at the end of the
        slots' positions unfinished (evicted), and empties them."""
        placed = slots.sentence >= 0
        evicted = placed & ~slots.search.done & (slots.search.index >= self._length(slots))
        leaving = (slots.search.done & placed) | evicted
        ids, scores = search.results(slots.search)
        unused = row_count(finished.sentence) - 1
        at = tf.where(leaving, finished.count + tf.cumsum(tf.cast(leaving, tf.int32)) - 1, unused)
        at = at[:, tf.newaxis]
        finished = finished._replace(
            count=finished.count + tf.reduce_sum(tf.cast(leaving, tf.int32)),
            sentence=tf.tensor_scatter_nd_update(finished.sentence, at, slots.sentence),
            ids=tf.tensor_scatter_nd_update(finished.ids, at, ids),
            scores=tf.tensor_scatter_nd_update(finished.scores, at, scores),
            evicted=tf.tensor_scatter_nd_update(finished.evicted, at, evicted),
        )
        # An emptied slot stays done, at position 0, until refilled: the steps it
        # takes meanwhile write inside its positions and change nothing.
        search = slots.search._replace(
            index=tf.where(leaving, 0, slots.search.index), done=slots.search.done | leaving
        )
        return slots._replace(
            search=search, sentence=tf.where(leaving, -1, slots.sentence)
        ), finished

    def _length(self, slots: Slots) -> int | tf.Tensor:
        """L, the output positions the slots hold (static when known)."""
        ids = slots.search.ids if self.settings.is_greedy else slots.search.alive_ids
        return shape_list(ids)[-1]

    def search(
        self, slots: Slots, step: StepFunction | None, length: int | tf.Tensor | None = None
    ) -> BeamSearch | GreedySearch:
        """The search over the slots' sentences (`step` None: not to be advanced), in
        `length` output positions (None: the slots')."""
        settings = self.settings
        constraint = self.constraint(slots.inputs, slots.max_lengths)
        step = step or _no_step
        length = self._length(slots) if length is None else length
        if settings.is_greedy:
            own = isinstance(slots.streams, tf.Tensor)
            return GreedySearch(
                step, length, slots.max_lengths, slots.min_lengths, constraint,
                settings.alpha, settings.length_penalty, self.sampler,
                slots.streams if own else slots.sentence, slots.seeds if own else None,
            )  # fmt: skip
        return BeamSearch(
            step, settings.beam_size, length, slots.max_lengths, slots.min_lengths,
            settings.alpha, settings.length_penalty, settings.stopping, settings.num_returned,
            constraint,
        )  # fmt: skip


def _no_step(*_: Any) -> Any:
    raise AssertionError("a search built to start or read results was advanced")
