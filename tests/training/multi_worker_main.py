"""One worker of the multi-worker test: trains under TF_CONFIG, saves its final weights.

python multi_worker_main.py DATA_DIR OUTPUT_DIR WEIGHTS.npz STEPS

The same training as `trainer_processes.trainer_command` (under --deterministic),
through the library rather than t2t-trainer.
"""

from __future__ import annotations

import sys

import numpy as np

from t2t_keras import catalog, registry
from t2t_keras.training import make_strategy
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.trainer import train


def main(data_dir: str, output_dir: str, weights_path: str, steps: str) -> None:
    catalog.load()
    strategy = make_strategy("multi_worker_mirrored")
    result = train(
        registry.problem("translate_number_words_en_de"),
        "transformer",
        # Smaller than transformer_tiny: each worker traces a third less.
        registry.hparams("transformer_tiny").override(
            "num_encoder_layers=1,num_decoder_layers=1,d_model=32,d_ff=64,batch_size=1024"
        ),
        data_dir,
        output_dir,
        strategy,
        TrainConfig(
            train_steps=int(steps),
            save_checkpoints_steps=4,
            eval_steps=1,
            eval_every_steps=0,
            eval_bleu_examples=0,
            random_seed=1,
            deterministic=True,
            xla="off",
        ),
    )
    np.savez(weights_path, *result.model.get_weights())


if __name__ == "__main__":
    main(*sys.argv[1:])
