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
to its own length limit by the runtime, what waits shared among the
runtime's free workers as soon as one finishes a batch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from t2t_keras.search.slot_parts import SlotParts
from t2t_keras.search.slots import first_positions
from t2t_keras.serving.engine import Backend, Inbox, Waiting
from t2t_keras.serving.translator import (
    PendingBatch,
    SentenceTranslator,
    Translation,
    Translator,
)


@dataclasses.dataclass
class _Pool:
    """One shape of slots: its compiled parts (holding the slots and the pending
    block), and what the host knows of them."""

    parts: SlotParts
    lanes: list[int]  # The lanes it takes sentences from.
    placed: int = 0
    count: int = 0
    busy: int = 0  # Sentences in its slots.

    def active(self) -> bool:
        return bool(self.busy or self.placed < self.count)

    def free(self) -> int:
        return self.parts.slots - self.busy - (self.count - self.placed)


class SlotBackend(Backend):
    """Our slot search in pools of slots, one per source width, and small ones.

    A step costs the pool's N slots whatever they hold: a lone sentence in 64
    slots would pay for 64, and four clients' sentences spread over two
    pools of 64 would each pay for 128. So a ladder of small pools (4 and
    16 slots, as wide as the widest narrow pool) takes what waits first, the
    widest sentences first, as far as their free slots go; an idle large
    pool starts only for what the small ones cannot hold, and a running one
    fills its free slots with what waits in its lane, then in narrower lanes
    (its steps cost the same, full or not). A few clients are served by
    small steps, many fill the large pools, and a rare long sentence does
    not start a wide pool of 64 slots of its own. When load falls, the last
    few sentences of a large pool move, mid-search, to an idle small pool
    of the same width (`SlotParts.take_slots`), rather than run out its steps.

    Args:
      translator: the TensorFlow runtime (its model, settings and search).
      widths: the pools' source widths, ascending; the last holds max_length
        and the outputs evicted from the others. Widths past max_length are dropped.
      slots: N, each pool's slots (the widest pool's: a quarter, at least 2); a large
        pool prefills blocks of N / 2 (fewer calls under load than N / 4: 128 one-line
        clients got 116 sentences/s against 100).
      steps: the most steps of one `generate` call.
      small_slots: the small pools' slots, smallest first (none: no ladder).
    """

    def __init__(
        self,
        translator: Translator,
        widths: Sequence[int],
        slots: int,
        steps: int = 8,
        small_slots: Sequence[int] = (4, 16),
    ) -> None:
        max_length = translator.max_length
        self.widths = sorted({w for w in widths if w < max_length} | {max_length})
        self._translator = translator
        self.pools = []
        for lane, width in enumerate(self.widths):
            widest = width == max_length
            count = max(2, slots // 4) if widest and len(self.widths) > 1 else slots
            self.pools.append(self._pool(width, count, max(1, count // 2), [lane], steps))
        narrow = list(range(len(self.widths) - 2, -1, -1))  # Widest first.
        ladder = [size for size in small_slots if 0 < size < slots] if narrow else []
        # First: they take what waits before the large ones.
        self.small = [
            self._pool(self.widths[-2], size, min(size, 8), narrow, steps) for size in ladder
        ]
        self.large = self.pools  # By lane.
        self.pools = [*self.small, *self.large]
        self.lanes = len(self.widths)
        self.slots = sum(pool.parts.slots for pool in self.pools)
        # Each sentence in a pool's slots or block, kept for a second pass.
        self._requests: dict[int, tuple[Hashable, Waiting]] = {}
        self.moved = 0  # Sentences moved mid-search from a large pool to a small one.
        self.samples_apart = True

    def _pool(self, width: int, slots: int, block: int, lanes: list[int], steps: int) -> _Pool:
        search, max_length = self._translator.search, self._translator.max_length
        widest = width == max_length
        length = None if widest else int(first_positions(width, search.settings, max_length))
        parts = SlotParts(
            search.model, search.settings, search.tree_tokens, search.jit_compile,
            slots=slots, block=block, width=width, length=length, steps=steps,
            narrow_prefill=not widest,  # Long inputs and evicted outputs: rare.
        )  # fmt: skip
        return _Pool(parts, lanes)

    def lane(self, row: list[int]) -> int:
        return next(i for i, width in enumerate(self.widths) if len(row) <= width)

    def start(self) -> None:
        for pool in self.pools:
            pool.parts.start()
        for small in self.small:  # Compiles each move a large pool's sentences can take.
            for large in self.large:
                if small.parts.can_take(large.parts):
                    small.parts.take_slots(large.parts)

    def busy(self) -> int:
        return sum(pool.busy + pool.count - pool.placed for pool in self.pools)

    def compilations(self) -> int:
        return sum(pool.parts.compilations() for pool in self.pools)

    def round(self, inbox: Inbox) -> list[tuple[int, Translation]]:
        """Each pool in turn, the running large ones first (a free slot of theirs costs
        nothing), then the small ones, then the idle large ones: refill its pending
        block from the lanes, then generate."""
        finished: list[tuple[int, Translation]] = []
        running = [pool for pool in self.large if pool.active()]
        idle = [pool for pool in self.large if pool not in running]
        for pool in [*running, *self.small, *idle]:
            if pool.placed >= pool.count:
                self._prefill(pool, self._taken(pool, inbox))
            if pool.active():
                finished += self._generate(pool, inbox)
                self._move_to_small(pool, inbox)
        return finished

    def _move_to_small(self, pool: _Pool, inbox: Inbox) -> None:
        """A large pool's last few sentences, nothing waiting for it, go on in the
        smallest idle small pool that holds them: its steps cost less (16 slots of
        width 64: 10 ms a step against 25 ms for 64)."""
        if pool in self.small or not pool.busy or pool.placed < pool.count:
            return
        if any(map(inbox.waiting, self._lanes(pool))):
            return
        for small in self.small:
            if (
                small.parts.slots >= pool.busy
                and not small.active()
                and small.parts.can_take(pool.parts)
            ):
                small.busy = small.parts.take_slots(pool.parts)
                self.moved += small.busy
                pool.busy = 0
                return

    def _taken(self, pool: _Pool, inbox: Inbox) -> list[tuple[Hashable, Waiting]]:
        """The waiting sentences the pool takes now.

        A small pool: up to its free slots, the widest lanes first, from lanes whose
        large pool is idle, only while the small pools hold all that waits there
        (else a large pool starts and takes it), and only what the smaller ones
        cannot. A large pool: a block of its own lane, placed as its slots free;
        idle, only once the small pools cannot hold what waits; running, then what
        the narrower lanes still hold, up to its free slots.
        """
        block, free = pool.parts.block, pool.free()
        small_free = sum(small.free() for small in self.small)
        if pool in self.small:
            lanes = [lane for lane in pool.lanes if not self.large[lane].active()]
            waiting = sum(map(inbox.waiting, lanes))
            if waiting > small_free:
                return []
            smaller = self.small[: self.small.index(pool)]  # Filled first: fewer slots a step.
            beyond = waiting - sum(small.free() for small in smaller)
            return self._take(inbox, lanes, min(block, free, beyond))
        own = pool.lanes[0]
        if not pool.active():
            narrow = self.small[0].lanes if self.small and own in self.small[0].lanes else []
            held = bool(narrow) and sum(map(inbox.waiting, narrow)) <= small_free
            return [] if held else self._take(inbox, [own], block)
        taken = self._take(inbox, [own], block)
        return taken + self._take(inbox, self._lanes(pool)[1:], min(block, free) - len(taken))

    def _lanes(self, pool: _Pool) -> list[int]:
        """The lanes a pool takes from, in order: a large pool's own, then the narrower."""
        return pool.lanes if pool in self.small else list(range(pool.lanes[0], -1, -1))

    @staticmethod
    def _take(inbox: Inbox, lanes: Iterable[int], count: int) -> list[tuple[Hashable, Waiting]]:
        """Up to count waiting sentences, from the lanes in order."""
        taken: list[tuple[Hashable, Waiting]] = []
        for lane in lanes:
            if count > len(taken):
                taken += inbox.take(lane, count - len(taken))
        return taken

    def _prefill(self, pool: _Pool, taken: list[tuple[Hashable, Waiting]]) -> None:
        if not taken:
            return
        sentences = [sentence for _, sentence in taken]
        for request, sentence in taken:
            self._requests[sentence.number] = (request, sentence)
        pool.parts.prefill_rows(
            [s.row for s in sentences],
            [s.number for s in sentences],
            [s.stream for s in sentences],
            [s.seed for s in sentences],
        )
        pool.placed, pool.count = 0, len(taken)

    def _generate(self, pool: _Pool, inbox: Inbox) -> list[tuple[int, Translation]]:
        more = any(map(inbox.waiting, self._lanes(pool)))
        pool.placed, in_slots, done = pool.parts.generate_steps(pool.placed, pool.count, more)
        pool.busy = int(np.count_nonzero(in_slots >= 0))
        count = int(done.count)
        numbers = done.sentence.numpy()[:count].tolist()
        evicted = done.evicted.numpy()[:count]
        ids, scores = done.ids.numpy()[:count], done.scores.numpy()[:count]
        finished = []
        for at, number in enumerate(numbers):
            request, sentence = self._requests.pop(number)
            if evicted[at]:  # Again, in slots holding every position its limit allows.
                inbox.put_first(len(self.widths) - 1, request, sentence)
            else:
                finished.append((number, self._translator._translation(ids[at], scores[at])))
        return finished


class BatchBackend(Backend):
    """Any runtime's batches (`SentenceTranslator.submit_batch`), searched in its own
    workers while the next ones form.

    A round waits until a batch in the runtime's workers is done, or a sentence
    arrives for a free worker; shares what waits among the free workers (up to
    batch_size a batch, round-robin across requests), and only then reads the
    finished batches' outputs: no worker waits for the host's reading. When every
    worker is idle, the first sentence to arrive waits up to `window` seconds for
    others (clients answered together send again together), as TensorFlow
    Serving's batching waits up to its batch_timeout_micros.

    Args:
      translator: the runtime; its settings' batch_size is the batch, its `workers`
        the batches searched at once.
      window: the longest wait for a batch to fill when the workers are idle, in seconds.
    """

    def __init__(self, translator: SentenceTranslator, window: float = 0.005) -> None:
        self.translator = translator
        self.slots = translator.settings.batch_size * translator.workers
        self.window = window
        self._searching: list[tuple[list[int], PendingBatch]] = []  # numbers, batch

    def start(self) -> None:
        # Loads the runtime's kernels; translate() starts its sampling from the seed.
        list(self.translator._translations([[2, 1]], [0]))
        self.translator.translate([])

    def busy(self) -> int:
        return sum(len(numbers) for numbers, _ in self._searching)

    def compilations(self) -> int:
        return 0

    def round(self, inbox: Inbox) -> list[tuple[int, Translation]]:
        """The batches the workers finished, read after the next ones are submitted."""
        if not self._searching:
            self._gather(inbox)
        else:
            self._wait_for_one(inbox)
        finished = [searched for searched in self._searching if searched[1].done()]
        self._searching = [searched for searched in self._searching if searched not in finished]
        while (free := self.translator.workers - len(self._searching)) > 0:
            # What waits, shared among the free workers: each searches its part at once.
            share = min(-(-inbox.waiting(0) // free), self.translator.settings.batch_size)
            taken = [sentence for _, sentence in inbox.take(0, share)]
            if not taken:
                break
            batch = self.translator.submit_batch([sentence.row for sentence in taken])
            self._searching.append(([sentence.number for sentence in taken], batch))
        try:
            return [
                (number, translation)
                for numbers, batch in finished
                for number, translation in zip(numbers, batch.result(), strict=True)
            ]
        except Exception:
            self._searching = []  # Their sentences fail with the others' (`Engine._fail_all`).
            raise

    def _wait_for_one(self, inbox: Inbox) -> None:
        """Returns once a batch is done, or a sentence waits for a free worker: waits on
        a lone worker's batch, else polls."""
        free = len(self._searching) < self.translator.workers
        if len(self._searching) == 1 and not free:
            self._searching[0][1].wait()
            return
        while not any(batch.done() for _, batch in self._searching):
            if free and inbox.waiting(0):
                return
            time.sleep(0.001)

    def _gather(self, inbox: Inbox) -> None:
        """Waits up to `window` seconds for a whole batch to wait in the queue."""
        deadline = time.monotonic() + self.window
        batch_size = self.translator.settings.batch_size
        while inbox.waiting(0) < batch_size and time.monotonic() < deadline:
            time.sleep(self.window / 10)
