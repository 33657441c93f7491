"""Exported SavedModels translate strings like the in-process Decoder, without t2t_keras."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from binaries import assert_user_error, run, run_in_process
from decoders import make_decoder
from eos_first import make_eos_first

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.errors import UserError
from t2t_keras.export.saved_model import SIGNATURE, export_translator
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.search.settings import DecodeHParams, SearchSettings

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


def translate_in_subprocess(saved_model: Path, inputs: list[str]) -> dict:
    """The SavedModel's outputs, from a Python that refuses to import t2t_keras."""
    result = subprocess.run(
        [sys.executable, str(LOADER), str(saved_model)],
        input=json.dumps(inputs),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def decode_in_process(
    trained: TrainedModel, inputs: list[str], min_length: int = 1
) -> tuple[list[str], np.ndarray]:
    """Best translations and scores from Decoder, with the model's search settings."""
    rows = [[*trained.vocabs["inputs"].encode(text), EOS_ID] for text in inputs]
    width = max(len(row) for row in rows)
    batch = np.array([row + [PAD_ID] * (width - len(row)) for row in rows], np.int32)
    ids, scores = make_decoder(trained.model, min_length=min_length)(batch)
    outputs = [trained.vocabs["targets"].decode(best) for best in ids.numpy()[:, 0]]
    return outputs, scores.numpy()[:, 0]


def test_saved_model_translates_like_decoder_without_the_project(
    trained_dir: Path, tmp_path: Path
) -> None:
    training_copy = tmp_path / "train"
    shutil.copytree(trained_dir, training_copy)
    trained = load_trained(str(training_copy))
    assert len(trained.vocabs["inputs"].encode(LONG_LINE)) > trained.hparams.max_length
    export_dir = training_copy / "export"
    newest = int(time.time()) + 1000
    (export_dir / str(newest)).mkdir(parents=True)
    (export_dir / str(newest) / "kept").write_text("an existing version")

    version_dir = Path(export_translator(trained, str(export_dir), search_settings(trained)))

    # A new version past the newest; nothing else left behind, nothing replaced.
    assert version_dir == export_dir / str(newest + 1)
    assert sorted(path.name for path in export_dir.iterdir()) == [str(newest), str(newest + 1)]
    assert (export_dir / str(newest) / "kept").read_text() == "an existing version"
    # Self-contained: it serves from elsewhere once the training directory is gone.
    served = tmp_path / "served" / "1"
    served.parent.mkdir()
    shutil.move(version_dir, served)
    shutil.rmtree(training_copy)
    exported = translate_in_subprocess(served, INPUTS)

    expected_outputs, expected_scores = decode_in_process(trained, INPUTS)
    assert exported["outputs"] == expected_outputs
    np.testing.assert_allclose(exported["scores"], expected_scores, atol=1e-4)


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
    assert decode_in_process(trained, inputs, min_length=0)[0] == ["", "", ""]
    version_dir = export_translator(trained, str(tmp_path / "export"), search_settings(trained))
    # Loaded here: serving without the project is the first test's.
    translate = tf.saved_model.load(version_dir).signatures[SIGNATURE]
    served = translate(inputs=tf.constant(inputs))["outputs"].numpy()
    outputs = [text.decode("utf-8") for text in served]
    assert outputs == decode_in_process(trained, inputs)[0]
    assert outputs[0] and outputs[2] and outputs[1] == ""


def search_settings(trained: TrainedModel) -> SearchSettings:
    """The search t2t-exporter exports by default: the hparams set's."""
    return DecodeHParams().resolve(trained.hparams).search
