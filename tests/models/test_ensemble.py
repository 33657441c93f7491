"""Ensembles: several models decoding as one, their log-probabilities averaged at each step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from binaries import assert_user_error, run_in_process

from t2t_keras.models.ensemble import Ensemble
from t2t_keras.run.loading import load_trained

LINES = "three hundred forty-two\nseven\nninety-nine thousand one\neleven\n"


def test_each_step_averages_the_members_log_probabilities(trained_dir: Path) -> None:
    early = load_trained(str(trained_dir), str(trained_dir / "ckpt-100"), use_xla=False).model
    late = load_trained(str(trained_dir), use_xla=False).model
    ensemble = Ensemble([early, late])
    inputs = tf.constant([[5, 9, 7, 1, 0], [6, 1, 0, 0, 0]])
    beams, length = 2, 6
    ids = tf.constant([0, 0, 0, 0])
    # Two positions, the second continuing other rows (a beam reordering).
    parents = [None, tf.constant([1, 0, 3, 3])]
    expected = []
    for model in (early, late):
        state, step = model.start_decoding(inputs, length, beams)
        found = []
        for index, parent in enumerate(parents):
            logits, state = step(state, index, ids + index, parent)
            found.append(tf.nn.log_softmax(logits).numpy())
        expected.append(found)
    state, step = ensemble.start_decoding(inputs, length, beams)
    for index, parent in enumerate(parents):
        log_probs, state = step(state, index, ids + index, parent)
        mean = (expected[0][index] + expected[1][index]) / 2
        np.testing.assert_allclose(log_probs.numpy(), mean, rtol=1e-5, atol=1e-5)
    assert np.abs(expected[0][1] - expected[1][1]).max() > 0.1  # The members differ.


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_model_with_itself_decodes_as_the_model_alone(
    trained_dir: Path, tmp_path: Path, beam_size: int
) -> None:
    source = tmp_path / "in.en"
    source.write_text(LINES)
    outputs = []
    for name, output_dir in (("alone", f"{trained_dir}"), ("pair", f"{trained_dir},{trained_dir}")):
        out = tmp_path / f"{name}.de"
        result = run_in_process(
            "t2t-decoder",
            f"--output_dir={output_dir}",
            f"--decode_from_file={source}",
            f"--decode_to_file={out}",
            f"--decode_hparams=beam_size={beam_size},write_beam_scores=true",
            "--xla=off",
        )
        assert result.returncode == 0, result.stderr[-3000:]
        outputs.append([line.split("\t") for line in out.read_text().splitlines()])
    alone, pair = outputs
    assert [text for text, _ in alone] == [text for text, _ in pair]
    np.testing.assert_allclose(
        [float(score) for _, score in pair], [float(score) for _, score in alone], rtol=1e-5
    )


def test_members_with_other_vocabularies_are_refused(
    trained_dir: Path, pre_norm_trained_dir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.en"
    source.write_text(LINES)
    result = run_in_process(
        "t2t-decoder",
        f"--output_dir={trained_dir},{pre_norm_trained_dir}",
        f"--decode_from_file={source}",
        "--xla=off",
    )
    assert_user_error(result, "must share their vocabularies", str(pre_norm_trained_dir))
    with_checkpoint = run_in_process(
        "t2t-decoder",
        f"--output_dir={trained_dir},{trained_dir}",
        f"--checkpoint_path={trained_dir}",
        f"--decode_from_file={source}",
    )
    assert_user_error(with_checkpoint, "names an ensemble", "drop --checkpoint_path")


def test_an_ensemble_where_one_model_is_taken_is_refused(trained_dir: Path, tmp_path: Path) -> None:
    pair = f"--output_dir={trained_dir},{trained_dir}"
    exported = run_in_process("t2t-exporter", pair, f"--export_dir={tmp_path / 'export'}")
    assert_user_error(exported, "names several models, an ensemble", "one training directory")
    plotted = run_in_process(
        "t2t-decoder", pair, "--decode_interactive=false", f"--attention_plot_dir={tmp_path}"
    )
    assert_user_error(plotted, "names an ensemble", "--attention_plot_dir")
    assert not (tmp_path / "export").exists()
