"""The training loop: one function from a problem and hparams to checkpoints in output_dir."""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from t2t_keras.data import damage
from t2t_keras.data.problem import Problem
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.run import run_files
from t2t_keras.run.weights import build_model, make_checkpoint
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.termination import Termination, interrupted_evaluation
from t2t_keras.training import problem_data, warm_start
from t2t_keras.training.averaging import average_checkpoints
from t2t_keras.training.checkpoints import CheckpointSaver
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.evaluation import Evaluator
from t2t_keras.training.lock import output_dir_lock
from t2t_keras.training.optimizers import optimizer_from_hparams
from t2t_keras.training.preemption import Guard, make_guard
from t2t_keras.training.progress import Progress
from t2t_keras.training.step import TrainStep
from t2t_keras.training.strategies import is_chief, worker_id
from t2t_keras.training.warm_start import PARENT_KEY, Parent, find_parent

POLICIES = {"off": "float32", "fp16": "mixed_float16", "bf16": "mixed_bfloat16"}


@dataclasses.dataclass
class TrainResult:
    """What a training run ended with."""

    # The trained model (on every worker).
    model: keras.Model
    # The global step training started (or resumed) from, and ended at.
    first_step: int
    step: int
    # Wall time of the loop, source + target tokens and target tokens per second over it.
    seconds: float = 0.0
    tokens_per_second: float = 0.0
    target_tokens_per_second: float = 0.0
    # The final checkpoint's path (None on workers other than the chief).
    checkpoint: str | None = None
    # The average of the last config.average_checkpoints checkpoints, if asked (chief only).
    averaged_checkpoint: str | None = None
    # The last dev metrics (chief only).
    eval: dict[str, float] = dataclasses.field(default_factory=dict)
    # One point per log (log_every_steps): step, seconds since the loop began, target
    # tokens seen, and the training loss per target token over the interval.
    loss_curve: list[dict[str, float]] = dataclasses.field(default_factory=list)


def train(
    problem: Problem,
    model_name: str,
    hparams: TransformerHParams,
    data_dir: str,
    output_dir: str,
    strategy: tf.distribute.Strategy,
    config: TrainConfig,
    hparams_set: str | None = None,
    termination: Termination | None = None,
) -> TrainResult:
    """Trains (or resumes training) until config.train_steps (or config.max_seconds).

    Args:
      problem: the registered problem whose shards are in data_dir.
      model_name: the registered model, e.g. "transformer".
      hparams: the model's hparams; vocab_size and target_vocab_size 0 take the
        problem's (without shared embeddings, each side its own).
      data_dir: where t2t-datagen wrote the problem.
      output_dir: checkpoints, hparams.json, run.json, vocabularies, summaries.
      strategy: from `make_strategy`.
      config: steps, checkpoints, evaluation, XLA, precision.
      hparams_set: the name of the registered set `hparams` came from, recorded
        in run.json so the decoder can check what it is given.
      termination: the installed termination signals (t2t-trainer's); on one,
        training saves the step it is at and raises `Terminated`. None: no
        signal is caught.

    Raises:
      Terminated: after a termination signal, once that step's checkpoint is written.
    """
    termination = termination or Termination(signals=())
    termination.install()  # Again: MultiWorkerMirroredStrategy's runtime takes SIGTERM.
    _fix_randomness(config)
    chief = is_chief(strategy)
    with output_dir_lock(output_dir, enabled=chief):
        run = _run_record(problem, model_name, data_dir, hparams_set, config.mixed_precision)
        parent = find_parent(config.warm_start_from) if config.warm_start_from else None
        hparams, encoders, tree = _checked(problem, hparams, data_dir, output_dir, run, config)
        step = build_train_step(model_name, hparams, strategy, config, tree)
        saver = _saver(step, output_dir, strategy, config)
        restored = saver.restore()
        _warm_start(run, step, parent, restored, hparams, encoders, config, output_dir)
        at = _global_step(step.optimizer)
        if restored:
            termination.trained = termination.saved = at
        if at >= config.train_steps:
            result = _nothing_to_train(step.model, at, restored, output_dir, config)
            return _averaged(result, output_dir, config, chief)
        evaluator = None
        if chief:
            _write_run(output_dir, run, hparams, encoders)
            evaluator = _evaluator(step, problem, hparams, data_dir, strategy, config)
        guard = _guard(strategy, termination, saver, step)
        result = _loop(
            problem, hparams, data_dir, strategy, config, step, saver, evaluator, guard,
            _parent_steps(run),
        )  # fmt: skip
        with termination.busy():
            return _averaged(result, output_dir, config, chief)


