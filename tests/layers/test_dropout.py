"""Dropout masks differ across the replicas of a MirroredStrategy."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

from t2t_keras.layers.dropout import Dropout

TWO_REPLICAS = textwrap.dedent(
    """
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from t2t_keras.layers.dropout import Dropout

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        layer = Dropout(0.5)

    @tf.function
    def step():
        return strategy.run(lambda: layer(tf.ones([4, 64]), training=True))

    for _ in range(2):
        first, second = [t.numpy() for t in strategy.experimental_local_results(step())]
        print("same" if (first == second).all() else "distinct")
    """
)


def test_masks_differ_between_replicas() -> None:
    result = subprocess.run(
        [sys.executable, "-c", TWO_REPLICAS], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["distinct", "distinct"]


def test_inverted_dropout_keeps_the_expected_value() -> None:
    layer = Dropout(0.25)
    x = tf.ones([200, 200])
    np.testing.assert_array_equal(layer(x), x)
    dropped = layer(x, training=True).numpy()
    assert set(np.unique(dropped)) == {0.0, np.float32(1 / 0.75)}
    assert abs(dropped.mean() - 1.0) < 0.02
    assert not np.array_equal(dropped, layer(x, training=True).numpy())
