"""The slot search in two named compiled parts, for a host loop fed by a queue.

`SlotLoop.run` places a whole block of sentences before it returns, which
suits a file: every sentence is known at the start. A server's sentences
arrive while the slots run, so its host loop drives two compiled parts of
fixed shapes instead (JetStream's prefill and generate, for an
encoder-decoder search):

- `prefill(block, numbers)`: encodes M waiting sentences [M, S] and, under
  beam search, searches their first position on one row each: the pending
  block, held on the device.
- `generate(slots, pending, placed, count)`: up to `steps` steps of all N
  slots; before each, every empty slot takes the next pending sentence. It
  returns early once the block is all placed and a sentence has finished
  (so that the host answers it without waiting out the steps), or, while
  more sentences wait, once a slot is free (so that the host prefills the
  next block): under load, the steps go to the slots, not the host.
- `take_slots(source)`: moves the sentences of another `SlotParts`' slots,
  of the same width and positions, mid-search into free slots here (a large
  pool's last few, into a small pool whose steps cost less).

The host loop reads top to bottom: collect what finished, prefill from the
queue, generate. The slots and the pending block live in variables, which
the compiled parts update in place: passed in and out as tensors, the
slots' caches (176 MB for 64 slots of width 64 of transformer_small) were
copied at every call, 11 ms of a call that takes 25 ms a step. A sentence's
search reads only its own rows, so its result is the one `SlotSearch` gives
it in a file, whatever else is in flight.

Shapes: N slots, M pending sentences, K beams, R hypotheses returned, S
source width, L output positions; each fixed for one `SlotParts`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import tensorflow as tf

from t2t_keras.data.ids import PAD_ID
from t2t_keras.layers.shape_list import shape_list
from t2t_keras.models.transformer import Transformer
from t2t_keras.search.settings import SearchSettings
from t2t_keras.search.slot_loop import SlotLoop
from t2t_keras.search.slot_state import (
    Finished,
    Slots,
    row_count,
    take_rows,
    without_spare_row,
)


class SlotParts(SlotLoop):
    """N slots of width S and L output positions, fed M sentences at a time.

    Args:
      model: a built Transformer.
      settings: the search's settings, resolved (`DecodeHParams.resolve`).
      tree_tokens: the tree symbols, for the tree constraint.
      jit_compile: XLA-compile the parts.
      slots: N.
      block: M, the sentences a prefill encodes.
      width: S, the source width every row is padded to.
      length: L, the output positions the slots hold (None: all the width's
        longest output needs); a sentence reaching them unfinished is evicted.
      steps: the most steps one `generate` call runs.
      narrow_prefill: encode a block at the narrowest of S/4, S/2 and S that holds
        it (else always at S: a compilation each).
    """

    def __init__(
        self,
        model: Transformer,
        settings: SearchSettings,
        tree_tokens: Any = None,
        jit_compile: bool = True,
        *,
        slots: int,
        block: int,
        width: int,
        length: int | None = None,
        steps: int = 8,
        narrow_prefill: bool = True,
    ) -> None:
        super().__init__(model, settings, tree_tokens, jit_compile, slots)
        self.block, self.width, self.steps = block, width, steps
        self.length = length
        # A block is encoded at the narrowest of these that holds its longest row.
        divisors = (4, 2, 1) if narrow_prefill else (1,)
        self.prefill_widths = sorted({min(width, max(16, width // d)) for d in divisors})
        self._prefill = tf.function(self._prefill_into, jit_compile=jit_compile, autograph=False)
        self._generate = tf.function(self._generate_into, jit_compile=jit_compile, autograph=False)
        self._held_slots: Slots | None = None  # Of variables, made by `start`.
        self._held_block: Slots | None = None
        self._takes: dict[int, Any] = {}  # `take_slots` compiled, by source.

    def start(self) -> None:
        """Empty slots and an empty pending block, compiling both parts on their
        shapes (a step of empty slots changes nothing)."""
        slots = self.empty(self.slots, self.width, self.length)
        unset = tf.zeros([self.slots], tf.int32)
        slots = slots._replace(streams=unset, seeds=unset)
        self.length = self._length(slots)
        self._held_slots = _variables(slots)
        specs = (
            tf.TensorSpec([self.block, self.width], tf.int32),
            *[tf.TensorSpec([self.block], tf.int32)] * 3,
        )
        traced = tf.function(self.prefill, autograph=False).get_concrete_function(*specs)
        self._held_block = _variables(
            tf.nest.map_structure(
                lambda t: None if t is None else tf.zeros(t.shape, t.dtype),
                traced.structured_outputs,
            )
        )
        for width in self.prefill_widths:
            self.prefill_rows([], [], width=width)
        self.generate_steps(0, 0)

    def prefill_rows(
        self,
        rows: list[list[int]],
        numbers: list[int],
        streams: list[int] | None = None,
        seeds: list[int] | None = None,
        width: int | None = None,
    ) -> None:
        """Makes the pending block of up to M rows (ids ending with EOS, at most S each),
        each with its number, and for sampling its stream and seed (default: its
        number and the settings' seed), encoded at `width` (default: the narrowest
        of `prefill_widths` that holds the longest row)."""
        if len(rows) > self.block:
            raise ValueError(f"a block holds {self.block} sentences, not {len(rows)}")
        longest = max(map(len, rows), default=0)
        width = width or next(w for w in self.prefill_widths if w >= longest)
        ids = np.full([self.block, width], PAD_ID, np.int32)
        for position, row in enumerate(rows):
            ids[position, : len(row)] = row
        columns = []
        for given, default in (
            (numbers, -1), (streams or numbers, 0), (seeds or [self.settings.seed] * len(rows), 0)
        ):  # fmt: skip
            column = np.full([self.block], default, np.int32)
            column[: len(given)] = given
            columns.append(tf.constant(column))
        self._prefill(tf.constant(ids), *columns)

    def generate_steps(
        self, placed: int, count: int, more: bool = False
    ) -> tuple[int, np.ndarray, Finished]:
        """`generate` compiled over the slots and the pending block, with the host's
        counts: (placed, each slot's sentence [N] (-1: empty), finished)."""
        placed_now, sentence, finished = self._generate(
            tf.constant(placed), tf.constant(count), tf.constant(more)
        )
        return int(placed_now), sentence.numpy(), finished

    def compilations(self) -> int:
        """How many shapes of the parts were traced, each compiled once by XLA."""
        functions = (self._prefill, self._generate, *self._takes.values())
        return sum(int(function.experimental_get_tracing_count()) for function in functions)

    def can_take(self, source: SlotParts) -> bool:
        """Whether `take_slots` can move source's sentences here: slots alike but
        for their count (width, positions and search)."""
        mine = (self.model, self.width, self.length, self.settings)
        return (source.model, source.width, source.length, source.settings) == mine

    def take_slots(self, source: SlotParts) -> int:
        """Moves the sentences of source's slots, mid-search, into free slots here
        (as many as are free), and empties the slots they leave: their searches go
        on here as they would have there. Compiled once for each source.

        Returns:
          How many sentences moved.
        """
        if id(source) not in self._takes:
            if not self.can_take(source):
                raise ValueError("slots of another width, length or search")
            take = functools.partial(self._take_from, source)
            self._takes[id(source)] = tf.function(
                take, jit_compile=self.jit_compile, autograph=False
            )
        return int(self._takes[id(source)]())

    def prefill(
        self, block: tf.Tensor, numbers: tf.Tensor, streams: tf.Tensor, seeds: tf.Tensor
    ) -> Slots:
        """The block's sentences encoded, ready to take slots.

        Args:
          block: [M, W] int32 ids, W one of `prefill_widths`, each row ending with EOS
            then PAD (all PAD: none).
          numbers: [M] int32 the caller's number of each, -1 for none.
          streams: [M] int32 each one's sampling stream.
          seeds: [M] int32 each one's sampling seed.

        Returns:
          The pending sentences as slots of their own (`SlotLoop._pending`).
        """
        assert self.length is not None, "start() first"
        pending = self._pending(block, numbers, self.length)
        memory = self.model.widened_decoding_memory(pending.memory, self.width)
        inputs = tf.pad(block, [[0, 0], [0, self.width - shape_list(block)[1]]])
        return pending._replace(memory=memory, inputs=inputs, streams=streams, seeds=seeds)

    def generate(
        self, slots: Slots, pending: Slots, placed: tf.Tensor, count: tf.Tensor, more: tf.Tensor
    ) -> tuple[Slots, tf.Tensor, Finished]:
        """Up to `steps` steps of every slot, empty ones taking pending sentences first.

        Args:
          slots: the slots as the last call left them.
          pending: the block `prefill` made.
          placed: how many of the block earlier calls placed.
          count: how many of the block are sentences.
          more: sentences wait that the host would prefill into free slots.

        Returns:
          (the slots, how many of the block are placed, the sentences finished).
        """
        finished = self._none_finished(
            slots, row_count(slots.sentence) + row_count(pending.sentence)
        )

        def keep_going(
            step: tf.Tensor, slots: Slots, placed: tf.Tensor, finished: Finished
        ) -> tf.Tensor:
            work = (placed < count) | tf.reduce_any(slots.sentence >= 0)
            # All placed: return to answer what finished, unless more wait (then all
            # the steps are the slots', answers waiting a few), or to fill free slots.
            free = tf.reduce_any(slots.sentence < 0)
            back = tf.where(more, free, finished.count > 0)
            answer = (step > 0) & (placed >= count) & back
            return (step < self.steps) & work & ~answer

        def body(
            step: tf.Tensor, slots: Slots, placed: tf.Tensor, finished: Finished
        ) -> tuple[tf.Tensor, Slots, tf.Tensor, Finished]:
            return step + 1, *self._step(slots, pending, placed, count, finished)

        _, slots, placed, finished = tf.while_loop(
            keep_going, body, (tf.constant(0), slots, placed, finished)
        )
        return slots, placed, without_spare_row(finished)

    def _prefill_into(
        self, block: tf.Tensor, numbers: tf.Tensor, streams: tf.Tensor, seeds: tf.Tensor
    ) -> None:
        """`prefill`, written into the pending block's variables."""
        assert self._held_block is not None, "start() first"
        _assign(self._held_block, self.prefill(block, numbers, streams, seeds))

    def _generate_into(
        self, placed: tf.Tensor, count: tf.Tensor, more: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor, Finished]:
        """`generate` over the slots' and the pending block's variables, the slots
        written back: (placed, the slots' sentences, finished)."""
        assert self._held_slots is not None and self._held_block is not None, "start() first"
        slots, placed, finished = self.generate(
            _values(self._held_slots), _values(self._held_block), placed, count, more
        )
        _assign(self._held_slots, slots)
        return placed, slots.sentence, finished

    def _take_from(self, source: SlotParts) -> tf.Tensor:
        """`take_slots` in TensorFlow ops: the k-th free slot here takes the k-th
        busy slot of source; each row's parent, a row number, moves with it."""
        assert self._held_slots is not None and source._held_slots is not None, "start() first"
        mine, theirs = _values(self._held_slots), _values(source._held_slots)
        busy = theirs.sentence >= 0
        moving = tf.minimum(tf.reduce_sum(tf.cast(busy, tf.int32)), self.slots)
        free = mine.sentence < 0
        rank = tf.cumsum(tf.cast(free, tf.int32)) - 1  # Among the free slots here.
        taken = free & (rank < moving)
        busy_first = tf.argsort(tf.cast(~busy, tf.int32), stable=True)
        from_slot = tf.gather(busy_first, tf.clip_by_value(rank, 0, source.slots - 1))
        moved = tf.nest.map_structure(
            lambda old, new: None if old is None else take_rows(taken, from_slot, new, old),
            mine,
            theirs,
        )
        if not self.settings.is_greedy:  # Parents are rows: each moves with its slot.
            offset = tf.repeat((tf.range(self.slots) - from_slot) * self.beams, self.beams)
            rows = tf.repeat(taken, self.beams)
            parents = tf.where(rows, moved.search.parents + offset, mine.search.parents)
            moved = moved._replace(search=moved.search._replace(parents=parents))
        _assign(self._held_slots, moved)
        left = tf.reduce_any(
            (tf.range(source.slots)[:, tf.newaxis] == tf.where(taken, from_slot, -1)), axis=1
        )  # [Ns]: the source's slots that moved.
        search = theirs.search._replace(
            index=tf.where(left, 0, theirs.search.index), done=theirs.search.done | left
        )
        emptied = theirs._replace(search=search, sentence=tf.where(left, -1, theirs.sentence))
        _assign(source._held_slots, emptied)
        return moving


def _variables(structure: Any) -> Any:
    """Each tensor of a structure held in a variable of its own (None stays None)."""
    return tf.nest.map_structure(
        lambda t: None if t is None else tf.Variable(t, trainable=False), structure
    )


def _values(structure: Any) -> Any:
    """The values of `_variables`' variables."""
    return tf.nest.map_structure(lambda v: None if v is None else v.read_value(), structure)


def _assign(variables: Any, values: Any) -> None:
    tf.nest.map_structure(lambda v, t: None if v is None else v.assign(t), variables, values)
