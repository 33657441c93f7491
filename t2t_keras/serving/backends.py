"""What the engine's host loop drives: our slot search in pools, or any runtime's batches.

`SlotBackend` keeps a pool of slots per source width (each sentence routed
to the narrowest that holds it), each pool with its own compiled `SlotParts`
(`prefill`, `generate`) and its pending block. A narrow pool's slots hold
the output positions most sentences need (`slots.first_positions`); a
sentence that reaches their end unfinished is queued, ahead of the others,
for the widest pool, whose slots hold all that any input's limit allows:
the two passes of a file's search, with the same result.

`BatchBackend` decodes what waits in batches, as that runtime's users would
call it (a CTranslate2 translator's `translate_batch`), each sentence held
to its own length limit by the runtime's own batching.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence

import numpy as np

from t2t_keras.search.slot_loop import Slots
from t2t_keras.search.slot_parts import SlotParts
from t2t_keras.search.slots import first_positions
from t2t_keras.serving.engine import Backend, Inbox, Waiting
from t2t_keras.serving.translator import SentenceTranslator, Translation, Translator


@dataclasses.dataclass
class _Pool:
    """One shape of slots: its compiled parts, the slots and the pending block."""

    parts: SlotParts
    slots: Slots | None = None
    pending: Slots | None = None
    placed: int = 0
    count: int = 0
    busy: int = 0  # Sentences in its slots.


class SlotBackend(Backend):
    """Our slot search in pools of slots, one per source width.

    Args:
      translator: the TensorFlow runtime (its model, settings and search).
      widths: the pools' source widths, ascending; the last holds max_length
        and the outputs evicted from the others. Widths past max_length are dropped.
      slots: N, each pool's slots (the widest pool's: a quarter, at least 2).
      steps: the most steps of one `generate` call.
    """

    def __init__(
        self, translator: Translator, widths: Sequence[int], slots: int, steps: int = 8
    ) -> None:
        search = translator.search
        max_length = translator.max_length
        widths = sorted({w for w in widths if w < max_length} | {max_length})
        self.pools = []
        for width in widths:
            widest = width == max_length
            count = max(2, slots // 4) if widest and len(widths) > 1 else slots
            length = None if widest else int(first_positions(width, search.settings, max_length))
            parts = SlotParts(
                search.model, search.settings, search.tree_tokens, search.jit_compile,
                slots=count, block=max(1, count // 4), width=width, length=length, steps=steps,
            )  # fmt: skip
            self.pools.append(_Pool(parts))
        self.widths = widths
        self.lanes = len(widths)
        self.slots = sum(pool.parts.slots for pool in self.pools)
        self._translation = translator._translation
        # Each sentence in a pool's slots or block, kept for a second pass.
        self._requests: dict[int, tuple[Hashable, Waiting]] = {}
        self.samples_apart = True

    def lane(self, row: list[int]) -> int:
        return next(i for i, width in enumerate(self.widths) if len(row) <= width)

    def start(self) -> None:
        for pool in self.pools:
            pool.slots, pool.pending = pool.parts.start()

    def busy(self) -> int:
        return sum(pool.busy + pool.count - pool.placed for pool in self.pools)

    def compilations(self) -> int:
        return sum(pool.parts.compilations() for pool in self.pools)

    def round(self, inbox: Inbox) -> list[tuple[int, Translation]]:
        """Each pool in turn: refill its pending block from its lane, then generate."""
        finished: list[tuple[int, Translation]] = []
        for lane, pool in enumerate(self.pools):
            if pool.placed >= pool.count:
                self._prefill(pool, inbox.take(lane, pool.parts.block))
            if pool.busy or pool.placed < pool.count:
                finished += self._generate(lane, pool, inbox)
        return finished

    def _prefill(self, pool: _Pool, taken: list[tuple[Hashable, Waiting]]) -> None:
        if not taken:
            return
        sentences = [sentence for _, sentence in taken]
        for request, sentence in taken:
            self._requests[sentence.number] = (request, sentence)
        pool.pending = pool.parts.prefill_rows(
            [s.row for s in sentences],
            [s.number for s in sentences],
            [s.stream for s in sentences],
            [s.seed for s in sentences],
        )
        pool.placed, pool.count = 0, len(taken)

    def _generate(self, lane: int, pool: _Pool, inbox: Inbox) -> list[tuple[int, Translation]]:
        parts = pool.parts
        assert pool.slots is not None and pool.pending is not None, "start() first"
        pool.slots, pool.placed, done = parts.generate_steps(
            pool.slots, pool.pending, pool.placed, pool.count
        )
        pool.busy = int(np.count_nonzero(pool.slots.sentence.numpy() >= 0))
        count = int(done.count)
        numbers = done.sentence.numpy()[:count].tolist()
        evicted = done.evicted.numpy()[:count]
        ids, scores = done.ids.numpy()[:count], done.scores.numpy()[:count]
        finished = []
        for at, number in enumerate(numbers):
            request, sentence = self._requests.pop(number)
            if evicted[at]:  # Again, in slots holding every position its limit allows.
                inbox.put_first(len(self.pools) - 1, request, sentence)
            else:
                finished.append((number, self._translation(ids[at], scores[at])))
        return finished


class BatchBackend(Backend):
    """Any runtime's batches (`SentenceTranslator._decode_batch`), a batch a round.

    Args:
      translator: the runtime; its settings' batch_size is the batch.
    """

    def __init__(self, translator: SentenceTranslator) -> None:
        self.translator = translator
        self.slots = translator.settings.batch_size
        self._waiting: list[Waiting] = []

    def start(self) -> None:
        # Loads the runtime's kernels; translate() starts its sampling from the seed.
        list(self.translator._translations([[2, 1]], [0]))
        self.translator.translate([])

    def busy(self) -> int:
        return 0

    def compilations(self) -> int:
        return 0

    def round(self, inbox: Inbox) -> list[tuple[int, Translation]]:
        """The next batch_size waiting sentences, in batches of one length limit each."""
        taken = [sentence for _, sentence in inbox.take(0, self.slots)]
        rows = [sentence.row for sentence in taken]
        groups = self.translator._translations(rows, list(range(len(rows))))
        return [
            (taken[index].number, translation) for group in groups for index, translation in group
        ]
