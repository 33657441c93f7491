"""SIGTERM under load resets no one: every request gets 200 or 503 whole, or its
connection is refused, however the signal falls among the clients' requests.

Before the listening socket closes, the kernel is told to complete no new
handshake and the connections it had completed are accepted and answered
(`t2t_keras.server.listener`). The CTranslate2 server starts in seconds, so
the signal is sent to several of them, each under many clients.
"""

from __future__ import annotations

import collections
from pathlib import Path

from server_process import Server, sigterm_under_load

from t2t_keras import registry
from t2t_keras.export.ctranslate2_runtime import CTranslate2Translator
from t2t_keras.serving.file_decoding import translate_lines

SIGNALS = 3
CLIENTS = 24
INPUTS = ["seven", "forty two", "three hundred and twelve thousand and five"]


def test_sigterm_under_load_resets_no_connection(
    ctranslate2_dir: Path, ctranslate2_decoder: CTranslate2Translator, tmp_path: Path
) -> None:
    problem = registry.problem(ctranslate2_decoder.info["run"]["problem"])
    outputs = [t.text for t in translate_lines(ctranslate2_decoder, INPUTS, problem)]
    outcomes: collections.Counter[str] = collections.Counter()
    for signal in range(SIGNALS):
        server = Server(
            "--runtime=ctranslate2",
            f"--ctranslate2_dir={ctranslate2_dir}",
            "--ctranslate2_threads=1",
            "--decode_hparams=beam_size=2,batch_size=8",
            log=tmp_path / f"server_{signal}.log",
        )
        server.wait_ready(60)
        outcomes += sigterm_under_load(server, INPUTS, outputs, CLIENTS, after=0.5 + signal / 4)
    assert set(outcomes) <= {"200", "503", "refused"}, outcomes
    assert outcomes["200"] and outcomes["refused"], outcomes
