"""The training loop end to end on the embedded number-words problem."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from binaries import run_in_process

from t2t_keras import registry
from t2t_keras.errors import UserError
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.models import TransformerHParams
from t2t_keras.run.weights import build_model, restore_model
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.translator import Translator
from t2t_keras.training import make_strategy
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.evaluation import Evaluator
from t2t_keras.training.problem_data import with_vocab_size
from t2t_keras.training.trainer import train

# What transformer_tiny reaches on translate_number_words_en_de in STEPS steps
# (batch 2048 tokens, seed 1; the session's trained_dir): measured 0.957
# per-token dev accuracy and 0.89 of 200 dev numbers translated exactly; the
# bounds leave a margin.
PROBLEM = "translate_number_words_en_de"
STEPS = 200
MIN_ACCURACY = 0.90
MIN_EXACT_MATCH = 0.5


def _train(data: Path, output_dir: Path, strategy=None, hparams=None, **config):
    settings = {"eval_every_steps": 0, "eval_steps": 0, "random_seed": 1, **config}
    return train(
        registry.problem(settings.pop("problem", PROBLEM)),
        "transformer",
        hparams or transformer_tiny(),
        str(data),
        str(output_dir),
        strategy or make_strategy("one_device"),
        TrainConfig(**settings),
    )


def test_transformer_tiny_learns_number_words(
    number_words_data: Path, trained_dir: Path, tmp_path: Path
) -> None:
    """The session's model (STEPS steps of t2t-trainer's loop, seed 1) has learned the task;
    rerun on its output_dir, training averages its last checkpoints and trains nothing."""
    output_dir = tmp_path / "train"
    shutil.copytree(trained_dir, output_dir)
    result = _train(number_words_data, output_dir, train_steps=STEPS, average_checkpoints=2)
    assert result.step == STEPS
    assert result.checkpoint == str(output_dir / f"ckpt-{STEPS}")
    # output_dir is enough to rebuild the model: hparams, run, vocabulary, checkpoint.
    run = json.loads((output_dir / "run.json").read_text())
    assert run["problem"] == PROBLEM and run["model"] == "transformer"
    assert (output_dir / run["vocab"]["targets"]).is_file()
    assert list(output_dir.glob("events.out.tfevents.*"))
    hparams = TransformerHParams.from_json((output_dir / "hparams.json").read_text())
    model = build_model("transformer", hparams)
    restore_model(model, tf.train.latest_checkpoint(str(output_dir)))
    for ours, trained in zip(model.get_weights(), result.model.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, trained)
    evaluator = Evaluator(
        model, registry.problem(PROBLEM), str(number_words_data), hparams.batching(),
        DecodeHParams().resolve(hparams), bleu_examples=200,
    )  # fmt: skip
    metrics = evaluator()
    assert metrics["accuracy"] >= MIN_ACCURACY, metrics
    assert metrics["exact_match"] >= MIN_EXACT_MATCH, metrics
    # The last two checkpoints averaged beside them, as t2t-avg-checkpoints writes it.
    assert result.averaged_checkpoint == str(output_dir / "averaged" / f"ckpt-{STEPS}")
    averaged = json.loads((output_dir / "averaged" / "averaged.json").read_text())
    assert averaged["checkpoints"] == [
        str(output_dir / f"ckpt-{STEPS - 50}"),
        str(output_dir / f"ckpt-{STEPS}"),
    ]


def test_averaging_more_checkpoints_than_kept_is_refused() -> None:
    with pytest.raises(UserError, match="--average_checkpoints must be at most"):
        TrainConfig(keep_checkpoint_max=4, average_checkpoints=5)


def test_mirrored_training_then_other_shapes_are_refused(
    number_words_data: Path, tmp_path: Path
) -> None:
    # Resuming on two devices is tests/training/test_resume.py's, with real processes.
    mirrored = make_strategy("mirrored")
    assert mirrored.num_replicas_in_sync == 2  # The CPU split of tests/conftest.py.
    # --xla=full falls back to compiled attention across 2 local devices.
    # One bucket shape, so the attention cores compile once.
    one_shape = dataclasses.replace(
        transformer_tiny(), min_length_bucket=32, num_encoder_layers=1, num_decoder_layers=1
    )
    first = _train(
        number_words_data,
        tmp_path,
        mirrored,
        one_shape,
        train_steps=4,
        eval_bleu_examples=4,
        xla="full",
    )
    assert (first.first_step, first.step) == (0, 4)
    assert set(first.eval) == {"loss", "accuracy", "perplexity", "exact_match"}
    assert sorted(p.name for p in tmp_path.glob("ckpt-*.index")) == ["ckpt-4.index"]

    wider = dataclasses.replace(transformer_tiny(), d_model=32)
    with pytest.raises(UserError, match=r"d_model 64 -> 32"):
        _train(number_words_data, tmp_path, hparams=wider, train_steps=12)
    with pytest.raises(
        UserError, match="holds checkpoints of problem 'translate_number_words_en_de'"
    ):
        _train(number_words_data, tmp_path, train_steps=12, problem="algorithmic_copy_decimal")


def test_a_diverging_loss_stops_with_the_step_named(
    number_words_data: Path, tmp_path: Path
) -> None:
    exploding = dataclasses.replace(
        transformer_tiny(), learning_rate_schedule="constant", learning_rate=1e30
    )
    with pytest.raises(UserError, match=r"loss became (nan|inf) at step \d+.*ckpt-\d+"):
        _train(
            number_words_data, tmp_path, hparams=exploding, train_steps=50, save_checkpoints_steps=1
        )
    # Every checkpoint kept was written before the loss diverged, and loads.
    for index in tmp_path.glob("ckpt-*.index"):
        for name, _ in tf.train.list_variables(str(index)[: -len(".index")]):
            assert name


def test_missing_data_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="t2t-datagen --problem=translate_number_words_en_de"):
        _train(tmp_path / "nothing", tmp_path / "out", train_steps=1)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no train shards"):
        _train(tmp_path / "empty", tmp_path / "out", train_steps=1)


class _Sized:
    """A vocabulary as with_vocab_size sees it: its number of ids."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size


