"""A parser learns: a tiny Transformer trained briefly on parsing_synthetic parses held-out
sentences (bracket F1 by EVALB's rules, outputs with one XX per word), and the same
model with its encoder output zeroed, blind to the sentence, does not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import keras
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as framework_config

from t2t_keras import registry
from t2t_keras.data import ParsingProblem
from t2t_keras.data.trees import POS_PLACEHOLDER
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.metrics.evalb import score_lines, summarize
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.translator import Translator
from t2t_keras.training import make_strategy
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.trainer import train

F1_BAR = 90.0  # Percent, as EVALB reports it.
LEAF_MATCH_BAR = 0.95
# transformer_tiny, pre-norm, and given the encoding of the word its tree
# writes next (leaf_words), so it need not learn through attention which word
# each XX stands for; embeddings apart (a vocabulary per side); a short warmup
# to a high peak rate, then the paper's decay; no dropout or label smoothing
# (the data are noiseless); three length buckets, so the train step is traced
# three times, not twenty. 200 steps (about 20 s on 2 idle cores), seeds 1-3:
# F1 95.3-97.8, one XX per word in 100% (150 steps: F1 88). Under deterministic
# training (the same batches every run) seed 1 gives F1 96.4; without it the same
# seed ranged 77.8-95.8 between runs, and 77.8 failed a clean-clone make test.
HPARAMS = (
    "layer_norm_position=pre,shared_embeddings=false,leaf_words=true,"
    "learning_rate=0.5,warmup_steps=100,dropout=0.0,embedding_dropout=0.0,"
    "label_smoothing=0.0,max_length=64,min_length_bucket=16,length_bucket_step=2.0"
)
TRAIN_STEPS = 200
SEED = 1
TEST_SENTENCES = 200  # Of the test split's 300, to decode in a few seconds.


@dataclasses.dataclass
class Parses:
    """How well a model parsed held-out sentences."""

    f1: float  # Bracket F1 in percent, EVALB's rules, of the repaired trees.
    leaf_match: float  # Fraction of raw outputs with exactly one XX per word.


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[keras.Model, ParsingProblem, Path]:
    """(transformer_tiny trained TRAIN_STEPS on the problem, the problem, its data_dir)."""
    root = tmp_path_factory.mktemp("parsing_synthetic")
    problem = registry.problem("parsing_synthetic")
    assert isinstance(problem, ParsingProblem)
    problem.generate_data(str(root / "data"), str(root / "tmp"))
    config = TrainConfig(
        train_steps=TRAIN_STEPS,
        eval_steps=1,  # The end of training evaluates one dev batch, not the whole split.
        eval_every_steps=0,
        eval_bleu_examples=0,
        save_checkpoints_steps=TRAIN_STEPS,
        log_every_steps=100,
        random_seed=SEED,
        # The same batches in the same order every run: the same F1 every run.
        deterministic=True,
        xla="off",  # Compiling each bucket's attention costs more than 200 steps save.
    )
    result = train(
        problem,
        "transformer",
        transformer_tiny().override(HPARAMS),
        str(root / "data"),
        str(root / "train"),
        make_strategy("one_device"),
        config,
        hparams_set="transformer_tiny",
    )
    # Deterministic training turned op determinism on for the whole process; the
    # tests this worker runs next expect TensorFlow's default (no public call undoes it).
    framework_config.disable_op_determinism()
    return result.model, problem, root / "data"


def parse_test_split(model: keras.Model, problem: ParsingProblem, data_dir: Path) -> Parses:
    """Greedy parses of the test split, scored against its gold trees."""
    sources, gold = zip(*problem.text_examples(str(data_dir), "test", TEST_SENTENCES), strict=True)
    # Unconstrained, which would write one XX per word whatever the model: measure the model.
    settings = DecodeHParams(beam_size=1, batch_size=256, tree_constraint=False)
    translator = Translator(
        model, problem.feature_encoders(str(data_dir)), settings.resolve(model.hparams)
    )
    outputs = [translation.text for translation in translator.translate(sources)]
    leaf_matches = sum(
        output.split().count(POS_PLACEHOLDER) == len(source.split())
        for source, output in zip(sources, outputs, strict=True)
    )
    repaired, _ = ParsingProblem.output_trees(sources, outputs)
    everything, _ = summarize(score_lines(gold, repaired))
    return Parses(f1=everything.f1, leaf_match=leaf_matches / len(sources))


def test_a_tiny_transformer_learns_to_parse_held_out_sentences(
    trained: tuple[keras.Model, ParsingProblem, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, problem, data_dir = trained
    parses = parse_test_split(model, problem, data_dir)

    # The same weights, the encoder's output zeroed: the decoder sees the input's
    # padded length but not one word of it, so only the grammar's habits are left.
    encode = model.encode

    def blind_encode(inputs: tf.Tensor, training: bool = False) -> tuple[tf.Tensor, tf.Tensor]:
        memory, bias = encode(inputs, training=training)
        return tf.zeros_like(memory), bias

    monkeypatch.setattr(model, "encode", blind_encode)
    blind = parse_test_split(model, problem, data_dir)
    print(f"trained: {parses}; source-blind: {blind}")  # Shown with -s.
    assert parses.f1 >= F1_BAR and parses.leaf_match >= LEAF_MATCH_BAR, parses
    assert blind.f1 < F1_BAR - 20 and blind.leaf_match < LEAF_MATCH_BAR - 0.3, blind
