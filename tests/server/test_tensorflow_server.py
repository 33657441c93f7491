"""t2t-server end to end: a real process on loopback serving the tiny number-words model.

One server for the whole path (its start-up compiles the search): concurrent
requests of mixed sizes get t2t-decoder's texts and scores, TensorFlow
Serving's API answers in its forms, every bad input of docs/failures.md gets
its status and sentence while the server keeps serving, clients that
disconnect or stall harm no one, nothing compiles after ready, and SIGTERM
under load drains: every request gets 200 or 503 or a refused connection,
and the process exits 0.
"""

from __future__ import annotations

import concurrent.futures
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from binaries import assert_user_error, run_in_process
from server_process import Server, sigterm_under_load

from t2t_keras import registry
from t2t_keras.problems.number_words import english
from t2t_keras.run.loading import load_trained
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.file_decoding import translate_lines
from t2t_keras.serving.translator import Translator

MODEL = "numbers"
TOKEN = "s3cret"
DECODE = "beam_size=2,batch_size=4"
LIMITS = ["--max_request_sentences=20", "--max_request_bytes=4096", "--max_queue_sentences=30"]
# (body, status, what the sentence says): the rows of docs/failures.md.
BAD_INPUT = [
    (b'{"inputs": ["one"', 400, "not JSON"),
    (b'{"inputs": ["\xff"]}', 400, "not UTF-8"),
    (b'["one"]', 400, "must be a JSON object"),
    (b'{"input": ["one"]}', 400, 'no "inputs"'),
    (b'{"inputs": "one"}', 400, "must be a list of strings"),
    (b'{"inputs": ["one", 2]}', 400, '"inputs"[1] is a number'),
    (b'{"inputs": []}', 400, "is empty"),
    (json.dumps({"inputs": ["one"] * 21}).encode(), 413, "at most 20"),
    (json.dumps({"inputs": ["one " * 1100]}).encode(), 413, "at most 4096"),
]


def lines() -> list[str]:
    numbers = [7, 42, 312_005, 999_999, 18, 61_000, 5, 230, 777_777, 12, 1_000_001, 90, 3]
    return [english(n) for n in numbers] + [""] + [english(n * 7 + 2) for n in numbers]


