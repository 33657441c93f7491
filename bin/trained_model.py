"""The flags of the binaries that use a trained model (t2t-decoder, t2t-exporter), and loading it.

tensor2tensor's decoder and exporter took the trainer's flags: --problem,
--model, --hparams_set, --hparams and --data_dir described the model to
build. Here the training directory describes it (run.json, hparams.json,
the vocabularies), or a CTranslate2 export's t2t_keras.json, which holds
their contents; so these flags are checks: a value that disagrees with
what the model was trained with is refused, naming both.
"""

from __future__ import annotations

import filecmp
import json
import os
from typing import TYPE_CHECKING, Any

from absl import flags

from t2t_keras import registry
from t2t_keras.bin import flag_groups
from t2t_keras.errors import UserError

if TYPE_CHECKING:
    from t2t_keras.data import Problem
    from t2t_keras.data.tree_tokens import TreeTokens
    from t2t_keras.data.vocab import Vocabulary
    from t2t_keras.hparam import HParams
    from t2t_keras.run.loading import TrainedModel
    from t2t_keras.search.settings import DecodeHParams

FLAGS = flags.FLAGS


def define_flags(data_dir_help: str) -> None:
    """The flags naming the model and what it must have been trained with; --xla."""
    flag_groups.define_registry_flags()
    flags.DEFINE_string(
        "output_dir",
        None,
        "Training directory t2t-trainer wrote (checkpoints and run files); several, "
        "comma-separated (A,B or A/averaged,B/averaged), decode as an ensemble: the models' "
        "log-probabilities averaged at each step (they must share their vocabularies).",
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
    flag_groups.define_xla_flag("full")


def decode_settings() -> DecodeHParams:
    """--decode_hparams, parsed; the caller resolves it once (`DecodeHParams.resolve`)."""
    from t2t_keras.search.settings import DecodeHParams

    return DecodeHParams().override(FLAGS.decode_hparams)


def registered_problem(run: dict[str, Any]) -> Problem | None:
    """The problem a model was trained on (run.json's), or None if it is not registered."""
    if run["problem"].removesuffix("_rev") not in registry.list_problems():
        return None
    return registry.problem(run["problem"])


def tree_tokens(run: dict[str, Any], vocabs: dict[str, Vocabulary]) -> TreeTokens | None:
    """What constrains the search to trees: a parsing problem's tree symbols; else None."""
    problem = registered_problem(run)
    return problem.tree_constraint(vocabs) if problem is not None else None


def load(ensemble: bool = False) -> TrainedModel:
    """The model --output_dir / --checkpoint_path name, checked against the flags above;
    with `ensemble`, several (--output_dir=A,B,...) decode as one.

    Raises:
      UserError: no model there, or one that --problem, --model,
        --hparams_set, --hparams or --data_dir do not describe.
    """
    from t2t_keras.run.loading import load_ensemble, load_trained

    use_xla = flag_groups.xla().compiles_attention
    members = ensemble_members()
    if members and not ensemble:
        raise UserError(
            f"--output_dir={FLAGS.output_dir} names several models, an ensemble, which only "
            "t2t-decoder decodes with; give one training directory."
        )
    if members:
        trained = load_ensemble(members, FLAGS.hparams_set, use_xla)
    else:
        trained = load_trained(FLAGS.output_dir, FLAGS.checkpoint_path, FLAGS.hparams_set, use_xla)
    check_flags(trained.run, trained.hparams, trained.run_dir)
    if FLAGS.data_dir:
        check_data_dir(trained.run, trained.run_dir, FLAGS.data_dir)
    return trained


def ensemble_members() -> list[str]:
    """The training directories of --output_dir=A,B,...; [] for one model."""
    given = [path for path in (FLAGS.output_dir or "").split(",") if path]
    if len(given) < 2:
        return []
    if FLAGS.checkpoint_path:
        raise UserError(
            f"--output_dir={FLAGS.output_dir} names an ensemble, whose members decode with "
            "their newest checkpoints: drop --checkpoint_path, and name each member's "
            "training directory, or its averaged directory (TRAIN/averaged)."
        )
    return given


def load_export(model_dir: str) -> dict[str, Any]:
    """The t2t_keras.json of a CTranslate2 export, checked against the flags above.

    With --output_dir or --checkpoint_path, the export must be of that
    training: the same problem, model, hparams and vocabularies.

    Raises:
      UserError: not an export, or one the flags do not describe.
    """
    from t2t_keras.export.ctranslate2_export import read_info

    info = read_info(model_dir)
    run, hparams = info["run"], export_hparams(info)
    given, recorded = FLAGS.hparams_set, run.get("hparams_set")
    if given and recorded and given != recorded:
        raise UserError(
            f"the CTranslate2 model in {model_dir} was trained with hparams set {recorded!r}, "
            f"not {given!r} (--hparams_set); drop --hparams_set or give a model of that set."
        )
    check_flags(run, hparams, model_dir)
    if FLAGS.output_dir or FLAGS.checkpoint_path:
        _check_same_model(info, model_dir)
    if FLAGS.data_dir:
        check_data_dir(run, model_dir, FLAGS.data_dir)
    return info


def export_hparams(info: dict[str, Any]) -> HParams:
    """The hparams an export records, in their class."""
    from t2t_keras.run.loading import model_hparams_class

    return model_hparams_class(info["run"]["model"]).from_json(json.dumps(info["hparams"]))


def _check_same_model(info: dict[str, Any], model_dir: str) -> None:
    """Refuses an export of another training than --output_dir / --checkpoint_path."""
    from t2t_keras.run.loading import find_checkpoint, read_run_files

    given = FLAGS.output_dir or os.path.dirname(find_checkpoint(FLAGS.checkpoint_path))
    directory = os.path.expanduser(given)
    run, hparams = read_run_files(directory)
    exported = info["run"]
    differences = [name for name in ("problem", "model") if run.get(name) != exported.get(name)]
    if hparams.values() != info["hparams"]:
        differences.append("hparams")
    if run.get("vocab") != exported.get("vocab") or _differing_vocab(run, model_dir, directory):
        differences.append("vocabularies")
    if differences:
        raise UserError(
            f"the CTranslate2 model in {model_dir} was exported from another model than "
            f"{given} (its {', '.join(differences)} differ); export this training with "
            f"t2t-exporter --output_dir={given} --export_format=ctranslate2, or give the "
            "--ctranslate2_dir of its export."
        )


def _differing_vocab(run: dict[str, Any], vocab_dir: str, other_dir: str) -> str | None:
    """The first vocabulary file of run.json in other_dir that is missing or differs
    from vocab_dir's copy, or None when they all match."""
    from t2t_keras.run.run_files import vocab_files

    for name in vocab_files(run):
        mine, other = os.path.join(vocab_dir, name), os.path.join(other_dir, name)
        if not (os.path.isfile(mine) and os.path.isfile(other)):
            return name
        if not filecmp.cmp(other, mine, shallow=False):
            return name
    return None


def check_flags(run: dict[str, Any], hparams: HParams, where: str) -> None:
    """Refuses --problem, --model or --hparams values other than the recorded ones."""
    for name in ("problem", "model"):
        given, recorded = FLAGS[name].value, run.get(name)
        if given and given != recorded:
            raise UserError(
                f"the model was trained on {name} {recorded!r} ({where}), not {given!r} "
                f"(--{name}); drop --{name} or give a model of that {name}."
            )
    trained_values = hparams.values()
    given_values = hparams.override(FLAGS.hparams).values()
    changed = [name for name, value in given_values.items() if value != trained_values[name]]
    if changed:
        listing = ", ".join(f"{name}={trained_values[name]!r}" for name in changed)
        raise UserError(
            f"--hparams={FLAGS.hparams} differs from what the model was trained with "
            f"({listing}, in {where}); a trained model's hparams cannot change. Drop "
            "--hparams; search settings go in --decode_hparams."
        )


def check_data_dir(run: dict[str, Any], vocab_dir: str, data_dir: str) -> None:
    """Refuses a --data_dir that lacks the vocabularies the model was trained with.

    Args:
      run: run.json's contents; it names the vocabulary files.
      vocab_dir: where the model's own copies are (the training directory or export).
      data_dir: the --data_dir given.
    """
    directory = os.path.expanduser(data_dir)
    if not os.path.isdir(directory):
        raise UserError(f"--data_dir {data_dir} is not a directory; give the problem's data_dir.")
    name = _differing_vocab(run, vocab_dir, directory)
    if name is not None:
        given = os.path.join(directory, name)
        state = "differs from" if os.path.isfile(given) else "is missing, unlike"
        raise UserError(
            f"--data_dir {data_dir}: the vocabulary {name} {state} the one the model was "
            f"trained with ({vocab_dir}/{name}); give the data_dir of the training, "
            "or drop --data_dir."
        )
