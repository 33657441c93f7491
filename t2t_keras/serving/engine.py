"""The server's engine: one model, one queue, the slots; it knows no HTTP.

`Engine.submit` reads a request's texts as t2t-decoder reads a file's lines
(the problem's model input, the vocabulary, cut at max_length) and queues
its sentences; one thread runs the host loop over a `Backend` (the slot
search's compiled parts, or a CTranslate2 translator's batches): take what
finished, refill from the queue, advance. Every request's sentences share
the backend's slots, taken fairly across requests (`FairQueue`), and a
request's future is resolved as soon as its own sentences are done, with
the texts t2t-decoder writes for them (`file_decoding.written_texts`).
"""

from __future__ import annotations

import abc
import concurrent.futures
import dataclasses
import itertools
import threading
import time
from collections.abc import Hashable, Sequence
from typing import NamedTuple

from absl import logging

from t2t_keras.data.problem import Problem
from t2t_keras.serving.fair_queue import FairQueue
from t2t_keras.serving.file_decoding import written_texts
from t2t_keras.serving.translator import SentenceTranslator, Translation, readable_texts


class Waiting(NamedTuple):
    """A sentence waiting for a slot (one sample of it, when each is searched apart)."""

    number: int  # The engine's, unique among those in flight.
    row: list[int]  # Its input ids, ending with EOS.
    stream: int  # Sampling's stream: input i's sample r is i * samples + r, as in a file.
    seed: int  # Sampling's seed: the request's, or the settings'.


class QueueFull(Exception):
    """The queue holds too many sentences to take a request's now."""


class Stopped(Exception):
    """The engine drains or has stopped: it takes no new request."""


@dataclasses.dataclass
class Reply:
    """A request's results, one entry per input in its order."""

    outputs: list[list[str]]  # Each input's hypotheses, best first (one unless beams, samples).
    scores: list[list[float]]
    truncated: list[int]  # The inputs cut at the model's max_length.


@dataclasses.dataclass(eq=False)
class Request:
    """One client's texts in the engine; `future` gives its `Reply`."""

    sources: list[str]
    rows: list[list[int]]
    truncated: list[int]
    translations: list[Translation | None]
    left: int
    samples: dict[int, list[tuple[int, Translation]]] = dataclasses.field(default_factory=dict)
    future: concurrent.futures.Future[Reply] = dataclasses.field(
        default_factory=concurrent.futures.Future
    )
    cancelled: bool = False


class Inbox(abc.ABC):
    """What a backend takes its sentences from: the engine's queue, one lane per shape."""

    @abc.abstractmethod
    def take(self, lane: int, count: int) -> list[tuple[Hashable, Waiting]]:
        """Up to count waiting sentences of the lane, fairly across requests."""

    @abc.abstractmethod
    def put_first(self, lane: int, request: Hashable, sentence: Waiting) -> None:
        """Queues a sentence ahead of the lane's others (searched again, longer)."""

    @abc.abstractmethod
    def waiting(self, lane: int) -> int:
        """How many sentences wait in the lane."""


class Backend(abc.ABC):
    """A runtime driven one round at a time by the engine's host loop."""

    lanes: int = 1  # The queues the engine keeps for it, one per shape of slots.
    slots: int = 0  # Sentences it searches at once.
    # Each sample of an input searched apart, in a slot of its own (else the runtime
    # draws an input's samples itself).
    samples_apart: bool = False

    def lane(self, row: list[int]) -> int:
        """The lane a sentence's input ids queue in."""
        return 0

    @abc.abstractmethod
    def start(self) -> None:
        """Compiles every shape it will use."""

    @abc.abstractmethod
    def busy(self) -> int:
        """Sentences in its slots or placed for them, not yet finished."""

    @abc.abstractmethod
    def round(self, inbox: Inbox) -> list[tuple[int, Translation]]:
        """One round of the host loop: the sentences it finished, by number."""

    @abc.abstractmethod
    def compilations(self) -> int:
        """Shapes compiled so far; does not grow once `start` returns."""