def _sizes(hparams: TransformerHParams, inputs: int, targets: int, trained=None) -> tuple:
    encoders = {"inputs": _Sized(inputs), "targets": _Sized(targets)}
    filled = with_vocab_size(hparams, encoders, trained or {})  # type: ignore[arg-type]
    return filled.vocab_size, filled.target_vocab_size


def test_each_side_gets_its_vocabulary_size_without_shared_embeddings() -> None:
    shared, unshared = TransformerHParams(), TransformerHParams(shared_embeddings=False)
    assert _sizes(shared, 16000, 70) == (16000, 0)  # One matrix: the larger.
    assert _sizes(shared, 70, 16000) == (16000, 0)
    assert _sizes(unshared, 16000, 70) == (16000, 70)
    assert _sizes(unshared, 70, 16000) == (70, 16000)
    assert _sizes(unshared, 300, 300) == (300, 0)
    # Sizes the user set are kept; a target size alone takes the inputs' for vocab_size.
    assert _sizes(dataclasses.replace(unshared, vocab_size=20000), 16000, 70) == (20000, 0)
    assert _sizes(dataclasses.replace(unshared, target_vocab_size=100), 16000, 70) == (16000, 100)
    # Checkpoints from before target_vocab_size padded the targets to the larger size.
    before = {"vocab_size": 16000, "shared_embeddings": False}
    assert _sizes(unshared, 16000, 70, before) == (16000, 0)
    assert _sizes(unshared, 16000, 70, {**before, "target_vocab_size": 70}) == (16000, 70)