def _checked(
    problem: Problem,
    hparams: TransformerHParams,
    data_dir: str,
    output_dir: str,
    run: dict[str, Any],
    config: TrainConfig,
) -> tuple[TransformerHParams, dict[str, Vocabulary], TreeTokens | None]:
    """The hparams to train (vocabulary sizes and leaf id filled in), the problem's
    vocabularies and tree tokens, once data and output_dir are found fit to train."""
    run_files.check_resumable(output_dir, run, hparams)
    encoders = problem_data.checked_vocabularies(problem, data_dir, config.skip_corrupt_records)
    hparams = problem_data.with_vocab_size(hparams, encoders, run_files.trained_hparams(output_dir))
    tree = problem_data.leaf_tokens(hparams, problem, encoders)
    if tree is not None and not hparams.leaf_id:
        hparams = dataclasses.replace(hparams, leaf_id=tree.leaf_id)
    run_files.check_vocabularies(output_dir, _vocab_paths(encoders), hparams)
    return hparams, encoders, tree


def _warm_start(
    run: dict[str, Any],
    step: TrainStep,
    parent: Parent | None,
    restored: str | None,
    hparams: TransformerHParams,
    encoders: dict[str, Vocabulary],
    config: TrainConfig,
    output_dir: str,
) -> None:
    """A fresh run given a parent starts from its weights, and run.json records it; a
    resumed run continues from its own checkpoints, its recorded parent kept."""
    if restored:
        if parent is not None:
            logging.info(
                "%s holds checkpoints: resuming from them; --warm_start_from=%s only starts "
                "a fresh run.",
                output_dir,
                parent.checkpoint,
            )
        recorded = warm_start.recorded_parent(output_dir)
        if recorded:
            run[PARENT_KEY] = recorded
        return
    if parent is not None:
        warm_start.check_fits(parent, hparams, encoders)
        optimizer = step.optimizer if config.warm_start_optimizer else None
        warm_start.start_from(step.model, parent, optimizer)
        run[PARENT_KEY] = parent.record()
        if optimizer is not None:
            run[PARENT_KEY]["optimizer_step"] = at = _global_step(optimizer)
            if at >= config.train_steps:
                raise UserError(
                    f"--warm_start_optimizer goes on from the parent's step {at}, and "
                    f"--train_steps={config.train_steps} is not above it: --train_steps "
                    f"counts from step 0 of the parent's schedule; give more than {at}."
                )


def _parent_steps(run: dict[str, Any]) -> int:
    """The steps before this run's first that read none of its data: a parent's, whose
    optimizer it went on with (--warm_start_optimizer); else 0."""
    return int((run.get(PARENT_KEY) or {}).get("optimizer_step", 0))


def _guard(
    strategy: tf.distribute.Strategy,
    termination: Termination,
    saver: CheckpointSaver,
    step: TrainStep,
) -> Guard:
    """The preemption guard of the loop: it saves with `saver` and reads the step
    the optimizer is at."""
    return make_guard(
        strategy,
        termination,
        lambda at: _save(saver, termination, at),
        lambda: _global_step(step.optimizer),
        saver.output_dir,
    )


def _saver(
    step: TrainStep, output_dir: str, strategy: tf.distribute.Strategy, config: TrainConfig
) -> CheckpointSaver:
    return CheckpointSaver(
        make_checkpoint(step.model, step.optimizer, seed_states=True),
        output_dir,
        config.keep_checkpoint_max,
        config.save_checkpoints_steps,
        config.save_checkpoints_secs,
        chief=is_chief(strategy),
        worker=worker_id(strategy),
    )


def _fix_randomness(config: TrainConfig) -> None:
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    if config.random_seed is not None:
        keras.utils.set_random_seed(config.random_seed)


def _write_run(
    output_dir: str,
    run: dict[str, Any],
    hparams: TransformerHParams,
    encoders: dict[str, Vocabulary],
) -> None:
    sizes = {side: vocab.vocab_size for side, vocab in encoders.items()}
    run_files.write_run(output_dir, run, hparams, _vocab_paths(encoders), sizes)


def _vocab_paths(encoders: dict[str, Vocabulary]) -> dict[str, str]:
    return {side: getattr(vocab, "model_path", "bytes") for side, vocab in encoders.items()}