class Engine(Inbox):
    """Requests in, replies out, one backend stepped by one thread.

    Args:
      translator: the runtime's text side (vocabularies, max_length, settings).
      backend: the search it drives.
      problem: the problem trained on, if known: how inputs are read and
        outputs written, as t2t-decoder does.
      max_queue_sentences: the most sentences waiting; more is `QueueFull`.
    """

    def __init__(
        self,
        translator: SentenceTranslator,
        backend: Backend,
        problem: Problem | None = None,
        max_queue_sentences: int = 10_000,
    ) -> None:
        self.translator, self.backend, self.problem = translator, backend, problem
        self.max_queue_sentences = max_queue_sentences
        self._queues: list[FairQueue[Waiting]] = [FairQueue() for _ in range(backend.lanes)]
        self._in_flight: dict[int, tuple[Request, int, int]] = {}  # request, input, sample
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.sentences_done = 0
        self.ready = False

    def start(self) -> None:
        """Compiles the backend's shapes, then runs the host loop in a thread."""
        started = time.monotonic()
        self.backend.start()
        logging.info(
            "Compiled %d shapes in %.1f s.", self.backend.compilations(), time.monotonic() - started
        )
        self._thread = threading.Thread(target=self._loop, name="engine", daemon=True)
        self._thread.start()
        self.ready = True

    def submit(self, texts: Sequence[str], seed: int | None = None) -> Request:
        """Queues a request's texts; its `future` gives the `Reply`.

        Args:
          texts: the inputs, as lines of a file.
          seed: sampling's seed for this request (None: the settings'): input i
            gets the samples line i of a file gets with this seed.

        Raises:
          QueueFull: its sentences would take the queue past max_queue_sentences.
          Stopped: the engine is draining.
        """
        sources = readable_texts(texts)
        inputs = [self.problem.model_input(s) for s in sources] if self.problem else sources
        encoded = [self.translator.encode([text]) for text in inputs]
        rows = [row for (row,), _ in encoded]
        truncated = [index for index, (_, cut) in enumerate(encoded) if cut]
        request = Request(sources, rows, truncated, [None] * len(rows), left=0)
        for index, row in enumerate(rows):
            if not row:  # Blank, or nothing the vocabulary reads: never decoded.
                request.translations[index] = Translation([], [], [])
        search = self.translator.settings.search
        samples = search.samples_per_input if self.backend.samples_apart else 1
        seed = search.seed if seed is None else seed
        # Longest first: a request is answered once all its sentences are, and the
        # slots it fills then empty on short sentences, not on a long one's last steps.
        longest_first = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
        waiting = [(i, r) for i in longest_first if rows[i] for r in range(samples)]
        with self._lock:
            if self._stopping:
                raise Stopped("the server is shutting down")
            if self.queued() + len(waiting) > self.max_queue_sentences:
                raise QueueFull(f"{self.queued()} sentences wait")
            request.left = len(waiting)
            for index, sample in waiting:
                number = next(self._numbers)
                self._in_flight[number] = (request, index, sample)
                sentence = Waiting(number, rows[index], index * samples + sample, seed)
                self._queues[self.backend.lane(rows[index])].put(request, [sentence])
            self._wake.notify()
        if not waiting:
            self._finish(request)
        return request

    def cancel(self, request: Request) -> None:
        """Forgets a request whose client is gone: its waiting sentences leave the queue,
        those in slots finish unread."""
        with self._lock:
            request.cancelled = True
            for queue in self._queues:
                queue.remove(request)

    def stop(self, timeout: float | None = None) -> None:
        """Takes no more requests, finishes those queued, then ends the thread."""
        with self._lock:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(timeout)

    def queued(self) -> int:
        """Sentences waiting for a slot."""
        return sum(len(queue) for queue in self._queues)

    def take(self, lane: int, count: int) -> list[tuple[Hashable, Waiting]]:
        with self._lock:
            return self._queues[lane].take(count)

    def put_first(self, lane: int, request: Hashable, sentence: Waiting) -> None:
        with self._lock:
            self._queues[lane].put(request, [sentence], first=True)

    def waiting(self, lane: int) -> int:
        return len(self._queues[lane])

    def _loop(self) -> None:
        """The host loop: wait for work, run a backend round, answer what finished."""
        while True:
            with self._lock:
                while not (self.queued() or self.backend.busy() or self._stopping):
                    self._wake.wait()
                if self._stopping and not (self.queued() or self.backend.busy()):
                    return
            try:
                finished = self.backend.round(self)
            except Exception as error:  # A failed search fails its requests, not the server.
                logging.exception("The search failed.")
                self._fail_all(error)
                continue
            self._answer(finished)

    def _answer(self, finished: list[tuple[int, Translation]]) -> None:
        done = []
        samples = self.translator.settings.search.samples_per_input
        with self._lock:
            for number, translation in finished:
                request, index, sample = self._in_flight.pop(number)
                request.left -= 1
                if self.backend.samples_apart and samples > 1:
                    drawn = request.samples.setdefault(index, [])
                    drawn.append((sample, translation))
                    if len(drawn) < samples:
                        continue
                    translation = _best_first(request.samples.pop(index))
                request.translations[index] = translation
                if request.left == 0 and not request.cancelled:
                    done.append(request)
            self.sentences_done += len(finished)
        for request in done:
            self._finish(request)

    def _finish(self, request: Request) -> None:
        translations = [t for t in request.translations if t is not None]
        texts = written_texts(self.problem, request.sources, translations)
        reply = Reply(texts, [t.scores for t in translations], request.truncated)
        if not request.future.done():
            request.future.set_result(reply)

    def _fail_all(self, error: Exception) -> None:
        with self._lock:
            requests = {request for request, _, _ in self._in_flight.values()}
            self._in_flight.clear()
            for queue in self._queues:
                for request in requests:
                    queue.remove(request)
        for request in requests:
            if not request.future.done():
                request.future.set_exception(error)


def _best_first(drawn: list[tuple[int, Translation]]) -> Translation:
    """An input's samples, each a Translation of its own, as one: best first, ties in
    the order drawn (`search.sampling.gather_samples`)."""
    hypotheses = [
        (score, sample, text, ids)
        for sample, translation in drawn
        for score, text, ids in zip(
            translation.scores, translation.texts, translation.ids, strict=True
        )
    ]
    hypotheses.sort(key=lambda found: (-found[0], found[1]))
    return Translation(
        texts=[text for _, _, text, _ in hypotheses],
        scores=[score for score, _, _, _ in hypotheses],
        ids=[ids for _, _, _, ids in hypotheses],
    )