def test_sizes_smaller_than_a_vocabulary_are_refused_naming_both() -> None:
    unshared = TransformerHParams(shared_embeddings=False)
    small_source = dataclasses.replace(unshared, vocab_size=1000)
    with pytest.raises(UserError, match="vocab_size=1000 is smaller than the problem's inputs vo"):
        _sizes(small_source, 16000, 70)
    small_target = dataclasses.replace(unshared, vocab_size=16000, target_vocab_size=50)
    with pytest.raises(
        UserError, match="target_vocab_size=50 is smaller than the problem's targets vocabulary"
    ):
        _sizes(small_target, 16000, 70)
    with pytest.raises(UserError, match="vocab_size=1000 is smaller .* targets vocabulary of 2000"):
        _sizes(TransformerHParams(vocab_size=1000), 500, 2000)


def test_two_vocabularies_of_different_sizes_train_load_decode_and_resume(
    pre_norm_trained_dir: Path, tmp_path: Path
) -> None:
    from decoders import make_decoder
    from shared_fixtures import NumberWordsTwoVocabularies

    from t2t_keras.run.loading import load_trained

    sizes = json.loads((pre_norm_trained_dir / "run.json").read_text())["vocab_sizes"]
    assert sizes["inputs"] != sizes["targets"]
    trained = load_trained(str(pre_norm_trained_dir), use_xla=False)
    hparams = trained.hparams
    assert isinstance(hparams, TransformerHParams)
    assert (hparams.vocab_size, hparams.target_vocab_size) == (sizes["inputs"], sizes["targets"])
    model = trained.model
    assert model.source_embedding.embeddings.shape[0] == sizes["inputs"]
    assert model.softmax_weights.embeddings.shape[0] == sizes["targets"]
    inputs = tf.constant([[*trained.vocabs["inputs"].encode("three hundred and twelve"), 1]])
    for beam_size in (1, 4):
        ids, _ = make_decoder(model, beam_size=beam_size, jit_compile=False)(inputs)
        assert int(tf.reduce_max(ids)) < sizes["targets"]
        assert trained.vocabs["targets"].decode(ids.numpy().reshape(-1).tolist())

    output_dir = Path(shutil.copytree(pre_norm_trained_dir, tmp_path / "train"))
    config = TrainConfig(train_steps=81, eval_steps=0, eval_every_steps=0, eval_bleu_examples=0)
    same = dataclasses.replace(hparams, vocab_size=0, target_vocab_size=0)
    data_dir = str(pre_norm_trained_dir.parent / "data")
    strategy = make_strategy("one_device")
    problem = NumberWordsTwoVocabularies()
    result = train(problem, "transformer", same, data_dir, str(output_dir), strategy, config)
    assert result.step == 81


def test_dev_bleu_compiles_what_t2t_decoder_compiles(
    number_words_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--xla=attention means one thing: the trainer's dev BLEU builds its search as
    t2t-decoder --xla=attention does (attention cores compiled, the search around them not)."""
    built: list[Translator] = []
    build_translator = Translator.__init__

    def recorded(self: Translator, *args: Any, **kwargs: Any) -> None:
        build_translator(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(Translator, "__init__", recorded)
    small = dataclasses.replace(transformer_tiny(), num_encoder_layers=1, num_decoder_layers=1)
    output_dir = tmp_path / "train"
    _train(
        number_words_data, output_dir, hparams=small, train_steps=1, eval_steps=1, eval_bleu_examples=2,
        xla="attention",
    )  # fmt: skip
    sources = tmp_path / "in.en"
    sources.write_text("forty two\n", encoding="utf-8")
    decoded = run_in_process(
        "t2t-decoder", f"--output_dir={output_dir}", f"--decode_from_file={sources}",
        "--xla=attention",
    )  # fmt: skip
    assert decoded.returncode == 0, decoded.stderr
    evaluation, decoder = built
    compiled = [(t.search.model.use_xla, t.search.jit_compile) for t in (evaluation, decoder)]
    assert compiled == [(True, False), (True, False)]
