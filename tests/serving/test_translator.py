"""Translating lists of sentences: order, blanks, truncation, batching, settings."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from decoders import make_decoder
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras.data.ids import EOS_ID
from t2t_keras.errors import UserError
from t2t_keras.problems.number_words import english, german
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.file_decoding import decode_interactive
from t2t_keras.serving.translator import (
    Translation,
    Translator,
    encode_texts,
    readable_texts,
)

NUMBERS = [42, 7, 312_005, 999, 18, 61_000, 5, 230]
# Characters a vocabulary drops, a surrogate, unseen letters, odd spaces.
HOSTILE = [
    "\ufeff",
    "\x00\x07",
    "\ud800 one",
    "snow ☃ man",
    " \u3000 two\t",
    "\uff26\uff35\uff2c\uff2c",
]


@pytest.fixture(scope="module")
def trained(trained_dir: Path) -> TrainedModel:
    return load_trained(str(trained_dir))


def test_settings_default_to_the_hparams_set(trained: TrainedModel) -> None:
    settings = DecodeHParams().override("batch_size=3").resolve(trained.hparams)
    search = settings.search
    assert (search.beam_size, search.alpha, search.extra_length) == (4, 0.6, 50)
    assert settings.batch_size == 3
    assert DecodeHParams().override("beam_size=2").resolve(trained.hparams).search.beam_size == 2
    with pytest.raises(UserError, match="beam_size must be at least 1"):
        DecodeHParams().override("beam_size=0")
    with pytest.raises(UserError, match="Unknown hparam 'beam'"):
        DecodeHParams().override("beam=2")
    translator = Translator(trained.model, trained.vocabs, settings)
    assert translator.settings is settings and translator.search.settings is search


def test_outputs_in_input_order_with_blank_lines_kept(trained: TrainedModel) -> None:
    sources = [english(n) for n in NUMBERS]
    sources[3:3] = ["", "   "]
    translator = Translator(
        trained.model, trained.vocabs, DecodeHParams(batch_size=3).resolve(trained.hparams)
    )
    translations = translator.translate(sources)
    assert len(translations) == len(sources)
    assert translations[3].texts == translations[4].texts == []
    texts = [t.text for i, t in enumerate(translations) if i not in (3, 4)]
    # Sorting into batches must not shuffle outputs: most are right, in order.
    right = sum(text == german(n) for text, n in zip(texts, NUMBERS, strict=True))
    assert right >= len(NUMBERS) // 2, texts


def test_batched_outputs_equal_the_decoder_one_by_one(trained: TrainedModel) -> None:
    sources = [english(n) for n in NUMBERS]
    # 8 sentences through 3 slots, each taking the next as its sentence finishes.
    translator = Translator(
        trained.model, trained.vocabs, DecodeHParams(batch_size=3).resolve(trained.hparams)
    )
    reports: list[tuple[int, int]] = []
    batched = translator.translate(sources, lambda done, total, _: reports.append((done, total)))
    assert reports[-1] == (8, 8)
    decoder = make_decoder(trained.model, jit_compile=False)  # One trace, no compilations.
    for source, translation in zip(sources, batched, strict=True):
        row = [*trained.vocabs["inputs"].encode(source), EOS_ID]
        ids, scores = decoder(np.array([row], np.int32))
        assert translation.text == trained.vocabs["targets"].decode(ids[0, 0].numpy())
        assert translation.scores[0] == pytest.approx(float(scores[0, 0]), abs=1e-4)
        assert translation.ids[0][-1] == EOS_ID


def test_long_inputs_are_cut_to_max_length_and_counted(
    trained: TrainedModel, caplog: pytest.LogCaptureFixture
) -> None:
    translator = Translator(
        trained.model, trained.vocabs, DecodeHParams(beam_size=1).resolve(trained.hparams)
    )
    long = " ".join(["one"] * (2 * trained.hparams.max_length))
    rows, truncated = translator.encode([long, "two", long])
    assert truncated == 2
    assert len(rows[0]) == trained.hparams.max_length and rows[0][-1] == EOS_ID
    with caplog.at_level("WARNING"):
        (translation,) = translator.translate([long])
    assert "1 input(s) longer than max_length=" in caplog.text
    assert translation.texts


@ci_budget(20, deadline=None)
@example(words=[""])  # Nothing to encode: once made a float tensor of no strings.
@given(
    st.lists(
        st.text(max_size=12) | st.sampled_from([english(n) for n in NUMBERS] + HOSTILE),
        min_size=1,
        max_size=6,
    )
)
def test_python_encoding_gives_the_graph_rows(trained: TrainedModel, words: list[str]) -> None:
    """t2t-decoder encodes in Python, a SavedModel in the graph: the same rows and cuts."""
    translator = Translator(
        trained.model, trained.vocabs, DecodeHParams(beam_size=1).resolve(trained.hparams)
    )
    max_length = 6  # Below most of these sentences' lengths: cut rows are checked too.
    translator.max_length = max_length
    sentences = readable_texts([" ".join(words), *words])
    rows, truncated = translator.encode(sentences)
    kept = [i for i, sentence in enumerate(sentences) if sentence.strip()]
    graph_rows, cut = encode_texts(
        trained.vocabs["inputs"], tf.constant([sentences[i] for i in kept], tf.string), max_length
    )
    assert [rows[i] for i in kept] == [row if len(row) > 1 else [] for row in graph_rows.to_list()]
    assert truncated == int(tf.math.count_nonzero(cut))
    assert all(not rows[i] for i in range(len(sentences)) if i not in kept)


def test_return_beams_gives_every_hypothesis_best_first(trained: TrainedModel) -> None:
    settings = DecodeHParams(beam_size=3, return_beams=True).resolve(trained.hparams)
    (translation,) = Translator(trained.model, trained.vocabs, settings).translate(["forty"])
    assert len(translation.texts) == 3
    assert translation.scores == sorted(translation.scores, reverse=True)
    line = translation.line(write_scores=True).split("\t")
    assert line[:3] == translation.texts and len(line) == 6


def test_output_line_is_one_line_whatever_the_text() -> None:
    translation = Translation(["a\nb\u2028c  d"], [-0.5], [[5, EOS_ID]])
    assert translation.line(write_scores=False) == "a b c d"
    assert translation.line(write_scores=True) == "a b c d\t-0.500000"
    assert Translation([], [], []).line(write_scores=True) == "\t-inf"
    # With return_beams every line has beam_size outputs, then beam_size scores.
    assert Translation(["a"], [-0.5], [[5, EOS_ID]]).line(True, columns=3) == (
        "a\t\t\t-0.500000\t-inf\t-inf"
    )


def test_one_compiled_search_serves_a_whole_file(trained: TrainedModel) -> None:
    """Sentences share slots, whatever their lengths: one shape (slots x width) a file."""
    sources = [english(n) for n in [*NUMBERS, 1, 2_000_000, 77]]
    translator = Translator(
        trained.model,
        trained.vocabs,
        DecodeHParams(batch_size=2, beam_size=1).resolve(trained.hparams),
    )
    first = translator.translate(sources)
    assert translator.search.compilations() == 1
    again = translator.translate(sources[::-1])
    assert [t.texts for t in again] == [t.texts for t in first[::-1]]
    assert translator.search.compilations() == 1
    assert translator.search.tracings() == 1  # One graph for each shape, traced once.
    translator.translate(["forty two"])  # One sentence: a slot of its own, another shape.
    assert translator.search.compilations() == 2 and translator.search.tracings() == 2


def test_sampling_gives_each_line_its_own_samples_best_first(trained: TrainedModel) -> None:
    """samples_per_input samples a line, best first, a column each; a line's samples
    depend on its number, not on the other lines."""
    given = "sampling=true,samples_per_input=3,seed=7,temperature=1.5,batch_size=3"
    settings = DecodeHParams().override(given).resolve(trained.hparams)
    translator = Translator(trained.model, trained.vocabs, settings)
    sources = [english(n) for n in NUMBERS]
    first = translator.translate(sources)
    others = [english(n + 1) for n in NUMBERS]
    others[2] = sources[2]
    again = translator.translate(others)
    assert again[2].texts == first[2].texts and again[2].scores == first[2].scores
    for translation in first:
        assert len(translation.texts) == 3
        assert translation.scores == sorted(translation.scores, reverse=True)
        assert len(translation.line(write_scores=True, columns=3).split("\t")) == 6
    assert sum(len(set(t.texts)) > 1 for t in first) >= len(NUMBERS) // 2
    # Typed lines are numbered as a file's: each equals its file line's samples, and a
    # line typed again draws anew.
    typed = [sources[0], sources[1], sources[0]]
    out = io.StringIO()
    decode_interactive(translator, io.BytesIO("".join(f"{t}\n" for t in typed).encode()), out)
    as_file = translator.translate(typed)
    assert out.getvalue().splitlines() == [t.line(False, 3) for t in as_file]
    assert as_file[0].texts == first[0].texts and as_file[2].texts != as_file[0].texts
