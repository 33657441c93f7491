"""Attention weights of a teacher-forced pass, and the heat maps and page drawn from them."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import keras
import matplotlib.image
import numpy as np
import pytest
import tensorflow as tf
from decoders import make_decoder

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.vocab import ByteVocabulary
from t2t_keras.errors import UserError
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.metrics.attention_plots import write_attention_plots
from t2t_keras.run.loading import load_trained
from t2t_keras.run.weights import build_model

INPUTS = np.array([[5, 6, 7, 8, 1, 0], [9, 4, 1, 0, 0, 0]], np.int32)
TARGETS = np.array([[3, 4, 5, 1], [6, 1, 0, 0]], np.int32)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KINDS = ("encoder", "decoder", "encoder_decoder")


@pytest.fixture(scope="module")
def model() -> keras.Model:
    """An untrained byte-vocabulary model with unequal stacks: 2 encoder, 3 decoder layers."""
    keras.utils.set_random_seed(3)
    hparams = transformer_tiny().override(
        f"vocab_size={ByteVocabulary().vocab_size},num_decoder_layers=3,d_model=16,"
        "d_ff=32,num_heads=2,d_k=8,d_v=8"
    )
    return build_model("transformer", hparams)


def test_weights_have_one_row_of_probabilities_per_query(model: keras.Model) -> None:
    weights = model.attention_weights(INPUTS, TARGETS)
    assert {kind: len(layers) for kind, layers in weights.items()} == {
        "encoder": 2,
        "decoder": 3,
        "encoder_decoder": 3,
    }
    shapes = {"encoder": (2, 2, 6, 6), "decoder": (2, 2, 4, 4), "encoder_decoder": (2, 2, 4, 6)}
    source_padding = (INPUTS == PAD_ID)[:, None, None, :]  # [B, 1, 1, S]
    future = np.triu(np.ones([4, 4], bool), k=1)  # Query t must not see keys after t.
    for kind, layers in weights.items():
        for layer in layers:
            assert layer.dtype == tf.float32 and tuple(layer.shape) == shapes[kind]
            layer = layer.numpy()
            np.testing.assert_allclose(layer.sum(-1), 1.0, rtol=1e-5)
            masked = future if kind == "decoder" else source_padding
            masked = np.broadcast_to(masked, layer.shape)
            assert np.all(layer[masked] < 1e-6) and np.all(layer[~masked] > 0)
    # Without its padding, the second sentence alone has the same weights.
    alone = model.attention_weights(INPUTS[1:, :3], TARGETS[1:, :2])
    for kind, layers in weights.items():
        for batched, single in zip(layers, alone[kind], strict=True):
            rows, columns = single.shape[2:]
            np.testing.assert_allclose(batched[1:, :, :rows, :columns], single, atol=1e-6)


def test_weights_are_those_of_the_normal_forward_pass(
    model: keras.Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every attention layer records its weights while `call` runs; the method returns them."""
    features = {"inputs": INPUTS, "targets": TARGETS}
    logits_before = model(features).numpy()
    weights = model.attention_weights(INPUTS, TARGETS)
    recorded = {kind: [] for kind in KINDS}

    def record(attention: keras.layers.Layer, kind: str) -> None:
        def call_recording_weights(*args, **kwargs):
            output, layer_weights = attention.call_with_weights(*args, **kwargs)
            recorded[kind].append(layer_weights.numpy())
            return output

        monkeypatch.setattr(attention, "call", call_recording_weights)

    for layer in model.encoder_layers:
        record(layer.self_attention, "encoder")
    for layer in model.decoder_layers:
        record(layer.self_attention, "decoder")
        record(layer.memory_attention, "encoder_decoder")
    logits_recorded = model(features).numpy()
    for kind in KINDS:
        assert len(recorded[kind]) == len(weights[kind])
        for seen, returned in zip(recorded[kind], weights[kind], strict=True):
            np.testing.assert_allclose(returned.numpy(), seen, atol=1e-6)
    # Asking for the weights changed nothing: the same logits before and after.
    np.testing.assert_array_equal(logits_recorded, logits_before)
    monkeypatch.undo()
    np.testing.assert_array_equal(model(features).numpy(), logits_before)


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_trained_model_plots_every_layer_of_every_sentence(
    trained_dir: Path, tmp_path: Path
) -> None:
    trained = load_trained(str(trained_dir), use_xla=False)
    source = trained.vocabs["inputs"]
    inputs = [[*source.encode(text), EOS_ID] for text in ("forty two", "one hundred and seven")]
    padded = np.zeros([2, max(map(len, inputs))], np.int32)
    for row, ids in zip(padded, inputs, strict=True):
        row[: len(ids)] = ids
    outputs, _ = make_decoder(trained.model, beam_size=1, jit_compile=False)(padded)
    examples = list(zip(inputs, outputs.numpy()[:, 0], strict=True))  # PAD after EOS is cut.
    plot_dir = tmp_path / "plots"

    written = write_attention_plots(trained.model, trained.vocabs, examples, str(plot_dir))

    layers = trained.hparams.num_encoder_layers
    expected = [
        f"sentence_{n}/{kind}_layer_{layer}.png"
        for n in (1, 2)
        for kind in KINDS
        for layer in range(1, layers + 1)
    ]
    assert len(written) == 2 * 3 * layers + 1
    assert written == [str(plot_dir / name) for name in [*expected, "index.html"]]
    assert sorted(str(p.relative_to(plot_dir)) for p in plot_dir.rglob("*.*")) == sorted(
        [*expected, "index.html"]
    )
    for name in expected:
        width, height = _png_size(plot_dir / name)
        assert width >= 550 and height > 100  # At least 5.5 inches wide, at 100 dpi or more.
        assert (plot_dir / name).stat().st_size > 10_000
    # Below the title, two layers' images differ only by their heat maps: they must differ.
    first, second = (matplotlib.image.imread(plot_dir / name) for name in expected[:2])
    assert first.shape == second.shape
    below_title = slice(first.shape[0] // 4, None)
    assert not np.array_equal(first[below_title], second[below_title])
    page = (plot_dir / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<img src="([^"]+)"', page) == expected
    assert re.findall(r'<a href="(sentence_[^"]+)"', page) == expected
    assert "forty two" in page and "one hundred and seven" in page
    # The German output of each sentence is on the page too.
    target = trained.vocabs["targets"]
    for _, output in examples:
        assert target.decode(output) in page


