"""Loading a trained model from its training directory or a checkpoint path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from t2t_keras.errors import UserError
from t2t_keras.run.loading import find_checkpoint, load_trained
from t2t_keras.run.weights import model_variables


def test_loads_newest_checkpoint_with_vocabularies(trained_dir: Path) -> None:
    trained = load_trained(str(trained_dir))
    assert trained.checkpoint.endswith("ckpt-200")
    assert trained.hparams_set == "transformer_tiny"
    assert trained.vocabs["inputs"].decode(trained.vocabs["inputs"].encode("forty two")) == (
        "forty two"
    )


def test_checkpoint_path_alone_reads_run_files_beside_it(trained_dir: Path) -> None:
    older = load_trained(checkpoint_path=str(trained_dir / "ckpt-100"))
    newest = load_trained(str(trained_dir))
    assert older.checkpoint.endswith("ckpt-100")
    old, new = model_variables(older.model), model_variables(newest.model)
    assert any(not np.array_equal(old[path], new[path]) for path in new)


def test_missing_checkpoint_is_a_clear_error(trained_dir: Path) -> None:
    with pytest.raises(UserError, match="ckpt-999 does not exist"):
        find_checkpoint(str(trained_dir / "ckpt-999"))
    with pytest.raises(UserError, match="holds no checkpoint"):
        find_checkpoint(str(trained_dir.parent))


def test_other_hparams_set_is_refused_naming_both(trained_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="'transformer_tiny'.*'transformer_base'"):
        load_trained(str(trained_dir), hparams_set="transformer_base")
    # Run files of another training beside a checkpoint of this one.
    other = tmp_path / "other"
    shutil.copytree(trained_dir, other)
    run = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**run, "hparams_set": "transformer_small"}))
    with pytest.raises(UserError, match="'transformer_small'.*'transformer_tiny'"):
        load_trained(str(trained_dir), checkpoint_path=str(other / "ckpt-200"))


def test_weights_that_do_not_fit_name_the_hparams_file(trained_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "wider"
    shutil.copytree(trained_dir, other)
    hparams = json.loads((other / "hparams.json").read_text())
    (other / "hparams.json").write_text(json.dumps({**hparams, "d_model": 32, "d_ff": 64}))
    with pytest.raises(UserError, match="does not hold this model's weights.*hparams.json"):
        load_trained(str(other))


def test_checkpoint_of_a_larger_model_is_refused(trained_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "fewer_layers"
    shutil.copytree(trained_dir, other)
    hparams = json.loads((other / "hparams.json").read_text())
    assert hparams["num_encoder_layers"] > 1
    (other / "hparams.json").write_text(json.dumps({**hparams, "num_encoder_layers": 1}))
    with pytest.raises(UserError, match="weights this model lacks, e.g. transformer/encoder_1"):
        load_trained(str(other))
