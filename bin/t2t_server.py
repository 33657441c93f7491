r"""t2t-server: a trained model kept hot behind HTTP, every client's sentences sharing its slots.

    t2t-server --output_dir=TRAIN [--decode_hparams="beam_size=4,alpha=0.6"] \
        [--host=127.0.0.1] [--port=8501] [--model_name=NAME]
    t2t-server --runtime=ctranslate2 --ctranslate2_dir=TRAIN/ctranslate2

The model is t2t-decoder's: --output_dir (its averaged model too, or an
ensemble A,B), --checkpoint_path, --runtime=ctranslate2, with the same
checks. It is loaded once and every shape of the search compiled before
/readyz turns 200; then

    curl -s localhost:8501/v1/translate -d '{"inputs": ["A man is sleeping."]}'
    curl -s localhost:8501/v1/models/NAME:predict -d '{"instances": ["A man."]}'

answer with t2t-decoder's texts and scores for those lines. TensorFlow
Serving's REST API (predict, status, metadata) is served too, the version
being the checkpoint's step; GET / is a page to translate in a browser,
/metrics Prometheus's text, /healthz and /readyz the probes. SIGTERM drains:
/readyz turns 503, requests in flight finish within --grace_seconds, exit 0.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from absl import flags

from t2t_keras.bin import flag_groups, program, runtimes, trained_model
from t2t_keras.errors import UserError
from t2t_keras.search.settings import DecodeHParams

if TYPE_CHECKING:
    from t2t_keras.serving.translator import SentenceTranslator

trained_model.define_flags(
    "If given, it must hold the vocabularies the model was trained with (as t2t-decoder's)."
)
flag_groups.define_xla_cache_flag()
runtimes.define_flags()
flags.DEFINE_string(
    "decode_hparams",
    "",
    "Comma-separated name=value decoding settings, as t2t-decoder's. Fields:\n"
    + DecodeHParams.help_text(),
)
flags.DEFINE_string("host", "127.0.0.1", "The address to listen on (loopback by default).")
flags.DEFINE_integer("port", 8501, "The port (TensorFlow Serving's REST port; 0: any free one).")
flags.DEFINE_string(
    "model_name", None, "The name TensorFlow Serving's routes take (default: the problem's)."
)
flags.DEFINE_string(
    "auth_token_file",
    None,
    "A file holding a token: every request but /, /healthz and /readyz must then send "
    "'Authorization: Bearer TOKEN' or get 401.",
)
flags.DEFINE_list(
    "slot_widths",
    ["64"],
    "Source widths of the pools of slots, each sentence searched in the narrowest that "
    "holds it; a pool of the model's max_length is always added.",
)
flags.DEFINE_integer(
    "max_request_sentences", 1000, "The most inputs one request may hold.", lower_bound=1
)
flags.DEFINE_integer(
    "max_request_bytes", 1 << 20, "The largest request body, in bytes.", lower_bound=1
)
flags.DEFINE_integer(
    "max_queue_sentences",
    10_000,
    "The most sentences waiting for a slot; a request that would pass it gets 503.",
    lower_bound=1,
)
flags.DEFINE_float(
    "grace_seconds", 30.0, "On SIGTERM: how long requests in flight may take to finish."
)
FLAGS = flags.FLAGS


def main() -> int:
    if flag_groups.start():
        return 0
    runtimes.check_flags()
    widths = _widths()
    token = _token()
    from t2t_keras.server import listener, serve
    from t2t_keras.server.api import Limits
    from t2t_keras.server.app import ServerState

    translator, run, checkpoint = _translator()
    problem = trained_model.registered_problem(run)
    listening = listener.bind(FLAGS.host, FLAGS.port)
    host, port = listening.getsockname()[:2]
    search = translator.settings.search
    engine = serve.make_engine(translator, problem, widths, FLAGS.max_queue_sentences)
    state = ServerState(
        engine=engine,
        model_name=FLAGS.model_name or run["problem"],
        version=serve.version_of(checkpoint),
        several=search.num_returned > 1,
        seeded=search.sampling and engine.backend.samples_apart,
        limits=Limits(FLAGS.max_request_sentences, FLAGS.max_request_bytes),
        token=token,
    )
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
    print(f"t2t-server listening on {url} (ready once compiled: {url}readyz)", flush=True)
    serve.serve(state, listening, FLAGS.grace_seconds, url)
    return 0


def _translator() -> tuple[SentenceTranslator, dict, str]:
    """The runtime's translator, the run files, and the checkpoint it decodes with."""
    settings = trained_model.decode_settings()
    if FLAGS.runtime == "ctranslate2":
        translator, run, stamp = runtimes.ctranslate2_translator(settings)
        return translator, run, stamp.removesuffix(".index")
    trained = trained_model.load(ensemble=True)
    translator = runtimes.tensorflow_translator(trained, settings.resolve(trained.hparams))
    return translator, trained.run, trained.checkpoint


def _widths() -> list[int]:
    try:
        widths = sorted({int(width) for width in FLAGS.slot_widths})
    except ValueError:
        widths = []
    if not widths or widths[0] < 1:
        raise UserError(
            f"--slot_widths={','.join(FLAGS.slot_widths)} is not a list of positive widths; "
            "give source widths in tokens, e.g. --slot_widths=16,32,64."
        )
    return widths


def _token() -> str | None:
    if not FLAGS.auth_token_file:
        return None
    path = os.path.expanduser(FLAGS.auth_token_file)
    try:
        with open(path, encoding="utf-8") as file:
            token = file.read().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(
            f"--auth_token_file={FLAGS.auth_token_file} cannot be read ({error}); give a UTF-8 "
            "file holding the token."
        ) from None
    if not token:
        raise UserError(f"--auth_token_file={FLAGS.auth_token_file} is empty; put a token in it.")
    return token


def run() -> None:
    """Console entry point."""
    program.run(main, before_devices=flag_groups.keep_compilations)


if __name__ == "__main__":
    run()
