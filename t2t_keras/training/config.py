"""How a training run is driven: steps, checkpoints, evaluation, devices, precision."""

from __future__ import annotations

import dataclasses

from t2t_keras.errors import UserError
from t2t_keras.modes import PRECISIONS, Xla


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The run's settings (t2t-trainer's flags); the model's are in the hparams."""

    # Train until the global step reaches this.
    train_steps: int = 250_000
    # Dev batches per evaluation; 0 = the whole dev split.
    eval_steps: int = 100
    # Evaluate every this many steps (and at the end); 0 = only at the end.
    eval_every_steps: int = 1000
    # Dev sentences decoded with beam search for BLEU at each evaluation; 0 = no BLEU.
    eval_bleu_examples: int = 100
    # Save a checkpoint every this many steps; 0 = by time only.
    save_checkpoints_steps: int = 1000
    # Also save when this many seconds passed since the last save; 0 = by steps only.
    save_checkpoints_secs: int = 0
    # Checkpoints kept (the newest).
    keep_checkpoint_max: int = 20
    # At the end, average the newest this many checkpoints' weights into
    # output_dir/averaged, as the paper decoded (5 for base, 20 for big); 0 = don't.
    average_checkpoints: int = 0
    # Print a progress line and write summaries every this many steps.
    log_every_steps: int = 100
    # Seed of weight initialization, dropout and shuffling; None = random.
    random_seed: int | None = None
    # Deterministic ops and input order (slower).
    deterministic: bool = False
    # What XLA compiles (t2t_keras.modes.Xla): "attention" the attention cores;
    # "full" also each replica's whole step and the dev BLEU's whole search; "off" nothing.
    xla: str = "attention"
    # "off": float32; "fp16": mixed float16 with dynamic loss scaling; "bf16": mixed bfloat16.
    mixed_precision: str = "off"
    # Trace these steps (first, last) with the TensorFlow profiler into output_dir/profile.
    profile_steps: tuple[int, int] | None = None
    # Read each damaged shard up to its first bad record (reporting what is lost)
    # instead of stopping with an error naming it.
    skip_corrupt_records: bool = False
    # Stop after this much wall time (a benchmark's budget); None = no limit.
    max_seconds: float | None = None
    # A fresh run starts from this trained run's weights (a training or averaged
    # directory, or a checkpoint prefix); its own optimizer, step and schedule.
    warm_start_from: str | None = None
    # With warm_start_from: also take the parent's optimizer state and step, so
    # that its schedule goes on (train_steps then counts from the parent's step).
    warm_start_optimizer: bool = False

    def __post_init__(self) -> None:
        for name in ("train_steps", "keep_checkpoint_max", "log_every_steps"):
            _require(getattr(self, name) >= 1, name, "at least 1")
        for name in (
            "eval_steps",
            "eval_every_steps",
            "eval_bleu_examples",
            "save_checkpoints_steps",
            "save_checkpoints_secs",
            "average_checkpoints",
        ):
            _require(getattr(self, name) >= 0, name, "0 or more")
        _require(
            self.average_checkpoints <= self.keep_checkpoint_max,
            "average_checkpoints",
            f"at most --keep_checkpoint_max={self.keep_checkpoint_max} (the checkpoints kept)",
        )
        Xla(self.xla)  # A UserError for a mode that is not one.
        _require(self.mixed_precision in PRECISIONS, "mixed_precision", " or ".join(PRECISIONS))
        if self.profile_steps is not None:
            first, last = self.profile_steps
            _require(
                1 <= first <= last, "profile_steps", "two steps FIRST,LAST with 1 <= FIRST <= LAST"
            )

        if self.warm_start_optimizer and not self.warm_start_from:
            raise UserError(
                "--warm_start_optimizer takes the optimizer state of the run given with "
                "--warm_start_from; give that flag too, or drop --warm_start_optimizer."
            )

    @property
    def xla_mode(self) -> Xla:
        return Xla(self.xla)


def _require(condition: bool, name: str, expected: str) -> None:
    if not condition:
        raise UserError(f"--{name} must be {expected}.")
