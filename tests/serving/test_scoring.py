"""Scoring given pairs: minus the training loss, input order, blanks, lengths, parsers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from t2t_keras import registry
from t2t_keras.data.ids import EOS_ID, padded_ids
from t2t_keras.data.trees import TreeError
from t2t_keras.data.vocab import ByteVocabulary
from t2t_keras.errors import UserError
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.problems.number_words import english, german
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.run.weights import build_model
from t2t_keras.serving.scoring import PairScore, Scorer, model_texts, read_pairs, score_line
from t2t_keras.training.loss import smoothed_cross_entropy_sum

NUMBERS = [42, 7, 312_005, 999, 18, 61_000, 5, 230, 12, 800_001, 3_456_789]


@pytest.fixture(scope="module")
def trained(trained_dir: Path) -> TrainedModel:
    return load_trained(str(trained_dir), use_xla=False)


def scorer(trained: TrainedModel, batch_size: int = 2048) -> Scorer:
    return Scorer(trained.model, trained.vocabs, batch_size, jit_compile=False)


def training_loss(trained: TrainedModel, pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """(loss summed over target tokens, target tokens) of one padded batch of the pairs,
    encoded as t2t-datagen encodes them and run as the train step runs it, without dropout."""
    rows = {
        side: padded_ids([[*trained.vocabs[side].encode(text), EOS_ID] for text in texts])
        for side, texts in zip(("inputs", "targets"), zip(*pairs, strict=True), strict=True)
    }
    logits = trained.model(rows, training=False)
    loss_sum, tokens = smoothed_cross_entropy_sum(logits, rows["targets"], label_smoothing=0.0)
    return float(loss_sum), float(tokens)


def test_scores_are_minus_the_training_loss_without_label_smoothing(
    trained: TrainedModel,
) -> None:
    pairs = [(english(n), german(n)) for n in NUMBERS]
    pairs += [(english(7), german(800_001)), ("one one one", "sieben")]  # Unlikely ones too.
    scores = scorer(trained, batch_size=40).score(*zip(*pairs, strict=True))
    loss_sum, tokens = training_loss(trained, pairs)
    assert sum(score.tokens for score in scores) == tokens
    total = sum(score.total for score in scores)
    assert -total / tokens == pytest.approx(loss_sum / tokens, abs=1e-5)
    for pair, score in zip(pairs, scores, strict=True):
        loss_sum, tokens = training_loss(trained, [pair])
        assert score.tokens == tokens == len(trained.vocabs["targets"].encode(pair[1])) + 1
        assert -score.total == pytest.approx(loss_sum, abs=1e-5 * tokens)
        assert all(value < 0.0 for value in score.token_log_probs)


def test_a_parser_reading_its_leaves_scores_minus_its_training_loss() -> None:
    vocab = ByteVocabulary()
    hparams = dataclasses.replace(
        transformer_tiny(),
        num_encoder_layers=1,
        num_decoder_layers=1,
        vocab_size=vocab.vocab_size,
        leaf_positions=True,
        leaf_words=True,
        leaf_id=vocab.encode("X")[0],
    )
    model = build_model("transformer", hparams, use_xla=False)  # Random weights do.
    parser = TrainedModel(model, hparams, {"inputs": vocab, "targets": vocab}, {}, "", "")
    pairs = [("a b", "(S X X )S"), ("c", "(NP X )NP"), ("d e f", "(S X (VP X X )VP )S")]
    scores = scorer(parser, batch_size=64).score(*zip(*pairs, strict=True))
    loss_sum, tokens = training_loss(parser, pairs)
    assert sum(score.tokens for score in scores) == tokens
    assert -sum(score.total for score in scores) == pytest.approx(loss_sum, abs=1e-5 * tokens)


def test_a_file_scores_as_each_pair_alone_in_input_order(trained: TrainedModel) -> None:
    # Lengths from 2 to ~30 tokens through 24-token batches: several batches and widths.
    sources = [english(n) for n in NUMBERS] + [" ".join(english(n) for n in NUMBERS[:4])]
    targets = [german(n) for n in NUMBERS] + [" ".join(german(n) for n in NUMBERS[:4])]
    small = scorer(trained, batch_size=24)
    source_rows, target_rows = (
        small.encode(sources, "inputs")[0],
        small.encode(targets, "targets")[0],
    )
    batches = list(small.batches(source_rows, target_rows, list(range(len(sources)))))
    assert sorted(i for batch in batches for i in batch) == list(range(len(sources)))
    lengths = [max(len(s), len(t)) for s, t in zip(source_rows, target_rows, strict=True)]
    assert len(batches) > 3 and len({small.width(lengths[batch[0]]) for batch in batches}) > 1
    together = small.score(sources, targets)
    one_by_one = scorer(trained)
    for source, target, score in zip(sources, targets, together, strict=True):
        (alone,) = one_by_one.score([source], [target])
        assert score is not None and alone is not None
        np.testing.assert_allclose(score.token_log_probs, alone.token_log_probs, atol=1e-5)


def test_the_reference_scores_higher_than_its_words_shuffled(trained: TrainedModel) -> None:
    numbers = [n for n in NUMBERS if len(german(n).split()) > 1]
    targets = [german(n) for n in numbers] + [" ".join(german(n).split()[::-1]) for n in numbers]
    scores = scorer(trained).score([english(n) for n in numbers] * 2, targets)
    for right, shuffled in zip(scores[: len(numbers)], scores[len(numbers) :], strict=True):
        assert right.total > shuffled.total, targets


def test_blank_sides_are_not_scored_and_long_sources_are_cut(
    trained: TrainedModel, caplog: pytest.LogCaptureFixture
) -> None:
    sources = ["", english(42), "  ", english(7), "\ufeff", " ".join(["one"] * 400)]
    targets = [german(1), "", german(5), german(7), german(8), german(1)]
    scores = scorer(trained).score(sources, targets)
    assert [score is None for score in scores] == [True, True, True, False, True, False]
    assert "1 source(s) longer than max_length=256 tokens were cut" in caplog.text
    assert "4 pair(s) with a blank side" in caplog.text
    assert [score_line(score) for score in scores[:3]] == ["", "", ""]


def test_a_target_longer_than_max_length_is_refused_naming_its_line(
    trained: TrainedModel,
) -> None:
    targets = [german(7), " ".join(["eins"] * 400), " ".join(["zwei"] * 300)]
    with pytest.raises(
        UserError,
        match=r"TGT, line 2: the target is 401 tokens .* max_length of 256; so are 1 other",
    ):
        scorer(trained).score([english(7)] * 3, targets, target_name="TGT")


def test_the_line_holds_total_tokens_per_token_and_the_mean_if_asked() -> None:
    score = PairScore([-0.5, -1.25, -0.25])
    assert score.line() == "-2.000000\t3\t-0.500000 -1.250000 -0.250000"
    assert score.line(normalize=True).split("\t")[3] == f"{-2.0 / 3:.6f}"
    assert score_line(None, normalize=True) == ""


def test_mismatched_files_name_both_counts(tmp_path: Path) -> None:
    (tmp_path / "src").write_text("a\nb\nc\n", encoding="utf-8")
    (tmp_path / "tgt").write_text("x\ny\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"src has 3 lines but --target_file .*tgt has 2"):
        read_pairs(str(tmp_path / "src"), str(tmp_path / "tgt"))
    with pytest.raises(UserError, match=r"--source_file .*missing cannot be read"):
        read_pairs(str(tmp_path / "missing"), str(tmp_path / "tgt"))


def test_a_parser_scores_gold_trees_as_their_linearization() -> None:
    problem = registry.problem("parsing_english_wsj16k")
    gold = "(TOP (S (NP-SBJ (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (-NONE- *)) (NP (NN chief))) (. .)))"
    sources, targets = model_texts(problem, ["Mr. Vinken is ( chief ) ."], [gold], "T")
    # Empty elements and function tags go, tags become XX: the training target.
    assert targets == ["(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S"]
    assert sources == ["Mr. Vinken is -LRB- chief -RRB- ."]
    assert problem.model_target("") == ""
    with pytest.raises(TreeError):
        problem.model_target("(S (NP the cat")
    with pytest.raises(UserError, match=r"T, line 2: unbalanced brackets.*one PTB tree a line"):
        model_texts(problem, ["a", "b"], ["(S (X a))", "(S (NP the cat"], "T")
    reverse = registry.problem("parsing_english_wsj16k_rev")
    assert reverse.model_target("f(x) )") == "f-LRB-x-RRB- -RRB-"
    assert model_texts(None, ["a"], ["b"], "T") == (["a"], ["b"])
