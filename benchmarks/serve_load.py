r"""Serving under load: t2t-server's sentences/s and latency as its clients grow, per runtime.

Serves --trained_dir with each of --runtimes (TensorFlow; CTranslate2 float32;
and `ct2-batching`, the anchor: a CTranslate2 batching server of about 70
lines on the same float32 export, `ctranslate2_peer.py serve`: stdlib HTTP, a
5 ms window, batches of at most 64, each limited to its longest input + 50;
`ct2-batching-workers` is the same with a worker and a batching thread a core)
on loopback under each load: --clients one-line clients going through the
file, the file in one request, and 1,000 lines in one request among 64
one-line clients; then, with --soak_requests, a soak of the TensorFlow
server. Method and figures: docs/benchmarks.md#serving-under-load.

    .venv/bin/python benchmarks/serve_load.py --trained_dir=TRAIN/averaged

stdout: one JSON line per measurement, then the table (markdown).
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import http.client
import itertools
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from absl import app, flags
from rounds import markdown_table
from t2t_commands import decoding_run, describe, emit, machine_facts, t2t
from trained_model import TEST_SOURCE, export, source_lines, xla_cache_environment

from t2t_keras.modes import RUNTIMES as OURS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from server_process import Server  # t2t-server on loopback, as the tests start it.

PEER_SCRIPT = str(Path(__file__).with_name("ctranslate2_peer.py"))
# The anchor, and the same with a CTranslate2 worker (and a batching thread) a core.
PEERS = {"ct2-batching": [], "ct2-batching-workers": [f"--workers={len(os.sched_getaffinity(0))}"]}
RUNTIMES = (*OURS, *PEERS)
LONG_LINES, MIX_CLIENTS, SOAK_CLIENTS = 1000, 64, 8
PERCENTILES = (50, 95, 99)  # Of each load's request latencies.
Timed = list[tuple[float, float]]  # (sent at, seconds to the answer) of each request.
# The table's columns: a title, and its cell from a load's JSON line (`measure`'s).
COLUMNS = {
    "runtime": "{runtime}",
    "load": "{load}",
    "sentences/s": "{sentences_per_s}",
    "/ t2t-decoder's": "{over_decoder:.3f}x of {t2t_decoder_sentences_per_s}",
    "latency p50, p95, p99 (s)": "{p50_seconds}, {p95_seconds}, {p99_seconds}",
    "busy share": "{busy_share}",
    "compilations": "{compilations_before} -> {compilations_after}",
    "RSS MiB: ready, now": "{ready_rss_mib:.0f}, {rss_mib:.0f}",
    "CPU cores: server, clients": "{server_cpu_cores}, {client_cpu_cores}",
}

flags.DEFINE_string("trained_dir", None, "The training directory (or averaged/) to serve.")
flags.DEFINE_string("source", TEST_SOURCE, "Raw source, one sentence a line.")
flags.DEFINE_list("clients", ["1", "4", "16", "64", "128"], "Concurrent one-line clients.")
flags.DEFINE_list("runtimes", [*OURS, "ct2-batching"], f"Of {', '.join(RUNTIMES)}, in turn.")
flags.DEFINE_integer("soak_requests", 0, "Requests of the TensorFlow server's soak; 0: none.")
flags.DEFINE_string("decode_hparams", "", "The server's and t2t-decoder's decoding settings.")
flags.DEFINE_list("ctranslate2_flags", [], "More flags of t2t-server --runtime=ctranslate2.")
flags.DEFINE_integer("max_lines", 0, "Send only the file's first N lines; 0: all.")
flags.DEFINE_string("work_dir", None, "Where the export and logs go; a temporary folder if unset.")
FLAGS = flags.FLAGS


def rss_mib(server: Server) -> float:
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    return round(int(re.findall(r"VmRSS:\s+(\d+) kB", status)[0]) / 1024, 1)


def cpu_seconds(server: Server) -> tuple[float, float]:
    """CPU seconds so far of the server (all its threads) and of this process (the clients)."""
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = os.times()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), own.user + own.system


def post(connection: http.client.HTTPConnection, inputs: list[str] | bytes) -> int:
    """POSTs {"inputs": inputs} (or a raw body) to /v1/translate, keeping the connection
    alive; the answer's status."""
    body = inputs if isinstance(inputs, bytes) else json.dumps({"inputs": inputs}).encode()
    connection.request("POST", "/v1/translate", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def timed_post(connection: http.client.HTTPConnection, inputs: list[str]) -> tuple[float, float]:
    """(sent at, seconds to the answer) of a request that must succeed."""
    sent = time.monotonic()
    if (status := post(connection, inputs)) != 200:
        raise RuntimeError(f"A request of {len(inputs)} lines got {status}.")
    return sent, time.monotonic() - sent


def in_threads(count: int, client: Callable[[], None]) -> None:
    """`client` run by `count` threads at once; an error of one is raised here."""
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        for future in [pool.submit(client) for _ in range(count)]:
            future.result()


def one_line_clients(server: Server, lines: list[str], count: int) -> tuple[Timed, dict]:
    """`count` clients, each sending the next line not yet sent once its last is answered,
    on a kept-alive connection, until the file is done (and no other facts)."""
    numbers, timed = itertools.count(), []  # A count's next() is atomic under the GIL.

    def client() -> None:
        connection = server.connection()
        while (number := next(numbers)) < len(lines):
            timed.append(timed_post(connection, [lines[number]]))
        connection.close()

    in_threads(count, client)
    return timed, {}


def mix(server: Server, lines: list[str]) -> tuple[Timed, dict[str, float]]:
    """The first LONG_LINES lines in one request while MIX_CLIENTS one-line clients go
    through the file: the one-line requests sent while it ran, and when each part ended."""
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        long = pool.submit(timed_post, server.connection(), lines[:LONG_LINES])
        timed, _ = one_line_clients(server, lines, MIX_CLIENTS)
        one_line_end = time.monotonic() - started
        sent, seconds = long.result()
    during = [(at, latency) for at, latency in timed if sent <= at < sent + seconds]
    ended = {"long_request_ended_at": sent + seconds - started, "one_line_ended_at": one_line_end}
    return during, {name: round(at, 2) for name, at in ended.items()}


def measure(server: Server, load: Callable[[], tuple[Timed, dict]], sentences: int) -> dict:
    """One load's figures: sentences/s, latency, the mean share of busy slots (/metrics every
    0.2 s; None where the runtime keeps none: CTranslate2's batches), compilations, the
    server's RSS, and the CPU cores (CPU seconds / wall seconds) of the server and clients.
    The peer has no /metrics: no busy share, no compilations."""
    ours = server.command is None
    shares, done = [], threading.Event()
    slots = server.metric("t2t_slots") if ours else None
    compiled = int(server.metric("t2t_compilations")) if ours else None

    def sample() -> None:
        while ours and not done.wait(0.2):
            shares.append(server.metric("t2t_busy_slots") / slots)

    sampler, cpu, started = threading.Thread(target=sample), cpu_seconds(server), time.monotonic()
    sampler.start()
    try:
        timed, facts = load()
    finally:
        seconds = time.monotonic() - started
        done.set()
        sampler.join()
    cores = np.round(np.subtract(cpu_seconds(server), cpu) / seconds, 2)
    percentiles = np.percentile([latency for _, latency in timed], PERCENTILES)
    return {
        "sentences": sentences,
        "wall_seconds": round(seconds, 2),
        "sentences_per_s": round(sentences / seconds, 1),
        "latency_requests": len(timed),
        **{f"p{p}_seconds": round(v, 3) for p, v in zip(PERCENTILES, percentiles, strict=True)},
        "busy_share": round(statistics.mean(shares), 3) if any(shares) else None,
        "compilations_before": compiled,
        "compilations_after": int(server.metric("t2t_compilations")) if ours else None,
        "rss_mib": rss_mib(server),
        "server_cpu_cores": cores[0],
        "client_cpu_cores": cores[1],
        **facts,
    }


def loads(server: Server, lines: list[str]) -> list[tuple[str, Callable[[], Any], int]]:
    """(name, the load, the sentences it sends) of each load, in order."""
    found: list[tuple[str, Callable[[], Any], int]] = [
        (f"{n} clients", functools.partial(one_line_clients, server, lines, int(n)), len(lines))
        for n in FLAGS.clients
    ]
    found.append(("whole file", lambda: ([timed_post(server.connection(), lines)], {}), len(lines)))
    return [*found, ("mix", lambda: mix(server, lines), len(lines) + len(lines[:LONG_LINES]))]


def soak_request(server: Server, connection: Any, number: int, line: str) -> tuple[Any, Any]:
    """Soak request `number`: of every 25, one bad JSON, one empty list, two clients gone
    (mid-body, and before the answer), the rest one line. Its status ("gone": none) and the
    connection to go on with."""
    if (kind := number % 25) > 3 or kind < 2:
        inputs = b"{not json" if kind == 0 else [] if kind == 1 else [line]
        return post(connection, inputs), connection
    body = json.dumps({"inputs": [line]}).encode()
    connection.putrequest("POST", "/v1/translate")
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body[: len(body) // 2] if kind == 2 else body)
    connection.close()
    return "gone", server.connection()


def soak(server: Server, lines: list[str], requests: int) -> dict[str, Any]:
    """`requests` soak requests from SOAK_CLIENTS clients: the server's RSS after the first
    1,000 and after all, the statuses, compilations; it must still answer after."""
    statuses, found = [], {"soak_requests": requests}
    for first, last in ((0, min(requests, 1000)), (min(requests, 1000), requests)):
        numbers = itertools.count(first)

        def client(numbers: itertools.count = numbers, last: int = last) -> None:
            connection = server.connection()
            while (number := next(numbers)) < last:
                line = lines[number % len(lines)]
                status, connection = soak_request(server, connection, number, line)
                statuses.append(str(status))
            connection.close()

        in_threads(SOAK_CLIENTS, client)
        found[f"rss_mib_after_{last}"] = rss_mib(server)
    timed_post(server.connection(), lines[:1])  # It still answers.
    compilations = server.metric("t2t_compilations")
    return {**found, "statuses": collections.Counter(statuses), "compilations": compilations}


def decoder_rate(model: list[str], source: Path, work: Path) -> float:
    """t2t-decoder's own rate (sentences/s, first sentence to last) of `source` with the model
    flags `model`, in its second run: a user's run after the first, which compiles. The peer's:
    its file loop's (model: [the peer's name, the export])."""
    if model[0] in PEERS:
        decoder = [sys.executable, PEER_SCRIPT, "translate", model[1], str(source)]
        decoder += [str(work / "decoded"), *PEERS[model[0]]]
    else:
        decoder = [*t2t("t2t-decoder"), *model, f"--decode_from_file={source}"]
        decoder += [f"--decode_to_file={work / 'decoded'}"]
        decoder.append(f"--decode_hparams={FLAGS.decode_hparams}")
    decoding_run(decoder, xla_cache_environment(""))
    return decoding_run(decoder, xla_cache_environment(""))[1]


def serve(runtime: str, model: list[str], lines: list[str], work: Path, machine: dict) -> list:
    """t2t-decoder's rate, then the runtime's server started, under every load (then the
    soak, if asked), stopped: the JSON line of each load."""
    rate = decoder_rate(model, work / "source.txt", work)
    args = [*model, f"--max_request_sentences={max(len(lines), LONG_LINES)}"]
    args += ["--max_request_bytes=16777216", f"--decode_hparams={FLAGS.decode_hparams}"]
    started = time.monotonic()
    if runtime in PEERS:
        command = [sys.executable, PEER_SCRIPT, "serve", model[1], *PEERS[runtime]]
        server = Server(log=work / f"{runtime}.log", command=command)
    else:
        server = Server(*args, log=work / f"{runtime}.log")
    try:
        server.wait_ready(600)
        seconds, rss = round(time.monotonic() - started), rss_mib(server)
        ready = {"runtime": runtime, "t2t_decoder_sentences_per_s": rate}
        ready |= {"ready_seconds": seconds, "ready_rss_mib": rss}
        found = []
        for name, load, sentences in loads(server, lines):
            found.append({**ready, "load": name, **measure(server, load, sentences)})
            found[-1]["over_decoder"] = found[-1]["sentences_per_s"] / rate
            emit(found[-1], machine)
        if runtime == "tensorflow" and FLAGS.soak_requests:
            emit({"runtime": runtime, **soak(server, lines, FLAGS.soak_requests)}, machine)
        return found
    finally:
        server.stop()


def main(argv: list[str]) -> None:
    del argv
    if not FLAGS.trained_dir or set(FLAGS.runtimes) - set(RUNTIMES):
        raise app.UsageError(f"Give --trained_dir, and --runtimes of {', '.join(RUNTIMES)}.")
    work = Path(FLAGS.work_dir or tempfile.mkdtemp(prefix="serve_load_"))
    work.mkdir(parents=True, exist_ok=True)
    lines = source_lines(FLAGS.source, FLAGS.max_lines)
    (work / "source.txt").write_text("".join(line + "\n" for line in lines), "utf-8")
    machine = machine_facts(xla_cache_environment(""))
    models = {"tensorflow": [f"--output_dir={FLAGS.trained_dir}", f"--xla_cache_dir={work}/xla"]}
    if {"ctranslate2", *PEERS} & set(FLAGS.runtimes):
        exported = export(FLAGS.trained_dir, work, ["ctranslate2 float32"])["ctranslate2 float32"]
        models["ctranslate2"] = ["--runtime=ctranslate2", f"--ctranslate2_dir={exported}"]
        models["ctranslate2"] += FLAGS.ctranslate2_flags
        models |= {peer: [peer, exported] for peer in PEERS}
    found = [
        line for name in FLAGS.runtimes for line in serve(name, models[name], lines, work, machine)
    ]
    rows = [
        [cell.format(**line).replace("None", "-") for cell in COLUMNS.values()] for line in found
    ]
    print(f"\nOn {describe(machine)}:\n\n{markdown_table(list(COLUMNS), rows)}")


if __name__ == "__main__":
    app.run(main)