def _evaluator(
    step: TrainStep,
    problem: Problem,
    hparams: TransformerHParams,
    data_dir: str,
    strategy: tf.distribute.Strategy,
    config: TrainConfig,
) -> Evaluator:
    """The chief's dev evaluation; its search compiled as --xla says (on one replica)."""
    return Evaluator(
        step.model,
        problem,
        data_dir,
        hparams.batching(),
        DecodeHParams().resolve(hparams),  # The hparams set's beam search, as t2t-decoder's.
        config.eval_steps,
        config.eval_bleu_examples,
        jit_compile=config.xla_mode.compiles_whole_search and strategy.num_replicas_in_sync == 1,
        skip_corrupt=config.skip_corrupt_records,
    )


def _run_record(
    problem: Problem,
    model_name: str,
    data_dir: str,
    hparams_set: str | None,
    mixed_precision: str,
) -> dict[str, Any]:
    """What run.json says of this training, besides its vocabularies (and parent)."""
    run: dict[str, Any] = {
        "problem": problem.name,
        "model": model_name,
        "data_dir": os.path.abspath(data_dir),
    }
    if hparams_set:
        run["hparams_set"] = hparams_set
    if source := problem.recorded_source(data_dir):
        run["data_source"] = source
    run["mixed_precision"] = mixed_precision  # auto's choice, kept for a resume.
    return run


def _averaged(
    result: TrainResult, output_dir: str, config: TrainConfig, chief: bool
) -> TrainResult:
    """The result, with the average of the last checkpoints if asked (written by the chief)."""
    if chief and config.average_checkpoints:
        averaged = average_checkpoints(output_dir, config.average_checkpoints)
        result.averaged_checkpoint = averaged.checkpoint
    return result


def _nothing_to_train(
    model: keras.Model, step: int, restored: str | None, output_dir: str, config: TrainConfig
) -> TrainResult:
    """A rerun whose --train_steps is already reached: nothing trains, nothing is rewritten."""
    logging.warning(
        "%s is already at step %d, at or past --train_steps=%d: nothing to train. Raise "
        "--train_steps to train on.",
        output_dir,
        step,
        config.train_steps,
    )
    return TrainResult(model, first_step=step, step=step, checkpoint=restored)


def build_train_step(
    model_name: str,
    hparams: TransformerHParams,
    strategy: tf.distribute.Strategy,
    config: TrainConfig,
    tree: TreeTokens | None = None,
) -> TrainStep:
    """The model (reading a parser's `tree` word starts), its optimizer (with loss
    scaling for float16) and the step, in scope."""
    with strategy.scope():
        model = build_model(
            model_name,
            hparams,
            use_xla=config.xla_mode.compiles_attention,
            dtype=POLICIES[config.mixed_precision],
        )
        if tree is not None:
            model.set_word_starts(tree.word_start_ids)
        optimizer = optimizer_from_hparams(hparams)
        if config.mixed_precision == "fp16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer, name="loss_scale")
        return TrainStep(
            model,
            optimizer,
            hparams,
            strategy,
            jit_compile=_full_xla(config, strategy),
            compile_loss=config.xla_mode.compiles_attention,
        )


def _loop(
    problem: Problem,
    hparams: TransformerHParams,
    data_dir: str,
    strategy: tf.distribute.Strategy,
    config: TrainConfig,
    train_step: TrainStep,
    saver: CheckpointSaver,
    evaluator: Evaluator | None,
    guard: Guard,
    steps_before: int = 0,
) -> TrainResult:
    """Trains from the optimizer's step to config.train_steps; the first `steps_before`
    steps were a parent's, on other data."""
    optimizer, termination = train_step.optimizer, guard.termination
    step = _global_step(optimizer)
    iterator = _train_batches(problem, hparams, data_dir, strategy, config, step - steps_before)
    train_files = problem.data_files(data_dir, "train")
    progress = Progress(saver.output_dir, config, step, optimizer, saver.chief)
    start, evaluated = time.monotonic(), -1
    result = TrainResult(train_step.model, first_step=step, step=step)
    while step < config.train_steps:
        if config.max_seconds and time.monotonic() - start > config.max_seconds:
            logging.info(
                "Stopping at step %d: the %.0f s budget is spent.", step, config.max_seconds
            )
            break
        progress.maybe_profile(step + 1)
        with damage.naming_damaged_shards(train_files, f"{problem.name} train"):
            metrics = _one_step(guard, train_step, iterator, problem, hparams, data_dir)
        step = termination.trained = _global_step(optimizer)
        _check_loss(metrics["loss"], step, saver.output_dir)
        progress.record(step, metrics)
        if saver.due(step):
            _save(saver, termination, step)
        guard.after_step(step)
        if evaluator and config.eval_every_steps and step % config.eval_every_steps == 0:
            result.eval, evaluated = _evaluate(progress, evaluator, guard, step), step
    result.checkpoint = _save(saver, termination, step)
    guard.after_step(step)  # Saved; a rerun finds nothing to train (and averages).
    if evaluator and evaluated != step:
        result.eval = progress.evaluate(step, evaluator)
    result.step, result.seconds = step, time.monotonic() - start
    progress.finish(result)
    return result


