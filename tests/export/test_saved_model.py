"""Exported SavedModels translate strings like the in-process Decoder, without t2t_keras."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
import tensorflow as tf
from binaries import assert_user_error, run, run_in_process
from decoders import make_decoder
from eos_first import make_eos_first
from tensorflow_serving.apis.predict_pb2 import PredictRequest
from tensorflow_serving.apis.prediction_log_pb2 import PredictionLog

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.errors import UserError
from t2t_keras.export.saved_model import SIGNATURE, bucketed_search, export_translator
from t2t_keras.export.warmup import WARMUP_FILE, RequestBuckets, replay_warmup
from t2t_keras.problems.number_words import english
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.search.settings import DecodeHParams, SearchSettings
from t2t_keras.search.slots import DRAIN_SLOTS, SlotSearch

LOADER = Path(__file__).with_name("load_exported.py")
LONG_LINE = "seven " * 300
INPUTS = [
    "three hundred forty two",
    "",
    "zwölf — ünd 日本語",
    LONG_LINE,
    "nineteen",
    "one thousand two hundred",
]
# Requests of these many rows follow INPUTS: of the fewest and most rows, padded
# (3) or not, and two calls (300); every row class in the slow test.
REQUEST_SIZES = (1, 2, 3, 7, 300)


def serve_in_subprocess(
    saved_model: Path, requests: list[list[str]], xla_cache: Path, warmup: list[int] | None
) -> dict:
    """The SavedModel's results, from a Python that refuses to import t2t_keras, that
    first replays the warmup records at positions `warmup` (None: all) and counts
    XLA's compilations (load_exported.py)."""
    chosen = "" if warmup is None else "=" + ",".join(map(str, warmup))
    env = {**os.environ, "TF_XLA_FLAGS": f"--tf_xla_persistent_cache_directory={xla_cache}"}
    result = subprocess.run(
        [sys.executable, str(LOADER), str(saved_model), f"--warmup{chosen}"],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def sized_requests(long_rows: bool) -> list[list[str]]:
    """Requests of REQUEST_SIZES rows: the first rows of one list of number words
    (up to 12 ids), so that a padded request's rows are also an unpadded one's;
    with long_rows, a request's last row starts with up to 300 words more."""
    numbers = random.Random(0)
    rows = [english(numbers.randrange(10 ** numbers.randint(1, 6))) for _ in range(300)]
    requests = [rows[:size] for size in REQUEST_SIZES]
    if long_rows:
        for request in requests:
            request[-1] = "seven " * numbers.choice([0, 20, 50, 100, 300]) + request[-1]
    return requests


def drained(shape: tuple[int, int]) -> set[tuple[int, int]]:
    """The shapes a call of `shape` (slots, width) runs at: its slots halved as they
    drain, down to DRAIN_SLOTS (`SlotSearch._graph_pass`)."""
    slots, width = shape
    shapes = {shape}
    while slots // 2 >= DRAIN_SLOTS:
        slots //= 2
        shapes.add((slots, width))
    return shapes


def warmup_requests(version_dir: Path) -> list[PredictRequest]:
    """The requests of the warmup file, read as TF Serving reads them."""
    records = tf.data.TFRecordDataset(str(version_dir / WARMUP_FILE)).as_numpy_iterator()
    return [PredictionLog.FromString(record).predict_log.request for record in records]


def texts_of(request: PredictRequest) -> list[str]:
    return [text.decode() for text in tf.make_ndarray(request.inputs["inputs"])]


def request_shapes(trained: TrainedModel, buckets: RequestBuckets, texts: list[str]) -> set:
    """The (slots, width) the search of a request of `texts` runs at."""
    vocab, max_length = trained.vocabs["inputs"], trained.hparams.max_length
    lengths = [min(len(vocab.encode(text)) + 1, max_length) for text in texts]
    return set(buckets.request_shapes(lengths))


class Exported(NamedTuple):
    """A SavedModel export_translator wrote beside a newer version, then moved away
    and served once its training directory was gone (`serve_in_subprocess`), after
    the warmup requests of the shapes its requests need."""

    trained: TrainedModel
    newest: int  # The version that was there before.
    version_dir: Path  # Where it was written (gone: the training directory is).
    versions: list[str]  # What export_dir held then.
    kept: str  # The earlier version's file, then.
    served: Path
    buckets: RequestBuckets
    requests: list[list[str]]  # INPUTS, then sized_requests(long_rows=False).
    warmup: list[PredictRequest]  # Of the warmup file.
    replayed: list[int]  # The positions in it replayed.
    results: dict


@pytest.fixture(scope="module")
def exported(trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Exported:
    tmp_path = tmp_path_factory.mktemp("exported")
    training_copy = tmp_path / "train"
    shutil.copytree(trained_dir, training_copy)
    trained = load_trained(str(training_copy))
    export_dir = training_copy / "export"
    newest = int(time.time()) + 1000
    (export_dir / str(newest)).mkdir(parents=True)
    (export_dir / str(newest) / "kept").write_text("an existing version")

    settings = search_settings(trained)
    version_dir = Path(export_translator(trained, str(export_dir), settings))
    versions = sorted(path.name for path in export_dir.iterdir())
    kept = (export_dir / str(newest) / "kept").read_text()
    # Self-contained: it serves from elsewhere once the training directory is gone.
    served = tmp_path / "served" / "1"
    served.parent.mkdir()
    shutil.move(version_dir, served)
    shutil.rmtree(training_copy)
    # Each compilation costs seconds: the warmup requests of the shapes needed replayed.
    buckets = RequestBuckets.of(SlotSearch(trained.model, settings))
    requests = [INPUTS, *sized_requests(long_rows=False)]
    needed = set.union(*(request_shapes(trained, buckets, texts) for texts in requests))
    warmup = warmup_requests(served)
    replayed = [
        position
        for position, request in enumerate(warmup)
        if request_shapes(trained, buckets, texts_of(request)) <= needed
    ]
    results = serve_in_subprocess(served, requests, tmp_path / "xla_cache", replayed)
    return Exported(
        trained,
        newest,
        version_dir,
        versions,
        kept,
        served,
        buckets,
        requests,
        warmup,
        replayed,
        results,
    )


def decode_in_process(
    trained: TrainedModel, inputs: list[str], min_length: int = 1, jit_compile: bool = True
) -> tuple[list[str], np.ndarray]:
    """Best translations and scores from Decoder, with the model's search settings."""
    rows = [[*trained.vocabs["inputs"].encode(text), EOS_ID] for text in inputs]
    width = max(len(row) for row in rows)
    batch = np.array([row + [PAD_ID] * (width - len(row)) for row in rows], np.int32)
    ids, scores = make_decoder(trained.model, min_length=min_length, jit_compile=jit_compile)(batch)
    outputs = [trained.vocabs["targets"].decode(best) for best in ids.numpy()[:, 0]]
    return outputs, scores.numpy()[:, 0]


def test_saved_model_translates_like_decoder_without_the_project(exported: Exported) -> None:
    trained = exported.trained
    assert len(trained.vocabs["inputs"].encode(LONG_LINE)) > trained.hparams.max_length
    # A new version past the newest; nothing else left behind, nothing replaced.
    newest = exported.newest
    assert exported.version_dir.name == str(newest + 1)
    assert exported.versions == [str(newest), str(newest + 1)]
    assert exported.kept == "an existing version"
    served = exported.results["results"][0]

    expected_outputs, expected_scores = decode_in_process(trained, INPUTS)
    assert served["outputs"] == expected_outputs
    np.testing.assert_allclose(served["scores"], expected_scores, atol=1e-4)


def test_warmup_compiles_the_shapes_every_request_is_searched_at(exported: Exported) -> None:
    trained, buckets = exported.trained, exported.buckets
    # TF Serving's PredictionLog records, of real text, one a shape the search runs at.
    shapes = []
    for request in exported.warmup:
        assert request.model_spec.signature_name == SIGNATURE and list(request.inputs) == ["inputs"]
        texts = texts_of(request)
        assert all(texts)
        (shape,) = request_shapes(trained, buckets, texts)
        shapes.append(shape)
    assert sorted(shapes) == buckets.compiled_shapes()
    assert len(shapes) == 40  # 5 of one slot (32 to 256 wide), 7 of 4, 8, 16, 32, 64 slots.
    # A client replaying them itself sends the same requests.
    sent: list[list[bytes]] = []
    replayed = replay_warmup(str(exported.served), lambda inputs: sent.append(list(inputs.numpy())))
    assert replayed == len(sent) == len(exported.warmup)
    assert sent == [list(tf.make_ndarray(request.inputs["inputs"])) for request in exported.warmup]

    # Replayed when loaded (in a fresh process), the warmup requests of the shapes
    # needed had XLA compile each once, with the fewer slots they drain in; then
    # requests of every size, padded or not, one of them searched in two calls,
    # compiled nothing more.
    loaded, warm, served = exported.results["compilations"]
    assert exported.results["warmup_requests"] == len(exported.replayed) == 4
    replayed = [texts_of(exported.warmup[position]) for position in exported.replayed]
    needed = set.union(*(request_shapes(trained, buckets, texts) for texts in replayed))
    assert (warm - loaded, served) == (len(set.union(*map(drained, needed))), warm) == (7, warm)
    # A request's outputs are those of its rows in the longer requests: padded with
    # rows (3) or not (the others), one slot 32 wide or more slots 16 wide. (Against
    # the Decoder, which searches rows as they are: INPUTS above, all in the slow test.)
    results = exported.results["results"][1:]
    longest = results[-1]
    for result in results:
        assert result["outputs"] == longest["outputs"][: len(result["outputs"])]
        scores = longest["scores"][: len(result["scores"])]
        np.testing.assert_allclose(result["scores"], scores, atol=1e-5)


@pytest.mark.slow
def test_every_warmup_request_replayed_compiles_every_shape(
    exported: Exported, tmp_path: Path
) -> None:
    """All of the warmup replayed, as TF Serving does; then requests of rows of
    every width: nothing more compiled (4 minutes more on 2 busy cores of a Zen 5 EPYC)."""
    requests = sized_requests(long_rows=True)
    results = serve_in_subprocess(exported.served, requests, tmp_path / "xla_cache", None)
    loaded, warm, served = results["compilations"]
    assert results["warmup_requests"] == len(exported.warmup)
    assert (warm - loaded, served) == (len(exported.buckets.compiled_shapes()), warm)
    texts = [text for request in requests for text in request]
    outputs, scores = decode_apart(exported.trained, texts)
    assert [output for result in results["results"] for output in result["outputs"]] == outputs
    served_scores = [score for result in results["results"] for score in result["scores"]]
    np.testing.assert_allclose(served_scores, scores, atol=1e-4)


def test_a_padded_sampling_request_draws_the_samples_of_its_rows_alone(
    trained_dir: Path,
) -> None:
    trained = load_trained(str(trained_dir))
    hparams = DecodeHParams(sampling=True, samples_per_input=2, seed=3, temperature=2.0)
    search = SlotSearch(trained.model, hparams.resolve(trained.hparams).search, jit_compile=False)
    buckets = RequestBuckets.of(search)
    texts = ["three hundred forty two", "nineteen"]
    rows = [[*trained.vocabs["inputs"].encode(text), EOS_ID] for text in texts]
    ids = tf.ragged.constant(rows, tf.int32).to_tensor(PAD_ID)
    assert int(buckets.padded_rows(tf.constant(2))) == 3  # 4 slots, not 2, for 2 rows x 2.

    padded_ids, padded_scores = bucketed_search(search, buckets, ids)
    alone_ids, alone_scores = search.search_tensor(ids)
    positions = alone_ids.shape[2]
    np.testing.assert_array_equal(padded_ids[:, :, :positions], alone_ids)
    assert not np.any(padded_ids[:, :, positions:])
    np.testing.assert_array_equal(padded_scores, alone_scores)


def decode_apart(trained: TrainedModel, texts: list[str]) -> tuple[list[str], np.ndarray]:
    """decode_in_process of texts, those longer than 80 characters in a batch of their own."""
    outputs, scores = [""] * len(texts), np.zeros(len(texts))
    for long in (False, True):
        group = [index for index, text in enumerate(texts) if (len(text) > 80) == long]
        found, found_scores = decode_in_process(trained, [texts[index] for index in group])
        for index, output, score in zip(group, found, found_scores, strict=True):
            outputs[index], scores[index] = output, score
    return outputs, scores


def test_exporter_writes_a_new_version(
    trained_dir: Path, number_words_data: Path, tmp_path: Path
) -> None:
    export_dir = tmp_path / "export"
    start = int(time.time())
    result = run(
        "t2t-exporter",
        f"--output_dir={trained_dir}",
        f"--export_dir={export_dir}",
        "--decode_hparams=beam_size=2, alpha=0.5,extra_length=10",
        # What a tensor2tensor user passes: accepted, as it agrees with the training.
        f"--data_dir={number_words_data}",
        "--problem=translate_number_words_en_de",
        "--model=transformer",
        "--hparams_set=transformer_tiny",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    version_dir = Path(lines[0])
    assert version_dir.parent == export_dir
    assert start <= int(version_dir.name) <= time.time()
    assert (version_dir / "saved_model.pb").is_file()
    assert list(export_dir.iterdir()) == [version_dir]
    assert 'signatures["serving_default"]' in lines[1] and "tensorflow_text" in lines[1]
    assert not (trained_dir / "export").exists()
    # TensorFlow's own start-up notices are held back; our line saying why oneDNN is on stays.
    assert "absl::InitializeLog" not in result.stderr
    assert "oneDNN custom operations" not in result.stderr
    assert "TensorFlow's oneDNN kernels: " in result.stderr


def test_exporter_bad_input_exits_2(trained_dir: Path, tmp_path: Path) -> None:
    missing = run_in_process("t2t-exporter", f"--checkpoint_path={trained_dir / 'ckpt-999'}")
    assert_user_error(missing, "ckpt-999 does not exist")
    unknown = run_in_process(
        "t2t-exporter", f"--output_dir={trained_dir}", "--decode_hparams=beam_size=4,beam=2"
    )
    assert_user_error(unknown, "Unknown hparam 'beam'", "beam_size")
    file_only = run_in_process(
        "t2t-exporter", f"--output_dir={trained_dir}", "--decode_hparams=batch_size=8"
    )
    assert_user_error(file_only, "sets batch_size, which an exported model does not have")
    # tensor2tensor's flags are checked against what the model was trained with.
    for flag, fragments in [
        (f"--data_dir={tmp_path}", ["vocabulary vocab.translate_number_words_en_de.model"]),
        ("--problem=algorithmic_copy_decimal", ["not 'algorithmic_copy_decimal' (--problem)"]),
        ("--hparams_set=transformer_big", ["'transformer_tiny'", "'transformer_big'"]),
        ("--hparams=d_model=128", ["d_model=64", "cannot change"]),
    ]:
        result = run_in_process("t2t-exporter", f"--output_dir={trained_dir}", flag)
        assert_user_error(result, *fragments)
    assert not list(tmp_path.iterdir())


def test_export_refuses_file_decoding_settings() -> None:
    with pytest.raises(UserError, match="sets write_beam_scores, num_samples, which an exported"):
        DecodeHParams(num_samples=3, write_beam_scores=True).check_search_only()


def test_saved_model_gives_no_empty_output_for_a_non_empty_input(
    trained_dir: Path, tmp_path: Path
) -> None:
    trained = load_trained(str(trained_dir))
    make_eos_first(trained.model)
    inputs = ["three hundred forty two", "", "nineteen"]
    assert decode_in_process(trained, inputs, min_length=0, jit_compile=False)[0] == ["", "", ""]
    # Uncompiled: the length rule is the search's, with or without XLA.
    version_dir = export_translator(
        trained, str(tmp_path / "export"), search_settings(trained), jit_compile=False
    )
    # Loaded here: serving without the project is the first test's.
    translate = tf.saved_model.load(version_dir).signatures[SIGNATURE]
    served = translate(inputs=tf.constant(inputs))["outputs"].numpy()
    outputs = [text.decode("utf-8") for text in served]
    assert outputs[0] and outputs[2] and outputs[1] == ""


def search_settings(trained: TrainedModel) -> SearchSettings:
    """The search t2t-exporter exports by default: the hparams set's."""
    return DecodeHParams().resolve(trained.hparams).search