@pytest.fixture(scope="module")
def server(trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("server") / "server.log"
    args = [f"--output_dir={trained_dir}", f"--decode_hparams={DECODE}", f"--model_name={MODEL}"]
    started = Server(*args, "--slot_widths=8", *LIMITS, log=log, token=TOKEN)
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop()  # Once the test has stopped it, only reads its exit status.


def test_the_server_end_to_end(server: Server, trained_dir: Path) -> None:
    compiled = server.metric("t2t_compilations")
    check_concurrent_requests_get_the_decoders_texts(server, trained_dir)
    check_tensorflow_serving_api(server)
    check_bad_input(server)
    check_a_full_queue(server)
    check_gone_and_slow_clients(server)
    assert server.metric("t2t_compilations") == compiled  # Nothing compiled after ready.
    check_sigterm_drains(server)


def check_concurrent_requests_get_the_decoders_texts(server: Server, trained_dir: Path) -> None:
    texts = lines()
    trained = load_trained(str(trained_dir))
    settings = DecodeHParams().override(DECODE).resolve(trained.hparams)
    translator = Translator(trained.model, trained.vocabs, settings)
    expected = translate_lines(translator, texts, registry.problem(trained.run["problem"]))
    cuts = [0, 1, 14, 15, 16]  # Requests of 1, 13, 1, 1 and 11 lines, all at once.
    with concurrent.futures.ThreadPoolExecutor(len(cuts)) as pool:
        replies = list(
            pool.map(
                lambda span: server.post("v1/translate", {"inputs": texts[span[0] : span[1]]}),
                zip(cuts, [*cuts[1:], len(texts)], strict=True),
            )
        )
    assert [status for status, _ in replies] == [200] * len(cuts)
    outputs = [output for _, body in replies for output in body["outputs"]]
    scores = [score for _, body in replies for score in body["scores"]]
    assert outputs == [t.text for t in expected]
    for score, translation in zip(scores, expected, strict=True):
        if translation.scores:
            np.testing.assert_allclose(score, translation.scores[0], rtol=1e-5)
        else:
            assert score is None  # The blank line.


def check_tensorflow_serving_api(server: Server) -> None:
    status, rows = server.post(f"v1/models/{MODEL}:predict", {"instances": ["seven", "twelve"]})
    assert status == 200 and [r["outputs"] for r in rows["predictions"]] == ["sieben", "zwölf"]
    assert all(isinstance(r["scores"], float) for r in rows["predictions"])
    _, version = server.get(f"v1/models/{MODEL}")
    number = version["model_version_status"][0]["version"]
    assert version["model_version_status"][0]["state"] == "AVAILABLE"
    assert version["model_version_status"][0]["status"] == {"error_code": "OK", "error_message": ""}
    path = f"v1/models/{MODEL}/versions/{number}:predict"
    status, columns = server.post(path, {"inputs": ["seven"], "signature_name": "serving_default"})
    assert status == 200 and columns["outputs"]["outputs"] == ["sieben"]
    _, metadata = server.get(f"v1/models/{MODEL}/metadata")
    signature = metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert signature["inputs"]["inputs"]["dtype"] == "DT_STRING"
    assert signature["outputs"]["scores"]["dtype"] == "DT_FLOAT"
    assert server.post("v1/models/other:predict", {"instances": ["x"]})[0] == 404
    assert server.post(f"v1/models/{MODEL}/versions/1:predict", {"instances": ["x"]})[0] == 404


def check_bad_input(server: Server) -> None:
    status, answer = server.post("v1/translate", {"inputs": ["one"]}, headers={})
    assert status == 401 and "bearer token" in answer["error"]
    assert server.get("healthz", headers={})[0] == 200  # Probes need no token.
    for body, status, sentence in BAD_INPUT:
        got, answer = server.post("v1/translate", body)
        assert (got, sentence in answer["error"]) == (status, True), (body[:40], answer)
        assert answer["error"].count(". ") <= 1  # One sentence.
    status, answer = server.post("v1/translate", {"inputs": ["seven"]})  # Still serving.
    assert (status, answer["outputs"]) == (200, ["sieben"])


def check_a_full_queue(server: Server) -> None:
    """Six requests of 20 at once against a queue of 30 through 4 slots: those that
    would pass it get 503 with Retry-After, the others their outputs."""
    many = json.dumps({"inputs": [english(n) for n in range(100_000, 100_020)]}).encode()
    start = threading.Barrier(6)

    def send() -> tuple[int, dict, str | None]:
        connection = server.connection()
        start.wait()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
        connection.request("POST", "/v1/translate", many, headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read()), response.getheader("Retry-After")

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: send(), range(6)))
    refused = [answer for answer in answers if answer[0] == 503]
    assert refused and all("queue is full" in body["error"] and after for _, body, after in refused)
    assert all(len(body["outputs"]) == 20 for status, body, _ in answers if status == 200)
    assert server.metric("t2t_max_queue_sentences") == 30


def check_gone_and_slow_clients(server: Server) -> None:
    body = json.dumps({"inputs": [english(n) for n in range(200_000, 200_020)]}).encode()
    gone = socket.create_connection((server.host, int(server.port)), timeout=30)
    gone.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
    gone.sendall(b"Authorization: Bearer %s\r\n" % TOKEN.encode())
    gone.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.2)
    gone.close()  # Its waiting sentences leave the queue.
    slow = socket.create_connection((server.host, int(server.port)), timeout=30)
    slow.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    started = time.monotonic()
    assert server.post("v1/translate", {"inputs": ["seven"]})[1]["outputs"] == ["sieben"]
    assert time.monotonic() - started < 10
    slow.close()
    deadline = time.monotonic() + 30
    while server.metric("t2t_queue_sentences") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.metric("t2t_queue_sentences") == 0


def check_sigterm_drains(server: Server) -> None:
    """Clients keep sending while the server gets SIGTERM: each request gets 200 or 503
    whole, or its connection is refused; none is reset or cut. The process exits 0.
    (tests/server/test_draining.py does it several times on the CTranslate2 server.)"""
    inputs = ["seven", "forty two"]
    status, answer = server.post("v1/translate", {"inputs": inputs})  # What each 200 must say.
    assert status == 200, answer
    outcomes = sigterm_under_load(server, inputs, answer["outputs"], 8)
    assert outcomes["200"] and set(outcomes) <= {"200", "503", "refused"}, outcomes


def test_a_model_that_cannot_load_fails_before_the_port_is_bound(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        taken.listen()
        # The port is taken: an error about the model, not the port, says it was not bound.
        missing = run_in_process("t2t-server", f"--output_dir={tmp_path}/none", f"--port={port}")
        assert_user_error(missing, "does not exist")
        bad = run_in_process("t2t-server", f"--output_dir={tmp_path}", "--slot_widths=0,x")
        assert_user_error(bad, "--slot_widths=0,x is not a list of positive widths")
        unread = run_in_process("t2t-server", f"--auth_token_file={tmp_path}/no_token")
        assert_user_error(unread, "cannot be read")