def _one_step(
    guard: Guard,
    train_step: TrainStep,
    iterator: Any,
    problem: Problem,
    hparams: TransformerHParams,
    data_dir: str,
) -> dict[str, float]:
    """Runs one training step; its metrics, read once (the host waits for the step here)."""
    try:
        return {name: float(value) for name, value in guard.run(train_step, iterator).items()}
    except tf.errors.OutOfRangeError:
        raise UserError(
            f"the train split of {problem.name} in {data_dir} has no example of at most "
            f"max_length={problem.max_length(hparams.max_length)} tokens; regenerate the data or "
            "raise max_length."
        ) from None


def _check_loss(loss: float, step: int, output_dir: str) -> None:
    if not math.isfinite(loss):
        raise UserError(
            f"the training loss became {loss} at step {step}; training stopped. The last "
            f"good checkpoint, {tf.train.latest_checkpoint(output_dir)}, is kept. "
            "Lower the learning rate, lengthen warmup_steps or set clip_gradient_norm "
            "(--hparams=...), then rerun to resume from it."
        )


def _save(saver: CheckpointSaver, termination: Termination, step: int) -> str | None:
    """Saves ckpt-<step>; a termination signal meanwhile waits for it to be written."""
    with termination.busy():
        path = saver.save(step)
        termination.saved = step
    return path


def _evaluate(
    progress: Progress, evaluator: Evaluator, guard: Guard, step: int
) -> dict[str, float]:
    """A dev evaluation that a termination signal cuts short: the step is saved, not scored."""
    try:
        with guard.termination.interruptible():
            return progress.evaluate(step, evaluator)
    except Exception as error:  # The interruption, or what TensorFlow raised from it.
        if not interrupted_evaluation(error):
            raise
        logging.warning("The dev evaluation at step %d was interrupted: not recorded.", step)
        guard.stop(step)


def _train_batches(
    problem: Problem,
    hparams: TransformerHParams,
    data_dir: str,
    strategy: tf.distribute.Strategy,
    config: TrainConfig,
    step: int,
) -> Any:
    """The distributed iterator of training batches, for a run `step` steps in.

    Under --deterministic the batches are one fixed stream: a resumed run
    skips the batches the steps before it consumed and goes on as an
    uninterrupted run would (reading, not training on, what it skips: a cost
    that grows with the step). Otherwise a resumed run shuffles anew, seeded
    by random_seed + step so that it does not repeat the first run's order.
    """
    seed: int | None = config.random_seed or 0
    consumed = step * hparams.gradient_accumulation_steps
    if not config.deterministic:
        seed = None if config.random_seed is None else config.random_seed + step
        consumed = 0

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        dataset = problem.dataset(
            "train", hparams.batching(), data_dir, deterministic=config.deterministic, seed=seed,
            input_context=context, skip_corrupt=config.skip_corrupt_records,
        )  # fmt: skip
        # Each pipeline hands one batch per step to each of its replicas.
        replicas = context.num_replicas_in_sync // context.num_input_pipelines
        return dataset.skip(consumed * replicas) if consumed else dataset

    if consumed:
        logging.info(
            "Skipping the %d batches per replica that steps 1-%d trained on (--deterministic).",
            consumed,
            step,
        )
    return iter(strategy.distribute_datasets_from_function(dataset_fn))


def _full_xla(config: TrainConfig, strategy: tf.distribute.Strategy) -> bool:
    """Whether to compile the whole replica step; not across several local devices."""
    if not config.xla_mode.compiles_whole_step:
        return False
    local_devices = len(strategy.extended.worker_devices)
    if local_devices > 1:
        logging.warning(
            "--xla=full cannot compile a step whose variables are mirrored over %d local "
            "devices (an XLA limitation); compiling the attention cores only.",
            local_devices,
        )
        return False
    return True


def _global_step(optimizer: Any) -> int:
    """The number of updates applied: the global step."""
    return int(tf.convert_to_tensor(optimizer.iterations.value))
