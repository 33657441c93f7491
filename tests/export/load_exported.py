"""Translates with an exported SavedModel using TensorFlow alone; run as a script.

python load_exported.py SAVED_MODEL_DIR [--warmup[=I,J,...]] < requests.json

requests.json is a list of requests, each a list of strings; prints
{"results": [{"outputs": [...], "scores": [...]}, ...], "warmup_requests": N,
"compilations": [after loading, after the warmup, after the requests]}.
With --warmup, the warmup requests of SAVED_MODEL_DIR/assets.extra are
replayed first, as TF Serving replays them when it loads a version: read as
tensorflow_serving's PredictionLog records (with =I,J,..., only the records at
those positions of the file). "compilations" counts the entries
of the XLA cache directory TF_XLA_FLAGS names (--tf_xla_persistent_cache_directory),
which gains one for each search XLA compiles; null without one.

Importing t2t_keras is made to fail, so the SavedModel is shown to need
nothing from this project.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

_CACHE_FLAG = "--tf_xla_persistent_cache_directory="
_WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


class _RefuseProject:
    """A meta path finder that fails every import of t2t_keras."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] == "t2t_keras":
            raise ImportError(f"{name} must not be needed to serve an exported model")


def compilations() -> int | None:
    """The entries of the XLA cache directory of TF_XLA_FLAGS, or None."""
    for flag in os.environ.get("TF_XLA_FLAGS", "").split():
        if flag.startswith(_CACHE_FLAG):
            directory = flag[len(_CACHE_FLAG) :]
            return sum(len(files) for _, _, files in os.walk(directory))
    return None


def replay_warmup(saved_model: str, loaded: Any, chosen: set[int] | None) -> int:
    """Runs the warmup requests (at positions `chosen`; None: all) as TF Serving does
    at load; returns how many."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    replayed = 0
    path = os.path.join(saved_model, _WARMUP_FILE)
    # Read whole first: the end of a tf.data iteration interleaved with the calls
    # cost seconds more (7 s after a 300-row request's call, 2-core Zen 5 EPYC).
    records = list(tf.data.TFRecordDataset(path).as_numpy_iterator())
    for position, record in enumerate(records):
        if chosen is not None and position not in chosen:
            continue
        request = prediction_log_pb2.PredictionLog.FromString(record).predict_log.request
        signature = loaded.signatures[request.model_spec.signature_name or "serving_default"]
        signature(**{name: tf.make_ndarray(proto) for name, proto in request.inputs.items()})
        replayed += 1
    return replayed


def warmup_flag() -> tuple[bool, set[int] | None]:
    """(--warmup given, the positions it names or None for all)."""
    for argument in sys.argv[2:]:
        if argument == "--warmup":
            return True, None
        if argument.startswith("--warmup="):
            positions = argument.split("=")[1].split(",")
            return True, {int(position) for position in positions if position}
    return False, None


def main() -> None:
    sys.meta_path.insert(0, _RefuseProject())
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  Registers the SentencePiece ops.

    saved_model = sys.argv[1]
    requests = json.load(sys.stdin)
    loaded = tf.saved_model.load(saved_model)
    translate = loaded.signatures["serving_default"]
    counts = [compilations()]
    warmup, chosen = warmup_flag()
    replayed = replay_warmup(saved_model, loaded, chosen) if warmup else 0
    counts.append(compilations())
    results = []
    for inputs in requests:
        served = translate(inputs=tf.constant(inputs, tf.string, shape=[len(inputs)]))
        results.append(
            {
                "outputs": [text.decode("utf-8") for text in served["outputs"].numpy()],
                "scores": served["scores"].numpy().tolist(),
            }
        )
    counts.append(compilations())
    assert "t2t_keras" not in sys.modules
    print(json.dumps({"results": results, "warmup_requests": replayed, "compilations": counts}))


if __name__ == "__main__":
    main()
