"""tensor2tensor's flags that these binaries do not take, each with what to do instead.

The flags of T2T's t2t-trainer, t2t-decoder, t2t-exporter, t2t-datagen,
avg_checkpoints and t2t-bleu that make sense here are accepted (the same
name and meaning, or a checked one that each binary's help states). The
rest are refused as unknown flags; for those a T2T user is likely to pass,
the error says what replaces them.
"""

from __future__ import annotations

_MULTI_WORKER = (
    "for several machines use --distribution_strategy=multi_worker_mirrored with the "
    "cluster in the TF_CONFIG environment variable."
)
_NO_TPU_LOOP = "training runs under a tf.distribute strategy (--distribution_strategy)."

# Flag name -> what replaces it. Flags named here are defined by no binary; all
# are tensor2tensor's but --noxla, which t2t-decoder took before --xla had modes.
HINTS = {
    "problems": "give one problem with --problem.",
    "worker_gpu": "t2t-trainer takes --num_gpus (0 = every local GPU).",
    "worker_replicas": _MULTI_WORKER,
    "worker_id": _MULTI_WORKER,
    "worker_job": _MULTI_WORKER,
    "ps_replicas": _MULTI_WORKER,
    "ps_gpu": _MULTI_WORKER,
    "master": _MULTI_WORKER,
    "sync": _MULTI_WORKER,
    "use_tpu": "use --distribution_strategy=tpu.",
    "iterations_per_loop": _NO_TPU_LOOP,
    "tpu_num_shards": _NO_TPU_LOOP,
    "schedule": "t2t-trainer always trains and evaluates (--eval_every_steps, --eval_steps).",
    "local_eval_frequency": "use --eval_every_steps and --save_checkpoints_steps.",
    "keep_checkpoint_every_n_hours": "--keep_checkpoint_max says how many are kept.",
    "xla_compile": "use --xla=full.",
    "noxla": "--xla takes off, attention or full: use --xla=off.",
    "profile": "use --profile_steps=FIRST,LAST.",
    "dbgprofile": "use --profile_steps=FIRST,LAST.",
    "export_saved_model": "export with t2t-exporter --output_dir=TRAIN.",
    "eval_early_stopping_steps": "training stops at --train_steps; no early stopping.",
    "eval_use_test_set": "t2t-decoder decodes --decode_split (default test).",
    "decode_shards": "t2t-decoder decodes a whole file in one run.",
    "score_file": "scoring given outputs is not available; decode and score with "
    "--decode_reference.",
    "as_text": "SavedModels are written in binary form.",
    "export_as_tfhub": "t2t-exporter writes a SavedModel for TF Serving only.",
    "output_path": "t2t-avg-checkpoints writes into --averaged_dir (ckpt-<step> with the "
    "run files, so t2t-decoder --output_dir reads it).",
    "only_list": "--registry_help lists the problems.",
    "exclude_problems": "t2t-datagen generates the one --problem.",
    "num_shards": "a problem sets its own shard counts.",
    "max_cases": "a problem sets how many examples it generates.",
    "translations_dir": "t2t-bleu scores one --translation; call it once per file.",
    "bleu_variant": "t2t-bleu prints cased and uncased BLEU together.",
    "source": "t2t-bleu needs only --translation and --reference.",
    "random_seed": "only training is random; t2t-trainer takes --random_seed.",
}


def hint(flag_name: str) -> str | None:
    """What replaces tensor2tensor's --flag_name here, or None if it is no such flag."""
    found = HINTS.get(flag_name)
    if not found:
        return None
    whose = "an earlier t2t-decoder's" if flag_name == "noxla" else "tensor2tensor's"
    return f"(--{flag_name} is {whose}; {found})"
