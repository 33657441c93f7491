"""What the server tests share: a CTranslate2 export of the session's tiny model, a
`t2t-server --runtime=ctranslate2` on it (one process a module), and the translator
t2t-decoder --runtime=ctranslate2 builds from the same flags.

The CTranslate2 server is ready in seconds (no search to compile), so the
tests that need a server but not our search (the page in a browser, the
batch backend) use it rather than the TensorFlow one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_process import Server

from t2t_keras.export.ctranslate2_export import export_ctranslate2, read_info, search_defaults
from t2t_keras.export.ctranslate2_runtime import CTranslate2Translator, thread_layout
from t2t_keras.machine import usable_cores
from t2t_keras.run.loading import load_trained
from t2t_keras.search.settings import DecodeHParams

MODEL = "numbers"
TOKEN = "s3cret"
# A batch of 4 so that concurrent requests share batches and span several.
CTRANSLATE2_DECODE = "beam_size=2,batch_size=4"
# One thread a translation: the machine's cores are shared with the other test worker.
CTRANSLATE2_THREADS = 1
READY_SECONDS = 60


@pytest.fixture(scope="session")
def ctranslate2_dir(trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """trained_dir exported to CTranslate2 in float32 (t2t-exporter's library call)."""
    trained = load_trained(str(trained_dir), use_xla=False)
    target = tmp_path_factory.mktemp("ctranslate2") / "float32"
    search = DecodeHParams().resolve(trained.hparams).search
    return Path(export_ctranslate2(trained, str(target), search, "float32"))


@pytest.fixture(scope="module")
def ctranslate2_server(
    ctranslate2_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A ready `t2t-server --runtime=ctranslate2` that wants TOKEN; stopped after the module."""
    log = tmp_path_factory.mktemp("ctranslate2_server") / "server.log"
    server = Server(
        "--runtime=ctranslate2",
        f"--ctranslate2_dir={ctranslate2_dir}",
        f"--ctranslate2_threads={CTRANSLATE2_THREADS}",
        f"--decode_hparams={CTRANSLATE2_DECODE}",
        f"--model_name={MODEL}",
        log=log,
        token=TOKEN,
    )
    try:
        server.wait_ready(READY_SECONDS)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ctranslate2_model_name() -> str:
    """The name TensorFlow Serving's routes of `ctranslate2_server` take."""
    return MODEL


@pytest.fixture(scope="module")
def ctranslate2_decoder(ctranslate2_dir: Path) -> CTranslate2Translator:
    """The translator of t2t-decoder --runtime=ctranslate2 given the server's flags,
    built as bin/runtimes.py's `ctranslate2_translator` builds it."""
    settings = DecodeHParams().override(CTRANSLATE2_DECODE)
    resolved = settings.resolve(search_defaults(read_info(str(ctranslate2_dir))))
    threads, workers = thread_layout(CTRANSLATE2_THREADS, 0, False, usable_cores())
    return CTranslate2Translator(str(ctranslate2_dir), resolved, threads, workers=workers)
