r"""CTranslate2 as its users call it, on our CTranslate2 export: the anchors our runtime meets.

    python benchmarks/ctranslate2_peer.py translate MODEL_DIR SOURCE OUTPUT [--workers=N]
    python benchmarks/ctranslate2_peer.py serve MODEL_DIR [--port=PORT] [--workers=N]

Only ctranslate2 and sentencepiece are imported (no TensorFlow, no t2t_keras):
the export's `model.bin` and SentencePiece model(s), and its beam size
(t2t_keras.json's search defaults), as a user reads them.

`translate`, a careful user's file loop: lines cut into pieces, sorted longest
first, in chunks of 64, each `translate_batch` limited to its longest input +
50 tokens; prints t2t-decoder's "Decoded N/N sentences (R sentences/s)", timed
from the pieces of the first line to the text of the last. With --workers=N
(CTranslate2's advice for throughput: inter_threads N, the cores shared among
them), every chunk is submitted at once (`asynchronous=True`) and N are
searched at a time.

`serve`, a batching server of about 70 lines: stdlib HTTP/1.1 (a thread a
connection), POST /v1/translate {"inputs": [...]} -> {"outputs": [...]}; one
thread takes the sentences waiting, the first then those arriving within 5 ms,
at most 64, and translates them in one call limited to their longest input +
50; with --workers=N, N such threads, each with a worker of its own. GET
answers {"status": "ready"}. Prints t2t-server's "listening on URL".
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import ctranslate2
import sentencepiece

BATCH, EXTRA_LENGTH, WINDOW_SECONDS = 64, 50, 0.005


class Model:
    """The export's translator, its SentencePiece models and its beam size."""

    def __init__(self, model_dir: str, workers: int = 0) -> None:
        info = json.loads((Path(model_dir) / "t2t_keras.json").read_text("utf-8"))
        vocab = info["run"]["vocab"]
        self.source, self.target = (
            sentencepiece.SentencePieceProcessor(model_file=str(Path(model_dir) / vocab[side]))
            for side in ("inputs", "targets")
        )
        self.beam_size = info["search_defaults"]["beam_size"]
        threads = max(1, len(os.sched_getaffinity(0)) // workers) if workers else 0
        self.translator = ctranslate2.Translator(
            model_dir, device="cpu", inter_threads=max(workers, 1), intra_threads=threads
        )

    def pieces(self, line: str) -> list[str]:
        return self.source.encode(line, out_type=str)

    def translate(self, sources: list[list[str]], asynchronous: bool = False) -> list[Any]:
        """One call, limited to the longest input + EXTRA_LENGTH tokens: the texts, or the
        results to wait for."""
        results = self.translator.translate_batch(
            sources,
            asynchronous=asynchronous,
            beam_size=self.beam_size,
            max_decoding_length=max(map(len, sources)) + EXTRA_LENGTH,
        )
        return results if asynchronous else list(map(self.text, results))

    def text(self, result: Any) -> str:
        return self.target.decode(result.hypotheses[0])


def translate_file(model_dir: str, source: str, output: str, workers: int = 0) -> None:
    model = Model(model_dir, workers)
    lines = Path(source).read_text("utf-8").splitlines()
    started = time.monotonic()
    sources = [model.pieces(line) for line in lines]
    order = sorted(range(len(lines)), key=lambda i: -len(sources[i]))
    outputs = [""] * len(lines)
    chunks = [order[first : first + BATCH] for first in range(0, len(order), BATCH)]
    if workers:  # Every chunk submitted at once; read in order.
        pending = [model.translate([sources[i] for i in chunk], True) for chunk in chunks]
        for chunk, results in zip(chunks, pending, strict=True):
            for i, result in zip(chunk, results, strict=True):
                outputs[i] = model.text(result.result())
    else:
        for chunk in chunks:
            texts = model.translate([sources[i] for i in chunk])
            for i, text in zip(chunk, texts, strict=True):
                outputs[i] = text
    rate = len(lines) / (time.monotonic() - started)
    Path(output).write_text("".join(text + "\n" for text in outputs), "utf-8")
    print(f"Decoded {len(lines)}/{len(lines)} sentences ({rate:.1f} sentences/s).", file=sys.stderr)


class Sentence:
    def __init__(self, pieces: list[str]) -> None:
        self.pieces, self.output, self.done = pieces, "", threading.Event()


def batches(model: Model, waiting: queue.Queue[Sentence]) -> None:
    """Forever: the first sentence waiting, then those arriving within the window."""
    while True:
        batch = [waiting.get()]
        deadline = time.monotonic() + WINDOW_SECONDS
        while len(batch) < BATCH and (left := deadline - time.monotonic()) > 0:
            try:
                batch.append(waiting.get(timeout=left))
            except queue.Empty:
                break
        for sentence, text in zip(batch, model.translate([s.pieces for s in batch]), strict=True):
            sentence.output = text
            sentence.done.set()


class _Listening(ThreadingHTTPServer):
    request_queue_size = 1024  # listen()'s backlog: 128 clients connect at once.
    daemon_threads = True


def serve(model_dir: str, port: int, workers: int = 0) -> None:
    model, waiting = Model(model_dir, workers), queue.Queue[Sentence]()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_json({"status": "ready"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            sentences = [Sentence(model.pieces(text)) for text in body["inputs"]]
            for sentence in sentences:
                waiting.put(sentence)
            for sentence in sentences:
                sentence.done.wait()
            self.send_json({"outputs": [sentence.output for sentence in sentences]})

        def send_json(self, answer: Any) -> None:
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = _Listening(("127.0.0.1", port), Handler)
    for _ in range(max(workers, 1)):  # A thread a worker, each taking its own batches.
        threading.Thread(target=batches, args=(model, waiting), daemon=True).start()
    print(f"ctranslate2_peer listening on http://127.0.0.1:{server.server_port}/", flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    translate = commands.add_parser("translate", help="a careful file loop")
    serve_it = commands.add_parser("serve", help="a batching server")
    for command in (translate, serve_it):
        command.add_argument("model_dir", help="a t2t-exporter --export_format=ctranslate2 export")
        command.add_argument("--workers", type=int, default=0, help="0: one, of 2+ threads")
    translate.add_argument("source")
    translate.add_argument("output")
    serve_it.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.command == "translate":
        translate_file(args.model_dir, args.source, args.output, args.workers)
    else:
        serve(args.model_dir, args.port, args.workers)


if __name__ == "__main__":
    main()
