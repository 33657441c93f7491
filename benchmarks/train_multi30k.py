"""Real-data training: transformer_small on Multi30k En->De for a fixed wall-time budget.

    .venv/bin/python benchmarks/train_multi30k.py [--minutes=30] [--work_dir=DIR]

Copies Multi30k (train, val) into a tmp_dir as text2text_tmpdir expects,
generates the data (8k BPE vocabulary), trains with the paper's recipe on one
device for --minutes, then decodes the whole dev set (val, 1,014 sentences)
with beam 4 and prints sacreBLEU with the training throughput.
"""

from __future__ import annotations

import json
import os
import tempfile

from absl import app, flags
from multi30k import prepare_tmp_dir

from t2t_keras import registry
from t2t_keras.models import TransformerHParams
from t2t_keras.training import make_strategy
from t2t_keras.training.checkpoints import build_model, restore_model
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.evaluation import Evaluator
from t2t_keras.training.trainer import train

flags.DEFINE_float("minutes", 30.0, "Training budget in minutes.")
flags.DEFINE_string("hparams_set", "transformer_small", "The hparams set trained.")
flags.DEFINE_string("hparams", "", "Overrides of the hparams set.")
flags.DEFINE_string("work_dir", None, "Where data and checkpoints go; a temporary folder if unset.")
FLAGS = flags.FLAGS


def main(argv: list[str]) -> None:
    del argv
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="multi30k_")
    tmp_dir, data_dir = os.path.join(work_dir, "tmp"), os.path.join(work_dir, "data")
    output_dir = os.path.join(work_dir, "train")
    os.makedirs(tmp_dir, exist_ok=True)
    prepare_tmp_dir(tmp_dir)
    problem = registry.problem("text2text_tmpdir")
    problem.generate_data(data_dir, tmp_dir)
    hparams = registry.hparams(FLAGS.hparams_set).override(FLAGS.hparams)
    config = TrainConfig(
        train_steps=10**9,
        max_seconds=FLAGS.minutes * 60,
        eval_every_steps=500,
        eval_steps=0,
        eval_bleu_examples=200,
        save_checkpoints_steps=500,
        log_every_steps=100,
        random_seed=1,
    )
    result = train(
        problem, "transformer", hparams, data_dir, output_dir, make_strategy("one_device"), config
    )
    # The final checkpoint, read back as the decoder will.
    with open(os.path.join(output_dir, "hparams.json")) as file:
        trained = TransformerHParams.from_json(file.read())
    model = build_model("transformer", trained)
    restore_model(model, result.checkpoint)
    full_dev = Evaluator(model, problem, trained, data_dir, bleu_examples=10**6)
    summary = {
        "steps": result.step,
        "seconds": result.seconds,
        "tokens_per_second": result.tokens_per_second,
        "dev": full_dev(),
    }
    print(json.dumps(summary, indent=2, default=float))


if __name__ == "__main__":
    app.run(main)