def test_labels_and_text_are_escaped_and_other_files_kept(
    model: keras.Model, tmp_path: Path
) -> None:
    vocab = ByteVocabulary()
    vocabs = {"inputs": vocab, "targets": vocab}
    examples = [([*vocab.encode("<b>&'\"x"), EOS_ID], [*vocab.encode("</q>"), EOS_ID, PAD_ID])]
    (tmp_path / "index.html").write_text("old page")
    (tmp_path / "notes.txt").write_text("mine")
    written = write_attention_plots(model, vocabs, examples, str(tmp_path))
    assert len(written) == 2 + 3 + 3 + 1  # Encoder, decoder, encoder-decoder layers; the page.
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "old page" not in page and (tmp_path / "notes.txt").read_text() == "mine"
    assert "&lt;b&gt;&amp;&#x27;&quot;x" in page and "&lt;/q&gt;" in page
    assert "<b>&" not in page and "</q>" not in page


def test_unwritable_plot_dir_and_empty_examples_are_user_errors(
    model: keras.Model, tmp_path: Path
) -> None:
    vocab = ByteVocabulary()
    vocabs = {"inputs": vocab, "targets": vocab}
    example = ([*vocab.encode("a"), EOS_ID], [*vocab.encode("b"), EOS_ID])
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(UserError, match="cannot write attention plots to .*a_file") as error:
        write_attention_plots(model, vocabs, [example], str(blocker / "plots"))
    assert "\n" not in str(error.value)
    with pytest.raises(UserError, match="example 2 has no output ids"):
        write_attention_plots(model, vocabs, [example, (example[0], [PAD_ID])], str(tmp_path))
