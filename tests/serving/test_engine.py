"""The server's engine: requests of mixed sizes in flight together get t2t-decoder's
texts and scores, fairly, and a cancelled request leaves the queue."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from t2t_keras.problems.number_words import english
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.backends import SlotBackend
from t2t_keras.serving.engine import Engine, QueueFull
from t2t_keras.serving.fair_queue import FairQueue
from t2t_keras.serving.translator import Translation, Translator

# Numbers whose words run from 1 to 20 or so pieces, and a blank line.
NUMBERS = [7, 42, 312_005, 999_999, 18, 61_000, 5, 230, 777_777, 12, 1_000_001, 90]


@pytest.fixture(scope="module")
def trained(trained_dir: Path) -> TrainedModel:
    return load_trained(str(trained_dir))


def texts(numbers: list[int]) -> list[str]:
    return [english(n) for n in numbers]


def test_requests_in_flight_together_get_the_files_texts(trained: TrainedModel) -> None:
    """Before the engine starts, a request fills its queue of 30: another is refused,
    and once cancelled, the first leaves it. Then requests of 1 to 14 lines, all
    queued at once, get the texts and scores of a file's search (the last few
    sentences of the large pool may finish in the small one: that depends on
    when the requests arrive)."""
    settings = DecodeHParams(beam_size=3, return_beams=True).resolve(trained.hparams)
    translator = Translator(trained.model, trained.vocabs, settings)
    lines = [*texts(NUMBERS), "", *texts([n * 3 + 1 for n in NUMBERS])]
    expected = translator.translate(lines)
    # A narrow pool of 4 slots: most sentences wait, and many outgrow it; a small
    # pool of 2 that takes what waits first.
    backend = SlotBackend(translator, widths=[8], slots=4, steps=3, small_slots=[2])
    engine = Engine(translator, backend, max_queue_sentences=30)
    cancelled = engine.submit(lines[:25])
    with pytest.raises(QueueFull):
        engine.submit(lines[:7])
    engine.cancel(cancelled)
    assert engine.queued() == 0
    engine.start()
    compiled = backend.compilations()
    lone = engine.submit(lines[:1])  # Alone: through the small pool.
    lone.future.result(timeout=60)
    assert backend.small[0].count == 1  # It took the lone line.
    cuts = [1, 2, 9, 10, 11, 25]  # Then requests of 1, 7, 1, 1 and 14 lines at once.
    requests = [lone, *(engine.submit(lines[a:b]) for a, b in itertools.pairwise(cuts))]
    replies = [request.future.result(timeout=120) for request in requests]
    engine.stop(timeout=30)
    outputs = [output for reply in replies for output in reply.outputs]
    scores = [score for reply in replies for score in reply.scores]
    assert outputs == [t.texts for t in expected]
    for found, wanted in zip(scores, expected, strict=True):
        np.testing.assert_allclose(found, wanted.scores, rtol=1e-5, atol=1e-6)
    assert backend.compilations() == compiled  # Every shape was compiled at start.
    assert engine.sentences_done == len(lines) - 1  # The blank line is never decoded.
    assert not cancelled.future.done()


def test_the_queue_takes_round_robin_across_requests() -> None:
    queue: FairQueue[int] = FairQueue()
    queue.put("long", list(range(100)))
    queue.put("short", [1000])
    queue.put("two", [2000, 2001])
    assert queue.take(4) == [("long", 0), ("short", 1000), ("two", 2000), ("long", 1)]
    queue.put("again", [3000], first=True)
    assert queue.take(2) == [("again", 3000), ("two", 2001)]
    assert queue.remove("long") == 98 and len(queue) == 0 and queue.take(3) == []


def test_each_request_samples_with_its_own_seed_as_a_file_would(trained: TrainedModel) -> None:
    """Two samples an input: input i of a request with seed s gets line i's samples of
    a file decoded with seed=s, and one without a seed the settings', whatever else
    is in flight."""
    given = "sampling=true,samples_per_input=2,temperature=1.5,batch_size=4"
    settings = DecodeHParams().override(given).resolve(trained.hparams)
    lines = texts(NUMBERS[:6])

    def file_with_seed(seed: int) -> list[Translation]:
        seeded = DecodeHParams().override(f"{given},seed={seed}").resolve(trained.hparams)
        return Translator(trained.model, trained.vocabs, seeded).translate(lines)

    translator = Translator(trained.model, trained.vocabs, settings)
    engine = Engine(translator, SlotBackend(translator, widths=[8], slots=4, steps=3))
    own_seed = settings.search.seed + 7
    requests = {own_seed: engine.submit(lines, seed=own_seed)}
    requests[settings.search.seed] = engine.submit(lines)
    engine.start()
    for seed, request in requests.items():
        expected = file_with_seed(seed)
        reply = request.future.result(timeout=120)
        assert len(reply.outputs) == len(expected)
        # A pool's shapes round the logits differently from the file's batches: a
        # draw within rounding of a boundary of the cumulative distribution may take
        # the next token, one sample in a few hundred here. One of the 12 may differ.
        assert same_samples(reply.outputs, reply.scores, expected) >= 11
    outputs = [request.future.result().outputs for request in requests.values()]
    assert outputs[0] != outputs[1]
    engine.stop(timeout=30)


def same_samples(
    outputs: list[list[str]], scores: list[list[float]], expected: list[Translation]
) -> int:
    """How many samples the engine drew as the file did, with the file's scores (an
    input's samples are sorted by score, so one that differs may move the others)."""
    same = 0
    for texts_, scores_, wanted in zip(outputs, scores, expected, strict=True):
        assert len(texts_) == len(wanted.texts)
        file_scores = dict(zip(wanted.texts, wanted.scores, strict=True))
        for text, score in zip(texts_, scores_, strict=True):
            if text in file_scores:
                np.testing.assert_allclose(score, file_scores[text], rtol=1e-5, atol=1e-6)
                same += 1
    return same
