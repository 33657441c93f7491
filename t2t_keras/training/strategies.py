"""tf.distribute strategies by name, and who among the workers is the chief."""

from __future__ import annotations

import json
import os

import tensorflow as tf

from t2t_keras.errors import UserError
from t2t_keras.modes import STRATEGIES


def split_cpu(num_devices: int) -> None:
    """Splits the CPU into `num_devices` logical devices (before TensorFlow starts).

    MirroredStrategy then has several devices to mirror over without a GPU:
    the way to try multi-device training, and to test it, on one machine.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    config = [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)]
    try:
        tf.config.set_logical_device_configuration(cpu, config)
    except RuntimeError as error:  # Already initialized: fine if it is the same split.
        if len(tf.config.list_logical_devices("CPU")) != num_devices:
            raise UserError(
                f"cannot split the CPU into {num_devices} devices once TensorFlow has "
                "started; split it before building any model."
            ) from error


def make_strategy(name: str, num_gpus: int = 0) -> tf.distribute.Strategy:
    """The strategy called `name`.

    Args:
      name: "one_device" (the first GPU, else the CPU); "mirrored" (num_gpus
        GPUs, 0 = all; without GPUs, every logical CPU device); "multi_worker_mirrored"
        (the cluster in the TF_CONFIG environment variable); "tpu" (the TPU
        found by TPUClusterResolver).
      num_gpus: how many local GPUs to use; 0 = all.
    """
    if name not in STRATEGIES:
        raise UserError(
            f"unknown distribution strategy {name!r}; accepted: {', '.join(STRATEGIES)}."
        )
    if name == "multi_worker_mirrored":
        return _multi_worker()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    gpus = _local_gpus(num_gpus)
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0] if gpus else "/cpu:0")
    devices = gpus or [device.name for device in tf.config.list_logical_devices("CPU")]
    if len(devices) == 1:  # Nothing to mirror over: the same training, without all-reduces.
        return tf.distribute.OneDeviceStrategy(devices[0])
    if gpus:
        return tf.distribute.MirroredStrategy(devices)
    # CPU devices share one memory: reduce on one of them. The default collective
    # all-reduce also keeps per-process keys that clash when a process makes a
    # second strategy over the same devices (as tests do).
    return tf.distribute.MirroredStrategy(
        devices, cross_device_ops=tf.distribute.ReductionToOneDevice()
    )


def _local_gpus(num_gpus: int) -> list[str]:
    gpus = [device.name for device in tf.config.list_logical_devices("GPU")]
    if num_gpus > len(gpus):
        raise UserError(
            f"--num_gpus={num_gpus} but this machine has {len(gpus)} GPU(s) visible to "
            "TensorFlow; use at most that many (0 = all)."
        )
    return gpus[:num_gpus] if num_gpus else gpus


def _multi_worker() -> tf.distribute.Strategy:
    config = os.environ.get("TF_CONFIG", "")
    try:
        cluster = json.loads(config)["cluster"] if config else None
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(
            f"TF_CONFIG is not valid: {error}. It must be JSON like "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}}.'
        ) from error
    if not cluster:
        raise UserError(
            "multi_worker_mirrored needs the cluster in the TF_CONFIG environment "
            'variable, e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:port", '
            '"host2:port"]}, "task": {"type": "worker", "index": 0}}\' on each worker.'
        )
    return tf.distribute.MultiWorkerMirroredStrategy()


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the one worker that writes checkpoints and summaries."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def worker_id(strategy: tf.distribute.Strategy) -> str:
    """A name of this worker, e.g. "worker_1" ("chief" on single machines)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return "chief"
    return f"{resolver.task_type}_{resolver.task_id}"
