"""The flags of the binaries that use a trained model (t2t-decoder, t2t-exporter), and loading it.

tensor2tensor's decoder and exporter took the trainer's flags: --problem,
--model, --hparams_set, --hparams and --data_dir described the model to
build. Here the training directory describes it (run.json, hparams.json,
the vocabularies), so these flags are checks: a value that disagrees with
what the model was trained with is refused, naming both.
"""

from __future__ import annotations

import filecmp
import os
from typing import TYPE_CHECKING

from absl import flags

from t2t_keras.bin import common
from t2t_keras.errors import UserError

if TYPE_CHECKING:
    from t2t_keras.decoding.decode_hparams import DecodeHParams
    from t2t_keras.run.loading import TrainedModel

FLAGS = flags.FLAGS


def define_flags(data_dir_help: str) -> None:
    """The flags naming the model and what it must have been trained with; --xla."""
    common.define_registry_flags()
    flags.DEFINE_string(
        "output_dir", None, "Training directory t2t-trainer wrote (checkpoints and run files)."
    )
    flags.DEFINE_string(
        "checkpoint_path",
        None,
        "A checkpoint prefix (TRAIN/ckpt-1000) or a directory (its newest); default: the "
        "newest in --output_dir. Without --output_dir, the run files beside it are used.",
    )
    flags.DEFINE_string("problem", None, "If given, refuse a model trained on another problem.")
    flags.DEFINE_string("model", None, "If given, refuse a model of another registered model.")
    flags.DEFINE_string(
        "hparams_set", None, "If given, refuse a model trained with another hparams set."
    )
    flags.DEFINE_string(
        "hparams",
        "",
        "If given (name=value,...), refuse a model trained with other values of these hparams "
        "(hparams.json holds them; search settings go in --decode_hparams).",
    )
    flags.DEFINE_string("data_dir", None, data_dir_help)
    common.define_xla_flag("full")


def decode_settings() -> DecodeHParams:
    """--decode_hparams, parsed; unset search settings are filled in by `load`'s caller."""
    from t2t_keras.decoding.decode_hparams import DecodeHParams

    return DecodeHParams().override(FLAGS.decode_hparams)


def load() -> TrainedModel:
    """The model --output_dir / --checkpoint_path name, checked against the flags above.

    Raises:
      UserError: no model there, or one that --problem, --model,
        --hparams_set, --hparams or --data_dir do not describe.
    """
    from t2t_keras.run.loading import load_trained

    use_xla, _ = common.xla_arguments()
    trained = load_trained(FLAGS.output_dir, FLAGS.checkpoint_path, FLAGS.hparams_set, use_xla)
    where = os.path.join(trained.run_dir, "run.json")
    for name in ("problem", "model"):
        given, recorded = FLAGS[name].value, trained.run.get(name)
        if given and given != recorded:
            raise UserError(
                f"the model was trained on {name} {recorded!r} ({where}), not {given!r} "
                f"(--{name}); drop --{name} or give a model of that {name}."
            )
    _check_hparams(trained)
    if FLAGS.data_dir:
        check_data_dir(trained, FLAGS.data_dir)
    return trained


def _check_hparams(trained: TrainedModel) -> None:
    """Refuses --hparams values other than those the model was trained with."""
    trained_values = trained.hparams.values()
    given = trained.hparams.override(FLAGS.hparams).values()
    changed = [name for name, value in given.items() if value != trained_values[name]]
    if changed:
        listing = ", ".join(f"{name}={trained_values[name]!r}" for name in changed)
        raise UserError(
            f"--hparams={FLAGS.hparams} differs from what the model was trained with "
            f"({listing}, in {trained.run_dir}/hparams.json); a trained model's hparams "
            "cannot change. Drop --hparams; search settings go in --decode_hparams."
        )


def check_data_dir(trained: TrainedModel, data_dir: str) -> None:
    """Refuses a --data_dir that lacks the vocabularies the model was trained with."""
    directory = os.path.expanduser(data_dir)
    if not os.path.isdir(directory):
        raise UserError(f"--data_dir {data_dir} is not a directory; give the problem's data_dir.")
    for name in sorted(set(trained.run.get("vocab", {}).values()) - {"bytes"}):
        given = os.path.join(directory, name)
        if not os.path.isfile(given) or not filecmp.cmp(
            given, os.path.join(trained.run_dir, name), shallow=False
        ):
            state = "differs from" if os.path.isfile(given) else "is missing, unlike"
            raise UserError(
                f"--data_dir {data_dir}: the vocabulary {name} {state} the one the model was "
                f"trained with ({trained.run_dir}/{name}); give the data_dir of the training, "
                "or drop --data_dir."
            )
