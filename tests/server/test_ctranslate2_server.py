"""t2t-server --runtime=ctranslate2: a real process on loopback serving a CTranslate2 export.

Requests of mixed sizes sent at once share the batch backend's batches, and
each line gets what t2t-decoder --runtime=ctranslate2 writes for it: the
same text, the same score. The rest of the HTTP front (bad input, a full
queue, draining) is the TensorFlow server's, tested in
test_tensorflow_server.py.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from server_process import Server

from t2t_keras import registry
from t2t_keras.export.ctranslate2_runtime import CTranslate2Translator, thread_layout
from t2t_keras.problems.number_words import english
from t2t_keras.serving.backends import BatchBackend
from t2t_keras.serving.engine import Engine
from t2t_keras.serving.file_decoding import translate_lines
from t2t_keras.serving.translator import PendingBatch, Translation

# Requests of 1, 10, 1 and 12 lines, the third the blank line; numbers of one to
# seven words, so that their sentences fall under several output length limits.
NUMBERS = [42, 312_005, 999_999, 18, 61_000, 5, 230, 777_777, 12, 1_000_001]
SIZES = [1, 10, 1, 12]


def lines() -> list[str]:
    rest = [english(n * 7 + 2) for n in NUMBERS]
    return ["seven", *map(english, NUMBERS), "", *rest, "ninety", "three"]


def assert_decoded(outputs: list[str], scores: list[Any], expected: list[Translation]) -> None:
    assert outputs == [translation.text for translation in expected]
    for score, translation in zip(scores, expected, strict=True):
        if translation.scores:
            np.testing.assert_allclose(score, translation.scores[0], rtol=0, atol=1e-5)
        else:
            assert score is None  # The blank line: nothing decoded.


def test_concurrent_requests_get_the_decoders_texts_and_scores(
    ctranslate2_server: Server,
    ctranslate2_decoder: CTranslate2Translator,
    ctranslate2_model_name: str,
) -> None:
    texts = lines()
    problem = registry.problem(ctranslate2_decoder.info["run"]["problem"])
    expected = translate_lines(ctranslate2_decoder, texts, problem)
    ends = list(itertools.accumulate(SIZES))
    requests = [texts[end - size : end] for size, end in zip(SIZES, ends, strict=True)]
    assert requests[2] == [""] and len(texts) == ends[-1]
    start = threading.Barrier(len(requests))

    def send(inputs: list[str]) -> tuple[int, Any]:
        start.wait(timeout=30)  # All at once, so that they share batches.
        return ctranslate2_server.post("v1/translate", {"inputs": inputs})

    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        replies = list(pool.map(send, requests))
    assert [status for status, _ in replies] == [200] * len(requests), replies
    assert [len(body["outputs"]) for _, body in replies] == SIZES
    outputs = [output for _, body in replies for output in body["outputs"]]
    scores = [score for _, body in replies for score in body["scores"]]
    assert_decoded(outputs, scores, expected)

    # TensorFlow Serving's row form: a row an input, in their order.
    path = f"v1/models/{ctranslate2_model_name}:predict"
    status, answer = ctranslate2_server.post(path, {"instances": texts[-5:]})
    assert status == 200, answer
    rows = answer["predictions"]
    assert_decoded([row["outputs"] for row in rows], [row["scores"] for row in rows], expected[-5:])


@pytest.mark.parametrize("workers", [1, 2])
def test_the_next_batches_are_submitted_before_the_last_one_is_read(
    ctranslate2_dir: Path, ctranslate2_decoder: CTranslate2Translator, workers: int
) -> None:
    """With sentences waiting, the engine keeps every CTranslate2 worker searching a full
    batch: it submits the next one before it reads the last one's outputs. The replies
    are the decoder's."""
    translator = CTranslate2Translator(
        str(ctranslate2_dir), ctranslate2_decoder.settings, threads=1, workers=workers
    )
    events: list[str] = []
    submit = translator.submit_batch

    def submit_batch(rows: list[list[int]]) -> PendingBatch:
        batch, number = submit(rows), sum(event.startswith("submit") for event in events)
        events.append(f"submit {len(rows)}")
        read = batch.result
        batch.result = lambda: events.append(f"read {number}") or read()  # type: ignore[method-assign]
        return batch

    translator.submit_batch = submit_batch  # type: ignore[method-assign]
    engine = Engine(translator, BatchBackend(translator))
    texts = [english(n * 7 + 2) for n in NUMBERS]  # 10: batches of 4, 4 and 2.
    requests = [engine.submit(texts[:3]), engine.submit(texts[3:])]  # Waiting before the start.
    engine.start()
    replies = [request.future.result(timeout=60) for request in requests]
    engine.stop(timeout=30)
    assert [outputs[0] for reply in replies for outputs in reply.outputs] == [
        t.text for t in ctranslate2_decoder.translate(texts)
    ]
    # After the start's warm-up batch of one sentence, read at once:
    assert events[:2] == ["submit 1", "read 0"]
    if workers == 1:
        assert events[2:] == ["submit 4", "submit 4", "read 1", "submit 2", "read 2", "read 3"]
    else:  # Both workers start at once; the last 2 go to the first free (or 1 to each,
        # when both are found done at once), before any batch is read.
        submits = [event for event in events[2:] if event.startswith("submit")]
        assert submits[:2] == ["submit 4", "submit 4"] and submits[2:] in (
            ["submit 2"],
            ["submit 1"] * 2,
        )
        reads = events[2 + len(submits) :]
        assert sorted(reads) == [f"read {k}" for k in range(1, len(submits) + 1)]


def test_unset_threads_and_workers_give_each_core_a_batch() -> None:
    assert thread_layout(0, 0, sampling=False, cores=2) == (1, 2)
    assert thread_layout(0, 0, sampling=True, cores=2) == (2, 1)  # One draw order.
    assert thread_layout(2, 0, sampling=False, cores=8) == (2, 4)
    assert thread_layout(0, 3, sampling=False, cores=8) == (2, 3)
    assert thread_layout(4, 4, sampling=False, cores=2) == (4, 4)  # As given.
    assert thread_layout(0, 0, sampling=False, cores=1) == (1, 1)
